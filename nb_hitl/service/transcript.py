"""A service session's stored messages as the transcript of nb_hitl's ReplyWidget.

``GET /sessions/{id}/messages`` returns AgentScope ``Msg`` JSON; the widget
draws entries ``{"kind": "text"|"tool_call"|"tool_result"|"note", "id",
"text", "name", "tool_call_id", "state"}``; a text entry whose Markdown
renders to more than its plain text adds ``html`` (sanitised). The late output of a tool the
service moved to the background arrives as a hint block in a later reply;
it is drawn as a tool result there, where a person reading the session
looks for it.
"""

from __future__ import annotations

import json
from typing import Any

from ..markdown import markdown_html

__all__ = ["transcript_entries"]


def _block_text(block: dict[str, Any]) -> str:
    out = block.get("output", block.get("text", ""))
    if isinstance(out, list):
        return "".join(str(p.get("text", "")) for p in out if isinstance(p, dict))
    return str(out or "")


def _background_result(block: dict[str, Any]) -> dict[str, Any] | None:
    """A hint block carrying the late output of a tool AgentScope moved to the
    background (``ToolOffloadMiddleware``: source label ``tool_output``,
    sublabel ``"<tool> · <tool_call_id>"``) as a tool-result entry, else None."""
    if block.get("type") != "hint":
        return None
    try:
        source = json.loads(block.get("source") or "{}")
    except ValueError:
        return None
    if not isinstance(source, dict) or source.get("label") != "tool_output":
        return None
    name, _sep, call_id = str(source.get("sublabel") or "").partition(" · ")
    hint = block.get("hint")
    text = _block_text({"output": hint}) if isinstance(hint, list) else str(hint or "")
    text = text.replace("<system-notification>", "").replace("</system-notification>", "").strip()
    return {
        "kind": "tool_result",
        "id": f"late:{block.get('id')}",
        "text": f"(finished in the background) {text}",
        "name": name,
        "tool_call_id": call_id,
        "state": "success",
    }


def transcript_entries(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``/messages`` -> ReplyWidget transcript entries
    (``{"kind": "text"|"tool_call"|"tool_result"|"note", "id", "text", ...}``).

    User messages become notes (``"<name>: <text>"``); the late output of a
    tool the service moved to the background becomes a tool-result entry
    where it arrived; other hint blocks (system reminders) are left out.
    """
    entries: list[dict[str, Any]] = []
    for msg in messages:
        blocks = [b for b in msg.get("content") or [] if isinstance(b, dict)]
        if msg.get("role") == "user":
            text = " ".join(_block_text(b) for b in blocks if b.get("type") == "text")
            entries.append(
                {"kind": "note", "id": f"msg:{msg.get('id')}", "text": f"{msg.get('name') or 'user'}: {text}"}
            )
            continue
        for b in blocks:
            kind = b.get("type")
            late = _background_result(b)
            if late is not None:
                entries.append(late)
            elif kind == "text":
                text = str(b.get("text") or "")
                entry = {"kind": "text", "id": str(b.get("id")), "text": text}
                html = markdown_html(text)  # a stored block has ended: its Markdown, as a live reply shows it
                entries.append(entry if html is None else {**entry, "html": html})
            elif kind == "tool_call":
                entries.append(
                    {
                        "kind": "tool_call",
                        "id": f"call:{b.get('id')}",
                        "text": str(b.get("input") or ""),
                        "name": b.get("name"),
                        "tool_call_id": b.get("id"),
                        "state": b.get("state"),
                    }
                )
            elif kind == "tool_result":
                entries.append(
                    {
                        "kind": "tool_result",
                        "id": f"result:{b.get('id')}",
                        "text": _block_text(b),
                        "name": b.get("name"),
                        "tool_call_id": b.get("id"),
                        "state": b.get("state"),
                    }
                )
        if msg.get("error"):
            entries.append({"kind": "note", "id": f"error:{msg.get('id')}", "text": f"Error: {msg.get('error')}"})
    return entries
