"""cProfile figures per call, by function and by package (``benchmarks/click_path.py``)."""

from __future__ import annotations

import pstats
from collections import defaultdict
from pathlib import Path
from typing import Any


def summary(stats: pstats.Stats, n: int) -> dict[str, Any]:
    """Per click (ms): the most costly functions, nb_hitl's by cumulative time, and by package."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    by_package: dict[str, float] = defaultdict(float)
    rows = []
    for (path, line, func), (_cc, _nc, tt, ct, _callers) in raw.items():
        where = package_of(path)
        by_package[where] += tt
        rows.append((tt / n * 1e3, ct / n * 1e3, f"{where}:{Path(path).name}:{line}:{func}"))
    rows.sort(reverse=True)
    return {
        "top": rows[:25],
        "ours": [r for r in sorted(rows, key=lambda r: -r[1]) if r[2].startswith("nb_hitl")][:15],
        "by_package": sorted(((k, v / n * 1e3) for k, v in by_package.items()), key=lambda kv: -kv[1]),
        "total_ms": sum(by_package.values()) / n * 1e3,
    }


def package_of(path: str) -> str:
    """``nb_hitl``, ``agentscope``, ``jsonschema``... from a code object's file name."""
    if path.startswith("~") or path.startswith("<"):
        return "builtins"
    parts = Path(path).parts
    for mark in ("site-packages", "lib"):
        if mark in parts:
            i = len(parts) - 1 - parts[::-1].index(mark)
            if mark == "site-packages":
                return parts[i + 1].removesuffix(".py")
    for pkg in ("nb_hitl", "benchmarks"):
        if pkg in parts:
            return pkg
    return "stdlib" if "python3" in path else Path(path).name


def print_profile(title: str, p: dict[str, Any]) -> None:
    """Print a :func:`summary` (``n`` calls: the clicks): by package, the most costly functions, nb_hitl's by cumulative time."""
    print(f"\n{title}, per click: {p['total_ms']:.2f} ms (profiled)")
    print("  by package: " + ", ".join(f"{k} {v:.2f}" for k, v in p["by_package"][:10]))
    print("  own ms, cumulative ms, where (the most costly functions):")
    for tt, ct, where in p["top"][:15]:
        print(f"  {tt:6.3f} {ct:6.3f}  {where}")
    print("  nb_hitl's functions by cumulative ms:")
    for tt, ct, where in p["ours"]:
        print(f"  {tt:6.3f} {ct:6.3f}  {where}")
