"""Notebook code that makes the kernel slow to answer a reply widget's connect request.

The page asks the kernel "sync" when a reply widget is drawn and waits 4 s for
the answer (js/reply/index.ts) before it says the kernel does not answer. Run
before a Session in the same cell, :func:`slow_connect` makes the kernel answer
that request ``seconds`` late (nothing else: decisions, pings and the card and
transcript messages go at once), so a test sees a card drawn before the page
knows the kernel is live (under 4 s), or the page saying "No longer live" and
then live again when its next check is answered (over 4 s).
"""

from __future__ import annotations


def slow_connect(seconds: float) -> str:
    """Python source for a cell: ``Desk.on_action`` answers ``sync`` after ``seconds`` (asyncio sleep)."""
    return f"""
import asyncio
from nb_hitl.session._actions import Desk as _Desk

_on_action = _Desk.on_action

def _slow_connect(self, run, message, decided_by=None, origin=None):
    if isinstance(message, dict) and message.get("action") == "sync":
        async def later():
            await asyncio.sleep({seconds!r})
            return _on_action(self, run, message, decided_by, origin)
        return later()
    return _on_action(self, run, message, decided_by, origin)

_Desk.on_action = _slow_connect
"""
