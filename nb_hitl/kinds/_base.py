"""What every pause kind provides, and what a kind's answer becomes.

:class:`PauseKindSpec` is the base of the seven kind modules (``confirm``,
``ask_user``, ``external``, ``review``, ``form``, ``elicitation``, ``sampling``): one object per kind that
completes a built pause, turns a validated page message into a
:class:`Decision`, names its deadline/cancel default and maps the pause to
and from an AG-UI interrupt. :class:`PauseShaper` / :class:`PauseHost` are
the protocol of tools that shape their own pause (a reviewed tool, a form).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from agentscope.event import ConfirmResult
from agentscope.message import ToolResultBlock, ToolResultState
from agentscope.permission import PermissionRule
from agentscope.tool import AskUserMetadata

from .._agentscope import enum_value, rule_label
from ..errors import DecisionError
from ..labels import pause_label
from ._reading import visible_json
from ._schema import REASON_INPUT_REQUIRED, compact

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = [
    "Decision",
    "PauseKindSpec",
    "PauseHost",
    "PauseShaper",
    "TIMEOUT_TEXT",
]

TIMEOUT_TEXT = "The user did not answer before the deadline."
"""What the agent reads when a non-confirm pause's deadline passes."""


@dataclass(frozen=True)
class Decision:
    """What a person decided about one pause, ready for AgentScope.

    Attributes:
        tool_call_id: the call decided.
        action: the page action that produced it.
        confirm_result: for confirmations, AgentScope's ``ConfirmResult``
            (its ``tool_call`` is a copy, edited for ``modify``).
        tool_result: for external calls, AgentScope's ``ToolResultBlock``.
        edited_input: the new input for ``modify``, else ``None``.
        accepted_rules: the suggested rules accepted with an approval.
        answers: the ``AskUserMetadata`` of an AskUser answer.
        approved_input: for an approval (``approve`` / ``modify``), exactly
            the input approved; the approval guard refuses to run the call
            with any other input.
        note: what the model reads in the call's tool result besides
            AgentScope's own text (who edited the call, the reason of a
            denial, that nobody answered), or ``None``.
        note_replaces: the note replaces AgentScope's text instead of
            following it (AgentScope's "denied by user" is not true of a
            deadline or a cancelled pause).
        cause: who decided: ``"person"``, ``"timeout"`` or ``"cancelled"``.
        reason: the person's own words with a denial (audited), or ``None``.
        deny_rules: "Always deny": deny rules (``PermissionBehavior.DENY``
            copies of suggested rules) the driver adds through the agent's
            permission engine with the denial (AgentScope ignores rules sent
            in a denied ``ConfirmResult``).
        seen_file: for an approval of a file-editing call, ``{"path",
            "sha256"}`` of the file the card's diff was computed on
            (``sha256`` ``None``: no file); the approval guard runs the call
            only on that file content.
        file_shown: for an approval of a file-editing call, the path whose
            change the person was shown for exactly the approved input (the
            card's diff for Approve, the preview's for Modify), else ``None``
            (a Modify nobody previewed: no diff of the edited call was shown).
        input_diff: for ``modify``, the unified diff of the model's input
            and the edited one (pretty-printed JSON), else ``None``.
        sent_input: for ``modify``, the input the model itself sent (what
            the person changed; for a call asked again after an edit, the
            model's call, not the edit the card shows), else ``None``.
        content: kind ``elicitation``: the value an accepted MCP
            elicitation sends the server (checked against its schema); kind
            ``sampling``: an edit, ``{"messages": [{"role", "text"}]}`` (the
            request) or ``{"text": ...}`` (the completion); else ``None``.
    """

    tool_call_id: str
    action: str
    confirm_result: ConfirmResult | None = None
    tool_result: ToolResultBlock | None = None
    edited_input: dict[str, Any] | None = None
    accepted_rules: tuple[PermissionRule, ...] = field(default_factory=tuple)
    answers: AskUserMetadata | None = None
    approved_input: dict[str, Any] | None = None
    note: str | None = None
    note_replaces: bool = False
    cause: str = "person"
    deny_rules: tuple[PermissionRule, ...] = field(default_factory=tuple)
    reason: str | None = None
    seen_file: dict[str, Any] | None = None
    file_shown: str | None = None
    input_diff: str | None = None
    sent_input: Any = None
    content: dict[str, Any] | None = None

    @property
    def is_confirmation(self) -> bool:
        """True when it resumes with ``UserConfirmResultEvent``."""
        return self.confirm_result is not None

    def summary(self) -> dict[str, Any]:
        """A JSON summary for the widget, the audit log and saved notebooks."""
        out: dict[str, Any] = {"action": self.action}
        if self.confirm_result is not None:
            out["confirmed"] = self.confirm_result.confirmed
        if self.edited_input is not None:
            out["edited_input"] = self.edited_input
            text = visible_json(self.edited_input)
            if _needs_text(self.edited_input, text):  # the page cannot show it faithfully from JSON
                out["edited_input_text"] = text
        if self.input_diff:
            out["input_diff"] = self.input_diff
        if self.file_shown is not None:
            out["file_shown"] = self.file_shown
        if self.deny_rules:
            out["denied_rules"] = [rule_label(r) for r in self.deny_rules]
        if self.cause != "person":
            out["cause"] = self.cause
        if self.reason:  # the person's own words with a denial (a card repeats what was sent with it)
            out["reason"] = self.reason
        if self.note is not None and self.action != "modify":  # the card shows an edit itself
            out["note"] = self.note
        if self.accepted_rules:
            out["accepted_rules"] = [rule_label(r) for r in self.accepted_rules]
        if self.content is not None:
            out["content"] = self.content
        if self.answers is not None:
            out["answers"] = self.answers.model_dump(mode="json")["answers"]
        if self.tool_result is not None:
            out["state"] = enum_value(self.tool_result.state)
            if self.answers is None:
                text = self.tool_result.output if isinstance(self.tool_result.output, str) else ""
                out["output"] = text if len(text) <= 2000 else text[:1999] + "…"  # marked, not silently cut
        return out


@runtime_checkable
class PauseHost(Protocol):
    """What a :class:`PauseShaper` may use of the driver (nb_hitl's ``Session``).

    Attributes:
        agent: the ``agentscope.agent.Agent`` whose reply is parked.
    """

    agent: Any

    def checkpoint(self) -> None:
        """Write the agent's state to the checkpoint store now (no-op without one)."""

    def on_change(self, listener: Callable[[str, Any], None]) -> None:
        """Call ``listener(kind, run)`` on every change of a reply (``kind`` ``"end"`` when it ends)."""


@runtime_checkable
class PauseShaper(Protocol):
    """An external tool that shapes its own pause (the Session calls it once
    the pause is built, for calls that are not confirmations).

    It may set ``pause.kind`` (``"review"``, ``"form"``) and that kind's
    fields; it may run work and checkpoint through ``host``.
    """

    async def prepare_pause(self, pause: Pause, host: PauseHost) -> None:
        """Shape ``pause`` in place."""


def _big_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > 2**53
    if isinstance(value, dict):
        return any(_big_int(v) for v in value.values())
    if isinstance(value, list):
        return any(_big_int(v) for v in value)
    return False


def _needs_text(value: Any, shown: str) -> bool:
    """Whether ``value`` must reach the page as text: an integer beyond 2**53 (a JSON number
    would be rounded) or an invisible character (``shown`` escapes it)."""
    return _big_int(value) or shown != json.dumps(value, indent=2, ensure_ascii=False)


def approvals_so_far(pause: Pause) -> str | None:
    """``"it needed N approvals and had K (names)"`` for a call that needs several approvals and
    has some (``pause.approvals``, approvals and edits), else ``None``: what the model reads when
    such a call did not run for want of the others (it was answered, not ignored)."""
    got = [a for a in pause.approvals if a.get("action") in ("approve", "modify")]
    if pause.approvals_needed <= 1 or not got:
        return None
    names = ", ".join(str(a.get("by")) for a in got)
    return f"it needed {pause.approvals_needed} approvals and had {len(got)} ({names})"


def base_message(pause: Pause) -> dict[str, Any]:
    """The ``tool_call_id`` / ``reply_id`` every page message about ``pause`` carries."""
    return {"tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}


def error_result(pause: Pause, text: str, metadata: dict[str, Any] | None = None) -> ToolResultBlock:
    """An ERROR ``ToolResultBlock`` for ``pause``'s call."""
    if metadata is None:
        return ToolResultBlock(id=pause.tool_call_id, name=pause.tool_name, output=text, state=ToolResultState.ERROR)
    return ToolResultBlock(
        id=pause.tool_call_id, name=pause.tool_name, output=text, state=ToolResultState.ERROR, metadata=metadata
    )


def input_args(pause: Pause) -> str:
    """The call's input, compacted for a one-line interrupt message."""
    return compact(pause.input if pause.input is not None else pause.tool_call.input)


class PauseKindSpec(ABC):
    """Everything that varies by pause kind. Subclasses set the class
    attributes, implement the abstract methods (deciding, and both AG-UI
    directions) and override the others their kind needs.

    Attributes:
        name: the kind (``Pause.kind``).
        actions: the page actions (:mod:`nb_hitl.messages`) this kind takes.
        waits_for: what the pause waits for, in a refusal of another action.
        interrupt_reason: AG-UI ``Interrupt.reason`` of its interrupts.
        timeout_applied: the audit text of :meth:`timeout_message`.
    """

    name: ClassVar[str]
    actions: ClassVar[frozenset[str]]
    waits_for: ClassVar[str]
    interrupt_reason: ClassVar[str] = REASON_INPUT_REQUIRED
    timeout_applied: ClassVar[str] = "error returned to the agent"
    cancelled_what: ClassVar[str] = "external tool call"
    #: the refusal of a "Return the error" with no text while the pause's input is valid (the person
    #: must say what went wrong; an invalid input has its own text); ``None``: the kind's default text
    return_error_needs_text: ClassVar[str | None] = None
    #: a tool call's permission, resumed with AgentScope's ``UserConfirmResultEvent`` ("Approve selected" takes these)
    confirms: ClassVar[bool] = False

    # -- building ------------------------------------------------------------
    def complete(self, pause: Pause) -> None:
        """Finish a freshly built pause of this kind (``build_pause``); no-op by default."""
        return None

    def view_input_text(self, pause: Pause, text: str) -> str:
        """The ``input_text`` of ``pause``'s view (``Pause.to_view``): the
        call's input as its card shows it, ``text`` by default. A kind whose
        card draws the input from another view field returns ``""`` so the
        page gets the input once."""
        return text

    # -- deciding ------------------------------------------------------------
    def decide(self, pause: Pause, msg: Any) -> Decision:
        """Turn a validated page message (:func:`nb_hitl.messages.parse_message`)
        into a :class:`Decision`.

        Raises:
            DecisionError: the action does not fit this kind (``field="action"``),
                or the kind's own checks refuse the message.
        """
        if msg.action not in self.actions:
            raise DecisionError(
                f"{pause_label(pause)} waits for {self.waits_for}, not {msg.action!r}.",
                field="action",
            )
        return self._decide(pause, msg)

    @abstractmethod
    def _decide(self, pause: Pause, msg: Any) -> Decision:
        """This kind's :meth:`decide`, once the action is known to fit."""

    async def preview(self, pause: Pause, message: Any, tool: Any = None) -> Any:
        """The diff an edit on this kind's card would make (an
        :class:`nb_hitl.edit_preview.EditPreview`); kinds with an editable
        field override it (Modify on a confirmation, a review's result).
        ``tool``: the agent's tool of the call, or ``None`` (a remote card).

        Raises:
            DecisionError: this kind has no edit to preview (``field="action"``),
                or the edit cannot be read.
        """
        raise DecisionError(f"A {self.name} card has no edit to preview.", field="action")

    def timeout_message(self, pause: Pause) -> dict[str, Any]:
        """The page message applied when ``pause``'s deadline passes: an
        ERROR result saying nobody answered (a confirmation denies instead)."""
        return {"action": "return_error", "tool_call_id": pause.tool_call_id, "message": TIMEOUT_TEXT}

    def deadline_stop_note(self, pause: Pause, passed: Pause | None = None, passed_what: str = "") -> str:
        """What the model reads for ``pause``'s call when a deadline stopped
        the reply (``Session(on_deadline="interrupt")``), instead of
        AgentScope 2.0.11's "The tool call has been interrupted by the user."
        (``Agent._close_unfinished_tool_calls``): nobody answered, no user
        interrupted.

        Args:
            pause: an open pause of the stopped reply (its call did not run).
            passed: the pause whose deadline passed, when it is another one of
                the reply; ``None``: ``pause``'s own deadline passed.
            passed_what: what ``passed`` asked (its kind's ``cancelled_what``).
        """
        so_far = approvals_so_far(pause)
        if passed is None and so_far is not None:
            return (
                f"The call to {pause.tool_name} did not run: {so_far} when the deadline passed, so the reply was "
                "stopped. Nobody denied it and the user did not interrupt it; you may ask again later or do "
                "something else."
            )
        if passed is None:
            return (
                f"The call to {pause.tool_name} did not run: nobody answered the {self.cancelled_what} before the "
                "deadline, so the reply was stopped. The user did not interrupt it; you may ask again later or do "
                "something else."
            )
        return (
            f"The call to {pause.tool_name} did not run: the reply was stopped because nobody answered the "
            f"{passed_what} about {passed.tool_name} before the deadline. The user did not interrupt it."
        )

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        """The page message an AG-UI ``cancelled`` resume entry stands for:
        an ERROR result saying the user cancelled (a confirmation denies)."""
        return {
            **base_message(pause),
            "action": "return_error",
            "message": f"The user cancelled this {self.cancelled_what} without an answer (AG-UI resume status "
            f"'cancelled'); {pause.tool_name} produced no result.",
        }

    # -- AG-UI: Pause -> Interrupt, ResumeEntry -> page message (server) -----
    @abstractmethod
    def response_schema(self, pause: Pause) -> dict[str, Any]:
        """The JSON Schema of a ``resolved`` payload for ``pause``."""

    @abstractmethod
    def interrupt_message(self, pause: Pause) -> str:
        """``Interrupt.message``: one line saying what the pause waits for."""

    @abstractmethod
    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        """The page message a ``resolved`` payload (already checked against
        :meth:`response_schema`) stands for."""

    def interrupt_meta(self, pause: Pause) -> dict[str, Any]:
        """This kind's own fields of ``Interrupt.metadata["nb_hitl"]`` (JSON), besides the
        fields every interrupt carries; none by default."""
        return {}

    # -- AG-UI: Interrupt -> view, page message -> payload (client) ----------
    def meta_ok(self, meta: Mapping[str, Any]) -> bool:
        """Whether an interrupt's ``metadata["nb_hitl"]`` is well formed enough to draw as this kind."""
        return True

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """This kind's fields of the widget view of an interrupt (the rest are defaults)."""
        return {}

    def answer_summary(
        self, payload: Any, message: Mapping[str, Any], view: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``decision`` a remote card shows once ``message`` was sent as a ``resolved``
        entry with ``payload`` (the shape of :meth:`Decision.summary`); ``view`` is the card's
        view (the interrupt's fields, e.g. the labels of its suggested rules). By default a
        form's: ``{"action": "submit", "value": payload}``."""
        return {"action": "submit", "value": payload}

    @abstractmethod
    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        """The ``resolved`` payload a widget message answers ``interrupt`` with, checked against ``schema``.

        Raises:
            DecisionError: the action does not fit this kind, or the payload breaks ``schema``.
        """


def action_text(action: Any) -> str:
    """A page action, cut for an error message."""
    return repr(str(action)[:40])
