"""A replay in a worker process, from a real ipykernel: the kernel answers meanwhile, the worker dies with it.

A notebook's own function tool (defined in a cell: ``__main__``, which no
other process can import) and AgentScope's ``Bash`` are replayed against
candidate rules with ``in_worker=True``: the kernel runs another cell while
the replay runs, decides no call itself, and the frame equals the one the
kernel computes alone. A kernel killed mid-replay takes its worker with it.
"""

from __future__ import annotations

import time

import pytest

from tests.audit.test_replay_worker import workers
from tests.harness import KernelHarness

pytestmark = pytest.mark.kernel

SETUP = """
import asyncio, json, os
import pandas as pd
from agentscope.tool import Bash, FunctionTool
from nb_hitl.audit import replay
from nb_hitl.audit.judge import Judge

def notes(topic: str) -> str:
    '''Look notes up.

    Args:
        topic: what to look up.
    '''
    return topic

tools = [Bash(), FunctionTool(notes)]
with open("log.jsonl", "w") as out:
    for i in range(CALLS):
        tool, given = ("Bash", {"command": f"git push job{i % 3000}"}) if i % 5 else ("notes", {"topic": f"t{i % 7}"})
        out.write(json.dumps({"agent": "a", "tool_call_id": f"c{i}", "tool_name": tool, "original_input": given,
                              "event": "checked", "decision": "ask"}) + "\\n")
rules = [{"tool_name": "Bash", "rule_content": f"git push job{i}:*", "behavior": "allow", "source": "c"} for i in range(300)]
rules.append({"tool_name": "notes", "rule_content": None, "behavior": "deny", "source": "c"})
judged_here = []
_judge = Judge.judge
async def _counted(self, tool, tool_input):
    judged_here.append(tool.name)
    return await _judge(self, tool, tool_input)
Judge.judge = _counted
task = asyncio.ensure_future(replay("log.jsonl", rules, tools, in_worker=True))
print("KERNEL", os.getpid())
"""


def _kernel_pid(kernel: KernelHarness, calls: int) -> int:
    out = kernel.execute(SETUP.replace("CALLS", str(calls))).raise_for_error().stdout
    return int(out.split("KERNEL")[1].split()[0])


def _worker_of(kernel_pid: int, timeout: float = 30.0) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = workers(kernel_pid)
        if found:
            return found.pop()
        time.sleep(0.05)
    raise AssertionError(f"no replay worker of kernel {kernel_pid}")


def test_the_kernel_answers_while_its_worker_replays_and_decides_as_it_would() -> None:
    with KernelHarness() as kernel:
        pid = _kernel_pid(kernel, 20_000)
        _worker_of(pid)
        during = kernel.execute("print('RUNNING', not task.done(), len(judged_here))").raise_for_error().stdout
        assert "RUNNING True 0" in during  # a cell answered mid-replay; the kernel matched nothing
        done = kernel.execute(
            "there = await task\n"
            "print('JUDGED HERE', len(judged_here))\n"
            "here = await replay('log.jsonl', rules, tools)\n"
            "pd.testing.assert_frame_equal(here, there)\n"
            "pd.testing.assert_frame_equal(here.attrs['rules'], there.attrs['rules'])\n"
            "print('CHANGED', there['candidate'].value_counts().to_dict())",
            timeout=300,
        ).raise_for_error()
        assert "JUDGED HERE 0" in done.stdout
        assert "'deny': 4000" in done.stdout and "'allow': " in done.stdout
        assert workers(pid) == set()


def test_a_killed_kernel_takes_its_replay_worker_with_it() -> None:
    with KernelHarness() as kernel:
        pid = _kernel_pid(kernel, 100_000)
        worker = _worker_of(pid)
        kernel.kill()
        end = time.monotonic() + 10
        while workers(pid) and time.monotonic() < end:
            time.sleep(0.05)
        assert workers(pid) == set(), f"worker {worker} outlived its kernel"
