"""Issue 6 in real ipykernels: review, policy, deadlines and forms, clicked as the page clicks.

Kernels are started with jupyter_client (:class:`tests.harness.KernelHarness`);
cells build real AgentScope agents on the scripted offline model and a
``Session`` that displays its ``ReplyWidget``. The test finds the widget's
comm and sends real shell ``comm_msg`` s (``{"method": "custom", "content":
{request_id, action, tool_call_id, ...}}``, what ``js/reply.ts`` sends) and
reads the widget state the kernel syncs back over IOPub.

The review tests check the three things the issue names: the model's input
(``ScriptedChatModel.calls``), the event stream (every event ``reply_stream``
yielded, recorded in the kernel, plus every transcript update the page
received) and the tool's run count (a file the tool appends to), also across
a kernel killed and restarted from the checkpoint (two kernel processes,
``Session.restore`` + ``start_resume``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.harness import KernelHarness
from tests.support import kernel_json, open_pause, reply_widget, wait_status

pytestmark = pytest.mark.kernel

RAW = "Ana Lima, card 4111-1111-1111-1111, ana@example.com"
SECRET = "4111-1111-1111-1111"
REDACTED = "Ana Lima, card [REDACTED], [REDACTED]"

SETUP = textwrap.dedent(
    f"""
    import json
    from pathlib import Path
    from agentscope.agent import Agent
    from agentscope.permission import PermissionBehavior, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, Toolkit
    from nb_hitl import Session
    from nb_hitl.kinds.form import FormTool
    from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
    from nb_hitl.policy import Policy, policy_middleware
    from nb_hitl.kinds.review_tool import reviewed
    from nb_hitl.store import AuditLog

    RAW = {RAW!r}
    RUNS = Path("runs.log").resolve()

    def lookup_customer(customer: str) -> str:
        \"\"\"Look up a customer record.

        Args:
            customer (str): the customer's name.
        \"\"\"
        with RUNS.open("a") as f:
            f.write(customer + "\\n")
        return RAW

    def allowed(tool_name, state=None):
        state = state or AgentState()
        state.permission_context.allow_rules[tool_name] = [
            PermissionRule(tool_name=tool_name, rule_content=None, behavior=PermissionBehavior.ALLOW, source="userSettings")
        ]
        return state

    def echo(name):
        def turn(msgs):
            r = tool_results(msgs, name)[-1]
            return Turn(f"[{{r.state}}] {{result_text(r)}}")
        return turn

    def crm_agent(script, state=None, agent_name="crm"):
        return Agent(
            name=agent_name, system_prompt="Answer questions about customers.",
            model=ScriptedChatModel(script, on_exhausted="raise"),
            toolkit=Toolkit(tools=[reviewed(FunctionTool(lookup_customer))]),
            state=state if state is not None else allowed("lookup_customer"),
        )

    EVENTS = []
    def record(agent):
        original = agent.reply_stream
        async def recording(*a, **k):
            async for ev in original(*a, **k):
                EVENTS.append(ev)
                yield ev
        agent.reply_stream = recording
        return agent

    def events_text():
        return "\\n".join(e.model_dump_json() for e in EVENTS)

    def model_input(agent):
        return "\\n".join(m.model_dump_json() for call in agent.model.calls for m in call)
    """
)


def transcript_updates(k: KernelHarness, comm_id: str) -> list[Any]:
    """Every ``transcript`` value and transcript stream message the kernel sent to the page for this widget."""
    out = []
    for m in k.messages("comm_msg"):
        content = m["content"]
        if content.get("comm_id") != comm_id:
            continue
        data = content.get("data") or {}
        state = data.get("state") or {}
        if "transcript" in state:
            out.append(state["transcript"])
        custom = data.get("content") or {}
        if isinstance(custom, dict) and custom.get("type") == "nbh_transcript":
            out.append(custom["ops"])
    return out


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory):
    with KernelHarness(cwd=tmp_path_factory.mktemp("rp-kernel")) as k:
        k.execute(SETUP).raise_for_error()
        yield k


# ---------------------------------------------------------------------------
def test_review_edit_in_a_kernel(kernel: KernelHarness) -> None:
    kernel.execute(
        "EVENTS.clear()\n"
        "crm = record(crm_agent([Turn('Let me look.', [tool_call('lookup_customer', customer='Ana')]), echo('lookup_customer')]))\n"
        "session_crm = Session(crm)\n"
        "task_crm = session_crm.start('Who is Ana?')"
    ).raise_for_error()
    rec = reply_widget(kernel, "crm")
    pause = open_pause(kernel, rec.comm_id, "review")
    assert pause["tool_name"] == "lookup_customer" and pause["review_output"] == RAW
    assert pause["review_state"] == "success" and pause["title"] == "Review the result of lookup_customer"
    assert json.loads(pause["input_text"]) == {"customer": "Ana"}
    # ran once; nothing of the result reached the model, the event stream or the transcript
    assert kernel_json(kernel, "RUNS.read_text().splitlines()") == ["Ana"]
    assert kernel_json(kernel, f"{SECRET!r} in events_text()") is False
    assert kernel_json(kernel, f"{SECRET!r} in model_input(crm)") is False
    assert kernel_json(kernel, "len(crm.model.calls)") == 1
    assert all(SECRET not in json.dumps(t) for t in transcript_updates(kernel, rec.comm_id))

    # a click of the wrong kind is refused (C06); then the edit
    wrong = kernel.request(rec.comm_id, "approve", tool_call_id=pause["tool_call_id"])
    assert wrong["ok"] is False and wrong["field"] == "action"
    reply = kernel.request(
        rec.comm_id, "edit", tool_call_id=pause["tool_call_id"], reply_id=pause["reply_id"], output=REDACTED
    )
    assert reply["ok"] is True and reply["decision"] == {"action": "edit", "state": "success", "output": REDACTED}
    wait_status(kernel, rec.comm_id, "finished")
    kernel.wait_for(lambda: kernel.comm(rec.comm_id).final_text == f"[success] {REDACTED}", 10, what="final_text")

    state = kernel.comm(rec.comm_id).state
    done = state["pauses"][0]
    assert done["status"] == "delivered" and done["decision"]["action"] == "edit"
    assert done["review_output"] is None  # the unreviewed text left the widget (and a saved notebook)
    result_entry = next(e for e in kernel.comm(rec.comm_id).transcript() if e["kind"] == "tool_result")
    assert result_entry["text"] == REDACTED and result_entry["state"] == "success"
    assert all(SECRET not in json.dumps(t) for t in transcript_updates(kernel, rec.comm_id))
    assert kernel_json(kernel, "RUNS.read_text().splitlines()") == ["Ana"]
    assert kernel_json(kernel, f"{SECRET!r} in events_text() or {SECRET!r} in model_input(crm)") is False
    seen = kernel_json(
        kernel, "[(str(r.state), result_text(r)) for r in tool_results(crm.model.calls[-1], 'lookup_customer')]"
    )
    assert seen == [["success", REDACTED]]
    deltas = kernel_json(kernel, "[e.delta for e in EVENTS if type(e).__name__ == 'ToolResultTextDeltaEvent']")
    assert deltas == [REDACTED]


def test_review_survives_a_kernel_restart_without_running_the_tool_again(tmp_path: Path) -> None:
    with KernelHarness(cwd=tmp_path) as k:
        k.execute(SETUP).raise_for_error()
        k.execute(
            "crm = record(crm_agent([Turn('Let me look.', [tool_call('lookup_customer', customer='Ana')])]))\n"
            "session_crm = Session(crm, checkpoints='ckpt', session_id='crm-1')\n"
            "task_crm = session_crm.start('Who is Ana?')"
        ).raise_for_error()
        rec = reply_widget(k, "crm")
        before = open_pause(k, rec.comm_id, "review")
        assert before["review_output"] == RAW
        first_pid = k.pid
        assert (tmp_path / "runs.log").read_text().splitlines() == ["Ana"]
        assert SECRET in (tmp_path / "ckpt" / "crm-1.json").read_text()  # saved for the restart

        k.kill()  # a crash: nothing else runs in that process
        k.restart()
        assert k.pid != first_pid

        k.execute(SETUP).raise_for_error()
        k.execute(
            "session_crm = Session.restore(lambda st: record(crm_agent([echo('lookup_customer')], st)), 'ckpt')\n"
            "crm = session_crm.agent\n"
            "task_crm = session_crm.start_resume()"
        ).raise_for_error()
        rec = reply_widget(k, "crm")
        after = open_pause(k, rec.comm_id, "review")
        assert after["tool_call_id"] == before["tool_call_id"] and after["review_output"] == RAW
        assert (tmp_path / "runs.log").read_text().splitlines() == ["Ana"]  # not run again

        reply = k.request(rec.comm_id, "edit", tool_call_id=after["tool_call_id"], output=REDACTED)
        assert reply["ok"] is True, reply
        wait_status(k, rec.comm_id, "finished")
        k.wait_for(lambda: k.comm(rec.comm_id).final_text == f"[success] {REDACTED}", 10, what="final_text")

        assert (tmp_path / "runs.log").read_text().splitlines() == ["Ana"]  # exactly once, across both kernels
        assert kernel_json(k, f"{SECRET!r} in events_text() or {SECRET!r} in model_input(crm)") is False
        assert kernel_json(k, "len(crm.model.calls)") == 1  # the restored model was called once, with the edit
        seen = kernel_json(k, "[result_text(r) for r in tool_results(crm.model.calls[-1], 'lookup_customer')]")
        assert seen == [REDACTED]
        assert SECRET not in (tmp_path / "ckpt" / "crm-1.json").read_text()  # removed once the reply ended


def test_policy_forced_ask_in_a_kernel(kernel: KernelHarness) -> None:
    kernel.execute(
        textwrap.dedent(
            """
            SENT = []
            def send_payment(to: str, amount: float) -> str:
                \"\"\"Send money.

                Args:
                    to (str): payee.
                    amount (float): euros.
                \"\"\"
                SENT.append([to, amount])
                return f"paid {amount} to {to}"

            payer = Agent(
                name="payer", system_prompt="Pay.",
                model=ScriptedChatModel([Turn("Paying.", [tool_call("send_payment", to="ACME", amount=120.0)]), echo("send_payment")]),
                toolkit=Toolkit(tools=[FunctionTool(send_payment)]),
                state=allowed("send_payment"),  # an allow rule would let it run
                middlewares=[policy_middleware(Policy("payments", tools=["send_payment"], message="Money leaves the company."))],
            )
            session_pay = Session(payer, audit_log="pay-audit.jsonl")
            task_pay = session_pay.start("pay ACME")
            """
        )
    ).raise_for_error()
    rec = reply_widget(kernel, "payer")
    pause = open_pause(kernel, rec.comm_id, "confirm")
    assert pause["policy"] == "payments"
    assert pause["permission_message"] == (
        "The policy 'payments' requires a person to confirm this call (tool send_payment). Money leaves the company."
    )
    assert pause["decision_reason"] == "nb_hitl policy: payments" and pause["bypass_immune"] is True
    assert pause["suggested_rules"] == []
    assert kernel_json(kernel, "SENT") == []
    reply = kernel.request(rec.comm_id, "approve", tool_call_id=pause["tool_call_id"])
    assert reply["ok"] is True
    wait_status(kernel, rec.comm_id, "finished")
    kernel.wait_for(
        lambda: kernel.comm(rec.comm_id).final_text == "[success] paid 120.0 to ACME",
        10,
        what="final_text",
    )
    assert kernel_json(kernel, "SENT") == [["ACME", 120.0]]
    assert kernel_json(
        kernel, "[(r['decision'], r['policy']) for r in AuditLog('pay-audit.jsonl').records('answered')]"
    ) == [["approve", "payments"]]


DEADLINE_AGENT = textwrap.dedent(
    """
    DELETED = []
    def delete_file(path: str) -> str:
        \"\"\"Delete a file.

        Args:
            path (str): the file.
        \"\"\"
        DELETED.append(path)
        return f"deleted {path}"

    def deleter(name):
        return Agent(
            name=name, system_prompt="tidy",
            model=ScriptedChatModel([Turn("Deleting.", [tool_call("delete_file", path="notes.txt")]), echo("delete_file")]),
            toolkit=Toolkit(tools=[FunctionTool(delete_file)]),
        )
    """
)


@pytest.mark.parametrize(
    "on_deadline, status, applied", [("deny", "finished", "denied"), ("interrupt", "interrupted", "reply interrupted")]
)
def test_deadline_in_a_kernel(kernel: KernelHarness, on_deadline: str, status: str, applied: str) -> None:
    name = f"late-{on_deadline}"
    kernel.execute(DEADLINE_AGENT).raise_for_error()
    kernel.execute(
        f"session_late = Session(deleter({name!r}), audit_log={name + '.jsonl'!r}, deadline=0.5, on_deadline={on_deadline!r})\n"
        "task_late = session_late.start('delete notes.txt')"
    ).raise_for_error()
    rec = reply_widget(kernel, name)
    pause = open_pause(kernel, rec.comm_id, "confirm")
    assert pause["deadline"] == pytest.approx(pause["created_at"] + 0.5)  # the widget counts down to it
    state = wait_status(kernel, rec.comm_id, status)
    decided = state["pauses"][0]
    assert decided["decision"] == {"action": "timeout", "applied": applied}
    late = kernel.request(rec.comm_id, "approve", tool_call_id=pause["tool_call_id"])
    assert late["ok"] is False and late["code"] == "expired" and "deadline" in late["error"]
    assert kernel_json(kernel, "DELETED") == []
    records = kernel_json(
        kernel, f"[(r['decision'], r['applied']) for r in AuditLog({name + '.jsonl'!r}).records('answered')]"
    )
    assert records == [["timeout", applied]]
    if on_deadline == "deny":
        kernel.wait_for(lambda: kernel.comm(rec.comm_id).final_text.startswith("[denied]"), 10, what="final_text")


def test_form_in_a_kernel(kernel: KernelHarness) -> None:
    kernel.execute(
        textwrap.dedent(
            """
            REFUND = {"type": "object", "properties": {
                "amount": {"type": "number", "title": "Amount", "minimum": 0, "maximum": 500},
                "date": {"type": "string", "format": "date", "title": "Date"},
                "reason": {"type": "string", "enum": ["damaged", "late"], "title": "Reason"},
                "note": {"type": "string", "title": "Note"}}, "required": ["amount", "date", "reason"]}
            def refund_answer(msgs):
                r = tool_results(msgs, "AskForm")[-1]
                v = r.metadata["value"]
                return Turn(f"Refund of {v['amount']} EUR for {v['reason']} on {v['date']} is filed.")
            refunds = Agent(
                name="refunds", system_prompt="x",
                model=ScriptedChatModel([Turn("", [tool_call("AskForm", title="Refund", message="Details please.", schema=REFUND)]), refund_answer]),
                toolkit=Toolkit(tools=[FormTool()]),
            )
            session_ref = Session(refunds)
            task_ref = session_ref.start("refund please")
            """
        )
    ).raise_for_error()
    rec = reply_widget(kernel, "refunds")
    pause = open_pause(kernel, rec.comm_id, "form")
    assert (pause["title"], pause["message"], pause["form_error"]) == ("Refund", "Details please.", None)
    assert set(pause["response_schema"]["properties"]) == {"amount", "date", "reason", "note"}
    bad = kernel.request(
        rec.comm_id,
        "submit",
        tool_call_id=pause["tool_call_id"],
        value={"amount": 900, "date": "2025-03-01", "reason": "late"},
    )
    assert bad["ok"] is False and bad["field"] == "value.amount" and "maximum of 500" in bad["error"]
    assert kernel.comm(rec.comm_id).state["pauses"][0]["status"] == "open"
    good = kernel.request(
        rec.comm_id,
        "submit",
        tool_call_id=pause["tool_call_id"],
        value={"amount": 45, "date": "2025-03-01", "reason": "late"},
    )
    assert good["ok"] is True
    wait_status(kernel, rec.comm_id, "finished")
    kernel.wait_for(
        lambda: kernel.comm(rec.comm_id).final_text == "Refund of 45 EUR for late on 2025-03-01 is filed.",
        10,
        what="final_text",
    )
