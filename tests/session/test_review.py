"""Review a tool's result before the model sees it (nb_hitl.kinds.review_tool), in-process.

Real AgentScope ``Agent`` s on :class:`~nb_hitl.models.ScriptedChatModel`,
driven by a :class:`~nb_hitl.Session` (``display=False``); decisions go
through ``Session.act`` (the same path as a click). Checked: what the model
was sent (``model.calls``), every event ``reply_stream`` produced, the
session's transcript, the agent's history, the stored state and checkpoint
files, and how many times the tool really ran.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import Msg, ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionMode, PermissionRule
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, Toolkit

from nb_hitl import DecisionError, Session
from nb_hitl.decisions import decide
from nb_hitl.kinds.review import REVIEW_METADATA_KEY
from nb_hitl.kinds.review_tool import REVIEW_CONTEXT_KEY, ReviewedTool, reviewed
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import parked_on, record_events, run_async, wait_until
from tests.support_agents import scripted_agent

RAW = "Ana Lima, card 4111-1111-1111-1111, ana@example.com"
SECRET = "4111-1111-1111-1111"
REDACTED = "Ana Lima, card [REDACTED], [REDACTED]"


class Counter:
    """A customer lookup that counts its runs (the tool the person reviews)."""

    def __init__(self, text: str = RAW, fail: bool = False) -> None:
        self.runs: list[str] = []
        self.text = text
        self.fail = fail

    def tool(self) -> FunctionTool:
        def lookup_customer(customer: str) -> str:
            """Look up a customer record.

            Args:
                customer (str): the customer's name.
            """
            self.runs.append(customer)
            if self.fail:
                raise RuntimeError(f"database down while reading {SECRET}")
            return self.text

        return FunctionTool(lookup_customer)


def allow_lookup() -> AgentState:
    state = AgentState()
    state.permission_context.allow_rules["lookup_customer"] = [
        PermissionRule(tool_name="lookup_customer", rule_content=None, behavior=PermissionBehavior.ALLOW, source="test")
    ]
    return state


def make_agent(counter: Counter, script: list[Any], state: AgentState | None = None) -> Agent:
    return scripted_agent(
        script,
        [reviewed(counter.tool())],
        name="crm",
        system_prompt="Answer questions about customers.",
        state=state if state is not None else allow_lookup(),
    )


def echo_result(msgs: list[Msg]) -> Turn:
    r = tool_results(msgs, "lookup_customer")[-1]
    return Turn(f"[{r.state}] {result_text(r)}")


SCRIPT = [Turn("Let me look.", [tool_call("lookup_customer", customer="Ana")]), echo_result]


def dumped(items: list[Any]) -> str:
    return "\n".join(i.model_dump_json() if hasattr(i, "model_dump_json") else json.dumps(i) for i in items)


def model_input(agent: Agent) -> str:
    return "\n".join(m.model_dump_json() for call in agent.model.calls for m in call)


# ---------------------------------------------------------------------------
def test_the_wrapper_looks_like_the_tool_to_the_model_and_the_engine() -> None:
    counter = Counter()
    inner = counter.tool()
    wrapped = reviewed(inner)
    assert isinstance(wrapped, ReviewedTool) and wrapped.inner is inner
    assert (wrapped.name, wrapped.description, wrapped.input_schema) == (
        inner.name,
        inner.description,
        inner.input_schema,
    )
    assert wrapped.is_external_tool is True and inner.is_external_tool is False
    assert (wrapped.is_read_only, wrapped.is_concurrency_safe) == (inner.is_read_only, inner.is_concurrency_safe)
    with pytest.raises(TypeError):
        reviewed(wrapped)  # already external: nothing for nb_hitl to run

    # a plain function is wrapped in AgentScope's FunctionTool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert reviewed(ping).inner.name == "ping"

    async def offered() -> tuple[Any, Any]:
        a = await Toolkit(tools=[wrapped]).get_tool_schemas()
        b = await Toolkit(tools=[counter.tool()]).get_tool_schemas()
        return a, b

    a, b = run_async(offered())
    assert a == b  # the model is offered exactly the same tool


@pytest.mark.parametrize(
    "mode, rule, expect",
    [
        ("default", None, "confirm"),  # the engine asks as for the plain tool
        ("default", "allow", "review"),
        ("default", "deny", "denied"),
        ("explore", None, "denied"),  # not read-only: explore denies, the tool never runs
        ("bypass", None, "review"),
    ],
)
def test_permission_behaviour_is_the_wrapped_tools(mode: str, rule: str | None, expect: str) -> None:
    counter = Counter()
    state = AgentState(permission_context=PermissionContext(mode=PermissionMode(mode)))
    if rule:
        target = state.permission_context.allow_rules if rule == "allow" else state.permission_context.deny_rules
        target["lookup_customer"] = [
            PermissionRule(
                tool_name="lookup_customer", rule_content=None, behavior=PermissionBehavior(rule), source="t"
            )
        ]
    agent = make_agent(counter, SCRIPT, state)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Who is Ana?")
        await wait_until(lambda: task.done() or (session.current and session.current.status == "paused"), "park or end")
        if expect == "denied":
            final = await asyncio.wait_for(task, 10)
            assert final.get_text_content().startswith("[denied]")
            assert counter.runs == []
            return
        pause = session.pending[0]
        assert pause.kind == expect
        if expect == "confirm":
            assert counter.runs == []  # nothing ran before the confirmation
            await session.act({"action": "approve", "tool_call_id": pause.tool_call_id})
            review = await parked_on(session, "review")
            assert review.tool_call_id == pause.tool_call_id  # the same call, now reviewed
            pause = review
        assert counter.runs == ["Ana"] and pause.review_output == RAW
        await session.act({"action": "accept", "tool_call_id": pause.tool_call_id})
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == f"[success] {RAW}"

    run_async(scenario())


def test_edit_redacts_the_result_before_the_model_or_the_stream_sees_it(tmp_path: Path) -> None:
    counter = Counter()
    agent = make_agent(counter, SCRIPT)
    events = record_events(agent)
    audit = tmp_path / "audit.jsonl"
    checkpoints = tmp_path / "ckpt"

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit), checkpoints=str(checkpoints), session_id="s1")
        task = session.start("Who is Ana?")
        pause = await parked_on(session, "review")
        # the tool ran exactly once, its text is in the pause, and nowhere else yet
        assert counter.runs == ["Ana"]
        assert pause.review_output == RAW and pause.review_state == "success"
        view = pause.to_view()
        assert view["kind"] == "review" and view["review_output"] == RAW and "review_result" not in view
        assert SECRET not in dumped(events)
        assert SECRET not in json.dumps(session.current.transcript)
        assert SECRET not in model_input(agent)
        assert len(agent.model.calls) == 1
        # the raw result is in the state and in the checkpoint right away (for a restart)
        stored = agent.state.middle_context[REVIEW_CONTEXT_KEY][pause.tool_call_id]
        assert stored["status"] == "done" and SECRET in json.dumps(stored["result"])
        assert SECRET in (checkpoints / "s1.json").read_text()

        out = await session.act({"action": "edit", "tool_call_id": pause.tool_call_id, "output": REDACTED})
        assert out["decision"] == {"action": "edit", "state": "success", "output": REDACTED}
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == f"[success] {REDACTED}"
        # after the decision the view no longer carries the raw text (saved notebooks)
        assert session.current.pauses[pause.tool_call_id].to_view()["review_output"] is None

    run_async(scenario())
    assert counter.runs == ["Ana"]
    # the model saw only the reviewed text
    seen = tool_results(agent.model.calls[-1], "lookup_customer")
    assert [(r.state, result_text(r)) for r in seen] == [(ToolResultState.SUCCESS, REDACTED)]
    assert SECRET not in model_input(agent)
    # no event ever carried the raw text; the reviewed text streamed once
    assert SECRET not in dumped(events)
    deltas = [e for e in events if type(e).__name__ == "ToolResultTextDeltaEvent"]
    assert [e.delta for e in deltas] == [REDACTED]
    ends = [e for e in events if type(e).__name__ == "ToolResultEndEvent"]
    assert [e.metadata for e in ends] == [{REVIEW_METADATA_KEY: "edited"}]
    # one call, one result in the history; the stored raw result is gone, also from the checkpoint
    calls = [
        b
        for m in agent.state.context
        if not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolCallBlock)
    ]
    results = [
        b
        for m in agent.state.context
        if not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [c.id for c in calls] == [r.id for r in results]
    assert agent.state.middle_context[REVIEW_CONTEXT_KEY] == {}
    assert SECRET not in (checkpoints / "s1.json").read_text()
    records = AuditLog(audit).records("answered")
    assert [(r["tool_name"], r["kind"], r["decision"], r["output"]) for r in records] == [
        ("lookup_customer", "review", "edit", REDACTED)
    ]


def test_accept_sends_the_tools_own_result() -> None:
    counter = Counter()
    agent = make_agent(counter, SCRIPT)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Who is Ana?")
        pause = await parked_on(session, "review")
        await session.act({"action": "accept", "tool_call_id": pause.tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert final.get_text_content() == f"[success] {RAW}"
    seen = tool_results(agent.model.calls[-1], "lookup_customer")[-1]
    assert seen.state == ToolResultState.SUCCESS and result_text(seen) == RAW
    assert seen.metadata == {REVIEW_METADATA_KEY: "accepted"}
    assert counter.runs == ["Ana"]


def test_reject_gives_the_model_a_short_denied_refusal() -> None:
    counter = Counter()
    agent = make_agent(counter, SCRIPT)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Who is Ana?")
        pause = await parked_on(session, "review")
        await session.act({"action": "reject", "tool_call_id": pause.tool_call_id, "reason": "contains card data"})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    seen = tool_results(agent.model.calls[-1], "lookup_customer")[-1]
    assert seen.state == ToolResultState.DENIED
    text = result_text(seen)
    assert 'The tool "lookup_customer" ran, but the user reviewed its result and withheld it' in text
    assert "contains card data" in text
    assert final.get_text_content().startswith("[denied] <system-reminder>")
    assert SECRET not in model_input(agent)
    assert counter.runs == ["Ana"]


def test_a_failing_tool_is_reviewed_too() -> None:
    counter = Counter(fail=True)
    agent = make_agent(counter, SCRIPT)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Who is Ana?")
        pause = await parked_on(session, "review")
        assert pause.review_state == "error" and SECRET in pause.review_output
        assert "ended with state 'error'" in pause.message
        await session.act({"action": "edit", "tool_call_id": pause.tool_call_id, "output": "database down"})
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert final.get_text_content() == "[error] database down"  # the tool's state is kept
    assert SECRET not in model_input(agent)


def test_restart_from_the_checkpoint_restores_the_review_without_running_the_tool_again(tmp_path: Path) -> None:
    counter = Counter()
    store = tmp_path / "ckpt"
    first = make_agent(counter, SCRIPT[:1])

    async def before_restart() -> str:
        session = Session(first, display=False, checkpoints=str(store), session_id="crm")
        session.start("Who is Ana?")
        pause = await parked_on(session, "review")
        return pause.tool_call_id

    call_id = run_async(before_restart())  # the loop (and its task) is gone: a "dead kernel"
    assert counter.runs == ["Ana"]

    def factory(state: AgentState) -> Agent:
        return make_agent(counter, [echo_result], state)

    async def after_restart() -> Any:
        session = Session.restore(factory, str(store), display=False)
        task = session.start_resume()
        pause = await parked_on(session, "review")
        assert pause.tool_call_id == call_id and pause.review_output == RAW and pause.review_error is None
        await session.act({"action": "edit", "tool_call_id": call_id, "output": REDACTED})
        final = await asyncio.wait_for(task, 10)
        return session.agent, final

    agent, final = run_async(after_restart())
    assert counter.runs == ["Ana"]  # exactly once, across the restart
    assert final.get_text_content() == f"[success] {REDACTED}"
    assert SECRET not in model_input(agent)
    assert agent.state.middle_context[REVIEW_CONTEXT_KEY] == {}


def test_a_crash_while_the_tool_runs_is_at_most_once(tmp_path: Path) -> None:
    """The kernel dies while the reviewed tool runs: the checkpoint says
    "running" and has no result; the restored pause does not run it again."""
    started = tmp_path / "started"
    store = tmp_path / "ckpt"
    crash_copy = tmp_path / "ckpt-at-crash"
    runs: list[str] = []

    async def slow_lookup(customer: str) -> str:
        """Look up a customer record.

        Args:
            customer (str): the customer's name.
        """
        runs.append(customer)
        started.write_text("yes")
        await asyncio.sleep(3600)
        return RAW

    def agent_with(script: list[Any], state: AgentState | None = None) -> Agent:
        st = state or allow_lookup()
        return Agent(
            name="crm",
            system_prompt="x",
            model=ScriptedChatModel(script, on_exhausted="raise"),
            toolkit=Toolkit(tools=[reviewed(FunctionTool(slow_lookup, name="lookup_customer"))]),
            state=st,
        )

    async def crash() -> None:
        session = Session(agent_with(SCRIPT[:1]), display=False, checkpoints=str(store), session_id="crm")
        task = session.start("Who is Ana?")
        await wait_until(started.exists, "the tool to start")
        shutil.copytree(store, crash_copy)  # what a killed process leaves on disk
        task.cancel()

    run_async(crash())
    assert runs == ["Ana"]
    record = json.loads((crash_copy / "crm.json").read_text())
    entry = next(iter(record["state"]["middle_context"][REVIEW_CONTEXT_KEY].values()))
    assert entry["status"] == "running" and entry["result"] is None

    async def restored() -> Any:
        session = Session.restore(lambda st: agent_with([echo_result], st), str(crash_copy), display=False)
        task = session.start_resume()
        pause = await parked_on(session, "review")
        assert pause.review_output is None and "may or may not have taken effect" in pause.review_error
        with pytest.raises(DecisionError, match="no result to review"):
            session.act({"action": "accept", "tool_call_id": pause.tool_call_id})
        await session.act({"action": "reject", "tool_call_id": pause.tool_call_id})
        return await asyncio.wait_for(task, 10)

    final = run_async(restored())
    assert runs == ["Ana"]  # never run again
    assert final.get_text_content().startswith("[denied]")


def test_interrupting_an_open_review_never_shows_the_result() -> None:
    counter = Counter()
    agent = make_agent(counter, SCRIPT)

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("Who is Ana?")
        await parked_on(session, "review")
        await session.interrupt("changed my mind")
        assert task.done() and session.current.status == "interrupted"

    run_async(scenario())
    assert len(agent.model.calls) == 1 and SECRET not in model_input(agent)
    assert agent.state.middle_context[REVIEW_CONTEXT_KEY] == {}
    interrupted = tool_results(agent.state.context, "lookup_customer")
    assert [r.state for r in interrupted] == [ToolResultState.INTERRUPTED]


@pytest.mark.parametrize(
    "kind, action, extra",
    [
        ("review", "approve", {}),
        ("review", "external_result", {"output": "x"}),
        ("review", "submit", {"value": {}}),
        ("review", "answer", {"answers": []}),
        ("confirm", "accept", {}),
        ("confirm", "edit", {"output": "x"}),
        ("external", "reject", {}),
        ("ask_user", "accept", {}),
    ],
)
def test_C06_review_actions_fit_only_review_pauses(kind: str, action: str, extra: dict[str, Any]) -> None:
    from nb_hitl.pauses import Pause

    call = ToolCallBlock(id="c1", name="lookup_customer", input='{"customer": "Ana"}')
    pause = Pause(
        reply_id="r1",
        tool_call=call,
        kind=kind,
        review_output=RAW,
        review_state="success",
        review_result=ToolResultBlock(id="c1", name="lookup_customer", output=RAW, state="success").model_dump(
            mode="json"
        ),
    )
    with pytest.raises(DecisionError) as err:
        decide(pause, {"action": action, "tool_call_id": "c1", **extra})
    assert err.value.field == "action"


def test_review_decisions_are_agentscope_results() -> None:
    from nb_hitl.pauses import Pause

    raw = ToolResultBlock(id="c1", name="lookup_customer", output=RAW, state="success", metadata={"rows": 1})
    call = ToolCallBlock(id="c1", name="lookup_customer", input='{"customer": "Ana"}')
    pause = Pause(
        reply_id="r1",
        tool_call=call,
        kind="review",
        review_output=RAW,
        review_state="success",
        review_result=raw.model_dump(mode="json"),
    )
    acc = decide(pause, {"action": "accept", "tool_call_id": "c1"}).tool_result
    assert (acc.output, acc.state, acc.metadata) == (RAW, "success", {"rows": 1, REVIEW_METADATA_KEY: "accepted"})
    ed = decide(pause, {"action": "edit", "tool_call_id": "c1", "output": REDACTED}).tool_result
    assert (ed.output, ed.state, ed.metadata) == (REDACTED, "success", {REVIEW_METADATA_KEY: "edited"})
    rej = decide(pause, {"action": "reject", "tool_call_id": "c1"}).tool_result
    assert rej.state == ToolResultState.DENIED and "withheld" in rej.output
    err = decide(pause, {"action": "return_error", "tool_call_id": "c1", "message": "no answer"}).tool_result
    assert (err.output, err.state) == ("no answer", ToolResultState.ERROR)
    with pytest.raises(DecisionError) as bad:
        decide(pause, {"action": "edit", "tool_call_id": "c1", "output": 5})
    assert bad.value.field == "output"


def test_an_edit_that_changes_nothing_is_refused_and_leaves_no_trace(tmp_path: Path) -> None:
    """ "Edit & send" on the text as shown would say "Result edited" and audit an edit while the model
    reads the raw result: refused where the person clicked (as a Modify that changes nothing)."""
    counter = Counter()
    agent = make_agent(counter, SCRIPT)
    audit = tmp_path / "audit.jsonl"

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("Who is Ana?")
        pause = await parked_on(session, "review")
        for same in (RAW, RAW.replace("\n", "\r\n")):
            with pytest.raises(DecisionError, match="Your edit changes nothing: press Accept") as refused:
                await session.act({"action": "edit", "tool_call_id": pause.tool_call_id, "output": same})
            assert refused.value.field == "output"
        assert pause.status == "open" and AuditLog(audit).records("answered") == []
        out = await session.act({"action": "accept", "tool_call_id": pause.tool_call_id})
        assert out["decision"]["action"] == "accept"
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == f"[success] {RAW}"

    run_async(scenario())
    assert [r["decision"] for r in AuditLog(audit).records("answered")] == ["accept"]
    ends = [b.metadata for b in tool_results(agent.model.calls[-1], "lookup_customer")]
    assert ends == [{REVIEW_METADATA_KEY: "accepted"}]
