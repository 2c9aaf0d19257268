"""What an AgentScope event adds to a reply's transcript beyond text deltas and tool calls.

:func:`record_event` turns model calls, thinking blocks, block ends, hints and
data blocks of AgentScope's ``reply_stream`` into entries of a
:class:`~nb_hitl.session._transcript.Transcript` (the session's driving loop,
``nb_hitl/session/_drive.py``, calls it for every event).
"""

from __future__ import annotations

import json
import time
from typing import Any

from agentscope.event import (
    DataBlockDeltaEvent,
    DataBlockStartEvent,
    HintBlockEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    TextBlockEndEvent,
    ThinkingBlockDeltaEvent,
    ThinkingBlockEndEvent,
    ThinkingBlockStartEvent,
)

from ._transcript import Transcript, no_reminder_tags

__all__ = ["hint_source", "record_event"]


def hint_source(source: str | None) -> str:
    """A hint's ``source`` as a person reads it: ``"alice"`` stays ``"alice"``; AgentScope's
    JSON labels (``'{"label": "System", "sublabel": "Runtime State"}'``) become
    ``"System · Runtime State"``; anything else unreadable is kept as given."""
    if not source or not source.lstrip().startswith("{"):
        return source or ""
    try:
        parsed = json.loads(source)
    except ValueError:
        return source
    if not isinstance(parsed, dict):
        return source
    parts = [str(parsed[k]) for k in ("label", "sublabel") if parsed.get(k)]
    return " · ".join(parts) or source


def record_event(tr: Transcript, ev: Any) -> bool:
    """Add what an AgentScope event shows beyond text deltas and tool calls to ``tr``.

    Handles ``TextBlockEndEvent`` / ``ThinkingBlockEndEvent`` (the entry's
    Markdown rendered, :meth:`Transcript.end_text`), ``ModelCallStartEvent`` / ``ModelCallEndEvent`` (a ``step``
    entry per model call: ``model_name``, ``started_at`` in epoch seconds,
    then ``elapsed`` seconds and AgentScope's token counts), thinking blocks
    (``thinking`` entries), ``HintBlockEvent`` (``hint``) and data blocks
    (``data``: ``media_type``, ``name``, ``url`` or the size of inline data in
    ``bytes``; the data itself is not sent to the page).

    Returns:
        whether ``ev`` was one of these (and the transcript changed).
    """
    if isinstance(ev, ModelCallStartEvent):
        tr.steps += 1
        tr.add("step", f"step:{tr.steps}", model_name=ev.model_name, started_at=time.time(), state="calling")
    elif isinstance(ev, ModelCallEndEvent):
        step = tr.by_id(f"step:{tr.steps}")
        if step is None:
            return False
        tr.add(
            "step",
            step["id"],
            state="done",
            elapsed=round(time.time() - float(step.get("started_at", time.time())), 3),
            input_tokens=ev.input_tokens,
            output_tokens=ev.output_tokens,
            cache_input_tokens=ev.cache_input_tokens,
        )
    elif isinstance(ev, ThinkingBlockStartEvent):
        tr.add("thinking", "thinking:" + ev.block_id)
    elif isinstance(ev, ThinkingBlockDeltaEvent):
        tr.grow(tr.add("thinking", "thinking:" + ev.block_id)["id"], ev.delta)
    elif isinstance(ev, TextBlockEndEvent):
        tr.end_text(ev.block_id, ev.text)
    elif isinstance(ev, ThinkingBlockEndEvent):
        tr.end_text("thinking:" + ev.block_id)
    elif isinstance(ev, HintBlockEvent):
        hint = ev.hint if isinstance(ev.hint, str) else "\n".join(getattr(b, "text", "") or "" for b in ev.hint)
        tr.add("hint", "hint:" + ev.block_id, text=no_reminder_tags(hint), source=hint_source(ev.source))
    elif isinstance(ev, DataBlockStartEvent):
        tr.add("data", "data:" + ev.block_id, media_type=ev.media_type, name=ev.name or "", bytes=0)
    elif isinstance(ev, DataBlockDeltaEvent):
        e = tr.add("data", "data:" + ev.block_id, media_type=ev.media_type)
        if ev.url:
            tr.add("data", e["id"], url=ev.url)
        elif ev.data:
            tr.add("data", e["id"], bytes=int(e.get("bytes", 0)) + len(ev.data) * 3 // 4)
    else:
        return False
    return True
