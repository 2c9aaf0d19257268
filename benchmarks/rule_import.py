"""Rules-file import: time against a baseline measured in the same run.

For 1k / 5k / 20k / 100k rules (a mix of Bash prefix rules and Read/Write
path globs, allow / deny / ask), prints:

* baseline: ``json.loads`` of the same text + ``PermissionRule(**d)`` for
  each rule + ``PermissionEngine.add_rule`` into an empty context (what any
  import must do at least);
* import: ``nb_hitl.permissions.import_rules(text, into=context,
  known_tools=...)`` (validation, confusable checks, duplicate checks);
* view: ``describe_context`` of the result (what the explorer shows);
* the ratio import / baseline.

Run: ``python benchmarks/rule_import.py [sizes...]``. Target: 20k rules in
at most 2 s on a 2-core machine, a ratio that stays flat as sizes grow.

Bound: it ends within 600 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import json
import sys
import time

from agentscope.permission import PermissionContext, PermissionEngine, PermissionRule

from nb_hitl.permissions import describe_context, import_rules

TOOLS = ["Bash", "Read", "Write"]


def rules_text(n: int) -> str:
    """A rules file of ``n`` distinct rules, one per line (as ``export_rules`` writes)."""
    rows = []
    for i in range(n):
        tool = TOOLS[i % 3]
        content = f"cmd{i} --flag:*" if tool == "Bash" else f"/data/project{i}/**"
        rows.append(
            {
                "tool_name": tool,
                "rule_content": content,
                "behavior": ["allow", "deny", "ask"][(i // 3) % 3],
                "source": "userSettings",
            }
        )
    return "[\n  " + ",\n  ".join(json.dumps(r) for r in rows) + "\n]\n"


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def baseline(text: str) -> None:
    engine = PermissionEngine(PermissionContext())
    for d in json.loads(text):
        engine.add_rule(PermissionRule(**d))


def main(sizes: list[int]) -> None:
    print(f"{'rules':>8} {'baseline s':>11} {'import s':>9} {'view s':>7} {'import/baseline':>16}")
    for n in sizes:
        text = rules_text(n)
        runs = 3 if n <= 20_000 else 1
        base = best_of(runs, lambda text=text: baseline(text))
        imp = best_of(runs, lambda text=text: import_rules(text, into=PermissionContext(), known_tools=TOOLS))
        ctx = PermissionContext()
        import_rules(text, into=ctx, known_tools=TOOLS)
        view = best_of(runs, lambda ctx=ctx: describe_context(ctx))
        assert sum(describe_context(ctx)["counts"].values()) == n
        print(f"{n:>8} {base:>11.3f} {imp:>9.3f} {view:>7.3f} {imp / base:>16.1f}x", flush=True)


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(lambda: main([int(a) for a in sys.argv[1:]] or [1_000, 5_000, 20_000, 100_000]), 600, "rule_import")
