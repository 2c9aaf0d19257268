"""Notebook code that makes the kernel slow to answer a reply widget's page messages.

The page asks the kernel "sync" when a reply widget is drawn and waits 4 s for
the answer (js/reply/index.ts) before it says the kernel does not answer; then it
pings every few seconds. Run before a Session in the same cell,
:func:`held_until` holds every page message of the reply widgets until the test
releases them (the card and transcript messages from the kernel go at once), so a
test types into cards the page has never known live, sees "Not answering", and
then the page going live under the typing when it releases them: in that order
whatever the machine's load (a fixed delay raced the card's drawing).
"""

from __future__ import annotations


def held_until(flag: str) -> str:
    """Python source for a cell: every page message to a reply widget (connect, pings,
    clicks) waits, in order, until the file ``flag`` exists (relative to the kernel's
    working directory, the notebook's folder); then all are answered and later ones at
    once. The page says the kernel does not answer from its 4 s wait on, and stays so:
    a test types into a card that the page has never known live, whatever the load,
    then creates ``flag`` and sees the page go live under the person's typing."""
    return f"""
import asyncio, os
from nb_hitl.widgets.reply import ReplyWidget as _ReplyWidget

_answer = _ReplyWidget._answer_message
_held = []

async def _release():
    while not os.path.exists({flag!r}):
        await asyncio.sleep(0.05)
    while _held:
        _answer(*_held.pop(0))

def _hold(self, content):
    if os.path.exists({flag!r}) and not _held:
        _answer(self, content)
        return
    _held.append((self, content))
    if len(_held) == 1:
        asyncio.get_running_loop().create_task(_release())

_ReplyWidget._answer_message = _hold
"""
