"""Each benchmark finishes within a bound it states.

:func:`run_bounded` runs a benchmark's ``main`` with a watchdog: past the bound
(seconds of wall time, chosen for a loaded 2-core machine) it prints that the
benchmark overran and ends the process with exit status 3, so a benchmark
that hangs (a lost browser event, a service that never answers) still ends.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def run_bounded(main: Callable[[], Any], seconds: float, name: str) -> Any:
    """Call ``main()``; end the process with status 3 if it runs past ``seconds``.

    Args:
        main: the benchmark's entry point (no arguments; it reads ``sys.argv``).
        seconds: the bound, in seconds of wall time.
        name: the benchmark's name, for the message.

    Returns:
        What ``main`` returns. Prints ``"<name> took N s (bound M s)"`` on stderr.
    """
    start = time.monotonic()
    done = threading.Event()

    def watchdog() -> None:
        if not done.wait(seconds):
            print(f"{name} ran past its bound of {seconds:.0f} s: stopped", file=sys.stderr, flush=True)
            os._exit(3)

    threading.Thread(target=watchdog, name="benchmark-bound", daemon=True).start()
    try:
        return main()
    finally:
        done.set()
        print(f"{name} took {time.monotonic() - start:.1f} s (bound {seconds:.0f} s)", file=sys.stderr, flush=True)
