"""A kernel that shuts down answers the MCP requests still waiting for a person, with an error.

An MCP server's elicitation or sampling request waits on a card
(:func:`nb_hitl.mcp._ask.open_card`). When the Jupyter kernel is shut down
or restarted (JupyterLab's restart: an interrupt, then ipykernel's
``shutdown_request`` on the control channel), nobody will ever answer it. On
a legacy connection the SDK's server holds the request open with no timeout:
if the kernel's process just exits, the server's tool waits for ever
(measured with the SDK 2.3's streamable-HTTP server; see docs/design.md).

So, once an :class:`~nb_hitl.mcp.AskingMCPClient` connects inside an
ipykernel, the kernel's ``do_shutdown`` (ipykernel's hook for "things to do
when the frontend shuts down the kernel", awaited in its control thread while
the kernel's event loop still runs) first ends every open request with :class:`Unanswered` (the card expires,
the audit log says so, the server gets an MCP error response naming the
shutdown), refuses any request that comes after, and waits, at most
:data:`SHUTDOWN_WAIT` seconds, until those callbacks have answered and the
calls in flight of these clients have ended (the server's answer to the tool
call is the sign it read the error). ``exit()`` in a cell (IPython's
``ask_exit``) stops the kernel's loop without ``do_shutdown``: the process
then runs its ``atexit`` handlers, and one of them runs the stopped loop once
more until the same answers went out. A killed kernel (``kill -9``) runs
nothing: what the server sees then is the SDK's own behaviour (docs/design.md).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import logging
import threading
import time
import weakref
from typing import Any

__all__ = [
    "Unanswered",
    "SHUTDOWN_REASON",
    "SHUTDOWN_WAIT",
    "answer_at_exit",
    "answer_pending",
    "watch_kernel_shutdown",
]

log = logging.getLogger("nb_hitl.mcp")

SHUTDOWN_REASON = "The notebook's kernel is shutting down: nobody will answer this request."
SHUTDOWN_WAIT = 2.0
"""Seconds the kernel's shutdown waits for the answers to go out. jupyter_client
sends SIGTERM after half its ``shutdown_wait_time`` (5 s by default)."""


class Unanswered(str):
    """Why a request will never be answered (the kernel shuts down): the server
    gets an MCP error saying so, never ``cancel`` or an invented answer."""


class _Waiting:
    """The cards of MCP requests waiting for a person, the clients whose calls may be
    in flight, and whether the kernel is shutting down (one per process; the cards
    may wait on several event loops: the kernel's, an AG-UI server's thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.carriers: set[Any] = set()
        self.clients: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()  # by id: unhashable
        self.reason: str | None = None

    def add(self, carrier: Any) -> None:
        with self.lock:
            self.carriers.add(carrier)

    def discard(self, carrier: Any) -> None:
        with self.lock:
            self.carriers.discard(carrier)

    def busy(self) -> bool:
        """Whether a card still waits or a call of a watched client is in flight."""
        with self.lock:
            return bool(self.carriers) or any(c._in_flight for c in list(self.clients.values()))


WAITING = _Waiting()


async def answer_pending(reason: str = SHUTDOWN_REASON, timeout: float = SHUTDOWN_WAIT) -> int:
    """End every MCP request waiting for a person with :class:`Unanswered` ``reason`` and refuse
    later ones; wait (at most ``timeout`` seconds) until their callbacks have answered and the
    clients' calls in flight have ended. Runs on any loop or thread (the answers go out on the
    loops the requests wait on: ``Carrier`` settles thread-safely).

    Returns:
        how many requests were waiting.
    """
    with WAITING.lock:
        WAITING.reason = reason
        ended = list(WAITING.carriers)
    for carrier in ended:
        carrier.unanswerable(Unanswered(reason))
    end = time.monotonic() + timeout
    while time.monotonic() < end and WAITING.busy():
        await asyncio.sleep(0.02)
    if WAITING.busy():
        log.warning("the kernel shuts down with MCP calls still in flight after %.1f s", timeout)
    return len(ended)


def watch_kernel_shutdown(client: Any) -> bool:
    """Have the running ipykernel answer ``client``'s waiting requests before it shuts down.

    Wraps the kernel's ``do_shutdown`` once per kernel (ipykernel awaits it on
    ``shutdown_request``, in its control thread): :func:`answer_pending`
    first, then ipykernel's own ``do_shutdown``.

    Returns:
        ``False`` outside an ipykernel (nothing to watch), else ``True``.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None or not hasattr(kernel, "do_shutdown"):
        return False
    with WAITING.lock:
        WAITING.clients[id(client)] = client
    if getattr(kernel, "_nb_hitl_answers_mcp_on_shutdown", False):
        return True
    original = kernel.do_shutdown

    async def do_shutdown(restart: bool) -> Any:
        try:
            await answer_pending()
        except Exception:
            log.warning("answering the waiting MCP requests before the kernel shuts down failed", exc_info=True)
        result = original(restart)
        return await result if inspect.isawaitable(result) else result

    kernel.do_shutdown = do_shutdown
    kernel._nb_hitl_answers_mcp_on_shutdown = True
    with contextlib.suppress(RuntimeError):  # connected from the kernel's loop: exit() stops it
        atexit.register(answer_at_exit, asyncio.get_running_loop())
    return True


def answer_at_exit(loop: asyncio.AbstractEventLoop) -> None:
    """An ``atexit`` handler: when the process ends with requests still waiting
    (``exit()`` in a cell stopped the kernel's loop, bypassing ``do_shutdown``),
    run the stopped ``loop`` once more until :func:`answer_pending` has answered
    them. Does nothing when none waits or ``loop`` is running or closed."""
    if not WAITING.busy() or loop.is_running() or loop.is_closed():
        return
    try:
        loop.run_until_complete(answer_pending())
    except Exception:
        log.warning("answering the waiting MCP requests as the kernel's process exits failed", exc_info=True)
