"""``Session`` in a real ipykernel, clicked exactly as the page clicks.

A kernel is started with jupyter_client (:class:`tests.harness.KernelHarness`);
cells build the quickstart's agent (``nb_hitl.demo.demo_agent``: a real
AgentScope ``Agent`` on the scripted offline model) and a ``Session`` that
displays its ``ReplyWidget``. The test then finds the widget's comm and sends
real shell ``comm_msg`` s, ``{"method": "custom", "content": {request_id,
action, tool_call_id, reply_id, ...}}``, which is what ``js/reply.ts`` sends
through ``model.send``; it reads the widget state the kernel syncs back.

Both ways of running a reply are covered: a background task started by a cell
that returns at once, and a cell that awaits the reply at top level while the
clicks arrive (C10). C15 (two clicks back to back) and C13 (markup from the
model stays plain text in the widget state) run here too.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

from tests.harness import KernelHarness
from tests.support import kernel_json, open_pause, reply_widget, wait_status

pytestmark = pytest.mark.kernel

QUESTION = "Which file should I delete?"
XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_SCRIPT = "<script>window.__x=1</script>"


@pytest.fixture(scope="module")
def kernel():
    with KernelHarness() as k:
        k.execute("from nb_hitl import Session\nfrom nb_hitl.demo import demo_agent\nimport json").raise_for_error()
        yield k


MODEL_SAW = textwrap.dedent(
    """
    def model_saw(agent):
        from nb_hitl.models import tool_results, result_text
        last = agent.model.calls[-1]
        return [
            {"name": r.name, "state": str(r.state), "text": result_text(r), "metadata": r.metadata}
            for r in tool_results(last)
        ]
    """
)


def answer_and_modify(k: KernelHarness, comm_id: str, pick: str, edited_path: str) -> None:
    """Answer the AskUser panel with ``pick``, then Modify the deletion to ``edited_path``."""
    ask = open_pause(k, comm_id, "ask_user")
    q = ask["ask_user"]["questions"][0]
    assert q["question"] == QUESTION and q["header"] == "Cleanup" and q["multi_select"] is False
    assert [o["label"] for o in q["options"]] == ["draft.md", "notes.txt", "old_log.txt"]
    reply = k.request(
        comm_id,
        "answer",
        tool_call_id=ask["tool_call_id"],
        reply_id=ask["reply_id"],
        answers=[{"question": QUESTION, "selected": [pick], "other": None}],
    )
    assert reply["ok"] is True, reply
    assert reply["decision"]["answers"] == [{"question": QUESTION, "selected": [pick], "other": None}]

    confirm = open_pause(k, comm_id, "confirm")
    assert confirm["tool_name"] == "delete_file"
    assert json.loads(confirm["input_text"]) == {"path": pick}
    assert confirm["permission_message"] == "Permission required for delete_file"
    assert [r["label"] for r in confirm["suggested_rules"]] == ["allow delete_file"]
    # a refused edit first (C05 d): answered, nothing decided
    bad = k.request(comm_id, "modify", tool_call_id=confirm["tool_call_id"], reply_id=confirm["reply_id"], input="{")
    assert bad["ok"] is False and bad["code"] == "invalid" and bad["field"] == "input" and "line 1" in bad["error"]
    reply = k.request(
        comm_id,
        "modify",
        tool_call_id=confirm["tool_call_id"],
        reply_id=confirm["reply_id"],
        input=json.dumps({"path": edited_path}, indent=2),
    )
    assert reply["ok"] is True, reply
    diff = reply["decision"].pop("input_diff")  # what the edit changed, shown on the decided card
    assert f'-  "path": "{pick}"' in diff and f'+  "path": "{edited_path}"' in diff
    assert reply["decision"] == {"action": "modify", "confirmed": True, "edited_input": {"path": edited_path}}


def test_background_task_pattern(kernel: KernelHarness) -> None:
    kernel.execute(MODEL_SAW).raise_for_error()
    res = kernel.execute(
        "agent_bg = demo_agent(name='bg', chunk_delay=0)\n"
        "session_bg = Session(agent_bg)\n"
        "task_bg = session_bg.start('Please tidy up my sandbox folder.')\n"
        "'started'"
    ).raise_for_error()
    assert res.text.endswith("'started'")  # the cell returned while the reply goes on
    assert any("application/vnd.jupyter.widget-view+json" in d for d in res.data), res.describe()
    rec = reply_widget(kernel, "bg", require_esm=True)
    assert rec.state["prompt"] == "Please tidy up my sandbox folder."

    answer_and_modify(kernel, rec.comm_id, pick="draft.md", edited_path="notes.txt")

    state = wait_status(kernel, rec.comm_id, "finished")
    final = "Done. Deleted notes.txt. The folder now holds: draft.md, old_log.txt."
    kernel.wait_for(lambda: kernel.comm(rec.comm_id).final_text == final, 10, what="final_text")
    state = kernel.comm(rec.comm_id).state
    assert [p["status"] for p in state["pauses"]] == ["delivered", "delivered"]
    assert any(
        e["kind"] == "tool_result" and e.get("state") == "success" and "Deleted notes.txt." in e["text"]
        for e in kernel.comm(rec.comm_id).transcript()
    )

    assert kernel_json(kernel, "task_bg.done() and task_bg.result().get_text_content()") == final
    assert kernel_json(kernel, "sorted(p.name for p in agent_bg.sandbox.iterdir())") == ["draft.md", "old_log.txt"]
    assert kernel_json(kernel, "session_bg.current.resumes") == 2
    saw = kernel_json(kernel, "model_saw(agent_bg)")
    names = [r["name"] for r in saw]
    assert names == ["list_files", "AskUser", "delete_file"]
    ask, delete = saw[1], saw[2]
    assert ask["state"] == "success" and ask["metadata"]["answers"][0]["selected"] == ["draft.md"]
    assert ask["text"] == f'The user answered:\n- "{QUESTION}" -> draft.md'
    assert (delete["name"], delete["state"], delete["text"]) == ("delete_file", "success", "Deleted notes.txt.")
    # AgentScope rewrote its history with the edited input: the model believes it asked for notes.txt
    calls = kernel_json(
        kernel,
        "[b.input for m in agent_bg.state.context if not isinstance(m.content, str) "
        "for b in m.content if getattr(b, 'type', '') == 'tool_call' and b.name == 'delete_file']",
    )
    assert [json.loads(c) for c in calls] == [{"path": "notes.txt"}]
    # a click after the end is answered, not dropped
    late = kernel.request(rec.comm_id, "approve", tool_call_id=state["pauses"][1]["tool_call_id"])
    assert late["ok"] is False and late["code"] in ("already_decided", "expired")


def test_C10_top_level_await_pattern(kernel: KernelHarness) -> None:
    kernel.execute("agent_aw = demo_agent(name='aw', chunk_delay=0)\nsession_aw = Session(agent_aw)").raise_for_error()
    msg_id = kernel.execute_async_start(
        "reply_aw = await session_aw.run('Please tidy up my sandbox folder.')\n"
        "print('FINAL:', reply_aw.get_text_content())"
    )
    rec = reply_widget(kernel, "aw", require_esm=True)
    answer_and_modify(kernel, rec.comm_id, pick="old_log.txt", edited_path="draft.md")
    res = kernel.wait_reply(msg_id, timeout=30).raise_for_error()
    assert "FINAL: Done. Deleted draft.md. The folder now holds: notes.txt, old_log.txt." in res.stdout
    assert kernel.comm(rec.comm_id).state["status"] == "finished"
    assert kernel_json(kernel, "sorted(p.name for p in agent_aw.sandbox.iterdir())") == ["notes.txt", "old_log.txt"]
    assert [r["name"] for r in kernel_json(kernel, "model_saw(agent_aw)")] == ["list_files", "AskUser", "delete_file"]


C15_AGENT = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results, result_text
    box15 = make_sandbox()
    agent15 = Agent(
        name="c15", system_prompt="tidy",
        model=ScriptedChatModel([
            Turn("Deleting.", [tool_call("delete_file", path="notes.txt")]),
            lambda msgs: Turn("Result: " + str(tool_results(msgs, "delete_file")[-1].state)),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=sandbox_tools(box15)),
    )
    session15 = Session(agent15)
    task15 = session15.start("delete notes.txt")
    """
)


def test_C15_approve_and_deny_back_to_back(kernel: KernelHarness) -> None:
    kernel.execute(C15_AGENT).raise_for_error()
    rec = reply_widget(kernel, "c15", require_esm=True)
    confirm = open_pause(kernel, rec.comm_id, "confirm")
    ids = {"approve": "c15-approve", "deny": "c15-deny"}
    for action, rid in ids.items():  # no waiting in between
        kernel.send_custom(
            rec.comm_id,
            {
                "request_id": rid,
                "action": action,
                "tool_call_id": confirm["tool_call_id"],
                "reply_id": confirm["reply_id"],
            },
        )

    def replies() -> dict[str, Any] | None:
        got = {
            c["request_id"]: c
            for c in kernel.comm(rec.comm_id).custom
            if isinstance(c, dict) and c.get("request_id") in ids.values()
        }
        return got if len(got) == 2 else None

    got = kernel.wait_for(replies, 30, what="both replies")
    approve, deny = got["c15-approve"], got["c15-deny"]
    assert approve["ok"] is True and approve["decision"]["action"] == "approve"
    assert deny["ok"] is False and deny["code"] == "already_decided" and "Already decided" in deny["error"]
    wait_status(kernel, rec.comm_id, "finished")
    kernel.wait_for(lambda: kernel.comm(rec.comm_id).final_text == "Result: success", 10, what="final_text")
    assert kernel_json(kernel, "session15.current.resumes") == 1
    assert kernel_json(kernel, "sorted(p.name for p in box15.iterdir())") == ["draft.md", "old_log.txt"]
    assert kernel_json(kernel, "[str(r.state) for r in tool_results(agent15.state.context, 'delete_file')]") == [
        "success"
    ]


C13_AGENT = textwrap.dedent(
    f"""
    from agentscope.agent import Agent
    from agentscope.tool import AskUser, Toolkit
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    IMG, SCRIPT = {XSS_IMG!r}, {XSS_SCRIPT!r}
    box13 = make_sandbox()
    agent13 = Agent(
        name="c13", system_prompt="x",
        model=ScriptedChatModel([
            Turn("Text " + IMG + SCRIPT, [tool_call("AskUser", questions=[{{
                "question": "Pick " + IMG + SCRIPT + "?",
                "header": "<b>h</b>",
                "context": "ctx " + IMG + SCRIPT,
                "options": [
                    {{"label": IMG, "description": "desc " + SCRIPT, "preview": "pre " + IMG + SCRIPT}},
                    {{"label": SCRIPT, "description": "plain"}},
                ],
            }}])]),
            Turn("Deleting.", [tool_call("delete_file", path=IMG + SCRIPT)]),
            Turn("Final " + IMG + SCRIPT),
        ], on_exhausted="raise"),
        toolkit=Toolkit(tools=sandbox_tools(box13)),
    )
    session13 = Session(agent13)
    task13 = session13.start(IMG + SCRIPT)
    """
)


def test_C13_markup_round_trips_as_plain_strings(kernel: KernelHarness) -> None:
    kernel.execute(C13_AGENT).raise_for_error()
    rec = reply_widget(kernel, "c13", require_esm=True)
    both = XSS_IMG + XSS_SCRIPT
    assert rec.state["prompt"] == both
    ask = open_pause(kernel, rec.comm_id, "ask_user")
    q = ask["ask_user"]["questions"][0]
    assert q["question"] == f"Pick {both}?"
    assert q["header"] == "<b>h</b>"
    assert q["context"] == f"ctx {both}"
    assert q["options"][0] == {"label": XSS_IMG, "description": f"desc {XSS_SCRIPT}", "preview": f"pre {both}"}
    assert q["options"][1]["label"] == XSS_SCRIPT
    assert ask["input_text"] == ""  # the questions reach the page once, as ask_user
    text = next(e for e in kernel.comm(rec.comm_id).transcript() if e["kind"] == "text")
    assert text["text"] == f"Text {both}"

    reply = kernel.request(
        rec.comm_id,
        "answer",
        tool_call_id=ask["tool_call_id"],
        answers=[{"question": q["question"], "selected": [XSS_IMG]}],
    )
    assert reply["ok"] is True and reply["decision"]["answers"][0]["selected"] == [XSS_IMG]
    confirm = open_pause(kernel, rec.comm_id, "confirm")
    assert json.loads(confirm["input_text"]) == {"path": both}
    assert both in confirm["input_text"]  # not escaped to \\u003c or &lt;
    assert kernel.request(rec.comm_id, "deny", tool_call_id=confirm["tool_call_id"])["ok"] is True
    state = wait_status(kernel, rec.comm_id, "finished")
    kernel.wait_for(lambda: kernel.comm(rec.comm_id).final_text == f"Final {both}", 10, what="final_text")
    decided = kernel.comm(rec.comm_id).state["pauses"][0]["decision"]
    assert decided["answers"][0]["selected"] == [XSS_IMG]
    assert state["status"] == "finished"
    assert kernel_json(kernel, "sorted(p.name for p in box13.iterdir())") == ["draft.md", "notes.txt", "old_log.txt"]
