"""Edges of long transcript entries shown in part, in real JupyterLab + Chromium.

With real ``agentscope.agent.Agent``s on :class:`~nb_hitl.models.ScriptedChatModel`:

* a final message longer than the shown part: the page never shows a cut
  final message as if it were whole (no note, no "Show all");
* astral characters (emoji: surrogate pairs in JavaScript) straddling the cut:
  the page shows exactly the kernel's part, then the whole on "Show all";
* a saved notebook reopened on a new kernel: the part and its note show, and
  "Show all" answers with a clear error, not silence.
"""

from __future__ import annotations

import json
import textwrap

from tests.browser.test_streaming_page import kernel_json, run_cell
from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    restart_kernel,
    save_notebook,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"
REPLY = f'{OUT} [data-testid="nbh-reply"]'

LONG_FINAL_SETUP = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn

    FINAL = " ".join(f"word{i:05d}" for i in range(2500)) + " THE-END"   # 25,008 characters
    agent = Agent(name="talker", system_prompt="x", model=ScriptedChatModel([Turn(FINAL)]), toolkit=Toolkit())
    session = Session(agent)
    reply = await session.run("Talk.")
    print("DONE", len(reply.get_text_content()))
    """
)


def test_a_final_message_longer_than_the_shown_part_is_never_shown_cut_as_if_whole(page, lab: JupyterLabServer) -> None:
    write_notebook(
        lab.root / "long_final.ipynb",
        [LONG_FINAL_SETUP, 'print("FINAL_TRAIT", len(session.current.widget.final_text))'],
    )
    open_notebook(page, lab, "long_final.ipynb")
    run_cell(page, 0)
    output_locator(page, "DONE").first.wait_for(timeout=60_000)
    final_len = 2500 * 10 + len(" THE-END") - 1
    page.locator(f'{REPLY} [data-testid="nbh-more"]').first.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    boxes = page.locator(f'{REPLY} [data-testid="nbh-final-text"]')
    # the widget's final_text (the page writes what it holds into it) is still the whole text
    page.wait_for_timeout(1000)
    assert kernel_json(page, 1, "FINAL_TRAIT") == final_len
    # a final box, if any, holds the whole final message (it has no note and no "Show all")
    for text in boxes.all_text_contents():
        assert text.strip().endswith("THE-END") and len(text.strip()) == final_len, (
            f"the final message box shows {len(text)} of {final_len} characters, cut with no note"
        )


EMOJI_SETUP = textwrap.dedent(
    """
    import json
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.permission import PermissionBehavior, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    FIRST = "a" * 19_999 + "\\U0001F600" * 5 + "END-ONE"
    SECOND = "b" * 19_998 + "\\U0001F680" * 4 + "END-TWO"

    def first() -> ToolChunk:
        \"\"\"The first log.\"\"\"
        return ToolChunk(content=[TextBlock(text=FIRST)], state=ToolResultState.SUCCESS)

    def second() -> ToolChunk:
        \"\"\"The second log.\"\"\"
        return ToolChunk(content=[TextBlock(text=SECOND)], state=ToolResultState.SUCCESS)

    state = AgentState()
    for name in ("first", "second"):
        state.permission_context.allow_rules[name] = [
            PermissionRule(tool_name=name, rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")]
    agent = Agent(name="reader", system_prompt="x", state=state,
                  model=ScriptedChatModel([Turn("Reading.", [tool_call("first"), tool_call("second")]), Turn("Read.")]),
                  toolkit=Toolkit(tools=[FunctionTool(first), FunctionTool(second)]))
    session = Session(agent)
    await session.run("Read the logs.")
    print("DONE")
    """
)
KERNEL_RESULTS = (
    'print("RESULTS", json.dumps([e["text"] for e in session.current.transcript if e["kind"] == "tool_result"]))'
)


def test_astral_characters_at_the_cut_show_all_and_a_saved_notebook_without_its_kernel(
    page, lab: JupyterLabServer
) -> None:
    write_notebook(lab.root / "emoji.ipynb", [EMOJI_SETUP, KERNEL_RESULTS])
    open_notebook(page, lab, "emoji.ipynb")
    run_cell(page, 0)
    output_locator(page, "DONE").first.wait_for(timeout=60_000)
    kernel = kernel_json(page, 1, "RESULTS")
    assert len(kernel) == 2 and kernel[0].endswith("END-ONE")
    results = page.locator(f'{REPLY} [data-testid="nbh-tool-result"]')
    results.nth(1).locator('[data-testid="nbh-more"]').wait_for(timeout=30_000)
    for n, whole in enumerate(kernel):
        body = results.nth(n).locator(".nbh-pre").text_content() or ""
        assert body == whole[:20_000], (n, len(body), body[-5:])
        note = results.nth(n).locator('[data-testid="nbh-more"]').inner_text()
        assert note.startswith(f"… {len(whole) - 20_000:,} more characters not shown"), note
    results.nth(0).locator('[data-testid="nbh-show-all"]').click()
    page.wait_for_function(
        """() => document.querySelector('.jp-OutputArea-output [data-testid="nbh-tool-result"] .nbh-pre')
             ?.textContent.endsWith("END-ONE")""",
        timeout=30_000,
    )
    assert results.nth(0).locator(".nbh-pre").text_content() == kernel[0]
    wait_execution_done(page)
    save_notebook(page)

    # the saved notebook on a new kernel: the second result's part and note, and Show all says why not
    restart_kernel(page, lab)
    open_notebook(page, lab, "emoji.ipynb")
    page.locator(f'{REPLY}[data-live="false"]').first.wait_for(timeout=60_000)
    results = page.locator(f'{REPLY} [data-testid="nbh-tool-result"]')
    # Show all shows the rest in that view only: the saved record holds the part the kernel sent
    for n in (0, 1):
        assert (results.nth(n).locator(".nbh-pre").text_content() or "") == kernel[n][:20_000]
    more = results.nth(1).locator('[data-testid="nbh-more"]')
    more.wait_for(timeout=10_000)
    more.locator('[data-testid="nbh-show-all"]').click()
    error = more.locator('[data-testid="nbh-show-all-error"]')
    button = more.locator('[data-testid="nbh-show-all"]')
    for _ in range(40):  # 20 s: a reopened notebook's page knows it is not live
        if (error.text_content() or "").strip():
            break
        page.wait_for_timeout(500)
    banner = page.locator(f'{REPLY} [data-testid="nbh-live-banner"]').first
    assert (error.text_content() or "").strip(), (
        f"Show all said nothing in 20 s (button disabled: {button.is_disabled()}; banner: {banner.text_content()!r})"
    )
    assert "kernel" in error.inner_text().lower(), error.inner_text()
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


_ = json  # used by the kernel cells' text


STREAM_SETUP = textwrap.dedent(
    """
    import asyncio, json
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ThinkingBlock
    from agentscope.model import ChatResponse
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn

    class Slow(ScriptedChatModel):
        async def _stream(self, text, calls):
            for i in range(3000):   # a thinking block of 24,000 characters, "**" Markdown in it
                yield ChatResponse(id="r", is_last=False, content=[ThinkingBlock(id="th1", thinking=f"**t{i:05d}** ")])
            for i in range(6000):   # then 42,000 characters of text, slowly
                yield ChatResponse(id="r", is_last=False, content=[TextBlock(id=text.id, text=f"w{i:05d} ")])
                await asyncio.sleep(0.002)
            yield ChatResponse(id="r", is_last=False, content=[TextBlock(id=text.id, text="THE-END")])

    agent = Agent(name="streamer", system_prompt="x", model=Slow([Turn("x")]), toolkit=Toolkit())
    session = Session(agent)
    task = session.start("Talk.")
    """
)
KERNEL_ENTRIES = 'await task; print("ENTRIES", json.dumps({e["kind"]: e["text"] for e in session.current.transcript if e["kind"] in ("text", "thinking")}))'


def _visible_text(page, index: int) -> str:  # type: ignore[no-untyped-def]
    return page.evaluate(
        """(i) => { const r = document.querySelectorAll('.jp-OutputArea-output [data-testid="nbh-reply"]')[i];
                   const t = r.querySelector('[data-testid="nbh-text"]');
                   return t ? t.querySelector('.nbh-text').textContent : null; }""",
        index,
    )


def test_show_all_mid_stream_then_more_deltas_and_a_second_view(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "long_stream.ipynb", [STREAM_SETUP, KERNEL_ENTRIES, "display(session.current.widget)"])
    open_notebook(page, lab, "long_stream.ipynb")
    run_cell(page, 0)
    text = page.locator(f'{REPLY} [data-testid="nbh-text"]').first
    more = text.locator('[data-testid="nbh-more"]')
    more.wait_for(timeout=60_000)
    more.locator('[data-testid="nbh-show-all"]').click()
    kernel = kernel_json(page, 1, "ENTRIES", timeout_ms=90_000)
    whole = kernel["text"]
    assert whole.endswith("THE-END") and len(whole) > 40_000
    page.wait_for_timeout(1500)
    shown = _visible_text(page, 0) or ""
    notes = text.locator('[data-testid="nbh-more"]')
    # page text = kernel text, or its first 20,000 characters with the right count
    if notes.count():
        assert shown == whole[:20_000], (len(shown), shown[-20:])
        assert notes.inner_text().startswith(f"… {len(whole) - 20_000:,} more characters not shown")
    else:
        assert shown == whole, (len(shown), shown[-20:])
    # the thinking block: plain text part, no Markdown of a part, and its note
    thinking = page.locator(f'{REPLY} [data-testid="nbh-thinking"]').first
    assert thinking.locator("strong").count() == 0
    assert thinking.locator('[data-testid="nbh-more"]').count() == 1
    # a second view of the same widget
    run_cell(page, 2)
    page.locator(REPLY).nth(1).locator('[data-testid="nbh-text"]').wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    second = _visible_text(page, 1) or ""
    second_notes = page.locator(REPLY).nth(1).locator('[data-testid="nbh-text"] [data-testid="nbh-more"]')
    if second_notes.count():
        assert second == whole[:20_000]
    else:
        assert second == whole
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def _view_state(page, index: int) -> dict:  # type: ignore[no-untyped-def]
    return page.evaluate(
        """(i) => { const r = document.querySelectorAll('.jp-OutputArea-output [data-testid="nbh-reply"]')[i];
                   const t = r.querySelector('[data-testid="nbh-text"]');
                   const m = t.querySelector('[data-testid="nbh-more"]');
                   return {text: t.querySelector('.nbh-text').textContent, note: m ? m.textContent : null}; }""",
        index,
    )


def test_show_all_in_one_view_while_the_entry_grows_keeps_the_other_view_consistent(
    page, lab: JupyterLabServer
) -> None:
    write_notebook(
        lab.root / "two_views.ipynb",
        [STREAM_SETUP + "\ndisplay(session.current.widget)\n", KERNEL_ENTRIES],
    )
    open_notebook(page, lab, "two_views.ipynb")
    run_cell(page, 0)
    page.locator(REPLY).nth(1).wait_for(timeout=60_000)
    first_more = page.locator(REPLY).nth(0).locator('[data-testid="nbh-text"] [data-testid="nbh-more"]')
    first_more.wait_for(timeout=60_000)
    first_more.locator('[data-testid="nbh-show-all"]').click()
    kernel = kernel_json(page, 1, "ENTRIES", timeout_ms=90_000)
    whole = kernel["text"]
    page.wait_for_timeout(2000)
    for view in (0, 1):
        state = _view_state(page, view)
        if state["note"] is None:
            assert state["text"] == whole, (view, len(state["text"]), len(whole))
        else:
            assert state["text"] == whole[:20_000], (
                f"view {view} shows {len(state['text'])} characters of {len(whole)} and says: {state['note'][:60]!r}"
            )
            assert state["note"].startswith(f"… {len(whole) - 20_000:,} more characters"), (view, state["note"][:60])
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_show_all_on_a_long_final_message_and_the_saved_final_text(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "long_final2.ipynb", [LONG_FINAL_SETUP])
    open_notebook(page, lab, "long_final2.ipynb")
    run_cell(page, 0)
    output_locator(page, "DONE").first.wait_for(timeout=60_000)
    final_len = 2500 * 10 + len(" THE-END") - 1
    text = page.locator(f'{REPLY} [data-testid="nbh-text"]').first
    text.locator('[data-testid="nbh-show-all"]').click()
    page.wait_for_function(
        """() => document.querySelector('.jp-OutputArea-output [data-testid="nbh-text"] .nbh-text')
             ?.textContent.trim().endsWith("THE-END")""",
        timeout=30_000,
    )
    page.wait_for_timeout(1000)
    boxes = page.locator(f'{REPLY} [data-testid="nbh-final-text"]').all_text_contents()
    visible = [t for t in boxes if t.strip()]
    # the whole final message is on the page; a final box beside it holds the same text, never its first 20,000
    for box in visible:
        assert len(box.strip()) == final_len, f"after Show all the final box still shows {len(box.strip())} characters"
    # saved: the record keeps the part with its count, and no final_text cut as if it were whole
    save_notebook(page)
    models = lab.notebook_json("long_final2.ipynb")["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
    (record,) = [m["state"] for m in models["state"].values() if m["state"].get("agent_name") == "talker"]
    (entry,) = [e for e in record["transcript"] if e["kind"] == "text"]
    assert len(entry["text"]) + entry["more"] == final_len and record["final_entry"] == entry["id"]
    assert record.get("final_text", "") in ("", None), f"saved final_text of {len(record['final_text'])} characters"


LONG_CALL_SETUP = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.message import TextBlock, ToolResultState
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    def write_note(text: str) -> ToolChunk:
        \"\"\"Write a note.\"\"\"
        return ToolChunk(content=[TextBlock(text=f"wrote {len(text)}")], state=ToolResultState.SUCCESS)

    agent = Agent(name="writer", system_prompt="x",
                  model=ScriptedChatModel([Turn("Writing.", [tool_call("write_note", text="n" * 30_000)]), Turn("Done.")]),
                  toolkit=Toolkit(tools=[FunctionTool(write_note)]))
    session = Session(agent)
    task = session.start("Write it.")
    """
)


def test_a_tool_call_input_past_the_limit_under_its_confirm_card(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "long_call.ipynb", [LONG_CALL_SETUP])
    open_notebook(page, lab, "long_call.ipynb")
    run_cell(page, 0)
    card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    card.wait_for(timeout=60_000)
    call = page.locator(f'{REPLY} [data-testid="nbh-tool-call"]').first
    note = call.locator('[data-testid="nbh-more"]')
    body = call.locator(".nbh-pre").first
    page.wait_for_timeout(1000)
    # the card shows the call's input, and hides the raw JSON above it: a note about
    # characters "not shown" of a text that is not shown at all, with a Show all that shows nothing, is wrong
    if note.count() and note.is_visible():
        assert body.is_visible(), (
            f"the call's text is hidden under its card, but the note says {note.inner_text()!r} above the card"
        )
    card.locator('[data-testid="nbh-approve"]').click()
    page.locator(f'{REPLY} [data-testid="nbh-final-text"]').get_by_text("Done.").wait_for(timeout=60_000)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
