"""Kind ``ask_user``: AgentScope's built-in ``AskUser`` tool is parked.

The call's input is validated with ``AskUserParams`` when the pause is built
(plus AskUser's own "preview only on single-select" rule, case C02, and the
answer's own size cap: a question or option label longer than
:data:`~nb_hitl.messages.MAX_SHORT` characters could never be answered, as
an answer carries it back); an invalid call can only return that error to
the agent. A valid call's view carries its input once, as ``ask_user`` (the
card draws the questions; ``input_text`` is empty). An ``answer`` becomes
``ToolResultBlock(SUCCESS, output=text, metadata=AskUserMetadata(...))``.
The AG-UI payload is AgentScope's ``AskUserMetadata`` schema narrowed to
this call's questions and option labels.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentscope.message import ToolResultBlock, ToolResultState
from agentscope.tool import AskUserAnswer, AskUserMetadata, AskUserParams
from pydantic import ValidationError

from ..errors import DecisionError
from ..labels import choices_text
from ..messages import MAX_SHORT, AnswerMessage, format_validation_error
from ._base import Decision, action_text, base_message
from ._schema import SCHEMA_DIALECT, validate_payload
from .external import ExternalKind

if TYPE_CHECKING:
    from ag_ui.core import Interrupt

    from ..pauses import Pause

__all__ = ["AskUserKind", "ask_user_output", "too_long_to_answer"]


def ask_user_output(answers: list[AskUserAnswer]) -> str:
    """The text the model reads for an AskUser answer (``ToolResultBlock.output``).

    One line per question: ``"Which file?" -> notes.txt, todo.txt`` and, for
    a free-text answer, ``(Other) "..."``.
    """
    lines = ["The user answered:"]
    for a in answers:
        lines.append(f'- "{a.question}" -> {choices_text(a.selected, a.other)}')
    return "\n".join(lines)


def too_long_to_answer(params: AskUserParams) -> list[str]:
    """The questions and option labels of ``params`` an answer could not carry
    back (:class:`nb_hitl.messages.AnswerIn` caps each at
    :data:`~nb_hitl.messages.MAX_SHORT` characters), one
    ``"questions.0.options.1.label: ..."`` line each, as
    :func:`~nb_hitl.messages.format_validation_error` writes them."""
    problems = []
    for qi, q in enumerate(params.questions):
        if len(q.question) > MAX_SHORT:
            problems.append(
                f"questions.{qi}.question: {len(q.question):,} characters, longer than an answer can carry back "
                f"(at most {MAX_SHORT:,})"
            )
        problems += [
            f"questions.{qi}.options.{oi}.label: {len(o.label):,} characters, longer than an answer can carry back "
            f"(at most {MAX_SHORT:,})"
            for oi, o in enumerate(q.options)
            if len(o.label) > MAX_SHORT
        ]
    return problems


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


class AskUserKind(ExternalKind):
    """answer / return_error for an ``AskUser`` call (see the module docstring)."""

    name = "ask_user"
    cancelled_what = "question"
    return_error_needs_text = "Say what went wrong, or answer the questions."

    def complete(self, pause: Pause) -> None:
        """Validate the input: ``pause.ask_user`` or ``pause.ask_user_error`` (case C02)."""
        if pause.input is None:
            pause.ask_user_error = "The AskUser input is not a JSON object."
            return
        try:
            pause.ask_user = AskUserParams.model_validate(pause.input)
        except ValidationError as exc:
            pause.ask_user_error = format_validation_error(exc)
            return
        # AskUser's own contract ("preview ... Only supported in single-select
        # questions"): AskUserParams 2.0.11 states it in the field description
        # but does not enforce it (case C02)
        problems = [
            f"questions.{qi}.options.{oi}.preview: preview is only supported on single-select questions"
            for qi, q in enumerate(pause.ask_user.questions)
            if q.multi_select
            for oi, o in enumerate(q.options)
            if o.preview is not None
        ]
        problems += too_long_to_answer(pause.ask_user)
        if problems:
            pause.ask_user = None
            pause.ask_user_error = "\n".join(problems)

    def view_input_text(self, pause: Pause, text: str) -> str:
        """``""`` while the questions are valid: the view carries them as
        ``ask_user`` and the card draws those; an invalid call's card shows
        the input as sent."""
        return "" if pause.ask_user is not None else text

    def _decide(self, pause: Pause, msg: Any) -> Decision:
        if msg.action == "external_result":
            raise DecisionError("AskUser calls take answers to their questions.", field="action")
        if msg.action == "answer":
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
        if pause.ask_user_error is None and not (msg.message or "").strip():
            raise DecisionError(self.return_error_needs_text, field="message")
        return self._return_error(pause, msg)

    def cancel_message(self, pause: Pause) -> dict[str, Any]:
        if pause.ask_user_error is not None:
            # decide: the default text names the invalid input
            return {**base_message(pause), "action": "return_error"}
        return super().cancel_message(pause)

    def response_schema(self, pause: Pause) -> dict[str, Any]:
        base = AskUserMetadata.model_json_schema()
        schema: dict[str, Any] = {"$schema": SCHEMA_DIALECT, **base}
        schema["additionalProperties"] = False
        answer = schema.get("$defs", {}).get("AskUserAnswer")
        if pause.ask_user is not None and isinstance(answer, dict):
            questions = [q.question for q in pause.ask_user.questions]
            labels = sorted({o.label for q in pause.ask_user.questions for o in q.options})
            answer = copy.deepcopy(answer)
            answer["properties"]["question"]["enum"] = questions
            answer["properties"]["selected"]["items"] = {"type": "string", "enum": labels}
            answer["properties"]["other"] = {
                **answer["properties"]["other"],
                "anyOf": [{"type": "string", "maxLength": MAX_SHORT}, {"type": "null"}],
            }
            answer["additionalProperties"] = False
            schema["$defs"] = {**schema["$defs"], "AskUserAnswer": answer}
            answers = schema["properties"]["answers"]
            schema["properties"]["answers"] = {**answers, "minItems": len(questions), "maxItems": len(questions)}
        elif pause.ask_user_error:
            schema["description"] = (
                "The agent's AskUser questions are invalid and cannot be answered as asked "
                f"({pause.ask_user_error}); resume this interrupt with status 'cancelled' to return the error."
            )
        return schema

    def interrupt_message(self, pause: Pause) -> str:
        if pause.ask_user is None:
            return f"The agent's AskUser questions are invalid: {pause.ask_user_error}"
        return " / ".join(q.question for q in pause.ask_user.questions)

    def resume_message(self, pause: Pause, payload: Any) -> dict[str, Any]:
        answers = [
            {"question": a.get("question"), "selected": list(a.get("selected") or []), "other": a.get("other")}
            for a in payload["answers"]
        ]
        return {**base_message(pause), "action": "answer", "answers": answers}

    def meta_ok(self, meta: Mapping[str, Any]) -> bool:
        ask = meta.get("ask_user")
        return ask is None or (isinstance(ask, dict) and isinstance(ask.get("questions"), list))

    def view_fields(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        fields = {"ask_user": meta.get("ask_user"), "ask_user_error": meta.get("ask_user_error")}
        if fields["ask_user"] is None and not fields["ask_user_error"]:
            fields["ask_user_error"] = "The interrupt carries no questions."
        if isinstance(fields["ask_user"], dict):
            fields["input_text"] = ""  # the questions are the input: the page gets them once
        return fields

    def answer_summary(
        self, payload: Any, message: Mapping[str, Any], view: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The answers as sent: ``{"action": "answer", "answers"}``."""
        return {"action": "answer", "answers": payload["answers"]}

    def entry_payload(self, interrupt: Interrupt, message: Mapping[str, Any], schema: dict[str, Any]) -> Any:
        action = message.get("action")
        if action != "answer":
            raise DecisionError(f"AskUser interrupts take answers, not {action_text(action)}.", field="action")
        answers = message.get("answers")
        if not isinstance(answers, list):
            raise DecisionError("answers must be a list.", field="answers")
        cleaned = []
        for a in answers:
            if not isinstance(a, dict):
                raise DecisionError("Each answer must be an object.", field="answers")
            other = a.get("other")
            other = other.strip() or None if isinstance(other, str) else other
            cleaned.append({"question": a.get("question"), "selected": a.get("selected") or [], "other": other})
        payload = {"answers": cleaned}
        validate_payload(schema, payload)
        return payload
