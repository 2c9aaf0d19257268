"""What a pause is: one tool call of a parked AgentScope reply that waits for
a person.

AgentScope 2.0.11 parks a reply with ``RequireUserConfirmEvent`` (the
permission engine answered ASK; call state ``asking``; kind ``confirm``) or
``RequireExternalExecutionEvent`` (an external tool; state ``submitted``;
kind ``ask_user`` for AgentScope's ``AskUser``, ``external`` otherwise; a
tool may shape it into ``review`` or ``form``). A :class:`Pause` holds a
*deep copy* of the call: the events carry the live blocks of the agent's
history. The open pauses are always read from the agent's state
(``AgentState.get_awaiting_tool_calls``): after a partial answer AgentScope
re-sends no event for the calls left open. What varies by kind lives in
:mod:`nb_hitl.kinds`; :class:`PauseView` is the widget's view of a pause.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, cast

from agentscope.message import ToolCallBlock
from agentscope.permission import PermissionDecision, PermissionRule
from agentscope.tool import AskUser, AskUserParams, ToolBase

from ._agentscope import enum_value, mcp_tool_hints, rule_label
from .file_change import FileChangeView
from .kinds import Decision, kind_spec
from .kinds._reading import InputReading, read_input, visible_text
from .kinds.confirm import CONFIRM_DECISIONS
from .kinds.confirm_view import SuggestedRuleView, shell_command_view, suggested_rule_view
from .messages import format_validation_error

__all__ = [
    "Pause",
    "PauseKind",
    "PauseStatus",
    "UNANSWERED",
    "PauseView",
    "RemotePauseView",
    "SuggestedRuleView",
    "ApprovalView",
    "ShellCommandView",
    "ShellFileView",
    "FileChangeView",
    "pause_kind",
    "build_pause",
    "rule_label",
    "format_validation_error",
]

PauseKind = Literal["confirm", "ask_user", "external", "review", "form", "elicitation", "sampling"]
"""One module each in :mod:`nb_hitl.kinds`. ``review`` (a reviewed tool ran
and its result waits for a person) and ``form`` (a structured question) are
set by the tool's ``prepare_pause`` (or the AG-UI client), never by
:func:`pause_kind`; ``elicitation`` (an MCP server asks while its tool runs)
and ``sampling`` (it asks the notebook's model) are built by :mod:`nb_hitl.mcp`."""
PauseStatus = Literal["open", "deciding", "decided", "delivered", "expired"]

UNANSWERED: tuple[PauseStatus, ...] = ("open", "deciding")
"""Statuses of a pause still without its answer (``deciding``: one is being checked, and a
refused one leaves it ``open`` again)."""


class ShellFileView(TypedDict):
    """A file a shell command's redirection opens: ``access`` is ``reads``,
    ``writes`` or ``appends``; ``path`` as written."""

    access: str
    path: str


class ShellCommandView(TypedDict):
    """One simple command of a shell tool's call as the shell parser reads it
    (:mod:`nb_hitl.permissions.shell`), with what the permission engine said of
    it (``behavior`` and ``why`` are "" when the shell rules did not judge it)
    and the files its redirections open."""

    program: str | None
    args: list[str]
    redirections: list[str]
    assignments: list[str]
    text: str
    via: str
    behavior: str
    why: str
    files: list[ShellFileView]


class ApprovalView(TypedDict):
    """One approval of a call that needs several: who, when (``time.time()``
    seconds), and ``approve`` or ``modify`` (the editor's approval of the new input)."""

    by: str
    at: float
    action: str


class PauseView(TypedDict):
    """Exactly the dict :meth:`Pause.to_view` returns (the widget's pause).

    Every string is shown by the page as text. ``tool_hints``: an MCP
    tool's annotation hints as its server declared them (``destructiveHint``,
    ``openWorldHint``...), ``None`` for other tools. ``review_output`` is ``None``
    once the pause is decided (an edit may have redacted it).
    ``input_text`` is the input the tool will receive (AgentScope's reading),
    with invisible characters escaped, or ``""`` for a kind whose card draws
    the input from another field (a valid AskUser call's ``ask_user``:
    :meth:`~nb_hitl.kinds.PauseKindSpec.view_input_text`); ``sent_text`` is the model's own text
    when it differs (``input_changes`` says how), ``approve_refused`` why
    Approve is refused (ambiguous arguments), else ``None``.
    ``file_change`` is what a file-editing call would do to its file (a
    unified diff, :mod:`nb_hitl.file_change`), else ``None``. ``dry_run``:
    the page may offer a "Dry run" of the call in a temporary copy
    (:mod:`nb_hitl.dry_run`). ``parent_tool_call_id``: the tool call that was
    running when an MCP server raised this pause (elicitation, sampling): the
    page draws the card in that call's transcript entry; ``None`` for a pause
    of its own call.
    """

    tool_call_id: str
    reply_id: str
    kind: PauseKind
    tool_name: str
    input_text: str
    sent_text: str | None
    input_changes: list[str]
    approve_refused: str | None
    decisions: list[str]
    input_schema: dict[str, Any] | None
    permission_message: str | None
    decision_reason: str | None
    bypass_immune: bool
    suggested_rules: list[SuggestedRuleView]
    ask_user: dict[str, Any] | None
    ask_user_error: str | None
    created_at: float
    deadline: float | None
    policy: str | None
    status: PauseStatus
    decision: dict[str, Any] | None
    reason: str | None
    title: str | None
    message: str | None
    review_output: str | None
    review_state: str | None
    review_error: str | None
    response_schema: dict[str, Any] | None
    form_error: str | None
    elicitation_url: str | None
    sampling: dict[str, Any] | None
    agent: str
    tool_hints: dict[str, bool] | None
    shell_commands: list[ShellCommandView]
    shell_problems: list[str]
    approvals: list[ApprovalView]
    approvals_needed: int
    file_change: FileChangeView | None
    dry_run: bool
    parent_tool_call_id: str | None


class RemotePauseView(PauseView, total=False):
    """A remote (AG-UI) pause's view: :class:`PauseView` plus the keys only
    the AG-UI client sets.

    ``refused``: the server's reason it refused the answer given on this
    card. ``refused_answer``: that answer as the card sent it (the page's
    message, e.g. ``{"action": "modify", "input": <JSON text>}``), so the
    card's editor starts from what the person typed. ``unanswerable``: the
    interrupt's metadata is malformed (``form_error`` says how); it can
    only be cancelled.
    """

    refused: str | None
    refused_answer: dict[str, Any] | None
    unanswerable: bool


def pause_kind(tool_call: ToolCallBlock, tool: ToolBase | None) -> PauseKind:
    """Which kind of pause a parked tool call is.

    Args:
        tool_call: a call in state ``asking`` or ``submitted``.
        tool: the agent's tool of that name, if any.

    Returns:
        ``"confirm"`` for ``asking``; ``"ask_user"`` for a submitted call of
        AgentScope's ``AskUser`` tool; ``"external"`` otherwise.
    """
    if enum_value(tool_call.state) == "asking":
        return "confirm"
    if isinstance(tool, AskUser) or (tool is None and tool_call.name == "AskUser"):
        return "ask_user"
    return "external"


@dataclass
class Pause:
    """One open tool call of a parked reply, as nb_hitl shows it.

    Attributes:
        reply_id: AgentScope's ``reply_id`` of the parked reply.
        tool_call: a deep copy of the parked ``ToolCallBlock``.
        kind: ``"confirm"``, ``"ask_user"``, ``"external"``, ``"review"``,
            ``"form"`` or ``"elicitation"``.
        input: the tool input as AgentScope will run it (its own
            json_repair reading with the tool's schema), or ``None`` when
            AgentScope cannot read the model's text.
        reading: how ``input`` was read from the model's text
            (:class:`~nb_hitl.kinds._reading.InputReading`).
        input_schema: the tool's JSON Schema (``ToolBase.input_schema``).
        metadata_schema: the external tool's ``metadata_schema`` or ``None``.
        permission_message: the engine's message for a confirmation
            (``PermissionDecision.message``) or ``None``.
        decision_reason: the engine's ``decision_reason`` (e.g. ``"Rule: x"``).
        bypass_immune: whether the ASK is a safety ask rules cannot silence.
        suggested_rules: AgentScope's ``ToolCallBlock.suggested_rules``.
        ask_user: the validated ``AskUserParams`` of an AskUser call.
        ask_user_error: why the AskUser input breaks ``AskUserParams``
            (duplicate labels, duplicate questions, ...), or ``None``.
        created_at: when nb_hitl saw the pause (``time.time()``, seconds).
        deadline: when it expires (``time.time()`` seconds), or ``None``.
        policy: the name of the nb_hitl policy that forced this ask, if any.
        decisions: for a confirmation, the decisions the person may take
            (``Session(decisions={tool: [...]})``, LangGraph's
            ``allowed_decisions``): some of ``approve``, ``deny``, ``modify``,
            ``always_allow``, ``always_deny``.
        status: ``open`` -> ``deciding`` (checks running) -> ``decided``
            (recorded, queued for the agent) -> ``delivered`` (the agent got
            it); or ``expired`` with ``reason``.
        decision: a JSON summary of the decision taken (for the widget and
            the saved notebook), or ``None``.
        reason: why the pause expired, or why it was closed.
        title: a heading for the card (a form's title), or ``None``.
        message: text shown above the controls (a form's message), or ``None``.
        review_output: kind ``review``: the tool's result as text, shown to
            the person (only while the pause is open, see :meth:`to_view`).
        review_state: kind ``review``: the tool's own result state
            (``success`` / ``error`` / ...).
        review_result: kind ``review``: the raw ``ToolResultBlock`` as JSON
            (``model_dump(mode="json")``), sent as-is on ``accept``; never
            put in the view.
        review_error: kind ``review``: why there is no result to review (the
            kernel stopped while the tool ran); only ``reject`` is possible.
        response_schema: kind ``form``: the JSON Schema the answer must fit.
        shell_commands: kind ``confirm`` of a shell tool: the simple commands
            of the command line and what the permission engine said of each
            (``{program, args, redirections, assignments, text, via,
            behavior, why, files}``, :mod:`nb_hitl.shell_policy`).
        shell_problems: why (part of) that command line cannot be judged.
        form_error: kind ``form``: why the schema cannot be shown (not a
            valid JSON Schema, not an object of fields); only
            ``return_error`` is possible. Kind ``elicitation``: the same,
            for the server's schema, or why its URL cannot be offered;
            only ``decline`` / ``cancel``.
        elicitation_url: kind ``elicitation`` in URL mode: the page the
            server sends the person to (untrusted; checked by
            :func:`~nb_hitl.kinds.elicitation.url_problem`, shown as text,
            opened only by the person). Never part of what the model reads.
        sampling: kind ``sampling``: the MCP server's request as text
            (``{"stage", "messages": [{"role", "text"}], "system_prompt",
            "model_hints", "priorities", "max_tokens", "temperature",
            "stop_sequences", "include_context", "completion", "model"}``,
            :mod:`nb_hitl.kinds.sampling`), else ``None``.
        tool_hints: an MCP tool's annotation hints as its server declared
            them (:func:`~nb_hitl._agentscope.mcp_tool_hints`), else ``None``.
        carrier: who takes this pause's answer instead of the agent's queue
            (kinds ``elicitation`` and ``sampling``: the MCP server waiting for it), or ``None``.
            It has ``deliver(decision)`` (the answer was decided) and
            ``expired(reason)`` (the pause expired unanswered:
            :func:`~nb_hitl.answers.lifecycle.transition` calls it); never
            put in the view.
        approvals_needed: kind ``confirm``: how many people must approve
            (a policy's ``approvals``; :mod:`nb_hitl.answers.approvals`).
        approvals_distinct: whether they must be distinct people
            (``decided_by``).
        approvals: the approvals so far (``{"by", "at", "origin", "action"}``).
        approved_edit: the modify ``Decision`` the approvals are for (its
            edited input is what runs), or ``None`` for the model's input.
        file_change: kind ``confirm`` of a file-editing tool: the diff of the
            file now against the file as the call would leave it, with the
            hash of the bytes it was computed on (an approval is bound to
            it), :func:`nb_hitl.file_change.describe_change`.
        previewed_file: kind ``confirm``: the last Modify preview's
            ``(canonical JSON of the edited input, its FileChangeView or None)``
            (:mod:`nb_hitl.edit_preview`), what a Modify of exactly that input is
            bound to; kernel-side only (not in the view).
        model_sent: kind ``confirm`` of a call asked again after a person's
            Modify (:func:`nb_hitl.session._not_run.show_asked_again`): the
            input the model itself sent (the card shows the edit); ``None``
            when the call's input is the model's own. Kernel-side only.
        dry_run: kind ``confirm`` of a call that can be dry-run in a
            temporary copy (:func:`nb_hitl.dry_run.can_dry_run`).
        parent_tool_call_id: the id of the tool call during which an MCP
            server raised this pause (:func:`nb_hitl.mcp._ask.open_card`):
            its card belongs in that call's transcript entry. ``None`` for
            a pause of its own call.
        revision: how many times the pause went through
            :func:`~nb_hitl.answers.lifecycle.transition` (0 when built). A
            reply's push rebuilds the view of a pause only when its revision
            (or the pause object) changed
            (:meth:`nb_hitl.widgets._cards.CardFeed.views_of`): whatever
            changes a pause's view once it is shown (a decision, an approval
            count, an expiry and its reason, an error) goes with a transition.
    """

    reply_id: str
    tool_call: ToolCallBlock
    kind: PauseKind
    input: dict[str, Any] | None = None
    reading: InputReading | None = None
    input_schema: dict[str, Any] | None = None
    metadata_schema: dict[str, Any] | None = None
    permission_message: str | None = None
    decision_reason: str | None = None
    bypass_immune: bool = False
    suggested_rules: list[PermissionRule] = field(default_factory=list)
    ask_user: AskUserParams | None = None
    ask_user_error: str | None = None
    created_at: float = field(default_factory=time.time)
    deadline: float | None = None
    policy: str | None = None
    decisions: tuple[str, ...] = CONFIRM_DECISIONS
    status: PauseStatus = "open"
    decision: dict[str, Any] | None = None
    reason: str | None = None
    # -- kind detail: review and form ------------------------------------
    title: str | None = None
    message: str | None = None
    review_output: str | None = None
    review_state: str | None = None
    review_result: dict[str, Any] | None = None
    review_error: str | None = None
    response_schema: dict[str, Any] | None = None
    form_error: str | None = None
    elicitation_url: str | None = None
    sampling: dict[str, Any] | None = None
    agent: str = ""
    tool_hints: dict[str, bool] | None = None
    carrier: Any = field(default=None, repr=False, compare=False)
    shell_commands: list[dict[str, Any]] = field(default_factory=list)
    shell_problems: list[str] = field(default_factory=list)
    approvals_needed: int = 1
    approvals_distinct: bool = True
    approvals: list[dict[str, Any]] = field(default_factory=list)
    approved_edit: Decision | None = None
    file_change: FileChangeView | None = None
    previewed_file: tuple[str, FileChangeView | None] | None = field(default=None, compare=False, repr=False)
    dry_run: bool = False
    model_sent: Any = field(default=None, compare=False, repr=False)
    parent_tool_call_id: str | None = None
    revision: int = field(default=0, compare=False, repr=False)

    @property
    def tool_call_id(self) -> str:
        """The parked call's id (``ToolCallBlock.id``)."""
        return self.tool_call.id

    @property
    def tool_name(self) -> str:
        """The parked call's tool name."""
        return self.tool_call.name

    @property
    def approved_input(self) -> dict[str, Any] | None:
        """The edited input the approvals so far are for (``approved_edit``'s; what runs), else ``None``."""
        return self.approved_edit.edited_input if self.approved_edit is not None else None

    @property
    def is_live(self) -> bool:
        """True while a decision can still be taken (status ``open``)."""
        return self.status == "open"

    def to_view(self) -> PauseView:
        """The JSON the widget renders (every string is shown as text).

        Returns:
            a :class:`PauseView`.
        """
        reading = self.reading
        if reading is not None:
            input_text = reading.shown_text()
        elif self.input is not None:
            input_text = json.dumps(self.input, indent=2, ensure_ascii=False)
        else:
            input_text = self.tool_call.input
        differs = reading is not None and reading.differs
        sent_text = visible_text(reading.sent) if differs and reading is not None else None
        changes = list(reading.changes) if reading is not None else []
        if (edited := self.approved_input) is not None:  # an edit waits for approvals: the card shows it
            input_text, sent_text, changes = json.dumps(edited, indent=2, ensure_ascii=False), None, []
        return PauseView(
            tool_call_id=self.tool_call.id,
            reply_id=self.reply_id,
            kind=self.kind,
            tool_name=self.tool_call.name,
            input_text=kind_spec(self.kind).view_input_text(self, input_text),
            sent_text=sent_text,
            input_changes=changes,
            approve_refused=reading.refusal if reading is not None else None,
            decisions=list(self.decisions),
            input_schema=self.input_schema,
            permission_message=self.permission_message,
            decision_reason=self.decision_reason,
            bypass_immune=self.bypass_immune,
            suggested_rules=[suggested_rule_view(i, r) for i, r in enumerate(self.suggested_rules)],
            ask_user=self.ask_user.model_dump(mode="json") if self.ask_user else None,
            ask_user_error=self.ask_user_error,
            created_at=self.created_at,
            deadline=self.deadline,
            policy=self.policy,
            status=self.status,
            decision=self.decision,
            reason=self.reason,
            title=self.title,
            message=self.message,
            # the unreviewed result leaves the view (and the saved notebook) once decided: an edit may redact it
            review_output=self.review_output if self.status in UNANSWERED else None,
            review_state=self.review_state,
            review_error=self.review_error,
            response_schema=self.response_schema,
            form_error=self.form_error,
            elicitation_url=self.elicitation_url,
            sampling=self.sampling,
            agent=self.agent,
            tool_hints=self.tool_hints,
            shell_commands=[cast(ShellCommandView, shell_command_view(c)) for c in self.shell_commands],
            shell_problems=list(self.shell_problems),
            approvals=[
                ApprovalView(by=str(a["by"]), at=float(a["at"]), action=str(a["action"])) for a in self.approvals
            ],
            approvals_needed=self.approvals_needed,
            file_change=FileChangeView(**self.file_change) if self.file_change is not None else None,
            dry_run=self.dry_run,
            parent_tool_call_id=self.parent_tool_call_id,
        )


def build_pause(
    reply_id: str,
    tool_call: ToolCallBlock,
    tool: ToolBase | None,
    permission: PermissionDecision | None = None,
) -> Pause:
    """Build a :class:`Pause` from a parked tool call.

    Args:
        reply_id: the parked reply's id.
        tool_call: the live block from the agent's history (it is copied).
        tool: the agent's tool of that name (``Toolkit.get_tool``), or None.
        permission: the engine's decision for a confirmation, for its
            message, reason and bypass-immunity (the event does not carry
            them).

    Returns:
        Pause: an ``open`` pause, completed by its kind
        (:meth:`PauseKindSpec.complete <nb_hitl.kinds.PauseKindSpec.complete>`):
        for ``AskUser`` the input is validated with ``AskUserParams``; a
        failure is kept in ``ask_user_error`` (case C02) and the pause can
        only be answered with an ERROR result.
    """
    call = tool_call.model_copy(deep=True)
    kind = pause_kind(call, tool)
    schema = getattr(tool, "input_schema", None)
    reading = read_input(call.input, schema)
    pause = Pause(
        reply_id=reply_id,
        tool_call=call,
        kind=kind,
        input=reading.executed,
        reading=reading,
        input_schema=schema,
        metadata_schema=getattr(tool, "metadata_schema", None),
        suggested_rules=[r.model_copy(deep=True) for r in (call.suggested_rules or [])],
        tool_hints=mcp_tool_hints(tool),
    )
    if permission is not None:
        pause.permission_message = permission.message
        pause.decision_reason = permission.decision_reason
        pause.bypass_immune = bool(permission.bypass_immune)
    kind_spec(kind).complete(pause)
    return pause
