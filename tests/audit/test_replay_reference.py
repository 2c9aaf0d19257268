"""The replay against a straightforward computation of the same thing, on small random logs.

``replay`` decides each distinct call once and counts its rules once per
distinct call; here every recorded call is put to AgentScope's engine on its
own (``check_permission``, then the shell rules' verdict when on) and every
rule of the call's tool is matched against it, one call at a time. Random
logs repeat inputs (so the fast path reuses outcomes) and random rules
overlap (so rules shadow others); every mode, shell rules on and off.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from agentscope.permission import PermissionContext, PermissionMode, PermissionRule
from agentscope.tool import Bash, FunctionTool, Read, Write

from nb_hitl._agentscope import enum_value, rule_label
from nb_hitl.audit import replay
from nb_hitl.audit.rule_replay import recorded_calls
from nb_hitl.permissions.bounded import BoundedEngine
from nb_hitl.permissions.shell_check import judge_shell_call, rule_covers
from tests.support import run_async

COMMANDS = ["git status", "git push --force", "git push origin", "rm -rf build", "ls -la", "make test && rm x",
            "cat notes.txt | grep todo", "echo $(whoami)", "npm run build"]  # fmt: skip
PATHS = ["/data/a/notes.txt", "/data/a/b/c.csv", "/data/z.txt", "/etc/passwd", "/tmp/out.log"]
BASH_RULES = ["git:*", "git push:*", "rm:*", "ls:*", "make test:*", "*push*", "git * --force", "npm run:*", "cat:*"]
GLOBS = ["/data/*", "/data/a/*", "/etc/*", "*.txt", "/tmp/*"]
ORDER = {"deny": 0, "ask": 1, "allow": 2}  # the engine's order of its rule buckets


def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: what to look up.
    """
    return topic


def _tools() -> dict[str, Any]:
    return {t.name: t for t in (Bash(), Read(), Write(), FunctionTool(lookup))}


def _log(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` recorded calls drawn from small pools (inputs repeat), some answered."""
    records = []
    for i in range(n):
        tool = rng.choice(["Bash", "Read", "Write", "lookup"])
        args: dict[str, Any] = {
            "Bash": lambda: {"command": rng.choice(COMMANDS)},
            "Read": lambda: {"file_path": rng.choice(PATHS)},
            "Write": lambda: {"content": "x", "file_path": rng.choice(PATHS)},
            "lookup": lambda: {"topic": rng.choice(["tides", "moon"])},
        }[tool]()
        call = {"agent": "a", "tool_call_id": f"c{i}", "tool_name": tool, "original_input": args}
        decision = rng.choice(["allow", "ask", "deny"])
        records.append({**call, "event": "checked", "decision": decision})
        if decision == "ask":
            records.append({**call, "event": "answered", "decision": rng.choice(["approve", "deny"])})
    return records


def _rules(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` distinct rules, overlapping on purpose."""
    pool = [("Bash", c) for c in BASH_RULES] + [(t, g) for t in ("Read", "Write") for g in GLOBS]
    pool += [(t, None) for t in ("Bash", "Read", "Write", "lookup")]
    picked = rng.sample([(t, c, b) for t, c in pool for b in ORDER], n)
    return [{"tool_name": t, "rule_content": c, "behavior": b, "source": "test"} for t, c, b in picked]


async def _straightforward(
    records: list[dict[str, Any]], rules: list[dict[str, Any]], mode: str, shell: bool
) -> tuple[list[tuple[str, str | None]], dict[str, dict[str, Any]]]:
    """Per recorded call, one at a time: ``(decision, the rule of that
    behaviour that fired)``; per rule label: ``matched``, ``fired``, ``shadowed_by``."""
    tools = _tools()
    listed = [PermissionRule(**r) for r in rules]
    engine = BoundedEngine(PermissionContext(mode=PermissionMode(mode)))
    for rule in listed:
        engine.add_rule(rule)
    ordered = sorted(listed, key=lambda r: ORDER[enum_value(r.behavior)])
    decided: list[tuple[str, str | None]] = []
    matched: Counter[str] = Counter()
    fired: Counter[str] = Counter()
    by: dict[str, Counter[str]] = {rule_label(r): Counter() for r in listed}
    for call in recorded_calls(records):
        if call["tool_name"] not in tools:
            decided.append(("unknown", None))
            continue
        tool, given = tools[call["tool_name"]], dict(call["input"])
        decision = await engine.check_permission(tool, given)
        verdict = await judge_shell_call(engine, tool, dict(call["input"]), decision) if shell else None
        behavior = enum_value((verdict.decision if verdict else decision).behavior)
        matching = []
        for rule in ordered:
            if rule.tool_name != tool.name:
                continue
            if await engine._rule_matches(tool, rule, given) or shell and await rule_covers(tool, rule, given, engine):
                matching.append(rule)
        for rule in matching:
            matched[rule_label(rule)] += 1
            if rule is not matching[0]:
                by[rule_label(rule)][rule_label(matching[0])] += 1
        if matching:
            fired[rule_label(matching[0])] += 1
        same = [r for r in matching if enum_value(r.behavior) == behavior]
        decided.append((behavior, rule_label(same[0]) if same else None))
    per_rule = {}
    for rule in listed:
        label = rule_label(rule)
        shadowed = matched[label] > 0 and fired[label] == 0
        per_rule[label] = {
            "matched": matched[label],
            "fired": fired[label],
            "shadowed_by": by[label].most_common(1)[0][0] if shadowed and by[label] else None,
        }
    return decided, per_rule


@pytest.mark.parametrize("seed", range(6))
def test_replay_equals_each_call_decided_and_matched_on_its_own(seed: int) -> None:
    rng = random.Random(seed)
    records, rules = _log(rng, 150), _rules(rng, 14)
    gone = {"agent": "a", "tool_call_id": "gone", "tool_name": "rm_rf", "original_input": {}, "decision": "ask"}
    records.insert(seed * 20, {**gone, "event": "checked"})  # a tool the toolkit no longer has
    for i, at in enumerate((seed * 7 + 3, 60, 140)):  # another one, three times, and the first again
        name, call_id = ("shred", f"shred{i}") if i < 2 else ("rm_rf", "gone-again")
        records.insert(at, {**gone, "tool_call_id": call_id, "tool_name": name, "event": "checked"})
    mode = [m.value for m in PermissionMode][seed % len(PermissionMode)]
    for shell in (False, True):
        frame = run_async(replay(records, rules, _tools(), mode=mode, shell_rules=shell))
        decided, per_rule = run_async(_straightforward(records, rules, mode, shell))
        assert len(set(map(str, frame["input"]))) < len(frame) / 4  # the log repeats its inputs
        fired = [r if isinstance(r, str) else None for r in frame["candidate_rule"]]
        assert list(zip(frame["candidate"], fired, strict=True)) == decided, (mode, shell)
        got = {
            r["rule"]: {"matched": r["matched"], "fired": r["fired"], "shadowed_by": r["shadowed_by"] or None}
            for r in frame.attrs["rules"].fillna("").to_dict("records")
        }
        assert got == per_rule, (mode, shell)
        assert sum(r["matched"] for r in per_rule.values()) > sum(r["fired"] for r in per_rule.values()) > 0
        by_id = frame.set_index("tool_call_id")
        for call_id, name in [("gone", "rm_rf"), ("gone-again", "rm_rf"), ("shred0", "shred"), ("shred1", "shred")]:
            row = by_id.loc[call_id]
            assert (row["problem"], row["changed"], row["change"]) == (f"no tool {name!r} in the toolkit", False, "")
        # each row's change as the candidate and the recorded decision say, one row at a time
        for row in frame.to_dict("records"):
            changes = row["candidate"] not in ("unknown", row["recorded"])
            assert (row["changed"], row["change"]) == (
                changes,
                f"{row['recorded']} -> {row['candidate']}" if changes else "",
            )
            assert row["denied_now_allowed"] == (row["person"] == "deny" and row["candidate"] == "allow")
