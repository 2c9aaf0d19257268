"""The transcript a reply widget shows above its pause cards.

A :class:`Transcript` is an ordered list of entries built from a reply's
stream: text blocks, tool calls (their input text as it streams), tool
results and notes. Its methods take plain values (block ids, tool call ids,
deltas), not AgentScope events, so the same transcript is built from
AgentScope's ``reply_stream`` here (:func:`~nb_hitl.session._transcript_events.record_event`
for what is not a delta), from AG-UI events by the remote client
(:class:`~nb_hitl.agui.turn.RunReader`) and from the service's stored messages
by the console (:meth:`Transcript.follow`); every owner sends its ops the same
way (:mod:`nb_hitl.widgets._transcript_feed`).

Each entry is a dict the page renders as is (``js/reply/transcript.ts``,
``TranscriptEntry``): ``{"kind": "text" | "tool_call" | "tool_result" |
"note", "id", "text", ...}``; tool entries add ``name`` and
``tool_call_id``, results a ``state`` (``running`` then AgentScope's
``ToolResultState`` value); in a team, ``agent`` names who wrote it. A text or
thinking entry streams as plain text; when its block ends it gets ``html``,
its Markdown rendered once and sanitised (:func:`nb_hitl.markdown.markdown_html`;
none for text that reads the same without HTML).

What the page gets of an entry is at most :data:`SHOWN_CHARS` characters of
its text (:func:`shown_entry`): a longer text (a 1 MB tool result, a tool
call that writes a file) is cut there, its ``more`` field says how many
characters are left out, and the page asks for the whole text only when the
person does (:func:`nb_hitl.entries.entry_text`). The kernel keeps every
character; the page, and the notebook it saves, stay light.

Streaming: every change is also recorded as an operation (``{"op": "add",
"entry"}``, ``{"op": "append", "id", "text"}``, ``{"op": "set", "id",
"fields"}``, where a field set to ``None`` is removed) that
:meth:`Transcript.take_ops` hands out once, numbered by
:attr:`Transcript.seq`, so the page receives what changed and never the
whole transcript again (see "Streaming" in ``docs/design.md``).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from .._agentscope import strip_system_reminders
from ..entries import SHOWN_CHARS, cut_text, shown_entry
from ..markdown import markdown_html
from ..model_config import model_error_hint

__all__ = ["MARKDOWN_KINDS", "Transcript", "no_reminder_tags"]

MARKDOWN_KINDS = ("text", "thinking")
"""Entry kinds whose text is the model's Markdown (rendered when they end)."""


def no_reminder_tags(text: str) -> str:
    """A finished result's text without AgentScope's ``<system-reminder>`` wrappers: the
    person reads what the model was told, not markup meant for the model."""
    if "<system-reminder>" not in text:
        return text
    return strip_system_reminders(text)


def final_html(text: str) -> str:
    """A final message shown in its own box (not as a transcript entry): its
    Markdown as sanitised HTML (:func:`~nb_hitl.markdown.markdown_html`), as a
    text block gets when it ends; ``""`` when it reads the same as plain text
    or is longer than the page's part (:data:`~nb_hitl.entries.SHOWN_CHARS`:
    the page shows that much as plain text)."""
    if len(text) > SHOWN_CHARS:
        return ""
    return markdown_html(text) or ""


def _extend(holder: dict[str, Any], delta: str) -> None:
    """``holder["text"] += delta`` in time linear in ``delta``, not in the text.

    ``d["text"] += delta`` copies the whole text on every delta (the dict
    keeps a reference), so a reply streamed in n deltas cost O(n²) (5× the
    deltas took 11× the time). Taken out of the dict first, the
    text's only reference is the local, and CPython extends it in place
    (``benchmarks/transcript_growth.py``)."""
    text = holder.pop("text")
    text += delta
    holder["text"] = text


class Transcript(list[dict[str, Any]]):
    """Entries of one reply, in the order they started (a ``list`` of entry dicts).

    Entry ids: a text block's AgentScope ``block_id``; ``call:<tool_call_id>``
    for a tool call; ``result:<tool_call_id>`` for its result;
    ``note:<n>`` for a note.
    """

    def __init__(self) -> None:
        super().__init__()
        self._by_id: dict[str, dict[str, Any]] = {}
        self._ops: list[dict[str, Any]] = []
        # the entry whose text the last pending op carries (an ``append`` op or
        # an ``add`` op's entry), and that holder: a delta to that entry only
        # extends it (the per-delta path of a streamed reply)
        self._tail_id: str | None = None
        self._tail: dict[str, Any] = {}
        self._ended: set[str] = set()  # text/thinking entries whose Markdown was rendered
        # by entry id: (the entry, its shown copy) as :meth:`view` last made it; dropped when it changes
        self._shown: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        #: model calls seen (``step:<n>`` entries), counted, never searched for
        self.steps = 0
        #: number of the last batch handed out by :meth:`take_ops` (0: none yet)
        self.seq = 0
        #: entries changed since the widget's ``transcript`` trait was last set
        self.trait_dirty = False
        #: whether changes are recorded as ops (False: nothing will take them,
        #: e.g. a session without a widget, so they are not kept)
        self.recording = True
        # streaming state of the session's widget (kept here: one per reply)
        self.last_flush = 0.0  # time.monotonic() of the last stream message
        self.first_change: float | None = None  # of the oldest change not sent yet
        self.last_change = 0.0
        self.timer: Any = None
        #: characters of streamed text (deltas) recorded so far
        self.streamed = 0
        #: estimated bytes the stream messages sent so far cost beyond their text
        self.overhead = 0

    def view(self) -> list[dict[str, Any]]:
        """The entries as the page gets them (:func:`shown_entry`), for the
        widget's ``transcript`` trait.

        Only the entries changed since the last call are copied again; the
        others are the very dicts returned before (so the work per call, and
        traitlets' comparison of the old value with the new, follow what
        changed rather than the reply's length). The dicts must not be
        changed in place.
        """
        self.trait_dirty = False
        shown = self._shown
        out = []
        for e in self:
            known = shown.get(e["id"])
            if known is None or known[0] is not e:
                known = shown[e["id"]] = (e, shown_entry(e))
            out.append(known[1])
        return out

    def _changed(self, key: str) -> None:
        """The entry ``key`` changed: the widget's record is out of date, and so is its shown copy."""
        self.trait_dirty = True
        self._shown.pop(key, None)

    @property
    def pending(self) -> bool:
        """Whether changes wait to be handed out by :meth:`take_ops`."""
        return bool(self._ops)

    def take_ops(self) -> tuple[int, list[dict[str, Any]]]:
        """The changes since the last call, as ``(seq, ops)``; ``seq`` grows by
        one per non-empty batch. Consecutive appends to one entry are merged."""
        ops, self._ops = self._ops, []
        self._tail_id = None
        if ops:
            self.seq += 1
        return self.seq, ops

    def _record(self, op: dict[str, Any]) -> None:
        self._changed(op["id"] if "id" in op else op["entry"]["id"])
        if not self.recording:
            return
        last = self._ops[-1] if self._ops else None
        same = last is not None and op["op"] != "add" and (last.get("id") or last["entry"]["id"]) == op["id"]
        if same and op["op"] == "append" and last is not None and last["op"] in ("append", "add"):
            # the entry was added in this batch: its add op carries its text
            _extend(last if last["op"] == "append" else last["entry"], op["text"])
            return
        if same and op["op"] == "set" and last is not None and last["op"] in ("set", "add"):
            # e.g. the count of characters past the shown part, once per delta
            if last["op"] == "set":
                last["fields"].update(op["fields"])
            else:  # the entry as added: a field set to None is left out
                for key, value in op["fields"].items():
                    if value is None:
                        last["entry"].pop(key, None)
                    else:
                        last["entry"][key] = value
            return
        self._ops.append(op)
        if op["op"] == "append":
            self._tail_id, self._tail = op["id"], op
        elif op["op"] == "add":
            self._tail_id, self._tail = op["entry"]["id"], op["entry"]
        else:
            self._tail_id = None

    def _entry(self, kind: str, key: str, **fields: Any) -> dict[str, Any]:
        e = self._by_id.get(key)
        if e is None:
            e = {"kind": kind, "id": key, "text": "", **fields}
            self._by_id[key] = e
            self.append(e)
            self._record({"op": "add", "entry": shown_entry(e)})
        return e

    def _append(self, e: dict[str, Any], delta: str) -> None:
        if not delta:
            return
        if e["id"] in self._ended:  # more text after its end: render it again when it ends
            self._reopen(e)
        before = len(e["text"])
        _extend(e, delta)
        self.streamed += len(delta)
        if before + len(delta) <= SHOWN_CHARS:
            if self._tail_id == e["id"]:  # the pending op of this entry takes it too
                self._changed(e["id"])
                _extend(self._tail, delta)
                return
            self._record({"op": "append", "id": e["id"], "text": delta})
            return
        # past the shown part: the page gets what fills it, then only the count left out
        if before < SHOWN_CHARS:
            self._record({"op": "append", "id": e["id"], "text": delta[: SHOWN_CHARS - before]})
        self._record({"op": "set", "id": e["id"], "fields": {"more": len(e["text"]) - SHOWN_CHARS}})

    def grow(self, key: str, delta: str) -> None:
        """Append ``delta`` to the text of the entry ``key`` (of any kind), as an ``append``
        op: what a text, a tool call's input or a result does with a delta.

        Raises:
            KeyError: there is no entry ``key``.
        """
        self._append(self._by_id[key], delta)

    def _set(self, e: dict[str, Any], **fields: Any) -> None:
        changed = {k: v for k, v in fields.items() if e.get(k) != v}
        if not changed:
            return
        self._shown.pop(e["id"], None)  # even when the page's part stays the same (an ``html`` of a cut text)
        was_cut = len(e["text"]) > SHOWN_CHARS
        for key, value in changed.items():  # a field set to None is removed, as the page removes it
            if value is None:
                e.pop(key, None)
            else:
                e[key] = value
        shown = dict(changed)
        if "text" in changed:
            shown["text"], more = cut_text(changed["text"])
            if more or was_cut:
                shown["more"] = more
            if "html" not in changed and "html" in e:  # the old rendering is not this text's
                del e["html"]
                shown["html"] = None
        if shown.get("html") is not None and len(e["text"]) > SHOWN_CHARS:
            del shown["html"]  # not the Markdown of the part shown
        if shown:
            self._record({"op": "set", "id": e["id"], "fields": shown})

    def _reopen(self, e: dict[str, Any]) -> None:
        """A text or thinking entry gets text after its end (a direct call;
        AgentScope starts a new block instead): its ``html`` is no longer the
        rendering of its text, so it is dropped (a ``set`` op with ``html:
        None``; the page removes a field set to null) and :meth:`finish`
        renders it again."""
        self._ended.discard(e["id"])
        if "html" in e:
            del e["html"]
            self._record({"op": "set", "id": e["id"], "fields": {"html": None}})

    def final_entry(self, final_text: str) -> str | None:
        """The id of the last text entry if its text is exactly ``final_text``
        (the reply's final message as streamed), else ``None``."""
        for e in reversed(self):
            if e["kind"] == "text":
                return str(e["id"]) if final_text and e["text"] == final_text else None
        return None

    def by_id(self, entry_id: str) -> dict[str, Any] | None:
        """The entry ``entry_id`` (``None`` if there is none), in constant time."""
        return self._by_id.get(entry_id)

    def call_name(self, tool_call_id: str) -> str:
        """The tool name of a call seen in this transcript (``""`` if unknown)."""
        call = self._by_id.get("call:" + tool_call_id)
        return str(call.get("name", "")) if call else ""

    def text(self, block_id: str, delta: str = "") -> dict[str, Any]:
        """Start a text block (``delta=""``) or append ``delta`` to it."""
        e = self._entry("text", block_id)
        self._append(e, delta)
        return e

    def tool_call(self, tool_call_id: str, name: str | None = None, input_text: str = "") -> dict[str, Any]:
        """Start a tool call entry, or append ``input_text`` (streamed JSON) to it.

        Args:
            tool_call_id: AgentScope's / AG-UI's tool call id.
            name: the tool's name, when known (set on the first call only).
            input_text: a delta of the call's input JSON text.
        """
        fields: dict[str, Any] = {"tool_call_id": tool_call_id}
        if name is not None:
            fields = {"name": name, **fields}
        e = self._entry("tool_call", "call:" + tool_call_id, **fields)
        self._append(e, input_text)
        return e

    def tool_result(
        self,
        tool_call_id: str,
        delta: str = "",
        state: str | None = None,
        name: str | None = None,
        text: str | None = None,
    ) -> dict[str, Any]:
        """Start, extend or end the result entry of a tool call.

        Args:
            tool_call_id: the call the result answers.
            delta: text to append.
            state: ``"running"`` when the result starts, AgentScope's
                ``ToolResultState`` value (``"success"``, ``"error"``,
                ``"interrupted"``...) when it ends.
            name: the tool's name (defaults to the call's name seen earlier).
            text: the whole text, replacing what was streamed (the result as
                the model reads it once nb_hitl's note replaced AgentScope's).
        """
        e = self._entry(
            "tool_result",
            "result:" + tool_call_id,
            name=name if name is not None else self.call_name(tool_call_id),
            tool_call_id=tool_call_id,
        )
        self._append(e, delta)
        if text is not None:
            self._set(e, text=text)
        if state is not None:
            self._set(e, state=state)
            if state != "running":
                self._set(e, text=no_reminder_tags(e["text"]))
        return e

    def not_run(self, tool_call_id: str, reason: str) -> None:
        """An approved call the guard did not run (``session._promise``): its result entry ends
        ``"not run"`` with ``reason`` (what a person reads of it) as its text."""
        self.tool_result(tool_call_id, state="not run", text=reason)

    def asked_again(self, was: str, tool_call: Any, reason: str) -> None:
        """An approved call that did not run, asked again under a fresh id (``session._promise.ask_again``).

        The approved call's result entry ends ``"not run"`` with ``reason`` as
        its text, and the fresh call gets a tool call entry of its own, placed
        now, where the call is in the reply: the page draws the fresh call's
        card in that entry's slot (the model never sent the fresh id, so no
        stream event makes that entry). Asked again after a restore, the
        entry is not added twice.

        Args:
            was: the approved call's id.
            tool_call: AgentScope's ``ToolCallBlock`` under the fresh id (``id``,
                ``name``, ``input``: the JSON text it would run with).
            reason: why the approved call did not run, as its card says it.
        """
        self.not_run(was, reason)
        if self.by_id("call:" + tool_call.id) is None:
            self.tool_call(tool_call.id, tool_call.name, str(tool_call.input or ""))

    def end_text(self, key: str, text: str | None = None) -> None:
        """A text or thinking block ended: render its Markdown once, as the
        entry's ``html`` (a ``set`` op; the page swaps the plain text for it).
        Text that reads the same without HTML gets none and stays plain.

        Args:
            key: the entry's id (a text block's ``block_id``, ``thinking:<block_id>``).
            text: the block's final text when it is not what streamed
                (AgentScope's ``TextBlockEndEvent.text``); replaces the entry's text.

        Unknown keys and entries of other kinds are left alone.
        """
        e = self._by_id.get(key)
        if e is None or e["kind"] not in MARKDOWN_KINDS:
            return
        if text is not None:
            self._set(e, text=text)
        self._ended.add(key)
        if len(e["text"]) > SHOWN_CHARS:
            return  # the page shows a part of it, as plain text
        html = markdown_html(e["text"])
        if html is not None:
            self._set(e, html=html)

    def finish(self, error: BaseException | None = None) -> None:
        """End what the stream left open when it stopped (a reply cancelled or
        failed mid-block): every text or thinking entry whose end never came is
        rendered (those rendered already are kept), and a model call still
        ``calling`` stops its clock: ``failed`` (with ``error``, the error's
        class name) or ``stopped`` (cancelled), with its ``elapsed`` seconds.
        A failed model call that a setting fixes (a rejected key, no server)
        gets a note naming it (:func:`~nb_hitl.model_config.model_error_hint`).

        Args:
            error: why the stream stopped; by default the exception being
                raised through the caller's ``finally`` (``sys.exc_info()``),
                None when it ended normally.
        """
        if error is None:
            error = sys.exc_info()[1]
        for e in self:
            if e["kind"] in MARKDOWN_KINDS and e["id"] not in self._ended:
                self.end_text(e["id"])
        step = self.by_id(f"step:{self.steps}")
        if step is None or step.get("state") != "calling":
            return
        elapsed = round(time.time() - float(step.get("started_at", time.time())), 3)
        if error is None or isinstance(error, asyncio.CancelledError):
            self._set(step, state="stopped", elapsed=elapsed)
            return
        self._set(step, state="failed", elapsed=elapsed, error=type(error).__name__)
        hint = model_error_hint(error)
        if hint is not None:
            self.note(hint)

    def label(self, entry_id: str, agent: str) -> bool:
        """Name the agent that wrote the entry ``entry_id`` (its ``agent``
        field, a ``set`` op) unless it is named already.

        Returns:
            whether the entry changed (False when there is no such entry).
        """
        e = self._by_id.get(entry_id)
        if e is None or "agent" in e:
            return False
        self._set(e, agent=agent)
        return True

    def note(self, text: str) -> dict[str, Any]:
        """Append a note (e.g. "The agent reached its iteration limit.")."""
        return self.add("note", f"note:{len(self)}", text=text)

    def add(self, kind: str, key: str, **fields: Any) -> dict[str, Any]:
        """Add an entry of any ``kind`` (``thinking``, ``step``, ``hint``, ``data``...)
        or update the fields of the entry ``key`` if it exists."""
        e = self._by_id.get(key)
        if e is None:
            return self._entry(kind, key, **fields)
        self._set(e, **fields)
        return e

    def follow(self, entries: list[dict[str, Any]]) -> None:
        """Bring the transcript to ``entries``, read whole (the service console's
        ``/messages``, :func:`nb_hitl.service.transcript.transcript_entries`), as ops:
        an entry new here is added, a text that grew is appended to, a text that
        changed otherwise and every other changed field are set (a field gone from
        the entry is set to ``None``: removed). Entries read as before record
        nothing, so a re-read that changed nothing sends nothing.

        An entry held here but missing from ``entries`` is kept (a read is a
        window of the stored messages: what is outside it still happened); one
        read again keeps its place.

        Args:
            entries: ``{"kind", "id", "text", ...}`` dicts, in order.
        """
        for new in entries:
            kind, key, text = new["kind"], str(new["id"]), str(new.get("text") or "")
            fields = {k: v for k, v in new.items() if k not in ("kind", "id", "text")}
            e = self._by_id.get(key)
            if e is None:
                self._entry(kind, key, text=text, **fields)
                continue
            if text != e["text"]:
                if text.startswith(e["text"]):
                    self._append(e, text[len(e["text"]) :])
                else:
                    self._set(e, text=text)
            gone = {k: None for k in e if k not in ("kind", "id", "text") and k not in fields}
            self._set(e, **fields, **gone)
