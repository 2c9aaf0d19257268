"""What runs is what was approved, and the model hears what a person did.

* :class:`ApprovalGuard`, an ``on_acting`` middleware the Session installs
  *innermost* (:func:`nb_hitl._agentscope.install_innermost_acting`), so it
  sees the ``tool_call`` right before ``Toolkit.call_tool`` runs it, after
  every other middleware could rewrite it. A call a person approved runs
  only when AgentScope's reading of its input is the approved input. When a
  middleware changed the input after the approval, the call is asked again
  (:func:`ask_again`): nothing runs, the call goes back to ``asking`` with the
  changed input under a fresh id, and the reply parks; the Session shows it
  as a new pause (every road keeps "answered once" per call id, so a second
  question is a new call id) and expires the approved one, the audit log
  says why, and once the call has its result the model reads what happened
  in a hint. A changed tool name, unreadable arguments or a
  changed input a deny rule covers are refused: the model gets a DENIED
  result saying why. An approval of a file-editing call is bound to the
  file whose diff the person was shown (its SHA-256, :mod:`nb_hitl.file_change`):
  the card's, or for a Modify that retargets the call the preview's of exactly
  that edit (:func:`nb_hitl.kinds.confirm.modify_binding`; unpreviewed, only the
  card's file is bound, checked while the call still writes it). When the file changed since, nothing runs
  (what the file held in between is not overwritten) and the call is asked
  again the same way, with the diff against the file as it is now; but a
  tool that reads before it writes
  (:func:`~nb_hitl.file_change.read_before_write`: AgentScope's ``Edit`` and
  ``Write``) would refuse that call on an existing file the model has not
  read since, so it is not asked again: the model gets a DENIED result
  saying the file changed after its card was drawn, in the tool's own words that
  it must read the file first, and the card and transcript say
  :data:`NOT_RUN_KEY`'s text.
* :func:`record_decision` writes the approved input and the note for the
  model into ``AgentState.middle_context`` when a confirmation is handed
  to the agent (so both survive a checkpoint).
* :func:`apply_note` puts a note instead of the call's saved tool result
  text (a deadline or a cancelled pause is not reported as the user's
  denial; a denial with a reason says who denied the call and why);
  :func:`flush_hints` (the guard's ``on_reasoning``) adds the other notes
  as a ``HintBlock`` before the next model call: after Modify the model
  reads that a person changed the call and from what to what.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from agentscope.message import HintBlock, TextBlock, ToolCallState, ToolResultState
from agentscope.middleware import MiddlewareBase
from agentscope.tool import ToolChunk, ToolResponse

from .._agentscope import (
    APPROVAL_CONTEXT_KEY,
    NOTES_CONTEXT_KEY,
    RUNNING_CALL,
    agentscope_tool_input,
    blocks_text,
    enum_value,
    find_tool_result,
    install_innermost_acting,
    install_outermost_model_call,
    install_reasoning,
    permission_engine,
    strip_system_reminders,
)
from ..file_change import planned_change, read_before_write, sha256_of
from ..kinds import Decision
from ..kinds._reading import canonical, visible_json
from ..kinds.confirm import allowed_decisions
from ._call_ids import CallIdGuard, context_call_ids, flush_rename_hints, fresh_id
from ._run import DELIVERED_CONTEXT_KEY

__all__ = [
    "ApprovalGuard",
    "install_guard",
    "note",
    "record_decision",
    "apply_note",
    "flush_hints",
    "allowed_decisions",
    "ask_again",
    "asked_again",
    "REFUSED_KEY",
    "NOT_RUN_KEY",
    "ASKED_AGAIN_CONTEXT_KEY",
]

REFUSED_KEY = "nb_hitl.refused"
"""``ToolResultEndEvent.metadata`` key set when the guard refused to run a call (its cause)."""

NOT_RUN_KEY = "nb_hitl.not_run"
"""``ToolResultEndEvent.metadata`` key: what the approved card, the transcript and the audit log say
of a call the guard refused and does not ask again, when a person should read why (no call ids)."""

ASKED_AGAIN_CONTEXT_KEY = "nb_hitl.asked_again"
"""Key in ``AgentState.middle_context``: ``{new tool_call id: {"was": the approved
call's id, "tool", "approved", "runs", "audited", "cause", "path", "edit", "first"}}``: calls
whose input a middleware changed (``cause`` ``"input_changed"``) or whose file
changed (``"file_changed"``, ``path``) after their approval and that
:func:`ask_again` put back to ``asking`` under a fresh id (the inputs as
shown; ``edit``: ``{"sent", "edited"}`` when the approved input was a person's Modify,
the model's own input and the edit, else ``None``; ``first``: the model's own id of the call
when it was asked again more than once); removed once the call has its result and
the model was told (what the person changed too)."""


def _entries(agent: Any, key: str) -> dict[str, Any]:
    ctx = agent.state.middle_context
    entries = ctx.get(key)
    if not isinstance(entries, dict):
        entries = {}
        ctx[key] = entries
    return entries


def install_guard(agent: Any) -> None:
    """Install :class:`ApprovalGuard` as ``agent``'s innermost ``on_acting`` middleware and as an
    ``on_reasoning`` middleware, and :class:`~nb_hitl.session._call_ids.CallIdGuard` as its
    outermost ``on_model_call`` middleware (a reused tool call id gets a fresh one); idempotent."""
    guard = ApprovalGuard()
    install_innermost_acting(agent, guard)
    install_reasoning(agent, guard)
    install_outermost_model_call(agent, CallIdGuard())


def record_decision(agent: Any, decision: Decision, tool_name: str) -> None:
    """Remember what ``decision`` approved and what the model should read about it.

    Called when the decision is handed to the agent. Writes
    ``middle_context["nb_hitl.approved"][id] = {"tool", "input", "file"?}``
    (canonical JSON; ``file``: the ``{"path", "sha256"}`` the card's diff
    was computed on) for an approval and ``middle_context["nb_hitl.notes"][id]`` for a note;
    adds "Always deny" rules through the agent's permission engine
    (``PermissionEngine.add_rule``).
    """
    if decision.approved_input is not None:
        entry: dict[str, Any] = {"tool": tool_name, "input": canonical(decision.approved_input)}
        if decision.seen_file is not None:
            entry["file"] = dict(decision.seen_file)
        _entries(agent, APPROVAL_CONTEXT_KEY)[decision.tool_call_id] = entry
    for rule in decision.deny_rules:  # "Always deny": AgentScope ignores rules sent with a denial
        permission_engine(agent).add_rule(rule.model_copy(deep=True))
    if decision.note:
        note(agent, decision.tool_call_id, decision.note, replace=decision.note_replaces)
        if decision.sent_input is not None:  # a Modify: the call asked again keeps what the person changed
            _entries(agent, NOTES_CONTEXT_KEY)[decision.tool_call_id]["edit"] = {
                "sent": decision.sent_input,
                "edited": decision.approved_input,
            }


def note(agent: Any, tool_call_id: str, text: str, *, replace: bool = True) -> None:
    """Record what the model reads about ``tool_call_id`` once its result is
    saved (``middle_context["nb_hitl.notes"]``, see :func:`apply_note`):
    instead of AgentScope's text (``replace``) or after it; a Modify's note also
    keeps ``"edit": {"sent", "edited"}`` (:func:`record_decision`, read by :func:`ask_again`)."""
    _entries(agent, NOTES_CONTEXT_KEY)[tool_call_id] = {"text": text, "replace": replace}


def apply_note(agent: Any, tool_call_id: str) -> str | None:
    """Handle the note recorded for ``tool_call_id`` once its result is saved.

    Call it on the call's ``ToolResultEndEvent`` (AgentScope saved the
    result just before; the next model call has not happened yet). A
    ``replace`` note becomes the result's text (what the model reads instead
    of AgentScope's "denied by user!"); any other note stays recorded until
    :meth:`ApprovalGuard.on_reasoning` adds it as a ``HintBlock`` before the
    next model call (after every result of the round, where AgentScope puts
    its own hints).

    Returns:
        the result's text as the model will read it, note included
        (``<system-reminder>`` tags removed), for the transcript; ``None``
        when there is no note (or no saved result).
    """
    notes = _entries(agent, NOTES_CONTEXT_KEY)
    entry = notes.get(tool_call_id)
    if not isinstance(entry, dict):
        return None  # most results: no search of the context
    block = find_tool_result(agent, tool_call_id)
    if block is None:
        return None
    text = str(entry.get("text", ""))
    if entry.get("replace"):
        notes.pop(tool_call_id, None)
        block.output = text
        return strip_system_reminders(blocks_text(block.output))
    shown = strip_system_reminders(blocks_text(block.output))
    return f"{shown}\n\n{text}" if shown else text


def flush_hints(agent: Any) -> list[str]:
    """Add every recorded note whose call has a saved result to the context as a ``HintBlock``
    (and, for a call :func:`ask_again` asked again, what happened to it).

    AgentScope sends a ``HintBlock`` to the model as a user message
    (``agentscope.message.HintBlock``); it stays in the history.

    Returns:
        the texts added.
    """
    notes = _entries(agent, NOTES_CONTEXT_KEY)
    added = []
    for tool_call_id, entry in list(notes.items()):
        if not isinstance(entry, dict) or entry.get("replace") or find_tool_result(agent, tool_call_id) is None:
            continue
        notes.pop(tool_call_id, None)
        text = str(entry.get("text", ""))
        agent.state.append_context(agent.name, [HintBlock(hint=text, source="nb_hitl")])
        added.append(text)
    again = _entries(agent, ASKED_AGAIN_CONTEXT_KEY)
    for tool_call_id, entry in list(again.items()):
        if not isinstance(entry, dict) or find_tool_result(agent, tool_call_id) is None:
            continue
        again.pop(tool_call_id, None)
        text = _asked_again_hint(entry, tool_call_id)
        agent.state.append_context(agent.name, [HintBlock(hint=text, source="nb_hitl")])
        added.append(text)
    return added


def _asked_again_hint(entry: dict[str, Any], tool_call_id: str) -> str:
    return f"<system-reminder>{_person_edit(entry)}{_why_asked_again(entry, tool_call_id)}</system-reminder>"


def _person_edit(entry: dict[str, Any]) -> str:
    """What a person's Modify changed in a call asked again (the model's call, then the edit), or ""."""
    edit = entry.get("edit")
    if not isinstance(edit, dict):
        return ""
    tool = entry.get("tool")
    return (
        f"A person edited your tool call {entry.get('first') or entry.get('was')} before it ran. You asked for "
        f"{tool}({visible_json(edit.get('sent'), None)}); the person changed it to "
        f"{tool}({visible_json(edit.get('edited'), None)}), and that edited input is what was approved. "
    )


def _why_asked_again(entry: dict[str, Any], tool_call_id: str) -> str:
    if entry.get("cause") == "file_changed":
        shown = " and the edited input" if isinstance(entry.get("edit"), dict) else ""
        return (
            f"Your call {entry.get('was')} to {entry.get('tool')} was not run: the file "
            f"{entry.get('path')} changed after the person was shown it (something else wrote it after the card was drawn), and the "
            "approval covered the change to the file as it was then. nb_hitl ran nothing and asked the person "
            f"again, showing the change against the file as it is now, as call {tool_call_id} (your call now "
            f"shows that id{shown}); the result of {tool_call_id} is the outcome of that second question."
        )
    return (
        f"After the person approved your call {entry.get('was')} to {entry.get('tool')} "
        f"with {entry.get('approved')}, a middleware changed its input to {entry.get('runs')} before it ran. "
        "nb_hitl ran nothing with either input and asked the person again about the changed input, as "
        f"call {tool_call_id} (your call now shows that id and input); the result of {tool_call_id} is the "
        "outcome of that second question."
    )


def _refusal(tool_name: str, approved: str, runs: str) -> str:
    return (
        f"nb_hitl did not run {tool_name}: its input was changed after the person approved it, "
        f"and an approval covers only the input shown. Approved: {approved}; it would have run with: {runs}. "
        "Nothing ran."
    )


def _not_run_text(changed: Changed) -> str:
    """What a person reads (card, transcript, audit ``reason``) of an approved call whose input changed
    and that cannot be asked again (:func:`ask_again` returned False): no call ids."""
    why = f" It is not asked again. {changed.not_asked}" if changed.not_asked else ""
    if changed.cause == "file_changed":
        return f"Not run: the file {changed.path} changed after its card was drawn.{why}"
    return (
        "Not run: its input was changed after the approval, before it ran, and an approval covers only "
        f"the input shown. It would have run with: {changed.runs_text}.{why}"
    )


class ApprovalGuard(MiddlewareBase):
    """``on_acting``: run an approved call only with the input that was approved.

    It must be the innermost ``on_acting`` middleware (:func:`install_guard`).
    Calls nobody approved (allowed by a rule, or by the mode) pass through.
    While a call runs, :data:`~nb_hitl._agentscope.RUNNING_CALL` names it
    (``(agent, tool_call)``) for code the tool calls back into: an MCP
    server asking the person (:mod:`nb_hitl.mcp`).
    """

    async def on_reasoning(
        self,
        agent: Any,
        input_kwargs: dict,
        next_handler: Callable[..., AsyncGenerator],
    ) -> AsyncGenerator:
        flush_hints(agent)  # what a person did, read before the next model call
        flush_rename_hints(agent)  # a call that reused an id was given a fresh one
        async for item in next_handler():
            yield item

    async def on_acting(
        self,
        agent: Any,
        input_kwargs: dict,
        next_handler: Callable[..., AsyncGenerator],
    ) -> AsyncGenerator:
        tool_call = input_kwargs["tool_call"]
        entry = _entries(agent, APPROVAL_CONTEXT_KEY).pop(tool_call.id, None)
        changed = None
        if isinstance(entry, dict):
            changed = await _check(agent, tool_call, entry)
            if changed is None and isinstance(entry.get("file"), dict):
                changed = await _check_file(agent, tool_call, entry["file"])
        if changed is None:
            before = RUNNING_CALL.get()
            RUNNING_CALL.set((agent, tool_call))  # the tool may call back (an MCP server asking the person)
            try:
                async for item in next_handler():
                    yield item
            finally:
                RUNNING_CALL.set(before)
            return
        if changed.not_run is None and await ask_again(agent, tool_call, changed):
            return  # nothing ran and no result: the call waits for a person again
        # refused and not asked again: the card, the transcript and the audit log say it (session._not_run)
        meta = {REFUSED_KEY: changed.cause, NOT_RUN_KEY: changed.not_run or _not_run_text(changed)}
        yield ToolChunk(content=[TextBlock(text=changed.refusal)], state=ToolResultState.DENIED, metadata=meta)
        yield ToolResponse(content=[TextBlock(text=changed.refusal)], state=ToolResultState.DENIED, metadata=meta)


@dataclass
class Changed:
    """How an approved call differs from what would run.

    Attributes:
        refusal: the DENIED result's text when it is not asked again.
        approved: the approved input, as shown.
        runs: AgentScope's reading of the input it would run with, or
            ``None`` (another tool, unreadable arguments).
        tool: the tool that would run, or ``None``.
        cause: ``"input_changed"``, or ``"file_changed"`` (the file differs
            from the one the approved diff was computed on).
        path: the changed file, for ``"file_changed"``.
        not_run: set when the call must not be asked again (the tool
            itself would refuse it, :func:`~nb_hitl.file_change.read_before_write`):
            what a person reads of it (:data:`NOT_RUN_KEY`).
        runs_text: what would have run, as a person reads it (the input, or
            "another tool, X", or "unreadable arguments (...)").
        not_asked: why :func:`ask_again` could not ask again (a deny rule,
            the engine failing), a sentence, or ``""``.
    """

    refusal: str
    approved: str
    runs: dict[str, Any] | None = None
    tool: Any = None
    cause: str = "input_changed"
    path: str | None = None
    not_run: str | None = None
    runs_text: str = ""
    not_asked: str = ""


async def _check(agent: Any, tool_call: Any, entry: dict[str, Any]) -> Changed | None:
    approved_text = str(entry.get("input"))
    approved = visible_json(json.loads(approved_text), None)
    if tool_call.name != entry.get("tool"):
        other = f"another tool, {tool_call.name}"
        return Changed(_refusal(str(entry.get("tool")), approved, other), approved, runs_text=other)
    tool = await agent.toolkit.get_tool(tool_call.name)
    try:
        runs = agentscope_tool_input(tool_call.input, getattr(tool, "input_schema", None))
    except ValueError as exc:
        unreadable = f"unreadable arguments ({exc})"
        return Changed(_refusal(tool_call.name, approved, unreadable), approved, runs_text=unreadable)
    if canonical(runs) != approved_text:
        shown = visible_json(runs, None)
        return Changed(_refusal(tool_call.name, approved, shown), approved, runs, tool, runs_text=shown)
    return None


async def _check_file(agent: Any, tool_call: Any, seen: dict[str, Any]) -> Changed | None:
    """The file the approved diff was computed on, checked right before the call runs: ``None`` when
    its bytes still hash to the approved ``sha256`` (or the call no longer writes that path).

    For a tool that reads before it writes
    (:func:`~nb_hitl.file_change.read_before_write`), a changed file that
    exists now (or a call that would now write nothing: an ``Edit`` of a file
    since removed) gives a :class:`Changed` with ``not_run``: the tool would
    refuse the call until the model reads the file again, so a second card
    could not succeed. A ``Write`` of a file since removed is asked again
    (it needs no read: the fresh card shows a new file)."""
    tool = await agent.toolkit.get_tool(tool_call.name)
    runs = agentscope_tool_input(tool_call.input, getattr(tool, "input_schema", None))  # read by _check
    path = str(seen.get("path"))
    words = None
    try:
        planned = await planned_change(tool, runs)
    except Exception as exc:  # noqa: BLE001 - a file that cannot be read is not the file approved
        now: str | None = f"unreadable ({type(exc).__name__})"
    else:
        if planned is None or planned.path != path:
            return None
        now = sha256_of(planned.before)
        if planned.before is not None or (planned.after is None and not planned.deletes):
            words = read_before_write(tool)  # an existing file, or a call that would write nothing now
    if now == seen.get("sha256"):
        return None
    refusal = (
        f"nb_hitl did not run {tool_call.name}: the file {path} changed after the person was shown it (after the "
        "card was drawn), and an approval covers only the change shown, to the file as it was. Nothing ran."
    )
    approved = visible_json(runs, None)
    changed = Changed(refusal, approved, runs, tool, cause="file_changed", path=path)
    if words is not None:
        changed.refusal += (
            f" The call is not asked again: {tool_call.name} refuses to change a file that changed since you "
            f"last read it. {words}"
        )
        changed.not_run = (
            f"Not run: the file {path} changed after its card was drawn. The agent was told to read it again."
        )
    return changed


def _live_call(agent: Any, tool_call_id: str) -> Any:
    """The agent's own block of call ``tool_call_id`` in its last message (what AgentScope reads), or ``None``."""
    context = agent.state.context
    if not context or context[-1].role != "assistant" or isinstance(context[-1].content, str):
        return None
    blocks = [b for b in context[-1].content if getattr(b, "type", None) == "tool_call" and b.id == tool_call_id]
    return blocks[-1] if blocks else None


async def ask_again(agent: Any, tool_call: Any, changed: Changed) -> bool:
    """Put an approved call whose input a middleware changed back to ``asking``, with the changed input.

    Called by the guard instead of running the call: the agent's own block
    gets the changed input, state ``asking`` (AgentScope's confirmation
    state) and a fresh id (:func:`~nb_hitl.session._call_ids.fresh_id`: the
    approved call was answered, and every road answers a call id once); its
    ``suggested_rules`` are the permission engine's for the changed input,
    and the approved call's delivered mark is cleared (nothing ran, so a
    restore asks again instead of closing it as "may have run"). With no
    result, AgentScope parks the reply on the call after the round
    (``Agent._next_action``), and the Session shows it as a new pause.

    Returns:
        False when the call cannot be asked again and must be refused: no
        readable changed input, no live block, or the permission engine
        denies the changed input (the reason is added to ``changed.refusal``).
    """
    if changed.runs is None or changed.tool is None:
        return False
    live = _live_call(agent, tool_call.id)
    if live is None:
        return False
    try:
        verdict = await permission_engine(agent).check_permission(changed.tool, changed.runs)
    except Exception as exc:  # noqa: BLE001 - an engine that fails never lets the call through
        changed.not_asked = f"The permission engine could not check the changed input ({type(exc).__name__})."
        changed.refusal += f" {changed.not_asked}"
        return False
    if enum_value(verdict.behavior) == "deny":
        changed.not_asked = f"A permission rule denies the changed input: {verdict.message}"
        changed.refusal += f" {changed.not_asked}"
        return False
    was = tool_call.id
    new = fresh_id(was, context_call_ids(agent))
    live.id = new
    live.input = tool_call.input
    live.suggested_rules = list(verdict.suggested_rules or [])
    live.state = ToolCallState.ASKING
    marks = agent.state.middle_context.get(DELIVERED_CONTEXT_KEY)
    if isinstance(marks, dict):
        marks.pop(was, None)
    edited = _entries(agent, NOTES_CONTEXT_KEY).pop(was, None)  # a Modify's note: "it ran as" is not true
    prior = _entries(agent, ASKED_AGAIN_CONTEXT_KEY).pop(was, None)  # asked again twice: ``was`` gets no result
    prior = prior if isinstance(prior, dict) else {}
    _entries(agent, ASKED_AGAIN_CONTEXT_KEY)[new] = {
        "was": was,
        "tool": tool_call.name,
        "approved": changed.approved,
        "runs": visible_json(changed.runs, None),
        "audited": False,
        "cause": changed.cause,
        "path": changed.path,
        "edit": (edited.get("edit") if isinstance(edited, dict) else None) or prior.get("edit"),
        "first": prior.get("first") or prior.get("was") or was,
    }
    return True


def asked_again(agent: Any, tool_call_id: str) -> dict[str, Any] | None:
    """The :data:`ASKED_AGAIN_CONTEXT_KEY` entry of a call :func:`ask_again` asked again, or ``None``."""
    entry = _entries(agent, ASKED_AGAIN_CONTEXT_KEY).get(tool_call_id)
    return entry if isinstance(entry, dict) else None
