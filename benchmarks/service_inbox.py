"""The service console's inbox at scale: 100 and 300 parked sessions across 2 workers.

Starts Redis, PostgreSQL 15, the fake model and two AgentScope workers (the
test fixtures' servers, tests/service/cluster.py), parks N sessions of one
user over 10 agents (chats posted through worker A and B in turn), then,
once all are parked (warm), prints for each N:

* time until the inbox shows all N: a new ``ServiceClient`` (with the
  service's Redis bus) from its first call until its rows hold all N
  (shown), and until every row holds its parked call (read), median of 3,
  next to a plain ``httpx`` loop making the same calls one after the other
  (``GET /agent/``, ``GET /sessions/?agent_id=`` per agent,
  ``GET /sessions/{id}/messages`` per parked session), run in turn with the
  console's; the ratio read / plain; the kernel's time to make the widget
  and answer a page's ``rows_sync`` (all rows), and its size;
* "Approve selected" on 50 sessions (``ServiceClient.approve_selected``: the
  one answer pipeline, one request per session, each verdict judged on the
  stream), next to a plain loop that, for 50 other sessions, reads the
  parked message, POSTs the confirmation and polls ``/status`` until the
  session is idle again (its verdict), one after the other; the ratio;
* that every approved tool ran exactly once.

Run: ``.venv/bin/python -m benchmarks.service_inbox [--sessions 100,300]``. Not a test.

Bound: it ends within 1800 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

import httpx  # noqa: E402
from agentscope.event import ConfirmResult  # noqa: E402
from agentscope.message import ToolCallBlock  # noqa: E402

from nb_hitl.service import ServiceClient  # noqa: E402
from nb_hitl.service.http import confirm_body  # noqa: E402
from nb_hitl.service.inbox import parked_calls  # noqa: E402
from tests.service.cluster import Cluster, FakeModel, PostgresServer, RedisServer, park_many  # noqa: E402


async def inbox_time(cluster: Cluster, user: str, n: int, folder: Path) -> tuple[float, float, float, int]:
    """A new console's first listing: seconds from its first call until its
    rows hold all ``n`` (shown: a row appears once the listing shows its
    session parked), until every row holds its parked call (read: tool,
    summary, ``reply_id`` from ``/messages``), the kernel's seconds to make
    the widget and answer a page's ``rows_sync``, and that answer's bytes."""
    svc = ServiceClient(
        cluster.b.url, user, audit_path=folder / f"a-{uuid.uuid4().hex[:6]}.jsonl", bus=cluster.redis.url
    )
    shown: list[float] = []
    svc.state.on_change(lambda s: None if shown or len(s.entries) < n else shown.append(time.perf_counter()))
    t0 = time.perf_counter()
    while True:
        rows = await svc.refresh()
        if len(rows) >= n and all(r["calls"] for r in rows):
            break
        if time.perf_counter() - t0 > 120:
            raise SystemExit("the inbox did not show every session")
    read = time.perf_counter() - t0
    t1 = time.perf_counter()
    sync = svc.make_view().inbox.rows_sync(-1)
    kernel = time.perf_counter() - t1
    await svc.aclose()
    return (shown[0] if shown else t0 + read) - t0, read, kernel, len(json.dumps(sync))


async def plain_list(url: str, user: str) -> tuple[float, int]:
    """The same calls as one listing, one after the other, with plain httpx; (seconds, parked rows)."""
    async with httpx.AsyncClient(base_url=url, headers={"X-User-ID": user}, timeout=30) as c:
        t0 = time.perf_counter()
        agents = (await c.get("/agent/")).json()
        agents = agents.get("agents", []) if isinstance(agents, dict) else agents
        rows = 0
        for a in agents:
            views = (await c.get("/sessions/", params={"agent_id": a["id"]})).json()["sessions"]
            for v in views:
                if v["status"].startswith("awaiting"):
                    sid = v["session"]["id"]
                    r = await c.get(f"/sessions/{sid}/messages", params={"agent_id": a["id"], "limit": 5})
                    rows += bool(parked_calls(r.json()["messages"])[1])
        return time.perf_counter() - t0, rows


async def plain_approve(url: str, user: str, sessions: list[tuple[str, str]]) -> float:
    """Read, POST the confirmation and poll ``/status`` until idle, per session, one after the other."""
    async with httpx.AsyncClient(base_url=url, headers={"X-User-ID": user}, timeout=30) as c:
        t0 = time.perf_counter()
        for aid, sid in sessions:
            msgs = (await c.get(f"/sessions/{sid}/messages", params={"agent_id": aid, "limit": 5})).json()
            reply_id, calls, _m = parked_calls(msgs["messages"])
            call = ToolCallBlock.model_validate(calls[0])
            body = confirm_body(str(reply_id), [ConfirmResult(confirmed=True, tool_call=call)])
            r = await c.post("/chat/", json={"agent_id": aid, "session_id": sid, "input": body})
            r.raise_for_status()
            for _ in range(600):
                await asyncio.sleep(0.1)
                st = (await c.get(f"/sessions/{sid}/status", params={"agent_id": aid})).json()["status"]
                if st == "idle":
                    break
            else:
                raise SystemExit(f"session {sid} did not finish")
        return time.perf_counter() - t0


async def run(cluster: Cluster, n: int, folder: Path) -> dict[str, Any]:
    user = f"bench-{uuid.uuid4().hex[:6]}"
    t0 = time.perf_counter()
    prefix = f"bench{n}"
    sessions = await park_many(
        [cluster.a.url, cluster.b.url], cluster.model.base_url, user, n, prefix=prefix, allow_failed=n // 50
    )
    if len(sessions) < n:  # a loaded worker failed to prepare a few sessions: measure the ones that parked
        print(f"\n{n - len(sessions)} of {n} chats failed to start (AgentScope's 'setup' error under load)")
        n = len(sessions)
    print(f"\n{n} sessions parked in {time.perf_counter() - t0:.1f} s (10 agents, 2 workers)")
    inbox, plain = [], []
    for _ in range(3):  # in turn, so both see the same load
        inbox.append(await inbox_time(cluster, user, n, folder))
        took, rows = await plain_list(cluster.b.url, user)
        assert rows == n, rows
        plain.append(took)
    shown, read = statistics.median(x[0] for x in inbox), statistics.median(x[1] for x in inbox)
    pl = statistics.median(plain)
    print(f"inbox shows all {n}:  {shown:6.2f} s (median of {', '.join(f'{x[0]:.2f}' for x in inbox)})")
    print(f"every call read:      {read:6.2f} s (median of {', '.join(f'{x[1]:.2f}' for x in inbox)})")
    print(f"plain httpx loop:     {pl:6.2f} s (median of {', '.join(f'{x:.2f}' for x in plain)})")
    print(f"ratio read / plain:   {read / pl:6.2f}")
    kernel = statistics.median(x[2] for x in inbox)
    print(f"kernel: widget + rows_sync answer {kernel * 1000:.0f} ms, {inbox[0][3] / 1000:.0f} kB to a page that opens")
    out: dict[str, Any] = {"n": n, "shown": shown, "read": read, "plain": pl}
    svc = ServiceClient(cluster.b.url, user, audit_path=folder / f"approve-{n}.jsonl", bus=cluster.redis.url)
    await svc.refresh()
    picked, rest = sessions[:50], sessions[50:100]
    t1 = time.perf_counter()
    results = await svc.approve_selected([{"session_id": s, "agent_id": a} for a, s in picked])
    approve = time.perf_counter() - t1
    ok = sum(r["ok"] for r in results)
    await svc.aclose()
    plain_s = await plain_approve(cluster.b.url, user, rest)
    once = all(len(cluster.notes(f"{prefix}-{s}")) == 1 for _a, s in sessions[:100])
    print(f"approve selected, 50: {approve:6.2f} s ({ok} applied)")
    for r in results:
        if not r["ok"]:
            print(f"  not applied: {r['code']}: {r['text'][:160]}")
    print(f"plain POST + wait:    {plain_s:6.2f} s")
    print(f"ratio approve / plain: {approve / plain_s:5.2f}")
    print(f"every approved tool ran exactly once: {once}")
    out.update(approve=approve, plain_approve=plain_s, applied=ok, once=once)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="100,300", help="comma-separated session counts")
    args = parser.parse_args()
    counts = [int(x) for x in args.sessions.split(",") if x.strip()]
    folder = Path(tempfile.mkdtemp(prefix="nbh-bench-service-"))
    redis = RedisServer(folder).start()
    pg = PostgresServer().start()
    model = FakeModel().start()
    cluster = Cluster(redis, pg, model, folder)
    try:
        cluster.start()
        print(f"2 workers on one Redis, storage in PostgreSQL; load average {os.getloadavg()[0]:.1f} (2 cores)")
        for n in counts:
            asyncio.run(run(cluster, n, folder))
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        cluster.stop()
        model.stop()
        pg.stop()
        redis.stop()


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 1800, "service_inbox")  # seconds, on a loaded 2-core machine
