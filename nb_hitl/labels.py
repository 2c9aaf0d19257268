"""How a sentence a person reads names a tool call: by its tool and a summary of its input
(``delete_file (path="old_log.txt")``), never by its ``tool_call`` id, which is AgentScope's and
the model's, not the person's. Refusals, notes and listings that name a call use these."""

from __future__ import annotations

import json
from typing import Any, Protocol

__all__ = ["answers_text", "call_label", "choices_text", "pause_label"]


def call_label(tool_name: str, tool_input: Any) -> str:
    """``tool (summary)``: the tool's name and a one-line summary of its input (a dict or its JSON
    text; the AskUser question for AskUser), or the tool's name alone when the input is empty."""
    from .service.inbox import summary_line  # the one input summary (the service's inbox rows)

    summary = summary_line({"name": tool_name, "input": tool_input}, limit=80)
    return f"{tool_name} ({summary})" if summary else tool_name


class Labelled(Protocol):
    """A card :func:`pause_label` names: a :class:`~nb_hitl.pauses.Pause` or an AG-UI
    :class:`~nb_hitl.agui.turn.RemoteCard` (``input``: a dict, the JSON text, or ``None``)."""

    @property
    def tool_name(self) -> str: ...

    @property
    def input(self) -> Any: ...


def pause_label(pause: Labelled) -> str:
    """:func:`call_label` of a card's call: AgentScope's reading of the model's input, else the raw input."""
    tool_input = pause.input
    if tool_input is None:
        call = getattr(pause, "tool_call", None)  # a Pause AgentScope could not read: the model's text
        tool_input = call.input if call is not None else None
    return call_label(pause.tool_name, tool_input)


def answers_text(answers: Any) -> str:
    """AskUser answers (``[{"question", "selected", "other"}, ...]``, as recorded) in words: the
    choices (``summary.md``), or per question ``"Which file?" -> notes.txt`` when there are
    several; free text as ``(Other) "..."``. Anything else: its JSON text."""
    if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
        return answers if isinstance(answers, str) else json.dumps(answers, ensure_ascii=False)
    lines = [choices_text(a.get("selected") or [], a.get("other")) for a in answers]
    if len(answers) > 1:
        lines = [f'"{a.get("question", "")}" -> {line}' for a, line in zip(answers, lines, strict=True)]
    return "; ".join(lines)


def choices_text(selected: Any, other: Any) -> str:
    """One AskUser question's answer in words: the chosen labels and a free-text answer as
    ``(Other) "..."``, comma-separated (``notes.txt, (Other) "the log"``), or ``(no answer)``."""
    parts = [str(s) for s in selected]
    if other:
        parts.append(f'(Other) "{other}"')
    return ", ".join(parts) or "(no answer)"
