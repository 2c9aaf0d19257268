"""Replaying a recorded history against a candidate rule set, next to AgentScope's engine alone.

A synthetic audit log of N recorded calls (100,000 by default; the records a
``Session`` with an ``audit_log`` writes: a ``checked`` line per call, an
``answered`` line for those that asked) over five tools: AgentScope's
``Bash``, ``Read`` and ``Write`` and two function tools. A candidate of R
rules (1,000 by default: ``Bash`` prefix rules, ``Read``/``Write`` path
globs, whole-tool rules; allow / deny / ask). In the same run:

* baseline: AgentScope's ``PermissionEngine`` with the same rules, checking
  the same calls in a plain loop (``await engine.check_permission(tool,
  input)``), nothing else;
* replay: :func:`nb_hitl.audit.replay` of the records against the rules
  (reading the records into calls, the engine's decision for each, which
  rule fired, the per-rule counts, the changes, the DataFrame), with
  ``shell_rules=False`` so both judge ``Bash`` lines the same way, whole;
* with ``--shell``, the replay again with the shell rules on (the default of
  ``replay`` and of the explorer: each ``Bash`` line judged one simple
  command at a time, as a Session does), next to AgentScope's engine and
  the shell rules' verdict (``judge_shell_call``) checking each call in a
  plain loop, as a Session checks them; their decisions must agree (else
  it exits 1).

Both see the same calls; the replay's candidate column must equal the
engine's decisions (else it exits 1). It prints each run's wall and CPU
time (the engine and the replay alternate, ``--runs`` times, so a change of
load on a shared machine falls on both), then the best of each, the calls
per second and the ratio replay / engine on CPU time (goal: at most 1.5x;
the wall ratio too). The replay does more than the engine for each distinct
call: every rule of its tool is matched (to count what fired and what was
shadowed), where the engine stops at a bucket's first match; it decides
each distinct call (tool and input) once. The log repeats its inputs as a
real one does (about ten distinct inputs per rule: the same job, the same
file); ``--distinct`` gives every call its own input, the replay's worst case.

Bound on its own duration: ``--budget`` seconds, default 900 (15 minutes);
past it the benchmark stops whatever phase it is in, says so and exits with
status 3 (``benchmarks._bound.run_bounded``, as every benchmark). The
engine's plain loop is most of it: on the project's 2-core machine shared
with other work (load average about 10) the engine alone took 470 s wall
for the default 100,000 calls and 1,000 rules. ``--distinct`` and ``--runs``
above 1 each add about as much again, ``--shell`` about twice as much (its
plain loop judges every ``Bash`` call's simple commands too): give them a
larger ``--budget``.

Run from the repository root::

    .venv/bin/python -m benchmarks.replay [--calls 100000] [--rules 1000] [--runs 1] [--budget 900] [--shell] [--distinct]

or ``./run bench replay [...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentscope.message import TextBlock, ToolResultState
from agentscope.permission import PermissionContext, PermissionEngine, PermissionRule
from agentscope.tool import Bash, FunctionTool, Read, ToolChunk, Write

from nb_hitl._agentscope import enum_value
from nb_hitl.audit import replay
from nb_hitl.permissions.shell_check import judge_shell_call

BEHAVIORS = ["allow", "deny", "ask"]
PROGRAMS = ["git", "ls", "cat", "make", "pytest", "docker", "npm", "rm", "curl", "grep"]


def lookup(topic: str) -> ToolChunk:
    """Look a topic up.

    Args:
        topic (str): what to look up.
    """
    return ToolChunk(content=[TextBlock(text=topic)], state=ToolResultState.SUCCESS)


def send_mail(to: str) -> ToolChunk:
    """Send a mail.

    Args:
        to (str): the address.
    """
    return ToolChunk(content=[TextBlock(text=to)], state=ToolResultState.SUCCESS)


def toolkit() -> dict[str, Any]:
    """The five tools the calls were made with, by name."""
    tools = [Bash(), Read(), Write(), FunctionTool(lookup), FunctionTool(send_mail)]
    return {t.name: t for t in tools}


def candidate_rules(n: int) -> list[dict[str, Any]]:
    """``n`` distinct rules: about 40 % Bash prefixes, 25 % Read globs, 25 %
    Write globs, the rest whole-tool rules of the function tools (at most one
    per tool and behaviour), behaviours cycling allow / deny / ask."""
    rules: list[dict[str, Any]] = []
    whole = [(t, b) for t in ("lookup", "send_mail") for b in BEHAVIORS]
    for i in range(n):
        behavior = BEHAVIORS[i % 3]
        slot = i % 20
        if slot < 8:
            rule = {"tool_name": "Bash", "rule_content": f"{PROGRAMS[i % 10]} job{i}:*"}
        elif slot < 13:
            rule = {"tool_name": "Read", "rule_content": f"/data/project{i}/*"}
        elif slot < 18 or not whole:
            rule = {"tool_name": "Write", "rule_content": f"/data/project{i}/out/*"}
        else:
            tool, behavior = whole.pop()
            rule = {"tool_name": tool, "rule_content": None}
        rules.append({**rule, "behavior": behavior, "source": "candidate"})
    return rules


def recorded_calls(n: int, n_rules: int, seed: int = 7, *, distinct: bool = False) -> list[dict[str, Any]]:
    """The records of ``n`` calls (``checked``, then ``answered`` for those that asked).

    About half the calls hit a candidate rule's pattern (a project or a job
    the rules name), the rest miss every rule (other projects, other jobs).
    Inputs repeat (about ``10 * n_rules`` distinct ones) unless ``distinct``:
    then each call's input names the call (another file, another argument),
    which changes no rule's match.
    """
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    ts = 1_700_000_000.0
    for i in range(n):
        k = rng.randrange(n_rules * 2)  # below n_rules: a rule's own project / job
        kind = rng.random()
        u = i if distinct else ""
        if kind < 0.4:
            tool, args = "Bash", {"command": f"{PROGRAMS[k % 10]} job{k} --verbose{u}"}
        elif kind < 0.65:
            tool, args = "Read", {"file_path": f"/data/project{k}/notes{u}.txt"}
        elif kind < 0.9:
            tool, args = "Write", {"file_path": f"/data/project{k}/out/result{u}.csv", "content": "x"}
        elif kind < 0.95:
            tool, args = "lookup", {"topic": f"topic {k}{u}"}
        else:
            tool, args = "send_mail", {"to": f"user{k}{u}@example.org"}
        decision = "allow" if tool == "Read" else rng.choice(["allow", "ask", "ask"])
        call = {"agent": "worker", "reply_id": f"r{i // 4}", "tool_call_id": f"call_{i}", "tool_name": tool}
        ts += 0.5
        records.append(
            {**call, "event": "checked", "ts": ts, "original_input": args, "decision": decision, "decided_how": "mode"}
        )
        if decision == "ask":
            ts += 2.0
            answer = "approve" if rng.random() < 0.8 else "deny"
            records.append({**call, "event": "answered", "ts": ts, "original_input": args, "decision": answer})
    return records


async def baseline(
    tools: dict[str, Any], rules: list[dict[str, Any]], calls: list[tuple[str, dict]], *, shell: bool = False
) -> list[str]:
    """AgentScope's engine with ``rules``, checking each call in a plain loop
    (with ``shell``, each then judged by the shell rules as a Session judges
    it: ``judge_shell_call`` after the engine); its decisions."""
    engine = PermissionEngine(PermissionContext())
    for rule in rules:
        engine.add_rule(PermissionRule(**rule))
    out = []
    for name, args in calls:
        decision = await engine.check_permission(tools[name], dict(args))
        verdict = await judge_shell_call(engine, tools[name], dict(args), decision) if shell else None
        out.append(enum_value((verdict.decision if verdict is not None else decision).behavior))
    return out


def timed(make: Callable[[], Coroutine[Any, Any, Any]]) -> tuple[float, float, Any]:
    """One run of ``make()``'s coroutine: wall seconds, this process's CPU seconds, its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(make())
    return time.perf_counter() - wall, time.process_time() - cpu, result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The benchmark's options (``--calls``, ``--rules``, ``--runs``, ``--shell``, ``--distinct``, ``--budget``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--rules", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=1, help="best of this many runs of each, alternated")
    parser.add_argument("--shell", action="store_true", help="also time the replay with the shell rules on")
    parser.add_argument("--distinct", action="store_true", help="no two calls with the same input (the worst case)")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds the whole run may take")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Build the log and the rules, time the baseline and the replays, print the figures and the ratio.

    The bound (``--budget``) is kept by :func:`benchmarks._bound.run_bounded`
    when run as a script.

    Returns:
        ``{"baseline": s, "replay": s, "replay_shell": s, "ratio": x}`` (CPU seconds).

    Raises:
        SystemExit: 1 when the replay disagrees with the engine.
    """
    args = parse_args(argv)
    started = time.perf_counter()
    tools = toolkit()
    rules = candidate_rules(args.rules)
    records = recorded_calls(args.calls, args.rules, distinct=args.distinct)
    calls = [(r["tool_name"], r["original_input"]) for r in records if r["event"] == "checked"]
    distinct = len({(name, json.dumps(given, sort_keys=True)) for name, given in calls})
    print(
        f"{len(calls):,} recorded calls ({len(records):,} records, {distinct:,} distinct inputs), "
        f"{len(rules):,} candidate rules",
        flush=True,
    )

    base: list[tuple[float, float]] = []
    mine: list[tuple[float, float]] = []
    for _ in range(args.runs):  # alternated, so a change of load falls on both
        wall, cpu, decided = timed(lambda: baseline(tools, rules, calls))
        base.append((wall, cpu))
        print(f"  AgentScope's engine, plain loop: {wall:7.1f} s wall {cpu:7.1f} s CPU", flush=True)
        wall, cpu, frame = timed(lambda: replay(records, rules, tools, shell_rules=False))
        mine.append((wall, cpu))
        print(f"  nb_hitl replay:                  {wall:7.1f} s wall {cpu:7.1f} s CPU", flush=True)
        if list(frame["candidate"]) != decided:
            differ = sum(a != b for a, b in zip(frame["candidate"], decided, strict=True))
            print(f"  the replay disagrees with the engine on {differ} call(s)", file=sys.stderr)
            raise SystemExit(1)
    base_wall, base_cpu = min(w for w, _ in base), min(c for _, c in base)
    wall, cpu = min(w for w, _ in mine), min(c for _, c in mine)
    changed = int(frame["changed"].sum())
    fired = int((~frame.attrs["rules"]["never_fired"]).sum())
    print(f"  {changed:,} decisions change; {fired:,} of {len(rules):,} rules fired")
    print(
        f"best of {args.runs}: engine {base_cpu:.1f} s CPU ({len(calls) / base_cpu:,.0f} calls/s), "
        f"replay {cpu:.1f} s CPU ({len(calls) / cpu:,.0f} calls/s)"
    )
    ratio = cpu / base_cpu
    print(
        f"ratio replay / engine: x{ratio:.2f} CPU, x{wall / base_wall:.2f} wall "
        f"(goal <= x1.5 CPU: {'met' if ratio <= 1.5 else 'NOT met'})"
    )
    shell_cpu = float("nan")
    if args.shell:
        shell_wall, shell_cpu, frame = timed(lambda: replay(records, rules, tools))
        print(
            f"  nb_hitl replay, shell rules on: {shell_wall:7.1f} s wall {shell_cpu:7.1f} s CPU "
            "(each Bash line judged one simple command at a time)",
            flush=True,
        )
        plain_wall, plain_cpu, decided = timed(lambda: baseline(tools, rules, calls, shell=True))
        print(f"  engine + shell rules, plain loop: {plain_wall:7.1f} s wall {plain_cpu:7.1f} s CPU", flush=True)
        if list(frame["candidate"]) != decided:
            differ = sum(a != b for a, b in zip(frame["candidate"], decided, strict=True))
            print(f"  the shell-rules replay disagrees with the plain loop on {differ} call(s)", file=sys.stderr)
            raise SystemExit(1)
        print(f"ratio shell-rules replay / plain loop: x{shell_cpu / plain_cpu:.2f} CPU (same decisions on every call)")
    total = time.perf_counter() - started
    print(f"  whole run {total:.0f} s (bound {args.budget:.0f} s)")
    return {"baseline": base_cpu, "replay": cpu, "replay_shell": shell_cpu, "ratio": ratio}


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(lambda: main(sys.argv[1:]), parse_args(sys.argv[1:]).budget, "replay")
