"""The service console at scale: 100 parked sessions across 2 workers.

Starts Redis, PostgreSQL 15, the fake model and two AgentScope workers (the
test fixtures' servers, tests/service/cluster.py), parks N sessions of one
user (chats started alternately through worker A and B), then prints:

* time until the inbox (``ServiceClient.refresh``) lists all N, next to the
  time until the service itself reports them all parked (``/status`` loop);
* answers per second through the console (open, decide, record, send, judge
  the outcome on the stream) vs a plain ``httpx`` loop POSTing the same kind
  of bodies (``UserConfirmResultEvent`` JSON) in the same run, and the ratio;
  the plain loop's "applied" time is measured too (it does not check);
* the console's memory: ``tracemalloc`` peak while polling N rows and while
  answering, and the process's max RSS.

Run: ``.venv/bin/python -m benchmarks.service_inbox [--sessions 100]``. Not a test.

Bound: it ends within 1200 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from agentscope.event import ConfirmResult  # noqa: E402
from agentscope.message import ToolCallBlock  # noqa: E402

from nb_hitl.service import ServiceClient  # noqa: E402
from nb_hitl.service.http import ServiceError, ServiceHTTP, confirm_body, user_msg_body  # noqa: E402
from nb_hitl.service.inbox import parked_calls  # noqa: E402
from tests.service.cluster import Cluster, FakeModel, PostgresServer, RedisServer  # noqa: E402


async def park_all(cluster: Cluster, user: str, n: int, agents: int) -> list[tuple[str, str]]:
    """N sessions over ``agents`` agents (distinct workspaces), chats alternating A/B."""
    a, b = ServiceHTTP(cluster.a.url, user), ServiceHTTP(cluster.b.url, user)
    cred = await a.create_credential(cluster.model.base_url)
    agent_ids = [await a.create_agent(f"agent-{i}") for i in range(agents)]
    sessions = []
    for i in range(n):
        aid = agent_ids[i % agents]
        sid = await a.create_session(aid, cred, name=f"s{i}", workspace_id=f"ws-{uuid.uuid4().hex[:10]}")
        sessions.append((aid, sid))
    if len({s for _a, s in sessions}) != n:
        raise SystemExit("the service gave fewer sessions than asked (one per user, agent and workspace)")
    limit = asyncio.Semaphore(8)

    async def start(i: int, aid: str, sid: str) -> None:
        async with limit:
            prompt = "call: write_note " + json.dumps({"text": f"bench-{sid}"})
            await (a if i % 2 == 0 else b).chat(aid, sid, user_msg_body(prompt))

    t0 = time.perf_counter()
    await asyncio.gather(*(start(i, aid, sid) for i, (aid, sid) in enumerate(sessions)))
    await a.aclose()
    await b.aclose()
    return sessions, t0  # type: ignore[return-value]


async def statuses_of(http: ServiceHTTP, sessions: list[tuple[str, str]]) -> list[str]:
    """Every session's status, at most 8 calls in flight (the console's own limit)."""
    limit = asyncio.Semaphore(8)

    async def one(a: str, s: str) -> str:
        async with limit:
            try:
                return await http.status(a, s)
            except ServiceError as exc:  # a worker busy with 100 runs may time out: ask again later
                return f"unknown ({exc})"

    return list(await asyncio.gather(*(one(a, s) for a, s in sessions)))


async def all_parked(http: ServiceHTTP, sessions: list[tuple[str, str]], t0: float, limit: float) -> float:
    while time.perf_counter() - t0 < limit:
        statuses = await statuses_of(http, sessions)
        if all(st == "awaiting_permission" for st in statuses):
            return time.perf_counter() - t0
        await asyncio.sleep(0.2)
    raise SystemExit("the sessions did not all park in time")


async def inbox_full(svc: ServiceClient, n: int, t0: float, limit: float) -> float:
    while time.perf_counter() - t0 < limit:
        if len(await svc.refresh()) >= n:
            return time.perf_counter() - t0
        await asyncio.sleep(0.2)
    raise SystemExit("the inbox did not show every session in time")


async def wait_idle(http: ServiceHTTP, sessions: list[tuple[str, str]], limit: float = 300) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        statuses = await statuses_of(http, sessions)
        if all(st == "idle" for st in statuses):
            return time.perf_counter() - t0
        await asyncio.sleep(0.2)
    raise SystemExit("answered sessions did not finish in time")


async def run(cluster: Cluster, n: int, agents: int, folder: Path) -> None:
    user = f"bench-{uuid.uuid4().hex[:6]}"
    sessions, t0 = await park_all(cluster, user, n, agents)  # type: ignore[misc]
    probe = ServiceHTTP([cluster.a.url, cluster.b.url], user)
    tracemalloc.start()
    svc = ServiceClient([cluster.b.url, cluster.a.url], user, audit_path=folder / "audit.jsonl", service_id="bench")
    inbox_t, parked_t = await asyncio.gather(inbox_full(svc, n, t0, 300), all_parked(probe, sessions, t0, 300))
    _cur, poll_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    print(f"sessions parked (service /status loop): {parked_t:6.2f} s after the chats were posted")
    print(f"inbox shows all {n}:                    {inbox_t:6.2f} s after the chats were posted")

    half = n // 2
    through_console, through_httpx = sessions[:half], sessions[half:]
    # the console: open, decide, record, send, judge on the stream (one at a time, like a person)
    t1 = time.perf_counter()
    for aid, sid in through_console:
        console = await svc.open(sid, aid)
        tcid = next(iter(console.pauses))
        result = await console.act({"action": "approve", "tool_call_id": tcid})
        assert result["status"] == "delivered", result
        console.close()
    console_s = time.perf_counter() - t1
    _cur, answer_peak = tracemalloc.get_traced_memory()
    # the baseline: the same bodies, POSTed in a plain loop (built beforehand, not timed)
    bodies = []
    for aid, sid in through_httpx:
        msgs = (await probe.messages(aid, sid, limit=5))["messages"]
        reply_id, calls, _m = parked_calls(msgs)
        call = ToolCallBlock.model_validate(calls[0])
        bodies.append((aid, sid, confirm_body(str(reply_id), [ConfirmResult(confirmed=True, tool_call=call)])))
    import httpx

    async with httpx.AsyncClient(base_url=cluster.b.url, headers={"X-User-ID": user}) as plain:
        t2 = time.perf_counter()
        for aid, sid, body in bodies:
            r = await plain.post("/chat/", json={"agent_id": aid, "session_id": sid, "input": body})
            r.raise_for_status()
        httpx_s = time.perf_counter() - t2
    applied_s = httpx_s + await wait_idle(probe, through_httpx)
    await wait_idle(probe, through_console)
    runs = [json.loads(line) for line in cluster.ledger.read_text().splitlines()]
    texts = [r["text"] for r in runs if r["text"].startswith("bench-")]
    once = all(texts.count(f"bench-{sid}") == 1 for _a, sid in sessions)
    rate_console = half / console_s
    rate_httpx = len(bodies) / httpx_s
    rate_applied = len(bodies) / applied_s
    print(f"answers/s through the console (verified applied): {rate_console:7.2f}  ({half} in {console_s:.1f} s)")
    print(f"answers/s plain httpx POST loop (unverified):     {rate_httpx:7.2f}  ({len(bodies)} in {httpx_s:.2f} s)")
    print(f"  plain loop until every session idle:            {rate_applied:7.2f}  ({applied_s:.1f} s)")
    print(f"ratio console / plain POST loop:                  {rate_console / rate_httpx:7.3f}")
    print(f"ratio console / plain loop until applied:         {rate_console / rate_applied:7.3f}")
    print(f"every tool ran exactly once: {once} ({len(texts)} runs for {n} sessions)")
    print(
        f"console memory: tracemalloc peak {poll_peak / 1e6:.1f} MB polling {n} rows, "
        f"{answer_peak / 1e6:.1f} MB answering; max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB"
    )
    tracemalloc.stop()
    await svc.aclose()
    await probe.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--agents", type=int, default=10)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="nbh-bench-service-"))
    redis = RedisServer(folder).start()
    pg = PostgresServer().start()
    model = FakeModel().start()
    cluster = Cluster(redis, pg, model, folder)
    try:
        cluster.start()
        print(f"2 workers on one Redis, storage in PostgreSQL; {args.sessions} sessions over {args.agents} agents")
        asyncio.run(run(cluster, args.sessions, args.agents, folder))
    finally:
        cluster.stop()
        model.stop()
        pg.stop()
        redis.stop()


if __name__ == "__main__":
    from benchmarks._bound import run_bounded

    run_bounded(main, 1200, "service_inbox")  # seconds, on a loaded 2-core machine
