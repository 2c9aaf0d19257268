"""What a confirmation card shows that is not the decision itself: the
"Always allow" rules' reach, the parsed shell commands, the file change a peer
sent, and the decision a remote card shows once its answer was sent.

Used by :class:`~nb_hitl.kinds.confirm.ConfirmKind` (the views of a local
pause and of an AG-UI interrupt) and :mod:`nb_hitl.pauses`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, TypedDict

from agentscope.permission import PermissionRule

from .._agentscope import enum_value, rule_label
from ..file_change import MAX_DIFF_CHARS
from ..markdown import markdown_html

log = logging.getLogger("nb_hitl.kinds")

__all__ = [
    "SuggestedRuleView",
    "confirm_answer_summary",
    "confirm_view_fields",
    "remote_file_change",
    "rule_reach_line",
    "shell_command_view",
    "suggested_rule_view",
]


class SuggestedRuleView(TypedDict):
    """One of AgentScope's ``suggested_rules`` as the page shows it."""

    index: int
    label: str
    tool_name: str
    rule_content: str | None
    behavior: str
    reach: str
    reach_html: str | None
    """``reach`` (Markdown: its patterns in backticks) as sanitised HTML
    (:func:`nb_hitl.markdown.markdown_html`, the road of the model's Markdown),
    or ``None`` when it reads the same as plain text."""


def suggested_rule_view(index: int, rule: PermissionRule) -> SuggestedRuleView:
    """``rule``, the ``index``-th suggested rule of a pause, as the page shows it."""
    reach = rule_reach_line(rule)
    return SuggestedRuleView(
        index=index,
        label=rule_label(rule),
        tool_name=rule.tool_name,
        rule_content=rule.rule_content,
        behavior=enum_value(rule.behavior),
        reach=reach,
        reach_html=markdown_html(reach),
    )


def rule_reach_line(rule: PermissionRule) -> str:
    """One line saying what else ``rule`` lets through, for the "Always allow" list.

    The permission explorer's own explanation
    (:func:`nb_hitl.permissions.rule_reach`, the semantics of each tool's
    ``match_rule``); a plain line from AgentScope's rule shape if that fails,
    since a description must never stop a card from being drawn.
    """
    from ..permissions import rule_reach  # lazy: the explorer imports the decisions

    try:
        return rule_reach(rule)
    except Exception:
        log.warning("rule_reach failed for %r", rule, exc_info=True)
    verb = "denies" if enum_value(rule.behavior) == "deny" else "allows"
    if not rule.rule_content:
        return f"{verb} every call of {rule.tool_name}, whatever its input (a whole-tool rule)."
    return f"{verb} every call of {rule.tool_name} whose input matches {rule.rule_content!r}, not only this one."


def shell_command_view(c: Mapping[str, Any]) -> dict[str, Any]:
    """One simple command kept by the shell rules (or sent by an AG-UI peer) as the page
    shows it: every key of ``ShellCommandView`` present, every value text (``files``: the
    ``{"access", "path"}`` entries that are objects)."""
    program, files = c.get("program"), c.get("files")

    def texts(key: str) -> list[str]:
        value = c.get(key)
        return [str(v) for v in value] if isinstance(value, list) else []

    return {
        "program": None if program is None else str(program),
        "args": texts("args"),
        "redirections": texts("redirections"),
        "assignments": texts("assignments"),
        "text": str(c.get("text") or ""),
        "via": str(c.get("via") or ""),
        "behavior": str(c.get("behavior") or ""),
        "why": str(c.get("why") or ""),
        "files": [
            {"access": str(f.get("access") or ""), "path": str(f.get("path") or "")}
            for f in (files if isinstance(files, list) else [])
            if isinstance(f, Mapping)
        ],
    }


def remote_file_change(value: Any) -> dict[str, Any] | None:
    """A peer's ``file_change`` as the page shows it (every value text, the diff cut at
    :data:`~nb_hitl.file_change.MAX_DIFF_CHARS`), or ``None`` when it is missing or malformed."""
    if not isinstance(value, dict) or not isinstance(value.get("path"), str) or not isinstance(value.get("diff"), str):
        return None

    def text(key: str) -> str | None:
        item = value.get(key)
        return item if isinstance(item, str) else None

    return {
        "path": value["path"],
        "diff": value["diff"][:MAX_DIFF_CHARS],
        "sha256_before": text("sha256_before"),
        "note": text("note"),
    }


def confirm_view_fields(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A confirmation interrupt's ``metadata["nb_hitl"]`` -> its card's fields
    (``suggested_rules`` as ``{"index", "label"}``, ``shell_commands``,
    ``shell_problems``, ``file_change``, and ``sent_text`` / ``input_changes``: what the
    model sent when the input shown differs from it, and AgentScope's repairs), every
    value checked and made text."""
    commands = meta.get("shell_commands")
    problems = meta.get("shell_problems")
    sent, changes = meta.get("sent_text"), meta.get("input_changes")
    return {
        "sent_text": sent if isinstance(sent, str) else None,
        "input_changes": [str(c) for c in changes] if isinstance(changes, list) and isinstance(sent, str) else [],
        "suggested_rules": [
            {"index": int(r.get("index", i)), "label": str(r.get("label", ""))}
            for i, r in enumerate(meta.get("suggested_rules") or [])
            if isinstance(r, dict)
        ],
        "shell_commands": [shell_command_view(c) for c in commands if isinstance(c, dict)]
        if isinstance(commands, list)
        else [],
        "shell_problems": [str(p) for p in problems] if isinstance(problems, list) else [],
        "file_change": remote_file_change(meta.get("file_change")),
    }


def confirm_answer_summary(payload: Any, message: Mapping[str, Any], view: Mapping[str, Any]) -> dict[str, Any]:
    """The decision a remote confirmation card shows once ``message`` was sent as AG-UI's
    approve-with-edits ``payload`` (``{"approved", "editedArgs"?, "acceptedRules"?}``):
    ``{"action", "confirmed", "edited_input"?, "accepted_rules"?}``, the rules by the labels
    ``view["suggested_rules"]`` gave them."""
    body: Mapping[str, Any] = payload if isinstance(payload, Mapping) else {}
    out: dict[str, Any] = {"action": message.get("action"), "confirmed": bool(body.get("approved"))}
    if "editedArgs" in body:
        out["edited_input"] = body["editedArgs"]
    labels = {r["index"]: r["label"] for r in view.get("suggested_rules") or []}
    if body.get("acceptedRules"):
        out["accepted_rules"] = [labels.get(i, str(i)) for i in body["acceptedRules"]]
    return out
