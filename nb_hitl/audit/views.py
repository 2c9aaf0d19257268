"""Two questions asked of an audit log: which approvals were given without a look, and which rules people already live by.

* :func:`quick_approvals`: the approvals given in under a second from the
  pause opening (rubber-stamping), one row each;
* :func:`suggest_rules`: the narrowest allow rules that would have covered
  what people always approved, and no call they refused. They are offered:
  nothing here changes an agent's rules; adding one is a deliberate step
  (:func:`nb_hitl.permissions.add_rule`, a rules file).

Both read :func:`~nb_hitl.audit.frame.audit_frame`'s frame (or the log itself).
The matching is AgentScope's own (the tool's ``generate_suggestions`` and
``match_rule``, through :class:`~nb_hitl.permissions.bounded.BoundedEngine`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, TypeAlias

import pandas as pd
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionRule

from .._agentscope import rule_label
from ..permissions.bounded import BoundedEngine, PathologicalRuleError
from ..permissions.tools import tools_of
from ..store import AuditLog
from .charts import QUICK_SECONDS, decide_times
from .frame import audit_frame, frame_records, read_records
from .rule_replay import recorded_calls

__all__ = ["QUICK_SECONDS", "APPROVED", "quick_approvals", "suggest_rules", "SUGGESTION_COLUMNS"]

APPROVED = ("approve", "modify")
"""The answers that let a call run (``modify``: approved with changes)."""

SUGGESTION_COLUMNS = ["rule", "tool_name", "rule_content", "behavior", "covers", "matches", "examples"]
"""The columns of :func:`suggest_rules`."""

_EXAMPLES = 3

Log: TypeAlias = AuditLog | str | os.PathLike[str] | Iterable[dict[str, Any]] | pd.DataFrame


def _frame(log: Log) -> pd.DataFrame:
    return log if isinstance(log, pd.DataFrame) else audit_frame(log)


def quick_approvals(log: Log, under: float = QUICK_SECONDS) -> pd.DataFrame:
    """The approvals given in under ``under`` seconds (rubber-stamping).

    Args:
        log: :func:`~nb_hitl.audit.frame.audit_frame`'s frame, or the log
            (:class:`~nb_hitl.store.AuditLog`, its path, its records).
        under: seconds from the pause opening to the answer.

    Returns:
        :func:`~nb_hitl.audit.charts.decide_times`'s columns
        (``tool_call_id``, ``tool_name``, ``decision``, ``decided_by``,
        ``answered_at``, ``seconds``), one row per ``approve`` answer given
        in less than ``under`` seconds, quickest first.
        ``attrs["approvals"]`` counts every timed approval, ``attrs["under"]`` is ``under``.
    """
    times = decide_times(_frame(log))
    approvals = times[times["decision"] == "approve"]
    quick = approvals[approvals["seconds"] < under].sort_values("seconds", kind="stable").reset_index(drop=True)
    quick.attrs.update(approvals=len(approvals), under=under)
    return quick


def _records(log: Log) -> list[dict[str, Any]]:
    return frame_records(log) if isinstance(log, pd.DataFrame) else read_records(log)


async def suggest_rules(log: Log, toolkit: Any) -> pd.DataFrame:
    """The narrowest allow rules that would have covered what people always approved.

    For each call a person approved, the tool's own suggestions
    (AgentScope's ``generate_suggestions``: ``git status:*``, ``/data/p/**``,
    the whole tool for a function tool) are the candidates; a candidate that
    matches any call of its tool a person refused (denied, let time out...)
    is dropped; of those left, the call takes the one that matches the
    fewest recorded calls of its tool (the narrowest). Nothing is applied.

    Args:
        log: :func:`~nb_hitl.audit.frame.audit_frame`'s frame, or the log.
        toolkit: the tools the calls were made with (an ``Agent``'s
            ``toolkit``, a ``Toolkit``, a list or dict of tools).

    Returns:
        a ``DataFrame`` with :data:`SUGGESTION_COLUMNS`, one row per rule,
        most approvals covered first: ``rule`` (its label), ``tool_name``,
        ``rule_content``, ``behavior`` (``allow``), ``covers`` (approved
        calls it covers), ``matches`` (recorded calls of the tool it
        matches, asked or not) and ``examples`` (up to three covered inputs
        as JSON). ``attrs["uncovered"]``: the approved calls no candidate
        covers without also covering a refusal (or of a tool not in
        ``toolkit``), each ``{"tool_name", "input"}``, by tool in the order first seen.
    """
    tools = tools_of(getattr(toolkit, "toolkit", None) or toolkit)
    engine = BoundedEngine(PermissionContext())
    calls = recorded_calls(_records(log))
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        by_tool.setdefault(str(call["tool_name"]), []).append(call)

    async def matches(rule: PermissionRule, call: dict[str, Any]) -> bool:
        try:
            return bool(await engine._rule_matches(tools[rule.tool_name], rule, dict(call["input"])))
        except PathologicalRuleError:
            return True  # cannot tell in the bound: counted as a match, so never offered on a guess

    chosen: dict[tuple[str, str | None], dict[str, Any]] = {}
    uncovered: list[dict[str, Any]] = []
    for name, tool_calls in by_tool.items():
        approved = [c for c in tool_calls if c.get("person") in APPROVED]
        refused = [c for c in tool_calls if c.get("person") is not None and c.get("person") not in APPROVED]
        tool = tools.get(name)
        if tool is None:
            uncovered += [{"tool_name": name, "input": c["input"]} for c in approved]
            continue
        reach: dict[tuple[str, str | None], tuple[PermissionRule, int] | None] = {}
        for call in approved:
            best: tuple[PermissionRule, int] | None = None
            for rule in await tool.generate_suggestions(dict(call["input"])):
                rule = rule.model_copy(update={"behavior": PermissionBehavior.ALLOW, "source": "suggested"})
                key = (rule.tool_name, rule.rule_content)
                if key not in reach:
                    safe = rule.tool_name == name and not [r for r in refused if await matches(rule, r)]
                    reach[key] = (rule, sum([await matches(rule, c) for c in tool_calls])) if safe else None
                found = reach[key]
                if found is not None and await matches(rule, call) and (best is None or found[1] < best[1]):
                    best = found
            if best is None:
                uncovered.append({"tool_name": name, "input": call["input"]})
                continue
            rule, count = best
            row = chosen.setdefault(
                (rule.tool_name, rule.rule_content),
                {
                    "rule": rule_label(rule),
                    "tool_name": rule.tool_name,
                    "rule_content": rule.rule_content,
                    "behavior": "allow",
                    "covers": 0,
                    "matches": count,
                    "examples": [],
                },
            )
            row["covers"] += 1
            if len(row["examples"]) < _EXAMPLES:
                row["examples"].append(json.dumps(call["input"], ensure_ascii=False, default=str))
    out = pd.DataFrame(list(chosen.values()), columns=SUGGESTION_COLUMNS)
    out = out.sort_values("covers", ascending=False, kind="stable").reset_index(drop=True)
    out.attrs["uncovered"] = uncovered
    return out
