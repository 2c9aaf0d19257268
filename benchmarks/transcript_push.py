"""Bytes the page gets per delta (or entry) of a long reply's transcript: local, AG-UI, console.

Three owners of a :class:`~nb_hitl.widgets.reply.ReplyWidget`, each with a view
connected (its ``sync``), what the widget publishes on its comm counted as JSON
where ipywidgets publishes it (outside a kernel, ``comm.DummyComm``):

* ``local``: a displayed :class:`~nb_hitl.Session` of a real
  ``agentscope.agent.Agent`` on :class:`~nb_hitl.models.ScriptedChatModel`
  streaming ``--words`` words (one delta each, 4 ms apart);
* ``agui``: the same agent served by :class:`~nb_hitl.agui.AguiServer` on
  127.0.0.1, read by a :class:`~nb_hitl.agui.RemoteSession` (one AG-UI
  ``TEXT_MESSAGE_CONTENT`` per word);
* ``console``: a session of AgentScope's service (two workers on Redis and
  PostgreSQL, the fake model: tests/service/cluster.py) that grows by
  ``--chats`` chats (a user note and the model's text each), its
  :class:`~nb_hitl.service.SessionConsole` reading ``/messages`` after each:
  per new entry rather than per delta.

The page's copy is rebuilt from what was published (``nbh_transcript`` ops, or
a ``transcript`` trait set whole). Per unit (a word on the page, or an entry):
``early``, the bytes of the messages that brought the first 10 % of the units
divided by the units they brought; ``late``, the same for the last 10 %;
``all``, every byte the widget published during the reply divided by the units.
Flat (``late`` ≈ ``early``) is the target: a transcript set whole costs O(n)
per unit, O(n²) in all.

Before and after in the same run, as ``benchmarks/card_push.py``: the code of
``--before REF`` (default ``main``) in a subprocess, then this checkout.

Run: ``.venv/bin/python -m benchmarks.transcript_push [--before REF] [--words 300] [--chats 20]``.

Bound: it ends within 900 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MARK = "§"
"""Once in every word of the long reply: the words on the page are counted by it."""


class Counter:
    """What a widget publishes: per message, its bytes and the units on the page after it."""

    def __init__(self, widget: Any, units: Any) -> None:
        from tests.harness.kernel_records import apply_ops

        self.rows: list[tuple[int, int, int]] = []  # (bytes, units before, units after)
        self.entries: list[dict[str, Any]] = []
        publish = widget.comm.publish_msg

        def counting(msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any) -> Any:
            before = units(self.entries)
            content = data.get("content") if isinstance(data, dict) and data.get("method") == "custom" else None
            if isinstance(content, dict) and content.get("type") == "nbh_transcript":
                apply_ops(self.entries, content["ops"])
            elif isinstance(data, dict) and "transcript" in data.get("state", {}):
                self.entries = [dict(e) for e in data["state"]["transcript"]]
            self.rows.append((len(json.dumps(data, default=str)), before, units(self.entries)))
            return publish(msg_type, data, metadata, buffers, **keys)

        widget.comm.publish_msg = counting

    def figures(self, total: int) -> dict[str, float]:
        """Bytes per unit: ``early`` (first 10 %), ``late`` (last 10 %), ``all``."""
        tenth = max(1, total // 10)

        def per_unit(rows: list[tuple[int, int, int]]) -> float:
            brought = sum(after - before for _, before, after in rows)
            return sum(size for size, _, _ in rows) / max(brought, 1)

        early = [r for r in self.rows if r[1] < r[2] and r[1] < tenth]
        late = [r for r in self.rows if r[1] < r[2] and r[2] > total - tenth]
        return {
            "early": per_unit(early),
            "late": per_unit(late),
            "all": sum(r[0] for r in self.rows) / total,
            "units": self.rows[-1][2] if self.rows else 0,
        }


def words_shown(entries: list[dict[str, Any]]) -> int:
    return sum(str(e.get("text", "")).count(MARK) for e in entries)


def writer(words: int) -> Any:
    """A real agent whose one reply streams ``words`` words, one delta a word, 4 ms apart."""
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit

    from nb_hitl.models import ScriptedChatModel, Turn

    text = " ".join(f"{MARK}word-{i:04d}-of-a-long-reply" for i in range(words))
    return Agent(
        name="writer",
        system_prompt="Write.",
        model=ScriptedChatModel([Turn(text)], chunk_delay=0.004),
        toolkit=Toolkit(),
    )


async def local(words: int) -> dict[str, float]:
    from benchmarks.approve_all import connect
    from nb_hitl import Session

    counters: list[Counter] = []

    def show(widget: Any) -> None:  # the widget is displayed: count from here, a view connects
        counters.append(Counter(widget, words_shown))
        connect(widget)

    session = Session(writer(words))
    session.show = show  # what displays each reply's widget (IPython's display by default)
    await session.run("Write at length.")
    return counters[0].figures(words)


async def agui(words: int) -> dict[str, float]:
    from benchmarks.approve_all import connect
    from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background

    with serve_in_background(AguiServer(lambda _thread_id: writer(words)), announce=False) as handle:
        remote = RemoteSession(handle.url, token=handle.token, display=False)
        task = remote.start("Write at length.")
        widget = remote.current.view.widget  # type: ignore[union-attr]
        counter = Counter(widget, words_shown)
        connect(widget)
        await task
    return counter.figures(words)


async def console(chats: int) -> dict[str, float]:
    """A service session grown by ``chats`` chats, its console reading after each."""
    from benchmarks.approve_all import connect
    from nb_hitl.service import ServiceClient
    from nb_hitl.service.http import user_msg_body
    from tests.service.cluster import Cluster, FakeModel, PostgresServer, RedisServer

    folder = Path(tempfile.mkdtemp(prefix="nbh-bench-transcript-"))
    servers = [RedisServer(folder).start(), PostgresServer().start(), FakeModel().start()]
    cluster = Cluster(*servers, folder)  # type: ignore[arg-type]
    try:
        cluster.start()
        client = ServiceClient(cluster.b.url, f"u-{uuid.uuid4().hex[:8]}", audit_path=folder / "audit.jsonl")
        http = client.http
        agent_id = await http.create_agent("writer")
        sid = await http.create_session(agent_id, await http.create_credential(cluster.model.base_url), name="w")

        async def chat(k: int) -> None:
            await http.chat(agent_id, sid, user_msg_body(f"line {k} of a long session, said at length"))
            for _ in range(400):
                await asyncio.sleep(0.05)
                if await http.status(agent_id, sid) == "idle":
                    return
            raise RuntimeError("the session did not come back to idle")

        await chat(0)
        session = await client.open(sid, agent_id, show=False)
        widget = session.make_widget()
        shown = len(widget.transcript)  # the entries of chat 0, which the page gets with the widget
        counter = Counter(widget, lambda entries: len(entries) - shown)
        counter.entries = [dict(e) for e in widget.transcript]
        connect(widget)
        for k in range(1, chats + 1):
            await chat(k)
            await session.refresh()
        figures = counter.figures(2 * chats)
        await client.aclose()
        return figures
    finally:
        cluster.stop()
        for server in reversed(servers):
            server.stop()  # type: ignore[attr-defined]


def worker(words: int, chats: int) -> None:
    """Measure the three owners in this process; print the figures as one JSON line."""
    import nb_hitl

    assert Path(nb_hitl.__file__).resolve().is_relative_to(ROOT.resolve()), f"nb_hitl from {nb_hitl.__file__}"
    out = {"local": asyncio.run(local(words)), "agui": asyncio.run(agui(words))}
    out["console"] = asyncio.run(console(chats))
    print(json.dumps(out))


def main() -> dict[str, Any]:
    """Measure ``--before REF`` and this checkout; print a table; returns the figures."""
    from benchmarks.card_push import checkout, run_on

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main")
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--chats", type=int, default=20)
    args = parser.parse_args()
    sizes = [args.words, args.chats]
    with tempfile.TemporaryDirectory(prefix="transcript-push-") as tmp:
        before = run_on(checkout(args.before, Path(tmp)), sizes, Path(__file__))
    after = run_on(ROOT, sizes, Path(__file__))
    print(f"bytes the page gets per unit ({args.words} words of one reply; {2 * args.chats} console entries)")
    print(f"{'owner':>8} {'':>6} {'early':>8} {'late':>8} {'all':>8}")
    for owner in ("local", "agui", "console"):
        for label, figures in ((args.before, before[owner]), ("now", after[owner])):
            e, la, a = figures["early"], figures["late"], figures["all"]
            print(f"{owner:>8} {label[:6]:>6} {e:8.0f} {la:8.0f} {a:8.0f}")
    return {"before": before, "after": after}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(int(sys.argv[2]), int(sys.argv[3]))
    else:
        from benchmarks._bound import run_bounded

        run_bounded(main, 900, "transcript_push")  # seconds, on a loaded 2-core machine
