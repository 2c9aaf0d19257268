"""The permission explorer's replay: a recorded log against candidate rules, kept in the kernel.

:class:`ReplayDesk` runs :func:`nb_hitl.audit.replay` for the explorer and
keeps its whole result (a ``DataFrame`` of every recorded call) in the
kernel; the page gets a summary and one page of rows at a time
(:meth:`ReplayDesk.page`), never the whole log. The log is read and its
calls judged in a worker process (``replay(..., in_worker=True)``,
:mod:`nb_hitl.audit.worker`), so the kernel stays free for clicks meanwhile.
A newer run cancels an older one still running (its worker is killed), and
the candidate rules of the last finished run can be taken away as a rules
file (:meth:`ReplayDesk.export`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from agentscope.permission import PermissionMode, PermissionRule

from .._agentscope import permission_context
from ..audit.calls import RecordedCalls
from ..errors import DecisionError
from ..permissions.rulefile import import_rules, rules_text
from ..permissions.rules import _all_rules
from ..store import AuditLog

__all__ = ["ReplayDesk", "PAGE_SIZE", "INPUT_CHARS", "NEVER_FIRED_LISTED"]

PAGE_SIZE = 50
"""Rows of a replay the page gets at a time."""

INPUT_CHARS = 300
"""A row's input is sent to the page as JSON text cut to this many characters."""

NEVER_FIRED_LISTED = 100
"""The most rule labels ``never_fired`` lists (``never_fired_count`` counts them all)."""


def _row(index: int, r: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(r["input"], ensure_ascii=False, default=str)
    if len(text) > INPUT_CHARS:
        text = text[: INPUT_CHARS - 1] + "…"
    person = r["person"] if isinstance(r["person"], str) else None
    return {
        "index": index,
        "tool_name": r["tool_name"],
        "input_text": text,
        "recorded": r["recorded"],
        "person": person,
        "candidate": r["candidate"],
        "change": r["change"],
        "denied_now_allowed": bool(r["denied_now_allowed"]),
        "problem": r["problem"] if isinstance(r["problem"], str) else None,
    }


class ReplayDesk:
    """Runs, keeps and pages the explorer's replays of one recorded log.

    Args:
        history: the recorded log.
        agent: the explored agent (its tools; its live rules and mode when
            no candidate is given).
        known_tools: returns the tool names a candidate rule may name.
    """

    def __init__(self, history: AuditLog, agent: Any, known_tools: Callable[[], list[str]]) -> None:
        self.history = history
        self._agent = agent
        self._known_tools = known_tools
        self._task: asyncio.Task[Any] | None = None
        self._runs = 0
        self.frame: pd.DataFrame | None = None
        """The last finished replay (every recorded call), or ``None``."""
        self.rules: list[PermissionRule] = []
        """The candidate rules of the last finished replay."""
        self._read: tuple[tuple[int, int], RecordedCalls] | None = None

    def _log(self) -> tuple[RecordedCalls | AuditLog, Callable[[RecordedCalls], None]]:
        """What to replay: the log's calls read before, or the log itself
        when its file changed since (its size or modification time), with
        where to keep its calls once the replay read them: replays as a
        person types read it once."""
        try:
            stat = self.history.path.stat()
            mark = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            mark = (-1, -1)

        def keep(calls: RecordedCalls) -> None:
            self._read = (mark, calls)

        if self._read is not None and self._read[0] == mark:
            return self._read[1], keep
        return self.history, keep

    def _candidate(self, rules_text_: str | None, mode: str | None) -> tuple[list[PermissionRule], PermissionMode]:
        live = permission_context(self._agent)
        if rules_text_ is None:
            listed = _all_rules(live)
        else:
            listed = import_rules(rules_text_, known_tools=self._known_tools())
        if not mode:
            return listed, live.mode
        try:
            return listed, PermissionMode(mode)
        except ValueError:
            modes = ", ".join(m.value for m in PermissionMode)
            raise DecisionError(f"mode must be one of {modes}; got {mode!r}.", field="mode") from None

    async def run(self, rules: str | None = None, mode: str | None = None) -> dict[str, Any] | None:
        """Replay the log against candidate rules; a run still going is cancelled first.

        Args:
            rules: a rules file's text (JSON list of ``PermissionRule``
                objects, :func:`nb_hitl.permissions.import_rules`); ``None``:
                the agent's live rules.
            mode: the candidate mode; empty or ``None``: the agent's live mode.

        Returns:
            the summary (:meth:`summary`), or ``None`` when a newer run
            cancelled this one before it finished.

        Raises:
            RuleFileError: the rules text cannot be read (line and field named).
            DecisionError: a bad mode; the replay's worker process failed or
                ran past its time (``field="replay"``, :func:`nb_hitl.audit.worker.open_worker`).
        """
        listed, candidate_mode = self._candidate(rules, mode)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        from ..audit.rule_replay import replay

        log, keep = self._log()
        toolkit = getattr(self._agent, "toolkit", None)
        task = asyncio.ensure_future(replay(log, listed, toolkit, mode=candidate_mode, in_worker=True, on_read=keep))
        self._task = task
        await asyncio.wait({task})
        if task.cancelled():
            return None
        self.frame = task.result()
        self.rules = listed
        self._runs += 1
        return self.summary(source="agent" if rules is None else "candidate")

    def summary(self, source: str) -> dict[str, Any]:
        """What the page shows of the last replay: ``run`` (its number),
        ``source`` (``agent``: the live rules; ``candidate``: rules typed in
        the page), ``rule_count``, ``calls``, ``changed``,
        ``denied_now_allowed`` (counts), ``mode``, ``never_fired`` (at most
        :data:`NEVER_FIRED_LISTED` labels), ``never_fired_count`` and
        ``page``, the first page of changed calls (:meth:`page`)."""
        frame = self._frame()
        rules = frame.attrs["rules"]
        never = [str(label) for label in rules.loc[rules["never_fired"], "rule"]]
        return {
            "run": self._runs,
            "source": source,
            "rule_count": len(self.rules),
            "calls": len(frame),
            "changed": int(frame["changed"].sum()),
            "denied_now_allowed": int(frame["denied_now_allowed"].sum()),
            "mode": frame.attrs["mode"],
            "never_fired": never[:NEVER_FIRED_LISTED],
            "never_fired_count": len(never),
            "page": self.page(0, only_changed=True),
        }

    def _frame(self) -> pd.DataFrame:
        if self.frame is None:
            raise DecisionError("Replay the log first.", field="replay")
        return self.frame

    def page(self, offset: int, *, only_changed: bool = True, limit: int = PAGE_SIZE) -> dict[str, Any]:
        """One page of the last replay's rows.

        Args:
            offset: the first row (0-based, among the rows shown); clamped
                to the rows there are.
            only_changed: only the calls whose decision changes.
            limit: rows per page (at most :data:`PAGE_SIZE`).

        Returns:
            ``{"run", "offset", "limit", "total", "only_changed", "rows"}``; each row:
            ``index`` (the call's position in the log's calls),
            ``tool_name``, ``input_text`` (JSON, cut to :data:`INPUT_CHARS`),
            ``recorded``, ``person``, ``candidate``, ``change``,
            ``denied_now_allowed``, ``problem``.

        Raises:
            DecisionError: no replay yet, or a bad offset.
        """
        frame = self._frame()
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise DecisionError("offset must be a whole number, 0 or more.", field="offset")
        # the page's rows by position: a page of 50 copies 50 rows, not every changed call
        shown = np.flatnonzero(frame["changed"].to_numpy()) if only_changed else np.arange(len(frame))
        total = len(shown)
        offset = min(offset, max(0, total - 1))
        limit = max(1, min(int(limit), PAGE_SIZE))
        part = frame.iloc[shown[offset : offset + limit]]
        rows = [_row(int(i), r) for i, r in zip(part.index, part.to_dict("records"), strict=True)]
        return {
            "run": self._runs,
            "offset": offset,
            "limit": limit,
            "total": total,
            "only_changed": only_changed,
            "rows": rows,
        }

    def export(self) -> str:
        """The candidate rules of the last finished replay as a rules file
        (:func:`nb_hitl.permissions.rulefile.rules_text`).

        Raises:
            DecisionError: no replay yet.
        """
        self._frame()
        return rules_text(self.rules)

    def cancel(self) -> None:
        """Cancel a replay still running."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
