"""The kernel's work between a click on Approve and the agent's next event, stage by stage.

In one process, no browser: a displayed :class:`~nb_hitl.Session` of a real
``agentscope.agent.Agent`` on :class:`~nb_hitl.models.ScriptedChatModel`,
built as ``benchmarks/click_to_resume.py`` builds it (one ``step`` call per
model turn, a function tool, so AgentScope's permission engine asks every
time), its view connected (the ``sync`` a drawn page sends first). Each of
``warmup + n`` pauses is approved by the page's message
(``{"request_id", "action": "approve", "tool_call_id", "reply_id"}``)
delivered through the widget's comm handler as ipywidgets delivers it
(``benchmarks/approve_all.page_message``), once the loop is idle after the
previous pause.

What the widget publishes is what an ipykernel ``Comm`` does with it, minus the
zmq send: ``json_clean`` of the content, ``jupyter_client.Session.msg`` and
``serialize`` (JSON + HMAC signature) with a kernel-like key. Outside a kernel
ipywidgets' comms are ``comm.DummyComm``; the wrapper replaces its
``publish_msg``.

Per click it records ``time.perf_counter_ns()`` marks (benchmark-side wrappers
around nb_hitl's functions and the tool, and the session's ``on_event``):

* ``in``: the page message is handed to the widget;
* ``front door``: the widget's handler returned (shape, exactly-once, the
  kind's ``decide``; the answer's task is created);
* ``checked``: the answer's checks and audit record done (``check_decision``);
* ``queued``: the decision queued for the agent, the driving task woken;
* ``answer sent``: the answer to the page's request left the comm;
* ``resume event``: the driving task built AgentScope's ``UserConfirmResultEvent``
  (delivered marks, the decision's record, the checkpoint);
* ``tool start`` / ``tool end``: the ``step`` tool's own body;
* ``event <Type>``: an AgentScope event reached the session;
* ``sent <what>``: a comm message left (``nbh_transcript``, ``nbh_cards``,
  a state ``update`` naming its traits), timed after its serialisation;
* ``idle``: the next pause is open and the loop idle.

Printed: per stage (the time from the mark before), median and p90 over the
``n`` measured clicks, in the order of the marks; the time from ``in`` to the
tool result's transcript op leaving the comm (what ``click_to_resume.py``
measures in the page, minus transport and drawing) and to the next pause's
card leaving; the comm messages and bytes per click before the result and in
all. Then a cProfile pass over the same clicks, the profiler on from ``in`` to
the result's message: where that time goes, by function and by package.

The wait for the IOPub thread after the agent's next event is also measured
paired: every other click with it, the others without (``paired_pass``), so
both halves see the same load (a before/after pair in turn does not: the
machine's load drifts between the two processes).

Two configurations: ``plain`` (as in ``click_to_resume.py``: no audit log, no
checkpoints) and ``recorded`` (``audit_log=`` and ``checkpoints=``: the audit
line fsynced and the agent's state written before the agent is resumed).

Before and after in the same run, as ``benchmarks/transcript_push.py``: the
code of ``--before REF`` (default ``main``) in a subprocess, then this
checkout, ``--rounds`` times in turn (``--only-now`` skips the first).

Run: ``.venv/bin/python -m benchmarks.click_path [--n 200] [--rounds 1] [--before main] [--only-now]``.

Bound: it ends within 900 s on a loaded 2-core machine (``benchmarks/_bound.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import inspect
import json
import pstats
import shutil
import sys
import tempfile
import time
import types
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._lab import summarize  # noqa: E402
from benchmarks._pstats import print_profile, summary  # noqa: E402

WARMUP = 5


class Clicks:
    """Marks of the click being measured: ``[(label, ns)]``, and the messages it sent."""

    def __init__(self, collect: pstats.Stats | None = None, after: pstats.Stats | None = None) -> None:
        #: where each click's profile goes, up to the result's message (``None``: no profiling)
        self.collect = collect
        #: where the rest of each click's profile goes, from the result's message to the loop idle
        self.after = after
        self.marks: list[tuple[str, int]] = []
        self.sent: list[tuple[str, int]] = []  # (what, bytes)
        #: (what, ns) when ipykernel's IOPub thread sent a message (appended on that thread)
        self.left: list[tuple[str, int]] = []
        self.on = False
        self.profile: cProfile.Profile | None = None
        self.rest: cProfile.Profile | None = None
        self.result_of: str | None = None  # the approved call's id: its result op ends the profile
        self.per_click: list[dict[str, Any]] = []

    def mark(self, label: str) -> None:
        if self.on:
            self.marks.append((label, time.perf_counter_ns()))

    def stop_profile(self) -> None:
        """The result's message left: the profile of the click so far goes to ``collect``,
        and the rest of the click is profiled into ``after``."""
        if self.profile is not None:
            self.profile.disable()
            if self.collect is not None:
                self.collect.add(self.profile)
            self.profile = None
            if self.after is not None:
                self.rest = cProfile.Profile()
                self.rest.enable()

    def stop_rest(self) -> None:
        """The loop is idle on the next pause: the rest of the click's profile goes to ``after``."""
        rest, self.rest = self.rest, None
        if rest is not None and self.after is not None:
            rest.disable()
            self.after.add(rest)


def what_sent(data: Any) -> tuple[str, bool]:
    """A comm message's label, and whether it carries the approved call's result entry."""
    if not isinstance(data, dict):
        return "other", False
    if data.get("method") == "update":
        return "update " + ",".join(sorted(data.get("state", {}))), False
    content = data.get("content")
    if data.get("method") == "custom" and isinstance(content, dict):
        if "request_id" in content:
            return "answer", False
        kind = str(content.get("type"))
        return kind, kind == "nbh_transcript"
    return str(data.get("method")), False


def instrument(clicks: Clicks) -> None:
    """Wrap nb_hitl's stage functions so each call leaves a mark when it returns (benchmark-side only)."""
    from nb_hitl.session import _actions, _drive

    def marked(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        if inspect.iscoroutinefunction(original):

            async def wrapper(self: Any, *a: Any, **k: Any) -> Any:
                out = await original(self, *a, **k)
                clicks.mark(label)
                return out

        else:

            def wrapper(self: Any, *a: Any, **k: Any) -> Any:
                out = original(self, *a, **k)
                clicks.mark(label)
                return out

        setattr(owner, name, wrapper)

    marked(_actions.Desk, "on_action", "front door")
    marked(_actions.Desk, "check_decision", "checked")
    marked(_actions.Desk, "enqueue", "queued")
    marked(_drive.Driver, "_next_input", "resume event")


def iopub_thread() -> Any:
    """ipykernel's IOPub thread on a zmq ``PUB`` socket (inproc, no subscriber): what sends a
    kernel's messages. The widget's messages are handed to it as a kernel's are, so a send
    waits for the interpreter lock as it does in a kernel while the agent keeps running."""
    import zmq
    from ipykernel.iostream import IOPubThread

    socket: zmq.Socket = zmq.Context.instance().socket(zmq.PUB)
    socket.bind(f"inproc://click-path-{time.perf_counter_ns()}")
    thread = IOPubThread(socket)
    thread.start()
    return thread


def count_messages(widget: Any, clicks: Clicks, iopub: Any) -> None:
    """Publish the widget's comm messages as an ipykernel ``Comm`` does, marking each: serialised
    on the caller's thread, sent by the IOPub thread (``iopub``, see :func:`iopub_thread`)."""
    from ipykernel.jsonutil import json_clean
    from jupyter_client.session import Session as KernelSession

    signer = KernelSession(key=b"click-path-benchmark-key-0123456", session="click-path")
    comm = widget.comm
    # what an ipykernel ``Comm`` holds once it published: its kernel, whose IOPub thread sends
    comm.kernel = types.SimpleNamespace(iopub_thread=iopub)

    def publish(msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any) -> None:
        content = json_clean(dict(data={} if data is None else data, comm_id=comm.comm_id, **keys))
        frames = signer.serialize(signer.msg(msg_type, content, metadata=metadata or {}))
        what, transcript = what_sent(data)
        if (
            transcript
            and clicks.result_of
            and any(
                op.get("op") == "add" and op.get("entry", {}).get("id") == "result:" + clicks.result_of
                for op in data["content"]["ops"]
            )
        ):
            what = "nbh_transcript (the result)"
            clicks.stop_profile()
        clicks.mark("sent " + what)
        iopub.send_multipart(frames)
        if clicks.on:
            left = clicks.left
            iopub.schedule(lambda: left.append((what, time.perf_counter_ns())))
            clicks.sent.append((what, sum(len(f) for f in frames) + sum(len(b) for b in buffers or [])))

    comm.publish_msg = publish


def agent_and_tool(steps: int, clicks: Clicks) -> Any:
    """The agent of ``click_to_resume.py``: ``steps`` turns, one ``step`` call each, then a text."""
    from agentscope.agent import Agent, ReActConfig
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit

    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    def step(i: int) -> ToolChunk:
        """Run one step of the job.

        Args:
            i (int): the step number.
        """
        clicks.mark("tool start")
        out = ToolChunk(content=[TextBlock(text=f"step {i} done")], state=ToolResultState.SUCCESS)
        clicks.mark("tool end")
        return out

    return Agent(
        name="bench",
        system_prompt="Run the steps one by one.",
        model=ScriptedChatModel([Turn(f"Step {i}.", [tool_call("step", i=i)]) for i in range(steps)] + [Turn("Done.")]),
        toolkit=Toolkit(tools=[FunctionTool(step)]),
        react_config=ReActConfig(max_iters=steps + 10),
    )


async def measure(
    n: int, recorded: bool, collect: pstats.Stats | None = None, after: pstats.Stats | None = None
) -> dict[str, Any]:
    """``n`` clicks (after :data:`WARMUP`), each from ``in`` to the loop idle on the next pause;
    with ``collect``, each measured click is profiled from ``in`` to the result's message into it."""
    from benchmarks.approve_all import connect, page_message
    from nb_hitl import Session

    clicks = Clicks(collect, after)
    instrument(clicks)
    folder = Path(tempfile.mkdtemp(prefix="nbh-click-path-"))
    extra: dict[str, Any] = {"audit_log": folder / "audit.jsonl", "checkpoints": folder / "cp"} if recorded else {}
    session = Session(agent_and_tool(WARMUP + n, clicks), **extra)
    session.on_event(lambda ev, _run: clicks.mark("event " + type(ev).__name__))

    iopub = iopub_thread()

    def show(widget: Any) -> None:
        count_messages(widget, clicks, iopub)
        connect(widget)

    session.show = show
    task = session.start("Run every step.")
    for k in range(WARMUP + n):
        while not (session.current and session.current.status == "paused" and session.pending):
            if task.done():
                raise RuntimeError(f"the reply ended early: {task.result()!r}")
            await asyncio.sleep(0.002)
        await asyncio.sleep(0.003)  # the loop idle, as when a person clicks
        run = session.current
        pause = session.pending[0]
        measured = k >= WARMUP
        clicks.marks, clicks.sent, clicks.left, clicks.on = [], [], [], measured
        clicks.result_of = pause.tool_call_id
        if measured and collect is not None:
            clicks.profile = cProfile.Profile()
            clicks.profile.enable()
        clicks.mark("in")
        message = {"request_id": f"r{k}", "action": "approve", "tool_call_id": pause.tool_call_id}
        page_message(run.widget, {**message, "reply_id": pause.reply_id})
        while not (task.done() or (run.status == "paused" and session.pending and session.pending[0] is not pause)):
            await asyncio.sleep(0.001)
        clicks.mark("idle")
        clicks.stop_rest()
        if clicks.profile is not None:
            clicks.stop_profile()
            raise RuntimeError("the approved call's result never left the comm")
        if measured:
            await asyncio.sleep(0.002)  # the IOPub thread sent the last ones
            clicks.per_click.append({"marks": clicks.marks, "sent": clicks.sent, "left": clicks.left})
        clicks.on = False
    await task
    iopub.stop()
    assert run.resumes == WARMUP + n, f"{run.resumes} resumes for {WARMUP + n} clicks"
    return {"clicks": clicks.per_click}


def mp(values: list[float]) -> tuple[float, float]:
    """Median and p90 (``benchmarks/_lab.summarize``)."""
    st = summarize(values)
    return st["median"], st["p90"]


RESULT = "sent nbh_transcript (the result)"


def stages(per_click: list[dict[str, Any]]) -> dict[str, Any]:
    """Per stage (``previous mark -> mark``), median and p90 in ms; the totals; messages per click."""
    spans: dict[str, list[float]] = defaultdict(list)
    series: dict[str, list[float]] = defaultdict(list)  # per click: ms to a point, messages, bytes
    kinds: dict[str, int] = defaultdict(int)
    for click in per_click:
        marks, sent = click["marks"], click["sent"]
        t0 = marks[0][1]
        seen: dict[str, int] = defaultdict(int)
        for (_, before), (label, at) in zip(marks, marks[1:], strict=False):
            seen[label] += 1
            spans[label if seen[label] == 1 else f"{label} #{seen[label]}"].append((at - before) / 1e6)
        result = next(at for label, at in marks if label == RESULT)
        left = dict(reversed(click["left"]))  # the first of each kind
        card = [at for label, at in marks if label == "sent nbh_cards" and at > result]
        up_to = [label for label, at in marks if label.startswith("sent ") and at <= result]
        for name, value in (
            ("to_result", result - t0),
            ("to_left", left[RESULT.removeprefix("sent ")] - t0),
            ("answer_left", left["answer"] - t0),
            ("to_card", (card[-1] if card else marks[-1][1]) - t0),
            ("to_idle", marks[-1][1] - t0),
        ):
            series[name].append(value / 1e6)
        series["messages_to_result"].append(len(up_to))
        series["bytes_to_result"].append(sum(b for _, b in sent[: len(up_to)]))
        series["messages"].append(len(sent))
        series["bytes"].append(sum(b for _, b in sent))
        for what, _ in sent:
            kinds[what] += 1
    tenth = max(1, len(per_click) // 10)
    return {
        "stages": [(name, *mp(values), len(values)) for name, values in spans.items()],
        **{name: mp(values) for name, values in series.items()},
        # the first and the last tenth of the clicks: work that grows with the session shows here
        "idle_early_late": (mp(series["to_idle"][:tenth])[0], mp(series["to_idle"][-tenth:])[0]),
        "kinds": {k: v / len(per_click) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
        "n": len(per_click),
    }


def profile_pass(n: int, recorded: bool) -> dict[str, Any]:
    """cProfile over ``n`` clicks, from ``in`` to the result's message (``critical``) and from
    there to the loop idle on the next pause (``after``): top functions, and by package."""
    critical, after = pstats.Stats(), pstats.Stats()
    asyncio.run(measure(n, recorded, critical, after))
    return {"critical": summary(critical, n), "after": summary(after, n)}


def paired_pass(n: int) -> dict[str, Any] | None:
    """The plain configuration with the session's wait for the IOPub thread
    (``nb_hitl.widgets._iopub.let_out``) on every other click and off on the others, so both
    halves see the same load: ``{"with": stages, "without": stages}``; ``None`` for code
    without that wait (the ``--before`` checkout)."""
    import benchmarks.approve_all as approve_all
    from nb_hitl.session import _core

    real = getattr(_core, "let_out", None)
    if real is None:
        return None
    on = {"k": 0}
    deliver = approve_all.page_message

    def counting(widget: Any, message: dict[str, Any]) -> None:
        on["k"] += message.get("action") == "approve"
        deliver(widget, message)

    approve_all.page_message = counting
    _core.let_out = lambda widget, limit=None: real(widget, limit) if on["k"] % 2 == 0 else False  # type: ignore[attr-defined]
    try:
        clicks = asyncio.run(measure(n, False))["clicks"]
    finally:
        approve_all.page_message, _core.let_out = deliver, real  # type: ignore[attr-defined]
    first = WARMUP + 1  # the count of the first measured click
    return {
        "with": stages([c for i, c in enumerate(clicks) if (first + i) % 2 == 0]),
        "without": stages([c for i, c in enumerate(clicks) if (first + i) % 2 == 1]),
    }


def worker(n: int, profile_n: int) -> None:
    """Measure both configurations in this process; print the figures as one JSON line."""
    import nb_hitl

    assert Path(nb_hitl.__file__).resolve().is_relative_to(ROOT.resolve()), f"nb_hitl from {nb_hitl.__file__}"
    out: dict[str, Any] = {}
    for name, recorded in (("plain", False), ("recorded", True)):
        out[name] = stages(asyncio.run(measure(n, recorded))["clicks"])
    out["profile"] = profile_pass(profile_n, False)
    out["paired"] = paired_pass(n)
    print(json.dumps(out))


def report(label: str, fig: dict[str, Any]) -> None:
    """Print one checkout's figures."""
    if fig.get("paired"):
        print(f"\n[{label}] plain, the wait for the IOPub thread on every other click; ms median / p90")
        for half in ("with", "without"):
            f = fig["paired"][half]
            print(
                f"  {half:<8} ({f['n']} clicks): result sent {f['to_result'][0]:.3f} / {f['to_result'][1]:.3f}, "
                f"left the IOPub thread {f['to_left'][0]:.3f} / {f['to_left'][1]:.3f}; "
                f"loop idle {f['to_idle'][0]:.3f} / {f['to_idle'][1]:.3f}"
            )
    for name in ("plain", "recorded"):
        f = fig[name]
        print(f"\n[{label}] {name}: {f['n']} clicks; ms median / p90")
        for stage, med, p90, count in f["stages"]:
            print(f"  {stage:<58} {med:7.3f} {p90:7.3f}" + ("" if count == f["n"] else f"  ({count} clicks)"))
        print(f"  {'in -> the result sent':<58} {f['to_result'][0]:7.3f} {f['to_result'][1]:7.3f}")
        print(f"  {'in -> the result left the IOPub thread':<58} {f['to_left'][0]:7.3f} {f['to_left'][1]:7.3f}")
        print(f"  {'in -> the answer left the IOPub thread':<58} {f['answer_left'][0]:7.3f} {f['answer_left'][1]:7.3f}")
        print(f"  {'in -> the cards after it sent':<58} {f['to_card'][0]:7.3f} {f['to_card'][1]:7.3f}")
        print(f"  {'in -> next pause open, loop idle':<58} {f['to_idle'][0]:7.3f} {f['to_idle'][1]:7.3f}")
        early, late = f["idle_early_late"]
        print(f"  {'  the same, first / last tenth of the clicks (medians)':<58} {early:7.3f} {late:7.3f}")
        print(
            f"  messages up to the result: {f['messages_to_result'][0]:.0f} ({f['bytes_to_result'][0]:.0f} B); "
            f"per click: {f['messages'][0]:.0f} ({f['bytes'][0]:.0f} B) (medians)"
        )
        print("  per click: " + ", ".join(f"{k} ×{v:.1f}" for k, v in f["kinds"].items()))
    for window, title in (("critical", "in -> the result sent"), ("after", "the result sent -> loop idle")):
        print_profile(f"[{label}] cProfile, {title}", fig["profile"][window])


def main() -> dict[str, Any]:
    """Measure ``--before REF`` and this checkout, in turn ``--rounds`` times; print the last
    round's figures in full and every round's totals; returns the figures."""
    from benchmarks.card_push import checkout, run_on

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main")
    parser.add_argument("--n", type=int, default=200, help="measured clicks per configuration")
    parser.add_argument("--profile-n", type=int, default=100, help="clicks of the cProfile pass")
    parser.add_argument("--rounds", type=int, default=1, help="before / now pairs, in turn (the load drifts)")
    parser.add_argument("--only-now", action="store_true", help="measure this checkout only")
    args = parser.parse_args()
    sizes = [args.n, args.profile_n]
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="click-path-") as tmp:
        before = None if args.only_now else checkout(args.before, Path(tmp))
        if before is not None:  # the worker's own helper, which that tree may not have
            shutil.copy(ROOT / "benchmarks" / "_pstats.py", before / "benchmarks" / "_pstats.py")
        for _ in range(args.rounds):
            pair = {} if before is None else {args.before: run_on(before, sizes, Path(__file__))}
            rounds.append({**pair, "now": run_on(ROOT, sizes, Path(__file__))})
    for label, figures in rounds[-1].items():
        report(label, figures)
    print("\nin -> the result sent / left the IOPub thread, ms median / p90, per round:")
    for k, pair in enumerate(rounds):
        for label, figures in pair.items():
            cells = [
                f"{name} {figures[name]['to_result'][0]:.2f} / {figures[name]['to_result'][1]:.2f}, "
                f"{figures[name]['to_left'][0]:.2f} / {figures[name]['to_left'][1]:.2f}"
                for name in ("plain", "recorded")
            ]
            print(f"  round {k + 1} {label[:8]:<8} " + "; ".join(cells))
    return {"rounds": rounds}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(int(sys.argv[2]), int(sys.argv[3]))
    else:
        from benchmarks._bound import run_bounded

        run_bounded(main, 900, "click_path")  # seconds, on a loaded 2-core machine
