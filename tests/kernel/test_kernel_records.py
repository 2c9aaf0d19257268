"""Exactly once beyond one kernel, and the wrong way told the right way.

* Two kernel processes restore one checkpoint: the second is refused with a
  message naming the first (pid, host, user); the tool runs once; once the
  first kernel is gone the second restores a finished reply and runs
  nothing again.
* In a real kernel: ``session.run(...)`` without ``await`` shows how to run
  it and sends nothing; ``session.act(...)`` without ``await`` still carries
  the decision through; ``asyncio.run`` / ``run_until_complete`` /
  ``task.result()`` in a cell say to write ``await``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.harness import KernelHarness
from tests.support import kernel_json

pytestmark = pytest.mark.kernel

AGENT = textwrap.dedent(
    """
    import json, asyncio
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    def touch(label: str) -> ToolChunk:
        '''Record one run of the tool.

        Args:
            label (str): what to record.
        '''
        with open(RUNS, "a") as fh:
            fh.write(label + "\\n")
        return ToolChunk(content=[TextBlock(text="touched " + label)], state=ToolResultState.SUCCESS)

    def make_agent(script, state=None):
        return Agent(name="toucher", system_prompt="x", model=ScriptedChatModel(script, on_exhausted="raise"),
                     toolkit=Toolkit(tools=[FunctionTool(touch)]), state=state)

    SCRIPT = [Turn("Touching.", [tool_call("touch", id="t1", label="a")]), Turn("Done.")]
    """
)


def setup(tmp_path: Path) -> str:
    return f"RUNS, CKPT = {str(tmp_path / 'runs.txt')!r}, {str(tmp_path / 'ckpt')!r}\n" + AGENT


def runs(tmp_path: Path) -> list[str]:
    path = tmp_path / "runs.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_two_kernels_restoring_one_checkpoint_run_the_tool_once(tmp_path: Path) -> None:
    head = setup(tmp_path)
    with KernelHarness() as a:
        a.execute(
            head + 'session = Session(make_agent(SCRIPT), display=False, checkpoints=CKPT, session_id="t")\n'
            'task = session.start("touch a")'
        ).raise_for_error()
        a.wait_for(lambda: kernel_json(a, "[p.tool_call_id for p in session.pending]") == ["t1"], 30, what="pause")

    restore = "session = Session.restore(lambda st: make_agent(SCRIPT[1:], st), CKPT, display=False)\n"
    with KernelHarness() as b, KernelHarness() as c:
        b.execute(head + restore + "task = session.start_resume()").raise_for_error()
        b.wait_for(lambda: kernel_json(b, "[p.tool_call_id for p in session.pending]") == ["t1"], 30, what="pause")
        refused = c.execute(head + restore)
        assert refused.error is not None and refused.error["ename"] == "CheckpointLockedError"
        assert f"pid {b.pid}" in refused.error["evalue"] and "user" in refused.error["evalue"]
        # the second kernel can neither answer nor run anything
        assert c.execute("print('session' in globals())").raise_for_error().stdout.strip() == "False"

        b.execute(
            'await session.act({"action": "approve", "tool_call_id": "t1"})\nfinal = await task\nprint(final.get_text_content())'
        ).raise_for_error()
        assert runs(tmp_path) == ["a"]
        again = c.execute(restore)
        assert again.error is not None and again.error["ename"] == "CheckpointLockedError"
        b.kill()  # the holder is gone, however it ends: the OS drops its lock

        c.execute(restore + "print(json.dumps([tc.id for tc in session.parked_tool_calls()]))").raise_for_error()
        assert kernel_json(c, "[tc.id for tc in session.parked_tool_calls()]") == []
    assert runs(tmp_path) == ["a"]


def test_C24_restore_in_the_same_kernel_one_call_one_answer(tmp_path: Path) -> None:
    with KernelHarness() as k:
        k.execute(
            setup(tmp_path) + 'old = Session(make_agent(SCRIPT), display=True, checkpoints=CKPT, session_id="t")\n'
            'old_task = old.start("touch a")'
        ).raise_for_error()
        old_comm = k.wait_for(
            lambda: next((c for c in k.comms("AnyModel") if c.state.get("status") == "paused"), None), 30, what="old"
        ).comm_id
        k.execute(
            "new = Session.restore(lambda st: make_agent(SCRIPT[1:], st), CKPT, display=True)\n"
            "new_task = new.start_resume()"
        ).raise_for_error()
        new_comm = k.wait_for(
            lambda: next(
                (c for c in k.comms("AnyModel") if c.comm_id != old_comm and c.state.get("status") == "paused"), None
            ),
            30,
            what="new widget",
        ).comm_id
        k.wait_for(lambda: k.comm(old_comm).state.get("status") == "expired", 10, what="old widget expired")
        old_reply = k.request(old_comm, "approve", tool_call_id="t1")
        assert old_reply["ok"] is False and old_reply["code"] == "expired"
        new_reply = k.request(new_comm, "approve", tool_call_id="t1")
        assert new_reply["ok"] is True
        k.wait_for(lambda: k.comm(new_comm).state.get("status") == "finished", 30, what="the reply to end")
        again = k.request(old_comm, "approve", tool_call_id="t1")
        assert again["ok"] is False
    assert runs(tmp_path) == ["a"]


def test_the_wrong_way_is_told_the_right_way(tmp_path: Path) -> None:
    with KernelHarness() as k:
        k.execute(
            setup(tmp_path) + "agent = make_agent(SCRIPT)\nsession = Session(agent, display=False)"
        ).raise_for_error()

        # session.run(...) without await: its value says how; nothing was sent
        shown = k.execute('session.run("touch a")').raise_for_error()
        assert "write `await session.run(...)`" in shown.text
        assert "never awaited" not in shown.stderr
        assert kernel_json(k, "[len(agent.model.calls), len(session.runs)]") == [0, 0]

        # asyncio.run / run_until_complete in a cell: the error names await
        for code in (
            'asyncio.run(session.run("touch a"))',
            'asyncio.get_event_loop().run_until_complete(session.run("touch a"))',
        ):
            res = k.execute(code)
            assert res.error is not None and res.error["ename"] == "RuntimeError", code
            traceback = "\n".join(res.error["traceback"])
            assert "await session.run(...)" in traceback, traceback[-600:]
            assert "never awaited" not in res.stderr
        assert kernel_json(k, "len(agent.model.calls)") == 0

        # task.result() on a running reply
        k.execute('task = session.start("touch a")').raise_for_error()
        k.wait_for(lambda: kernel_json(k, "[p.tool_call_id for p in session.pending]") == ["t1"], 30, what="pause")
        res = k.execute("task.result()")
        assert res.error is not None and res.error["ename"] == "InvalidStateError"
        assert "await task" in res.error["evalue"]

        # session.act(...) without await still decides (never stuck "deciding")
        k.execute('session.act({"action": "approve", "tool_call_id": "t1"})').raise_for_error()
        k.wait_for(lambda: kernel_json(k, "session.current.status") == "finished", 30, what="the reply to end")
        assert kernel_json(k, "session.current.pauses['t1'].status") == "delivered"
        assert k.execute("print((await task).get_text_content())").raise_for_error().stdout.strip() == "Done."
    assert runs(tmp_path) == ["a"]
    assert json.dumps(runs(tmp_path))


def test_a_kernel_killed_while_the_tool_runs_never_runs_it_again(tmp_path: Path) -> None:
    head = setup(tmp_path) + textwrap.dedent(
        """
        import time
        def slow_touch(label: str) -> ToolChunk:
            '''Record one run of the tool, then take a while.

            Args:
                label (str): what to record.
            '''
            with open(RUNS, "a") as fh:
                fh.write(label + "\\n")
            time.sleep(30)
            return ToolChunk(content=[TextBlock(text="touched " + label)], state=ToolResultState.SUCCESS)

        def make_slow_agent(script, state=None):
            return Agent(name="toucher", system_prompt="x", model=ScriptedChatModel(script, on_exhausted="raise"),
                         toolkit=Toolkit(tools=[FunctionTool(slow_touch, name="touch")]), state=state)
        """
    )
    with KernelHarness() as a:
        a.execute(
            head + 'session = Session(make_slow_agent(SCRIPT), display=False, checkpoints=CKPT, session_id="t",'
            ' audit_log=CKPT + "/../audit.jsonl")\ntask = session.start("touch a")'
        ).raise_for_error()
        a.wait_for(lambda: kernel_json(a, "[p.tool_call_id for p in session.pending]") == ["t1"], 30, what="pause")
        a.execute_async_start('await session.act({"action": "approve", "tool_call_id": "t1"})')
        a.wait_for(lambda: runs(tmp_path) == ["a"], 30, what="the tool to start")
        a.kill()  # mid-tool: the checkpoint still has the call parked, with its delivered mark

    record = json.loads((tmp_path / "ckpt" / "t.json").read_text())
    assert record["state"]["middle_context"]["nb_hitl.delivered"]["t1"]["action"] == "approve"
    with KernelHarness() as b:
        b.execute(
            head + 'session = Session.restore(lambda st: make_slow_agent([Turn("Ok.")], st), CKPT, display=False)'
        ).raise_for_error()
        assert kernel_json(b, "[tc.id for tc in session.parked_tool_calls()]") == []
        closed = kernel_json(
            b,
            "[(blk.id, blk.state) for m in session.agent.state.context if not isinstance(m.content, str)"
            " for blk in m.content if blk.type == 'tool_result']",
        )
        assert closed == [["t1", "interrupted"]]
        out = b.execute('print((await session.run("and now?")).get_text_content())').raise_for_error()
        assert out.stdout.strip() == "Ok."
    assert runs(tmp_path) == ["a"]
