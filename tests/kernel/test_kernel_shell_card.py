"""A shell call's confirmation in a real ipykernel: the card's view carries its simple commands.

A real AgentScope ``Agent`` with AgentScope's ``Bash`` (its backend records the
command line instead of running it) on the scripted offline model, in a kernel
started by :class:`tests.harness.KernelHarness`. The widget state the kernel
syncs to the page holds, for the confirmation, the commands read by the shell
parser (:mod:`nb_hitl.permissions.shell`, the one the shell rules judge with):
program, arguments, redirections and the files they open, with the rules'
verdict when the shell rules are on, and without one when they are off. A
Deny sent as the page sends it runs nothing.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.harness import KernelHarness
from tests.support import kernel_json, open_pause, reply_widget, wait_status

pytestmark = pytest.mark.kernel

LINE = "sort < names.txt > sorted.txt 2>&1 && echo done >> log.txt"

SETUP = textwrap.dedent(
    f"""
    import json
    from agentscope.agent import Agent
    from agentscope.tool import Bash, ExecResult, LocalBackend, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    class RecordingBackend(LocalBackend):
        def __init__(self):
            super().__init__()
            self.ran = []

        async def exec_shell(self, argv, **kwargs):
            self.ran.append(argv[-1])
            return ExecResult(exit_code=0, stdout=b"", stderr=b"")

    def shell_agent(name):
        backend = RecordingBackend()
        agent = Agent(
            name=name, system_prompt="Run commands.",
            model=ScriptedChatModel([Turn("", [tool_call("Bash", id="call_1", command={LINE!r})]), Turn("finished")],
                                    on_exhausted="raise"),
            toolkit=Toolkit(tools=[Bash(backend=backend)]),
        )
        return agent, backend
    """
)

FILES = [
    [{"access": "reads", "path": "names.txt"}, {"access": "writes", "path": "sorted.txt"}],
    [{"access": "appends", "path": "log.txt"}],
]


@pytest.fixture(scope="module")
def kernel():
    with KernelHarness() as k:
        k.execute(SETUP).raise_for_error()
        yield k


@pytest.mark.parametrize("rules", [True, False], ids=["shell-rules", "no-shell-rules"])
def test_a_bash_confirmation_carries_its_parsed_commands(kernel: KernelHarness, rules: bool) -> None:
    name = f"shell_{rules}"
    kernel.execute(
        f"agent_{rules}, backend_{rules} = shell_agent({name!r})\n"
        f"session_{rules} = Session(agent_{rules}, shell_rules={rules})\n"
        f"task_{rules} = session_{rules}.start('sort the names')"
    ).raise_for_error()
    comm_id = reply_widget(kernel, name).comm_id
    pause = open_pause(kernel, comm_id, "confirm")
    assert pause["tool_name"] == "Bash"
    commands = pause["shell_commands"]
    assert [(c["program"], c["args"], c["redirections"]) for c in commands] == [
        ("sort", [], ["< names.txt", "> sorted.txt", "2>&1"]),
        ("echo", ["done"], [">> log.txt"]),
    ]
    assert [c["files"] for c in commands] == FILES
    assert pause["shell_problems"] == []
    if rules:  # judged one command at a time: neither is allowed by a rule
        assert [c["behavior"] for c in commands] == ["ask", "ask"]
        assert all(c["why"] == "no allow rule matches it" for c in commands)
    else:  # read by the same parser, not judged
        assert [(c["behavior"], c["why"]) for c in commands] == [("", ""), ("", "")]
    reply = kernel.request(comm_id, "deny", tool_call_id=pause["tool_call_id"], reply_id=pause["reply_id"])
    assert reply["ok"] is True, reply
    wait_status(kernel, comm_id, "finished")
    assert kernel_json(kernel, f"backend_{rules}.ran") == []
