"""Page message -> AgentScope object, or a readable refusal.

Pure functions: a message from a widget (``{"action": ..., ...}``) and the
:class:`~nb_hitl.pauses.Pause` it answers go in; a :class:`Decision` holding
AgentScope's own ``ConfirmResult`` or ``ToolResultBlock`` comes out, or
:class:`~nb_hitl.errors.DecisionError` with the field at fault. Nothing here
touches a widget, a kernel or the agent; the two checks that need the agent
(:func:`recheck_permission`, :func:`check_external_result`) take the engine
or the tool as arguments.

Actions (``message["action"]``):

========================  =====================================================
``approve``               ``ConfirmResult(confirmed=True, tool_call=copy,
                          rules=[chosen suggested_rules])``; ``rules`` holds
                          indices into the pause's ``suggested_rules``.
``deny``                  ``ConfirmResult(confirmed=False, ...)``. AgentScope
                          gives the model a fixed "denied by user" reminder;
                          rules sent with a denial are ignored, so none are.
``modify``                ``input`` (JSON text as typed) is parsed, checked
                          against the tool's JSON Schema (``jsonschema``), the
                          tool name must not change; the approved
                          ``ConfirmResult`` carries an edited *copy*.
``answer``                AskUser: ``answers=[{question, selected, other}]`` ->
                          ``ToolResultBlock(state=SUCCESS, output=text,
                          metadata=AskUserMetadata(...).model_dump(mode="json"))``.
``external_result``       any external tool: ``output`` text and ``state``
                          ``success`` | ``error``.
``return_error``          AskUser whose input breaks ``AskUserParams`` (C02):
                          an ERROR ``ToolResultBlock`` naming the problem.
                          Also a form whose schema is invalid, and the
                          deadline default of any non-confirm pause.
``accept``                review (:mod:`nb_hitl.review`): the tool's own
                          result, unchanged (output, state, metadata).
``edit``                  review: ``output`` (text as typed) replaces the
                          result; the tool's state is kept, its metadata is
                          dropped (it may hold what the edit redacted).
``reject``                review: ``reason`` optional; a ``DENIED`` result
                          telling the model the tool ran but the person
                          withheld its result.
``submit``                form (:mod:`nb_hitl.forms`): ``value`` is checked
                          against the pause's ``response_schema``
                          (``jsonschema``, Draft 2020-12, with format
                          checking: ``date``...) -> ``ToolResultBlock(SUCCESS,
                          output=JSON text, metadata={"value": value})``.
========================  =====================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import jsonschema
from agentscope.event import ConfirmResult
from agentscope.message import ToolResultBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionDecision, PermissionRule
from agentscope.tool import AskUserAnswer, AskUserMetadata, ToolBase
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import DecisionError
from .pauses import Pause, format_validation_error, rule_label

__all__ = [
    "Decision",
    "decide",
    "parse_message",
    "parse_edited_input",
    "parse_json_object",
    "recheck_permission",
    "check_external_result",
    "ask_user_output",
    "CONFIRM_ACTIONS",
    "EXTERNAL_ACTIONS",
    "REVIEW_ACTIONS",
    "FORM_ACTIONS",
    "check_form_value",
    "form_output",
    "review_refusal",
    "REVIEW_METADATA_KEY",
    "MAX_TEXT",
]

MAX_TEXT = 1_000_000
"""Largest text accepted from the page (edited input, tool output), in characters."""
MAX_SHORT = 20_000
"""Largest free-text answer ("Other") accepted, in characters."""

CONFIRM_ACTIONS = frozenset({"approve", "deny", "modify"})
EXTERNAL_ACTIONS = frozenset({"answer", "external_result", "return_error"})
REVIEW_ACTIONS = frozenset({"accept", "edit", "reject", "return_error"})
"""Kind ``review``; ``return_error`` is the deadline default (Session)."""
FORM_ACTIONS = frozenset({"submit", "return_error"})
"""Kind ``form``."""


# -- the messages the page may send (validated with pydantic) --------------
class _Msg(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    request_id: str | int | None = None
    tool_call_id: str = Field(min_length=1, max_length=512)
    reply_id: str | None = Field(default=None, max_length=512)


class ApproveMessage(_Msg):
    action: Literal["approve"]
    rules: list[Annotated[int, Field(ge=0, le=64)]] = Field(default_factory=list, max_length=64)


class DenyMessage(_Msg):
    action: Literal["deny"]


class ModifyMessage(_Msg):
    action: Literal["modify"]
    input: str = Field(max_length=MAX_TEXT)
    name: str | None = Field(default=None, max_length=512)
    rules: list[Annotated[int, Field(ge=0, le=64)]] = Field(default_factory=list, max_length=64)


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    question: str = Field(max_length=MAX_SHORT)
    selected: list[Annotated[str, Field(max_length=MAX_SHORT)]] = Field(default_factory=list, max_length=16)
    other: str | None = Field(default=None, max_length=MAX_SHORT)


class AnswerMessage(_Msg):
    action: Literal["answer"]
    answers: list[AnswerIn] = Field(max_length=16)


class ExternalResultMessage(_Msg):
    action: Literal["external_result"]
    output: str = Field(max_length=MAX_TEXT)
    state: Literal["success", "error"] = "success"


class ReturnErrorMessage(_Msg):
    action: Literal["return_error"]
    message: str | None = Field(default=None, max_length=MAX_SHORT)


class AcceptMessage(_Msg):
    action: Literal["accept"]


class EditMessage(_Msg):
    action: Literal["edit"]
    output: str = Field(max_length=MAX_TEXT)


class RejectMessage(_Msg):
    action: Literal["reject"]
    reason: str | None = Field(default=None, max_length=MAX_SHORT)


class SubmitMessage(_Msg):
    action: Literal["submit"]
    value: Any


PageMessage = Annotated[
    ApproveMessage
    | DenyMessage
    | ModifyMessage
    | AnswerMessage
    | ExternalResultMessage
    | ReturnErrorMessage
    | AcceptMessage
    | EditMessage
    | RejectMessage
    | SubmitMessage,
    Field(discriminator="action"),
]
_adapter: TypeAdapter[Any] = TypeAdapter(PageMessage)


def parse_message(message: Any) -> Any:
    """Validate a raw page message's shape.

    Args:
        message: whatever arrived over the comm.

    Returns:
        one of the ``*Message`` pydantic models.

    Raises:
        DecisionError: unknown action, wrong types, missing or oversized
            fields; ``field`` names the first one at fault.
    """
    if not isinstance(message, dict):
        raise DecisionError("A page message must be a JSON object.")
    try:
        return _adapter.validate_python(message)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {}
        loc = [str(p) for p in first.get("loc", ())]
        # drop the discriminator tag pydantic puts first
        if loc and loc[0] == message.get("action"):
            loc = loc[1:]
        raise DecisionError(
            f"This {message.get('action', 'message')!s:.40} message is not valid: {format_validation_error(exc)}",
            field=".".join(loc) or None,
        ) from None


# -- the result ------------------------------------------------------------
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
    """

    tool_call_id: str
    action: str
    confirm_result: ConfirmResult | None = None
    tool_result: ToolResultBlock | None = None
    edited_input: dict[str, Any] | None = None
    accepted_rules: tuple[PermissionRule, ...] = field(default_factory=tuple)
    answers: AskUserMetadata | None = None

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
        if self.accepted_rules:
            out["accepted_rules"] = [rule_label(r) for r in self.accepted_rules]
        if self.answers is not None:
            out["answers"] = self.answers.model_dump(mode="json")["answers"]
        if self.tool_result is not None:
            out["state"] = getattr(self.tool_result.state, "value", self.tool_result.state)
            if self.answers is None:
                text = self.tool_result.output if isinstance(self.tool_result.output, str) else ""
                out["output"] = text[:2000]
        return out


# -- pure pieces -----------------------------------------------------------
def parse_json_object(text: str, field: str = "input") -> dict[str, Any]:
    """Parse JSON text a person typed into a tool input object.

    Shared by every place a person types a tool input (Modify here, the
    AG-UI client's edited args, the permission explorer's "try a call").
    Stricter than ``json.loads``: a key given twice is refused instead of
    silently keeping the last one, because the input runs as typed.

    Raises:
        DecisionError: with ``field`` for text that is not JSON (line and
            column given), not an object, or has a duplicate key.
    """

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, val in pairs:
            if key in seen:
                raise DecisionError(f"The key {key[:80]!r} is given twice in the input.", field=field)
            seen[key] = val
        return seen

    try:
        value = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise DecisionError(
            f"The input is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
            field=field,
        ) from None
    if not isinstance(value, dict):
        raise DecisionError("The input must be a JSON object ({...}).", field=field)
    return value


def parse_edited_input(text: str, input_schema: dict[str, Any] | None) -> dict[str, Any]:
    """Parse the edited tool input and check it against the tool's schema.

    Args:
        text: the JSON text the person typed.
        input_schema: the tool's ``input_schema`` (JSON Schema), or None.

    Returns:
        the input as a dict.

    Two checks are stricter than plain JSON / JSON Schema, because the edit
    is run as typed: a key given twice is refused (``json`` would keep the
    last one silently), and when the schema lists ``properties`` without
    saying anything about ``additionalProperties``, keys it does not list are
    refused (AgentScope passes the input as keyword arguments to a function
    tool, which would fail on an unknown one).

    Raises:
        DecisionError: with ``field="input"`` for text that is not JSON
            (line and column given), not an object, or has a duplicate key;
            or with the JSON path of the value that breaks the schema
            (``jsonschema``'s message).
    """
    value = parse_json_object(text, field="input")
    if input_schema:
        if (
            isinstance(input_schema.get("properties"), dict)
            and "additionalProperties" not in input_schema
            and "patternProperties" not in input_schema
        ):
            input_schema = {**input_schema, "additionalProperties": False}
        validator_cls = jsonschema.validators.validator_for(input_schema)
        validator = validator_cls(input_schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            where = error.json_path if error.json_path != "$" else "the input"
            raise DecisionError(
                f"The input does not match the tool's schema at {where}: {error.message}",
                field="input" + (error.json_path[1:] if error.json_path != "$" else ""),
            )
    return value


def ask_user_output(answers: list[AskUserAnswer]) -> str:
    """The text the model reads for an AskUser answer (``ToolResultBlock.output``).

    One line per question: ``"Which file?" -> notes.txt, todo.txt`` and, for
    a free-text answer, ``(Other) "..."``.
    """
    lines = ["The user answered:"]
    for a in answers:
        parts = list(a.selected)
        if a.other:
            parts.append(f'(Other) "{a.other}"')
        lines.append(f'- "{a.question}" -> {", ".join(parts) if parts else "(no answer)"}')
    return "\n".join(lines)


def _answers(pause: Pause, msg: AnswerMessage) -> list[AskUserAnswer]:
    params = pause.ask_user
    if params is None:
        raise DecisionError(
            "This AskUser call's questions are invalid, so it cannot be answered; "
            "return the error to the agent instead.",
        )
    by_text = {q.question: q for q in params.questions}
    seen: dict[str, AskUserAnswer] = {}
    for i, a in enumerate(msg.answers):
        where = f"answers.{i}"
        q = by_text.get(a.question)
        if q is None:
            raise DecisionError(f"There is no question {a.question[:200]!r} in this AskUser call.", field=where)
        if a.question in seen:
            raise DecisionError(f"The question {a.question[:200]!r} is answered twice.", field=where)
        labels = [o.label for o in q.options]
        for label in a.selected:
            if label not in labels:
                raise DecisionError(
                    f"{label[:200]!r} is not an option of {q.question[:200]!r}.", field=f"{where}.selected"
                )
        if len(set(a.selected)) != len(a.selected):
            raise DecisionError("An option is selected twice.", field=f"{where}.selected")
        other = a.other.strip() if a.other is not None else None
        other = other or None
        # AskUser's schema: multi_select defaults to False (case C08)
        if not q.multi_select and len(a.selected) + (1 if other else 0) > 1:
            raise DecisionError(
                f"{q.question[:200]!r} takes one answer: pick one option or write your own.",
                field=f"{where}.selected",
            )
        if not a.selected and not other:
            raise DecisionError(f"Choose an option for {q.question[:200]!r} or write an answer.", field=where)
        seen[a.question] = AskUserAnswer(question=a.question, selected=list(a.selected), other=other)
    missing = [q.question for q in params.questions if q.question not in seen]
    if missing:
        raise DecisionError(f"Answer every question; still open: {missing[0][:200]!r}.", field="answers")
    return [seen[q.question] for q in params.questions]


def _rules(pause: Pause, indices: list[int]) -> tuple[PermissionRule, ...]:
    chosen = []
    for i in sorted(set(indices)):
        if i >= len(pause.suggested_rules):
            raise DecisionError(f"There is no suggested rule number {i}.", field="rules")
        chosen.append(pause.suggested_rules[i].model_copy(deep=True))
    return tuple(chosen)


def decide(pause: Pause, message: Any) -> Decision:
    """Turn one page message into a :class:`Decision` for ``pause``.

    Args:
        pause: the open pause the message answers.
        message: the raw page message (a dict).

    Returns:
        Decision: with a ``ConfirmResult`` (approve / deny / modify) or a
        ``ToolResultBlock`` (answer / external_result / return_error; and,
        for issue 6's kinds, accept / edit / reject on a ``review`` pause and
        submit on a ``form`` pause).

    Raises:
        DecisionError: the message's shape is wrong, its action does not fit
            the pause's kind (e.g. an external result for a call waiting for
            confirmation, case C06), the edited input is not JSON, breaks the
            tool's schema or renames the tool (C05), or an AskUser answer
            does not fit its questions; a review has no result to accept
            (outcome unknown after a restart); a form's value breaks its
            ``response_schema`` (``field`` = ``value.<name>``) or the form's
            schema is invalid.
    """
    msg = parse_message(message)
    if msg.tool_call_id != pause.tool_call_id:
        raise DecisionError(
            f"This message is for tool call {msg.tool_call_id[:80]!r}, not {pause.tool_call_id!r}.",
            field="tool_call_id",
        )
    if pause.kind == "confirm" and msg.action not in CONFIRM_ACTIONS:
        raise DecisionError(
            f"Tool call {pause.tool_call_id} waits for a confirmation (approve, deny or modify), not {msg.action!r}.",
            field="action",
        )
    if pause.kind == "review":
        if msg.action not in REVIEW_ACTIONS:
            raise DecisionError(
                f"Tool call {pause.tool_call_id} waits for a review of its result (accept, edit or "
                f"reject), not {msg.action!r}.",
                field="action",
            )
        return _decide_review(pause, msg)
    if pause.kind == "form":
        if msg.action not in FORM_ACTIONS:
            raise DecisionError(
                f"Tool call {pause.tool_call_id} waits for the form's answer (submit), not {msg.action!r}.",
                field="action",
            )
        return _decide_form(pause, msg)
    if pause.kind != "confirm" and msg.action not in EXTERNAL_ACTIONS:
        raise DecisionError(
            f"Tool call {pause.tool_call_id} waits for an external result, not {msg.action!r}.",
            field="action",
        )

    call = pause.tool_call.model_copy(deep=True)
    if msg.action == "approve":
        rules = _rules(pause, msg.rules)
        return Decision(
            pause.tool_call_id,
            "approve",
            confirm_result=ConfirmResult(confirmed=True, tool_call=call, rules=list(rules) or None),
            accepted_rules=rules,
        )
    if msg.action == "deny":
        return Decision(pause.tool_call_id, "deny", confirm_result=ConfirmResult(confirmed=False, tool_call=call))
    if msg.action == "modify":
        if msg.name is not None and msg.name != pause.tool_name:
            raise DecisionError(
                f"The tool name cannot be changed (from {pause.tool_name!r} to {msg.name[:80]!r}): "
                "an edited name would run another tool without a permission check.",
                field="name",
            )
        edited = parse_edited_input(msg.input, pause.input_schema)
        rules = _rules(pause, msg.rules)
        call.input = json.dumps(edited, ensure_ascii=False)
        return Decision(
            pause.tool_call_id,
            "modify",
            confirm_result=ConfirmResult(confirmed=True, tool_call=call, rules=list(rules) or None),
            edited_input=edited,
            accepted_rules=rules,
        )
    if msg.action == "answer":
        if pause.kind != "ask_user":
            raise DecisionError("Only AskUser calls take answers; send the tool's output instead.", field="action")
        answers = _answers(pause, msg)
        metadata = AskUserMetadata(answers=answers)
        return Decision(
            pause.tool_call_id,
            "answer",
            tool_result=ToolResultBlock(
                id=pause.tool_call_id,
                name=pause.tool_name,
                output=ask_user_output(answers),
                state=ToolResultState.SUCCESS,
                metadata=metadata.model_dump(mode="json"),
            ),
            answers=metadata,
        )
    if msg.action == "external_result":
        if pause.kind == "ask_user":
            raise DecisionError("AskUser calls take answers to their questions.", field="action")
        return Decision(
            pause.tool_call_id,
            "external_result",
            tool_result=ToolResultBlock(
                id=pause.tool_call_id,
                name=pause.tool_name,
                output=msg.output,
                state=ToolResultState.SUCCESS if msg.state == "success" else ToolResultState.ERROR,
            ),
        )
    # return_error
    if pause.kind == "ask_user" and pause.ask_user_error is None and not msg.message:
        raise DecisionError("Say what went wrong, or answer the questions.", field="message")
    text = msg.message or f"The AskUser input is invalid and was not shown to the user:\n{pause.ask_user_error}"
    return Decision(
        pause.tool_call_id,
        "return_error",
        tool_result=ToolResultBlock(
            id=pause.tool_call_id, name=pause.tool_name, output=text, state=ToolResultState.ERROR
        ),
    )


# -- issue 6: reviewed results and structured questions ----------------------
REVIEW_METADATA_KEY = "nb_hitl.review"
"""Key nb_hitl adds to a reviewed result's ``metadata``: ``"accepted"``,
``"edited"``, ``"rejected"`` or ``"not_reviewed"``."""


def review_refusal(tool_name: str, reason: str | None = None) -> str:
    """The text the model reads when a person rejects a reviewed result.

    It says that the tool *did* run (so the model does not assume nothing
    happened) and that calling it again will not reveal the result.
    """
    why = f" Their reason: {reason.strip()}" if reason and reason.strip() else ""
    return (
        f'<system-reminder>The tool "{tool_name}" ran, but the user reviewed its result and '
        f"withheld it from you.{why} Do not call the tool again to get this result; continue "
        "without it or ask the user.</system-reminder>"
    )


def _decide_review(pause: Pause, msg: Any) -> Decision:
    """accept / edit / reject / return_error for a ``review`` pause."""
    if msg.action in ("accept", "edit") and pause.review_result is None:
        raise DecisionError(
            "There is no result to review"
            + (f": {pause.review_error}" if pause.review_error else ".")
            + " Reject it instead.",
            field="action",
        )
    state = pause.review_state or ToolResultState.SUCCESS.value
    if msg.action == "accept":
        raw = ToolResultBlock.model_validate(pause.review_result)
        metadata = dict(raw.metadata or {})
        metadata[REVIEW_METADATA_KEY] = "accepted"
        result = ToolResultBlock(
            id=pause.tool_call_id, name=pause.tool_name, output=raw.output, state=raw.state, metadata=metadata
        )
        return Decision(pause.tool_call_id, "accept", tool_result=result)
    if msg.action == "edit":
        result = ToolResultBlock(
            id=pause.tool_call_id,
            name=pause.tool_name,
            output=msg.output,
            state=state,
            metadata={REVIEW_METADATA_KEY: "edited"},
        )
        return Decision(pause.tool_call_id, "edit", tool_result=result)
    if msg.action == "reject":
        result = ToolResultBlock(
            id=pause.tool_call_id,
            name=pause.tool_name,
            output=review_refusal(pause.tool_name, msg.reason),
            state=ToolResultState.DENIED,
            metadata={REVIEW_METADATA_KEY: "rejected"},
        )
        return Decision(pause.tool_call_id, "reject", tool_result=result)
    # return_error: the deadline default; the result stays unseen
    text = msg.message or f'The result of "{pause.tool_name}" was not reviewed, so it is withheld.'
    result = ToolResultBlock(
        id=pause.tool_call_id,
        name=pause.tool_name,
        output=text,
        state=ToolResultState.ERROR,
        metadata={REVIEW_METADATA_KEY: "not_reviewed"},
    )
    return Decision(pause.tool_call_id, "return_error", tool_result=result)


def _field_label(schema: dict[str, Any], name: str) -> str:
    prop = (schema.get("properties") or {}).get(name)
    if isinstance(prop, dict) and isinstance(prop.get("title"), str) and prop["title"]:
        return prop["title"]
    return name


def check_form_value(schema: dict[str, Any], value: Any) -> None:
    """Check a form's answer against its JSON Schema.

    Uses ``jsonschema``: the validator the schema declares (``$schema``),
    Draft 2020-12 by default, with ``jsonschema.FormatChecker`` so formats
    such as ``date`` are enforced (plain JSON Schema only annotates them).

    Args:
        schema: the pause's ``response_schema``.
        value: the value the page sent (an object for a form).

    Raises:
        DecisionError: ``field`` is the value's JSON path in the message
            (``value.amount``; ``value.<name>`` for a missing required
            field; ``value`` for the whole value), and the text names the
            field by its title and says what is wrong.
    """
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = validator_cls(schema, format_checker=jsonschema.FormatChecker())
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [r for r in (error.validator_value or []) if r not in error.instance]
        if missing and not path:
            raise DecisionError(
                f"{_field_label(schema, missing[0])}: this field is required.", field=f"value.{missing[0]}"
            )
    field = ".".join(["value", *path])
    label = _field_label(schema, path[0]) if path else "The answer"
    raise DecisionError(f"{label}: {error.message}", field=field)


def form_output(title: str | None, value: Any) -> str:
    """The text the model reads for a submitted form: a line naming the form,
    then the value as indented JSON (exact, and readable)."""
    head = f'The user filled in the form "{title}":' if title else "The user filled in the form:"
    return head + "\n" + json.dumps(value, indent=2, ensure_ascii=False)


def _decide_form(pause: Pause, msg: Any) -> Decision:
    """submit / return_error for a ``form`` pause."""
    if msg.action == "submit":
        if pause.form_error is not None or pause.response_schema is None:
            raise DecisionError(
                "This form cannot be answered: "
                + (pause.form_error or "it has no schema.")
                + " Return the error to the agent instead.",
                field="action",
            )
        try:
            size = len(json.dumps(msg.value, ensure_ascii=False))
        except (TypeError, ValueError):
            raise DecisionError("The answer is not JSON.", field="value") from None
        if size > MAX_TEXT:
            raise DecisionError(f"The answer is too long ({size} characters; at most {MAX_TEXT}).", field="value")
        check_form_value(pause.response_schema, msg.value)
        return Decision(
            pause.tool_call_id,
            "submit",
            tool_result=ToolResultBlock(
                id=pause.tool_call_id,
                name=pause.tool_name,
                output=form_output(pause.title, msg.value),
                state=ToolResultState.SUCCESS,
                metadata={"value": msg.value},
            ),
        )
    if pause.form_error is None and not msg.message:
        raise DecisionError("Say what went wrong, or fill in the form.", field="message")
    text = msg.message or f"The form could not be shown to the user: {pause.form_error}"
    return Decision(
        pause.tool_call_id,
        "return_error",
        tool_result=ToolResultBlock(
            id=pause.tool_call_id, name=pause.tool_name, output=text, state=ToolResultState.ERROR
        ),
    )


async def recheck_permission(engine: Any, tool: ToolBase, edited: dict[str, Any]) -> PermissionDecision:
    """Check an edited input against the agent's permission engine again.

    AgentScope 2.0.11 runs an edited, approved call without a new check
    (``Agent._handle_incoming_event`` only copies name and input), so a deny
    rule could be bypassed by an edit. This closes that hole.

    Args:
        engine: an ``agentscope.permission.PermissionEngine`` over the agent's
            live ``PermissionContext``.
        tool: the tool being called.
        edited: the edited input.

    Returns:
        the engine's decision (ALLOW or ASK: the person is approving it now).

    Raises:
        DecisionError: ``field="input"``, when the engine denies the edited
            input; the message names the deny rule as ``deny tool(content)``
            with its source (or the engine's ``decision_reason`` when the
            deny came from elsewhere, e.g. the tool's own check or the mode).
    """
    decision = await engine.check_permission(tool, edited)
    if decision.behavior == PermissionBehavior.DENY:
        rule = _deny_rule(engine, tool, decision)
        if rule is not None:
            why = f" (rule: {rule_label(rule)}, from {rule.source})" if rule.source else f" (rule: {rule_label(rule)})"
        else:
            why = f" ({decision.decision_reason})" if decision.decision_reason else ""
        raise DecisionError(
            f"The edited input is refused by the permission engine: {decision.message}{why}.",
            field="input",
        )
    return decision


def _deny_rule(engine: Any, tool: ToolBase, decision: PermissionDecision) -> PermissionRule | None:
    """The deny rule behind ``decision``: AgentScope's engine says
    ``decision_reason="Rule: <rule_content>"`` for the first matching deny
    rule of the tool (``PermissionEngine._check_deny_rules``)."""
    context = getattr(engine, "context", None)
    rules = (getattr(context, "deny_rules", None) or {}).get(tool.name, [])
    for rule in rules:
        if decision.decision_reason == f"Rule: {rule.rule_content}":
            return rule
    return None


async def check_external_result(tool: ToolBase | None, result: ToolResultBlock) -> None:
    """Run the tool's own check of an external result before the agent sees it.

    AgentScope calls ``ToolBase.check_external_result`` when resuming and,
    on failure, raises out of the reply and leaves it parked. Checking first
    keeps the reply resumable and shows the error in the widget.

    Raises:
        DecisionError: when the result breaks the tool's ``metadata_schema``.
    """
    if tool is None:
        return
    try:
        await tool.check_external_result(result)
    except Exception as exc:  # noqa: BLE001 - jsonschema.ValidationError or the tool's own check
        text = getattr(exc, "message", None) or str(exc)
        raise DecisionError(
            f"The result does not fit {tool.name}'s metadata schema: {text}", field="metadata"
        ) from None
