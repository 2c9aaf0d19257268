"""Who answers the pauses of the notebooks under ``notebooks/``: a person, or the notebook itself.

A notebook run with *Run All* stops at every pause for a person to click:
the cells after a pause wait for its answer, as ``await session.run(...)``
does. Answering from code (the cell calls ``session.act({...})``, the very
handler a click reaches) is an explicit switch, for unattended runs such as
CI::

    NB_HITL_ANSWER_FROM_CODE=1 jupyter execute notebooks/teams.ipynb

:func:`answer_from_code` reads that switch; a notebook writes
``ANSWER_FROM_CODE = answer_from_code()`` once and guards every cell that
answers a pause with it. The variable must be set in the kernel's
environment (the server's, or ``os.environ`` in the kernel before that
line runs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .errors import NbHitlError

__all__ = ["ANSWER_FROM_CODE_ENV", "AnswerModeError", "answer_from_code"]

#: The switch: ``1`` (or ``true``, ``yes``, ``on``) makes the notebooks answer their own pauses.
ANSWER_FROM_CODE_ENV = "NB_HITL_ANSWER_FROM_CODE"

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})


class AnswerModeError(NbHitlError, ValueError):
    """``NB_HITL_ANSWER_FROM_CODE`` holds a value that is neither on nor off; the message names both."""

    code = "answer_mode"


def answer_from_code(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the notebook answers its own pauses from code.

    Args:
        environ: where to read :data:`ANSWER_FROM_CODE_ENV` (``os.environ``
            when None).

    Returns:
        True when the variable is ``1``, ``true``, ``yes`` or ``on`` (any
        case); False when it is unset, empty, ``0``, ``false``, ``no`` or
        ``off``: every pause then waits for a person's click.

    Raises:
        AnswerModeError: any other value (a typo must not silently pick a mode).
    """
    raw = (os.environ if environ is None else environ).get(ANSWER_FROM_CODE_ENV, "")
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise AnswerModeError(
        f"{ANSWER_FROM_CODE_ENV}={raw!r} is neither on (1, true, yes, on) nor off (unset, 0, false, no, off)."
    )
