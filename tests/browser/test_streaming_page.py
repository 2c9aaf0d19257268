"""The transcript streams into the page; "Approve all" is one page message.

In real JupyterLab + Chromium, with real ``agentscope.agent.Agent``s on
:class:`~nb_hitl.models.ScriptedChatModel`:

* a long streamed reply arrives as ``nbh_transcript`` messages and the page
  shows every character; a second view connecting mid-reply resyncs and shows it all;
* a delta followed by a model stall is on the page during the stall;
* while the reply waits for a person the document title starts with "● ";
* "Approve all" on 12 confirmations sends ONE page message, and the agent is
  resumed once and its model called once after all of them;
* a finished reply's text reaches the page once (the stream), never again as
  the ``transcript`` trait or ``final_text``; the page writes what it holds
  into its own model, so the saved notebook has the whole record.
"""

from __future__ import annotations

import json
import struct
import textwrap
import time
from typing import Any

from tests.browser.test_review_page import kernel_json, run_cell
from tests.harness.lab import JupyterLabServer, open_notebook, output_locator, save_notebook, write_notebook

OUT = ".jp-OutputArea-output"
REPLY = f'{OUT} [data-testid="nbh-reply"]'

STREAM_SETUP = textwrap.dedent(
    """
    import asyncio
    from agentscope.agent import Agent
    from agentscope.message import TextBlock
    from agentscope.model import ChatResponse
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn

    class Stalling(ScriptedChatModel):
        async def _stream(self, text, calls):
            words = text.text.split(" ")
            for i, w in enumerate(words):
                yield ChatResponse(id="r", is_last=False, content=[TextBlock(id=text.id, text=w + " ")])
                await asyncio.sleep(0.002)
            yield ChatResponse(id="r", is_last=False, content=[TextBlock(id=text.id, text="LAST-DELTA")])
            # the model stalls after its last delta (longer than any wait below: the
            # test ends during the stall, and its kernel is shut down after it)
            await asyncio.sleep(120)

    WORDS = " ".join(f"w{i}" for i in range(800))
    agent = Agent(name="streamer", system_prompt="x", model=Stalling([Turn(WORDS)]), toolkit=Toolkit())
    session = Session(agent)
    task = session.start("Talk.")
    """
)


def test_a_long_reply_streams_shows_its_last_delta_during_a_stall_and_resyncs(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "stream.ipynb", [STREAM_SETUP, "display(session.current.widget)"])
    open_notebook(page, lab, "stream.ipynb")
    run_cell(page, 0)
    text = page.locator(f'{REPLY} [data-testid="nbh-text"]').first
    text.wait_for(timeout=60_000)
    # the last delta is shown while the model stalls (120 s): the reply is still running
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="nbh-text"]')].some(e => e.textContent.includes("LAST-DELTA"))""",
        timeout=60_000,
    )
    assert page.locator(f'{REPLY} [data-testid="nbh-status"]').get_attribute("data-status") == "running"
    shown = text.inner_text()
    assert shown.startswith("w0 w1 ") and "w799 LAST-DELTA" in shown
    # a second view of the same widget connects mid-reply: it resyncs and shows the same text
    run_cell(page, 1)
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="nbh-reply"]')].filter(
            r => [...r.querySelectorAll('[data-testid="nbh-text"]')].some(e => e.textContent.includes("w799 LAST-DELTA"))
        ).length === 2""",
        timeout=30_000,
    )
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def ws_message(payload: bytes | str) -> dict[str, Any] | None:
    """A kernel websocket frame as ``{"header", "parent_header", "content"}``: JupyterLab's
    binary ``v1.kernel.websocket.jupyter.org`` framing (a count, then offsets of the
    channel, header, parent header, metadata and content parts) or plain JSON."""
    if isinstance(payload, str):  # other sockets (events) speak JSON too
        msg = json.loads(payload)
        return msg if isinstance(msg, dict) and "header" in msg else None
    (n,) = struct.unpack_from("<Q", payload, 0)
    offsets = list(struct.unpack_from(f"<{n}Q", payload, 8)) + [len(payload)]
    parts = [payload[offsets[i] : offsets[i + 1]] for i in range(n)]
    if len(parts) < 5:
        return None
    header, parent, _metadata, content = (json.loads(p) for p in parts[1:5])
    return {"header": header, "parent_header": parent, "content": content}


ONCE_TEXT = " ".join(f"word{i}" for i in range(400)) + " THE-END"
ONCE_SETUP = textwrap.dedent(
    f"""
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn

    agent = Agent(name="once", system_prompt="x", model=ScriptedChatModel([Turn({ONCE_TEXT!r})], chunk_delay=0.001),
                  toolkit=Toolkit())
    session = Session(agent)
    reply = await session.run("Talk.")
    print("DONE", len(reply.get_text_content()))
    """
)


def test_a_finished_reply_sends_its_text_once_and_saves_the_whole_record(page, lab: JupyterLabServer) -> None:
    comm_msgs: list[dict[str, Any]] = []

    def on_ws(ws: Any) -> None:
        def received(payload: Any) -> None:
            msg = ws_message(payload)
            if msg and (msg.get("header") or {}).get("msg_type") == "comm_msg":
                comm_msgs.append(msg["content"].get("data") or {})

        ws.on("framereceived", received)

    page.on("websocket", on_ws)
    write_notebook(lab.root / "once.ipynb", [ONCE_SETUP])
    open_notebook(page, lab, "once.ipynb")
    run_cell(page, 0)
    output_locator(page, "DONE").first.wait_for(timeout=60_000)
    final = page.locator(f'{REPLY} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=30_000)
    assert final.inner_text().strip() == ONCE_TEXT  # drawn from the entry the kernel named
    page.wait_for_timeout(500)  # the page's own write of its record is coalesced (250 ms)

    streamed = "".join(
        (op.get("text") or op.get("entry", {}).get("text") or "")
        for d in comm_msgs
        if (d.get("content") or {}).get("type") == "nbh_transcript"
        for op in d["content"]["ops"]
        if op["op"] in ("append", "add") and "hint" not in str(op.get("entry", {}).get("kind", ""))
    )
    assert streamed == ONCE_TEXT, "the text reached the page once, whole, in stream messages"
    states = [d.get("state") or {} for d in comm_msgs if d.get("method") == "update"]
    assert not any("transcript" in st for st in states), "the transcript trait is never sent whole"
    assert not any(ONCE_TEXT in str(st) for st in states), "nor the final text"
    assert any(st.get("final_entry") for st in states), "the final text is named by its entry"
    whole = sum(ONCE_TEXT in json.dumps(d) for d in comm_msgs)
    assert whole == 0, "no message carries the whole text again (a sync answer, a record)"

    # the page writes its record coalesced (250 ms), later on a loaded machine:
    # save until the saved record holds the finished reply (or the deadline)
    deadline = time.monotonic() + 20
    while True:
        save_notebook(page)
        models = lab.notebook_json("once.ipynb")["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
        saved = [m["state"] for m in models["state"].values() if m["state"].get("agent_name") == "once"]
        assert len(saved) == 1
        record = saved[0]
        if record.get("status") == "finished" or time.monotonic() > deadline:
            break
        page.wait_for_timeout(500)
    texts = [e["text"] for e in record["transcript"] if e["kind"] == "text"]
    assert texts == [ONCE_TEXT] and record["final_text"] == ONCE_TEXT and record["transcript_seq"] >= 1
    assert record["status"] == "finished"
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


GROUP_SETUP = textwrap.dedent(
    """
    import json
    from typing import Any
    from agentscope.agent import Agent
    from agentscope.message import TextBlock
    from agentscope.middleware import MiddlewareBase
    from agentscope.permission import PermissionBehavior, PermissionDecision
    from agentscope.tool import ToolBase, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    class Stamp(ToolBase):
        name = "stamp"
        description = "Stamp one form."
        input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        is_concurrency_safe = True
        is_read_only = False

        async def check_permissions(self, tool_input, context):
            return PermissionDecision(behavior=PermissionBehavior.ASK, message="Stamp?", bypass_immune=True)

        async def __call__(self, n: int) -> ToolChunk:
            return ToolChunk(content=[TextBlock(text=f"stamped {n}")])

    class Inputs(MiddlewareBase):
        def __init__(self):
            self.kinds = []
        async def on_reply(self, agent, input_kwargs, next_handler):
            inp = input_kwargs.get("inputs")
            self.kinds.append([type(inp).__name__, len(getattr(inp, "confirm_results", []) or [])])
            async for item in next_handler():
                yield item

    N = 12
    inputs = Inputs()
    agent = Agent(
        name="stamper", system_prompt="x",
        model=ScriptedChatModel([Turn("Stamping.", [tool_call("stamp", id=f"s{i}", n=i) for i in range(N)]),
                                 Turn("All stamped.")], on_exhausted="raise"),
        toolkit=Toolkit(tools=[Stamp()]), middlewares=[inputs],
    )
    session = Session(agent)
    task = session.start("Stamp.")
    sent = []
    _handler = session.current.widget._handler
    session.current.widget.set_handler(lambda m: (sent.append(m.get("action")), _handler(m))[1])
    """
)
GROUP_STATE = textwrap.dedent(
    """
    print("GROUPSTATE", json.dumps({
        "sent": [a for a in sent if a not in ("sync", "transcript_sync", "cards_sync")],
        "inputs": inputs.kinds,
        "model_calls": agent.model.call_count,
        "status": session.current.status,
    }))
    """
)


def test_approve_all_is_one_page_message_and_one_resume(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "group.ipynb", [GROUP_SETUP, GROUP_STATE])
    open_notebook(page, lab, "group.ipynb")
    run_cell(page, 0)
    reply = page.locator(REPLY)
    reply.locator('[data-testid="nbh-card"][data-status="open"]').nth(11).wait_for(timeout=60_000)
    # the title mark follows the reply's status ("paused"), which may come in a later update than the cards
    page.wait_for_function("() => document.title.startsWith('● ')", timeout=30_000)
    approve_all = reply.locator('[data-testid="nbh-group"] button', has_text="Approve all")
    approve_all.click()
    reply.locator('[data-testid="nbh-final-text"]').wait_for(timeout=60_000)
    page.wait_for_function("() => !document.title.startsWith('● ')", timeout=10_000)
    statuses = reply.locator('[data-testid="nbh-card"]').evaluate_all("els => els.map(e => e.dataset.status)")
    state = kernel_json(page, 1, "GROUPSTATE")
    assert state == {
        "sent": ["batch"],
        "inputs": [["Msg", 0], ["UserConfirmResultEvent", 12]],
        "model_calls": 2,
        "status": "finished",
    }, state
    assert statuses == ["delivered"] * 12, statuses
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


LONG_RESULT_SETUP = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.permission import PermissionBehavior, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    LOG = "".join(f"line {i:06d}\\n" for i in range(8000)) + "END-OF-LOG"

    def dump() -> ToolChunk:
        \"\"\"Return the whole log.\"\"\"
        return ToolChunk(content=[TextBlock(text=LOG)], state=ToolResultState.SUCCESS)

    state = AgentState()
    state.permission_context.allow_rules["dump"] = [
        PermissionRule(tool_name="dump", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")]
    agent = Agent(name="reader", system_prompt="x", state=state,
                  model=ScriptedChatModel([Turn("Reading.", [tool_call("dump")]), Turn("Read it all.")]),
                  toolkit=Toolkit(tools=[FunctionTool(dump)]))
    session = Session(agent)
    await session.run("Read the log.")
    print("DONE", len(LOG))
    """
)


def test_a_long_tool_result_shows_a_part_and_the_rest_on_request(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "long_result.ipynb", [LONG_RESULT_SETUP])
    open_notebook(page, lab, "long_result.ipynb")
    run_cell(page, 0)
    output_locator(page, "DONE").first.wait_for(timeout=60_000)
    log_chars = 8000 * 12 + len("END-OF-LOG")
    result = page.locator(f'{REPLY} [data-testid="nbh-tool-result"]')
    body = result.locator(".nbh-pre")
    more = result.locator('[data-testid="nbh-more"]')
    more.wait_for(timeout=30_000)
    # the kernel sent 20,000 characters of it, and says how many it kept back
    assert more.inner_text().startswith(f"… {log_chars - 20_000:,} more characters not shown")
    shown = body.text_content() or ""
    assert len(shown) == 20_000 and shown.startswith("line 000000\n") and "END-OF-LOG" not in shown
    result.locator('[data-testid="nbh-show-all"]').click()
    page.wait_for_function(
        """() => document.querySelector('.jp-OutputArea-output [data-testid="nbh-tool-result"] .nbh-pre')
             ?.textContent.endsWith("END-OF-LOG")""",
        timeout=30_000,
    )
    assert len(body.text_content() or "") == log_chars
    assert more.count() == 0
    assert page.locator(f'{REPLY} [data-testid="nbh-final-text"]').inner_text() == "Read it all."
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
