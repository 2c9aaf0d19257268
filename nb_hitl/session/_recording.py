"""What a recorded session holds, read back for a replay (pure reading, no side effects).

A :class:`Recording` is read from the agent's memory (``AgentState.context``:
the user messages, the model's text and tool calls, every tool's result, from
a checkpoint or a live agent) plus the session's audit log (the answer to
each pause and the permission check of each call, keyed by ``tool_call_id``;
:mod:`nb_hitl.answers.record`).

The model's turns are cut from the assistant messages: a turn is the text and
tool calls the model gave on one call; a tool result ends it (the next text or
call is the next model call). A call's input is the one the model sent (an
answer that modified it keeps the model's original in the audit line's
``original_input``).

An approval the guard refused (:mod:`nb_hitl.session._promise`: the input or
the file changed after it) left an ``input_changed`` / ``file_changed`` line
by ``nb_hitl`` (:attr:`Recording.refused`). A call asked again under a fresh
id holds only that id in the memory; its turn is read with the id the model
gave (:meth:`Recording.first_id`), so a replay asks the approved call, gives
its recorded answer, and asks it again as the live session did.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from agentscope.message import Msg, ToolCallBlock, ToolResultBlock
from agentscope.state import AgentState

from .._agentscope import blocks_text, enum_value
from ..answers.record import NOT_ANSWERS, event_of
from ..errors import NbHitlError
from ..models import ScriptItem, ToolCallSpec, Turn, result_shown, tool_results
from ..store import AuditLog, CheckpointStore
from ..team import states_from_checkpoint

__all__ = ["GUARD_REFUSALS", "Recording", "answer_message", "answer_note", "parsed_input", "whole"]

GUARD_REFUSALS = frozenset({"input_changed", "file_changed"})
"""The ``decision`` of nb_hitl's audit line about an approved call the guard did not run
(:data:`~nb_hitl.answers.record.NOT_ANSWERS`; :mod:`nb_hitl.session._not_run`)."""

_MISSING = object()


@dataclass
class Recording:
    """One recorded session, ready to be played again.

    Attributes:
        agent_name: the recorded agent's name.
        prompts: the user messages sent to it, oldest first.
        turns: the model's turns (:class:`~nb_hitl.models.Turn`, with the
            recorded tool call ids), oldest first.
        results: the ``ToolResultBlock`` each call returned, by ``tool_call_id``.
        ran: the input each call ran with (the edited one after a Modify), by ``tool_call_id``.
        answers: the audit line of the answer each pause got, by ``tool_call_id``
            (the last answer a person or a deadline gave).
        history: every answer's audit line, by ``tool_call_id``, oldest first (a
            reviewed call that asked first has two: its confirmation's, its review's).
        checks: the audit line of each call's permission check, by ``tool_call_id``.
        refused: nb_hitl's line about an approved call the guard did not run
            (``decision`` ``input_changed`` or ``file_changed``, ``reason`` what
            the card said), by ``tool_call_id``: the fresh id of a call asked
            again (``approved_tool_call_id`` names the approved one), else the
            approved call's own id (refused and not asked again).
        tools: the names of the tools the model called, in order of first use.
    """

    agent_name: str
    prompts: list[Msg] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    results: dict[str, ToolResultBlock] = field(default_factory=dict)
    ran: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: dict[str, dict[str, Any]] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)

    # -- reading -----------------------------------------------------------
    @classmethod
    def load(
        cls,
        checkpoints: str | os.PathLike[str] | CheckpointStore,
        session_id: str | None = None,
        audit_log: str | os.PathLike[str] | AuditLog | None = None,
    ) -> Recording:
        """Read a recording from a session's checkpoint and audit log.

        Args:
            checkpoints: the checkpoint folder or store the session wrote.
            session_id: which checkpoint; the newest when omitted.
            audit_log: the session's audit log (path or
                :class:`~nb_hitl.store.AuditLog`); without it no pause has a
                recorded answer and every call is replayed as allowed.

        Raises:
            FileNotFoundError: no checkpoint.
            CheckpointIntegrityError: the checkpoint was changed after it was written.
            NbHitlError: the checkpoint is a team's (a team is not replayed), or
                its context was compressed (:func:`whole`).
        """
        store = checkpoints if isinstance(checkpoints, CheckpointStore) else CheckpointStore(checkpoints)
        session_id = store.session(session_id)
        record = store.load(session_id)
        state = states_from_checkpoint(record["state"])
        if not isinstance(state, AgentState):
            raise NbHitlError("This checkpoint is a team's; a replay plays one agent's session.")
        whole(state)
        log = audit_log if audit_log is None or isinstance(audit_log, AuditLog) else AuditLog(audit_log)
        lines = [r for r in log.records() if r.get("session_id") in (None, session_id)] if log else []
        return cls.read(str(record.get("agent_name") or "agent"), state.context, lines)

    @classmethod
    def from_agent(cls, agent: Any, audit_log: str | os.PathLike[str] | AuditLog | None = None) -> Recording:
        """Read a recording from a live ``Agent``'s memory and an audit log (every line of it).

        Raises:
            NbHitlError: the agent's context was compressed (:func:`whole`).
        """
        whole(agent.state)
        log = audit_log if audit_log is None or isinstance(audit_log, AuditLog) else AuditLog(audit_log)
        return cls.read(agent.name, agent.state.context, log.records() if log else [])

    @classmethod
    def read(cls, agent_name: str, context: Iterable[Msg], audit: Iterable[Mapping[str, Any]] = ()) -> Recording:
        """Build a recording from an agent's context (``AgentState.context``) and audit lines.

        Args:
            agent_name: the agent whose assistant messages are its turns.
            context: the agent's messages, oldest first.
            audit: the audit log's records, oldest first.
        """
        rec = cls(agent_name=agent_name)
        for line in audit:
            call_id = line.get("tool_call_id")
            if not isinstance(call_id, str):
                continue
            if event_of(dict(line)) == "checked":
                rec.checks[call_id] = dict(line)
            elif line.get("decision") in GUARD_REFUSALS:
                rec.refused[call_id] = dict(line)
            elif line.get("decision") not in NOT_ANSWERS:
                rec.answers[call_id] = dict(line)
                rec.history.setdefault(call_id, []).append(dict(line))
        for msg in context:
            if msg.role == "user":
                rec.prompts.append(msg.model_copy(deep=True))
            elif msg.role == "assistant" and msg.name == agent_name:
                rec._read_reply(msg)
        return rec

    def _read_reply(self, msg: Msg) -> None:
        blocks = [msg.content] if isinstance(msg.content, str) else list(msg.content)
        text: list[str] = []
        calls: list[ToolCallSpec] = []
        seen_result = False

        def close() -> None:
            if text or calls:
                self.turns.append(Turn(" ".join(t for t in text if t), tuple(calls)))
            text.clear()
            calls.clear()

        for block in blocks:
            kind = "text" if isinstance(block, str) else getattr(block, "type", None)
            if kind in ("text", "tool_call") and seen_result:
                close()
                seen_result = False
            if kind == "text":
                text.append(block if isinstance(block, str) else str(getattr(block, "text", "")))
            elif kind == "tool_call" and isinstance(block, ToolCallBlock):
                calls.append(ToolCallSpec(name=block.name, input=self._model_input(block), id=self.first_id(block.id)))
                self.ran[block.id] = parsed_input(block.input)
                if block.name not in self.tools:
                    self.tools.append(block.name)
            elif kind == "tool_result" and isinstance(block, ToolResultBlock):
                self.results[block.id] = block.model_copy(deep=True)
                seen_result = True
        close()

    def _model_input(self, block: ToolCallBlock) -> dict[str, Any]:
        original = self.answers.get(self.first_id(block.id), {}).get("original_input")
        if isinstance(original, dict):  # a modified call: the model sent the original
            return original
        try:
            got = json.loads(block.input or "{}")
        except ValueError:
            got = None
        return got if isinstance(got, dict) else {}

    def upto(self, prompts: int) -> Recording:
        """The same record, playing only its first ``prompts`` user messages
        (a reply's "Replay" plays the session up to that reply)."""
        return replace(self, prompts=self.prompts[: max(prompts, 0)])

    def script(self) -> list[ScriptItem]:
        """The replay model's script (:class:`~nb_hitl.models.ScriptedChatModel`):
        the recorded turns, in order.

        A turn that quoted a tool result it had just read (the result's whole
        text is in the turn's text: "I read: The counter is now 2.") is a
        callable turn that quotes what that call returned *now*, when it
        differs: after a what-if's other answer (a denial) or with the tools
        live (``fork(..., live=True)``) the model says what it read, not what
        it read then. A turn that followed results it did not quote whole
        (it quoted part of one, or only its state) is played as recorded, and
        when one of those results is not what it was then, the text says so
        (:data:`OUTDATED`): the person and the model read it as the recorded
        reply, which may no longer follow.
        """
        script: list[ScriptItem] = []
        before: tuple[str, ...] = ()
        for turn in self.turns:
            quoted = {
                cid: then for cid in before if (then := result_shown(self.results.get(cid))) and then in turn.text
            }
            followed = {cid: block for cid in before if cid not in quoted and (block := self.results.get(cid))}
            script.append(partial(requoted, turn, quoted, followed) if quoted or followed else turn)
            before = tuple(c.id for c in turn.tool_calls if c.id)
        return script

    # -- questions ---------------------------------------------------------
    def first_id(self, tool_call_id: str) -> str:
        """The id the model gave a call that the guard asked again (maybe more than once) under
        ``tool_call_id``; ``tool_call_id`` itself for any other call."""
        seen = {tool_call_id}
        while isinstance(was := self.refused.get(tool_call_id, {}).get("approved_tool_call_id"), str):
            if was in seen:
                break  # a record that loops names no first id
            seen.add(was)
            tool_call_id = was
        return tool_call_id

    def asked_again_as(self, tool_call_id: str) -> tuple[str, dict[str, Any]] | None:
        """``(fresh id, nb_hitl's audit line)`` when the guard asked the approved call
        ``tool_call_id`` again under a fresh id, else ``None``."""
        return next(
            (
                (fresh, line)
                for fresh, line in self.refused.items()
                if line.get("approved_tool_call_id") == tool_call_id
            ),
            None,
        )

    def not_run(self, tool_call_id: str) -> dict[str, Any] | None:
        """nb_hitl's audit line of an approved call the guard refused and did not ask again, or ``None``."""
        line = self.refused.get(tool_call_id)
        return line if line is not None and "approved_tool_call_id" not in line else None

    def pauses(self) -> list[str]:
        """The ``tool_call_id`` of every pause with a recorded answer, oldest first."""
        return sorted(self.answers, key=lambda cid: float(self.answers[cid].get("ts") or 0))

    def answer_for(self, tool_call_id: str, kind: str | None = None) -> dict[str, Any] | None:
        """The audit line of the answer a pause got: the last one of this call
        of ``kind`` (``confirm``, ``review``...; a line with no kind, version
        1, counts for any), or the call's last answer when ``kind`` is ``None``."""
        if kind is None:
            return self.answers.get(tool_call_id)
        lines = self.history.get(tool_call_id, [])
        return next((line for line in reversed(lines) if line.get("kind") in (kind, None)), None)

    def behavior(self, tool_call_id: str) -> str | None:
        """What the permission check decided for a recorded call: ``"ask"``
        when the pause was a confirmation, else the checked line's decision
        (``allow``, ``deny``), ``None`` when the log says nothing of it."""
        answer = self.answer_for(tool_call_id, "confirm")
        if answer is not None and answer.get("kind") == "confirm":
            return "ask"
        check = self.checks.get(tool_call_id)
        got = check.get("decision") if check else None
        return str(got) if got in ("allow", "ask", "deny") else None

    def result_state(self, tool_call_id: str) -> str | None:
        """The recorded result's state (``success``, ``error``, ``interrupted``...), or ``None``."""
        block = self.results.get(tool_call_id)
        return None if block is None else str(enum_value(block.state))


OUTDATED = (
    "\n\n(What if: this is the reply recorded then, written after {then}. In this what-if {now}, "
    "so this text may no longer follow from it.)"
)
"""Added to a recorded turn played after results that differ from the ones it was written after."""


def requoted(
    turn: Turn, quoted: Mapping[str, str], followed: Mapping[str, ToolResultBlock], messages: list[Msg]
) -> Turn:
    """``turn`` with each tool result it quoted (``quoted``: the recorded
    text, by ``tool_call_id``) replaced by what that call returned in
    ``messages`` (what the model is sent now), where the two differ; when a
    result it followed without quoting it (``followed``: the recorded
    ``ToolResultBlock``, by ``tool_call_id``) differs now, :data:`OUTDATED`
    says so (by tool name: no ids in a text a person reads)."""
    sent = {b.id: b for b in tool_results(messages) if b.id in quoted or b.id in followed}
    text = turn.text
    for call_id, then in quoted.items():
        if call_id in sent and (now := result_shown(sent[call_id])) != then:
            text = text.replace(then, now)
    was, became = [], []
    for call_id, recorded in followed.items():
        block = sent.get(call_id)
        if block is None or (result_shown(block) == result_shown(recorded) and block.state == recorded.state):
            continue
        state_then, state_now = enum_value(recorded.state), enum_value(block.state)
        was.append(f"{recorded.name} ended {state_then}")
        became.append(
            f"{block.name} ended {state_now}" if state_now != state_then else f"{block.name} returned another result"
        )
    if was:
        text += OUTDATED.format(then=", ".join(was), now=", ".join(became))
    return replace(turn, text=text)


def parsed_input(text: str | None) -> dict[str, Any] | None:
    """A tool call's argument text as a JSON object, or ``None`` when it is not one."""
    try:
        got = json.loads(text or "{}")
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def whole(state: AgentState) -> None:
    """Check that an agent's memory still holds the whole session.

    Raises:
        NbHitlError: AgentScope compressed the context (``AgentState.summary``
            is set): the earlier turns are gone, so a replay would start in
            the middle and read the wrong turns.
    """
    if state.summary:
        raise NbHitlError(
            "This session's context was compressed (AgentScope summarised its earlier turns), "
            "so it cannot be replayed: the record no longer holds every turn."
        )


def answer_message(line: Mapping[str, Any], result: ToolResultBlock | None = None) -> dict[str, Any] | None:
    """The page message that gives again the answer an audit line records, or
    ``None`` when that answer cannot be given from the record (an MCP
    elicitation's; a form's or an edited review's without the call's
    recorded ``result``, which holds the submitted value or the edited text).

    The message goes through the same front door as a click
    (:mod:`nb_hitl.answers.front`)."""
    call_id, decision = line.get("tool_call_id"), line.get("decision")
    base: dict[str, Any] = {"tool_call_id": call_id}
    if line.get("kind") == "review":
        if decision == "accept":
            return {**base, "action": "accept"}
        if decision == "edit" and result is not None:
            return {**base, "action": "edit", "output": blocks_text(result.output)}
        if decision == "reject":
            reason = line.get("reason")
            return {**base, "action": "reject", **({"reason": reason} if isinstance(reason, str) else {})}
        return None
    if line.get("kind") == "form":
        value = (result.metadata or {}).get("value", _MISSING) if result is not None else _MISSING
        return {**base, "action": "submit", "value": value} if decision == "submit" and value is not _MISSING else None
    if decision == "approve":
        return {**base, "action": "approve"}
    if decision in ("deny", "timeout"):
        reason = line.get("reason")
        cause = "timeout" if decision == "timeout" else "person"
        return {**base, "action": "deny", "cause": cause, **({"reason": reason} if isinstance(reason, str) else {})}
    if decision == "modify" and isinstance(line.get("edited_input"), dict):
        return {**base, "action": "modify", "input": json.dumps(line["edited_input"], ensure_ascii=False)}
    if decision == "answer" and isinstance(line.get("answers"), list):
        return {**base, "action": "answer", "answers": line["answers"]}
    if decision == "external_result" and isinstance(line.get("output"), str):
        return {**base, "action": "external_result", "output": line["output"]}
    return None


def answer_note(line: Mapping[str, Any]) -> str:
    """One sentence saying what was answered then: ``"Recorded answer: approve,
    by ada, 2026-12-02 12:38:51 UTC."`` (with the answers or the reason when given)."""
    when = line.get("ts")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(when))) if isinstance(when, int | float) else None
    who = line.get("decided_by") or line.get("who")
    said = f"Recorded answer: {line.get('decision')}"
    if isinstance(line.get("answers"), list):
        picked = [", ".join(a.get("selected") or []) or a.get("other") or "" for a in line["answers"]]
        said += f" ({'; '.join(p for p in picked if p)})"
    if isinstance(line.get("edited_input"), dict):
        said += f" with input {json.dumps(line['edited_input'], ensure_ascii=False)}"
    if isinstance(line.get("reason"), str):
        said += f" (reason: {line['reason']})"
    return said + "".join(f", {part}" for part in (f"by {who}" if who else None, stamp) if part) + "."
