"""Transcript entries as the page gets them: long texts cut, the rest on request.

Every transcript a reply widget shows (a local :class:`~nb_hitl.session.Session`'s,
an AG-UI turn's, a service session's) is a list of entry dicts
(``{"kind", "id", "text", ...}``, see ``nb_hitl/session/_transcript.py``).
An entry's text can be large: a tool that returns a 1 MB log, a tool call
that writes a file. Drawn whole, such a text held the page's main thread for
up to 0.3 s (0.7 s on a busy machine; ``benchmarks/responsive.py``) and went
into the saved notebook. The page therefore gets at most :data:`SHOWN_CHARS` characters of
each entry; ``more`` says how many are left out, and the page asks for the
whole text when the person wants it (the widget's ``entry_text`` action).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .errors import DecisionError

__all__ = ["SHOWN_CHARS", "cut_text", "entry_text", "lookup_in", "shown_entry"]

SHOWN_CHARS = 20_000
"""Characters of an entry's text sent to the page (the rest on request)."""


def shown_entry(entry: dict[str, Any], limit: int = SHOWN_CHARS) -> dict[str, Any]:
    """A copy of ``entry`` as the page gets it: its ``text`` cut to ``limit``
    characters, with ``more`` (characters left out) and no ``html`` (the
    Markdown of a cut text would not be the block's) when it is longer.

    Args:
        entry: a transcript entry (``{"kind", "id", "text", ...}``).
        limit: characters kept (default :data:`SHOWN_CHARS`).

    Returns:
        a new dict; ``entry`` itself is not changed.
    """
    out = dict(entry)
    text = out.get("text")
    if isinstance(text, str) and len(text) > limit:
        out["text"], out["more"] = cut_text(text, limit)
        out.pop("html", None)
    return out


def cut_text(text: str, limit: int = SHOWN_CHARS) -> tuple[str, int]:
    """``text`` as the page gets it: its first ``limit`` characters and how many are left out (0: whole)."""
    return text[:limit], max(0, len(text) - limit)


def entry_text(lookup: Callable[[str], dict[str, Any] | None], entry_id: Any) -> dict[str, Any]:
    """The answer to the page's ``entry_text`` action ("Show all" on an entry
    the page shows a part of): ``{"id", "text"}``, the entry's whole text.

    Args:
        lookup: the entry of an id, or ``None`` (``Transcript.by_id``, or
            :func:`lookup_in` of a list of entries).
        entry_id: the id the page sent.

    Raises:
        DecisionError: ``entry_id`` is not a non-empty string, or names no entry
            (``field="id"``).
    """
    if not isinstance(entry_id, str) or not entry_id:
        raise DecisionError("'id' names the transcript entry to show whole.", field="id")
    entry = lookup(entry_id)
    if entry is None:
        raise DecisionError(f"This reply has no transcript entry {entry_id!r}.", field="id")
    return {"id": entry_id, "text": str(entry.get("text", ""))}


def lookup_in(entries: Iterable[dict[str, Any]]) -> Callable[[str], dict[str, Any] | None]:
    """A lookup for :func:`entry_text` over a plain list of entries (searched in order)."""
    return lambda entry_id: next((e for e in entries if e.get("id") == entry_id), None)
