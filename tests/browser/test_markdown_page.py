"""The model's Markdown in the page (C13, Markdown edition): real JupyterLab, real kernel, Debian Chromium.

* A finished reply shows its text rendered: a list, a code block and a link
  (``rel="noopener noreferrer nofollow"``, ``target="_blank"``), in the
  transcript and in the final message.
* Attack strings written as Markdown (``<script>``, ``<img onerror>``,
  ``[x](javascript:...)``, a raw HTML block, a ``javascript:`` autolink,
  ``<svg><script>``) execute nothing (``window.__pwned`` stays undefined)
  and show as text.
* A final message that is no text block's text (a response of two text
  blocks, which AgentScope streams as one) is shown once, rendered, in its
  own box: never as Markdown source.
* The page's own second line of defence: HTML in a transcript entry that did
  not come through the kernel's sanitiser (the widget's ``transcript`` trait
  set by hand) is walked again in the page: no ``<img>``, ``<script>``,
  ``<svg>``, event attribute, ``style`` or ``javascript:`` link reaches the DOM.
"""

from __future__ import annotations

import textwrap

from playwright.sync_api import expect

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    screenshot,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"
REPLY = f'{OUT} [data-testid="nbh-reply"]'

ATTACKS = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "[click me](javascript:window.__pwned=1)",
    "<javascript:window.__pwned=1>",
    "<svg><script>window.__pwned=1</script></svg>",
]
RAW_BLOCK = '<div onclick="window.__pwned=1">raw block</div>'
FIRST = "Let me look:\n\n1. **list** the files\n2. read `notes.txt`\n\n" + "\n\n".join(ATTACKS)
FINAL = (
    "Done. The files:\n\n- `draft.md`\n- `notes.txt`\n\n"
    "```python\nprint('<b>not bold</b>')\n```\n\n"
    "Read [the docs](https://example.org/docs).\n\n" + RAW_BLOCK
)

CELL = textwrap.dedent(
    f"""
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call
    box = make_sandbox()
    agent = Agent(
        name="writer", system_prompt="x",
        model=ScriptedChatModel([Turn({FIRST!r}, [tool_call("list_files")]), Turn({FINAL!r})], on_exhausted="raise"),
        toolkit=Toolkit(tools=sandbox_tools(box)),
    )
    session = Session(agent)
    reply = await session.run("Show the files.")
    print("FINISHED:", session.runs[-1].status)
    """
)

FORGED = (
    '<p style="position:fixed" onmouseover="window.__pwned=1">forged para</p>'
    '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
    '<svg onload="window.__pwned=1"><script>window.__pwned=1</script></svg>'
    '<a href="javascript:window.__pwned=1" onclick="window.__pwned=1">forged link</a>'
    '<iframe src="javascript:window.__pwned=1"></iframe><b>kept text</b>'
)
FORGE_CELL = textwrap.dedent(
    f"""
    w = session.runs[-1].widget
    w.transcript = [*w.transcript, {{"kind": "text", "id": "forged", "text": "forged", "html": {FORGED!r}}}]
    print("TRAIT SET BY HAND")
    """
)

DOM_JS = """
() => {
  const root = document.querySelector('.jp-OutputArea-output [data-testid="nbh-reply"]');
  // visible ones: the last text block is hidden, shown once as the final message
  const links = [...root.querySelectorAll("a")].filter(a => a.checkVisibility()).map(a => ({
    text: a.textContent, href: a.getAttribute("href"), rel: a.getAttribute("rel"), target: a.getAttribute("target"),
  }));
  const attrs = [...root.querySelectorAll(".nbh-md *")].flatMap(el => [...el.attributes].map(a => a.name));
  return {
    pwned: typeof window.__pwned,
    bad: root.querySelectorAll("img, script, svg, iframe, div.nbh-md div").length,
    links,
    attrs: [...new Set(attrs)].sort(),
  };
}
"""


def test_a_finished_reply_shows_rendered_markdown_and_runs_no_attack(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "markdown.ipynb", [CELL, FORGE_CELL])
    open_notebook(page, lab, "markdown.ipynb")
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    output_locator(page, "FINISHED: finished").wait_for(timeout=90_000)

    reply = page.locator(REPLY)
    # the first text block, in the transcript: a rendered ordered list, attacks as text
    first = reply.locator('[data-testid="nbh-text"] .nbh-md').first
    first.wait_for(timeout=30_000)
    assert first.locator("ol > li").all_inner_texts() == ["list the files", "read notes.txt"]
    assert first.locator("ol strong").inner_text() == "list"
    shown = first.inner_text()
    for attack in ATTACKS:
        assert attack in shown, f"{attack!r} not shown as text in {shown!r}"

    # the final message: the last text block's Markdown, shown once
    final = reply.locator('[data-testid="nbh-final-text"]')
    final.wait_for(timeout=30_000)
    assert final.locator("ul > li code").all_inner_texts() == ["draft.md", "notes.txt"]
    assert final.locator("pre code").inner_text().strip() == "print('<b>not bold</b>')"
    assert RAW_BLOCK in final.inner_text()
    assert final.locator("a").inner_text() == "the docs"
    dom = page.evaluate(DOM_JS)
    assert dom["pwned"] == "undefined" and dom["bad"] == 0, dom
    assert dom["links"] == [
        {
            "text": "the docs",
            "href": "https://example.org/docs",
            "rel": "noopener noreferrer nofollow",
            "target": "_blank",
        }
    ]
    assert set(dom["attrs"]) <= {"href", "rel", "target", "title", "start", "align"}, dom["attrs"]
    final.scroll_into_view_if_needed()
    screenshot(page, "markdown-rendered")

    # the page's own walk: HTML that skipped the kernel's sanitiser is cleaned again
    page.evaluate(
        "() => { const w = window.jupyterapp.shell.currentWidget; w.content.activeCellIndex = 1;"
        " window.jupyterapp.commands.execute('notebook:run-cell'); }"
    )
    output_locator(page, "TRAIT SET BY HAND").wait_for(timeout=30_000)
    forged = reply.locator('[data-testid="nbh-text"]').filter(has_text="forged para")
    forged.wait_for(timeout=30_000)
    assert forged.locator("p").inner_text() == "forged para"
    assert forged.locator("a").inner_text() == "forged link"
    assert forged.locator("a").get_attribute("href") is None
    assert "kept text" in forged.inner_text()
    forged.locator("p").hover()
    forged.locator("a").click()
    dom = page.evaluate(DOM_JS)
    assert dom["pwned"] == "undefined" and dom["bad"] == 0, dom
    assert set(dom["attrs"]) <= {"href", "rel", "target", "title", "start", "align"}, dom["attrs"]
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


TWO_BLOCKS_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.message import TextBlock
    from agentscope.model import ChatResponse
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn

    class TwoBlocks(ScriptedChatModel):
        # one response of two text blocks: streamed as one block, joined with a newline in the reply
        async def _stream(self, text, calls):
            yield ChatResponse(id="r", is_last=False, content=[TextBlock(id="b1", text="# Part one\\n\\n**ONE-BOLD**")])
            yield ChatResponse(id="r", is_last=False, content=[
                TextBlock(id="b2", text='- **TWO-BOLD** <img src=x onerror="window.__pwned=1">')])

    session = Session(Agent(name="two", system_prompt="x", model=TwoBlocks([Turn("x")]), toolkit=Toolkit()))
    reply = await session.run("Talk.")
    print("TWO DONE", session.current.widget.final_entry == "")
    """
)


def test_a_final_message_of_two_text_blocks_is_shown_once_rendered(page, lab: JupyterLabServer) -> None:
    """AgentScope streams a response's text blocks as one (their texts run
    together) but joins them with a newline in the reply: the final message is
    no block's text, so it has its own box. It is shown once, as Markdown
    rendered by the kernel and walked again by the page, never as source."""
    write_notebook(lab.root / "two_blocks.ipynb", [TWO_BLOCKS_CELL])
    open_notebook(page, lab, "two_blocks.ipynb")
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    output_locator(page, "TWO DONE True").wait_for(timeout=90_000)
    reply = page.locator(REPLY)
    final = reply.locator('[data-testid="nbh-final-text"]')
    final.wait_for(timeout=30_000)
    assert "nbh-md" in (final.get_attribute("class") or "")
    assert final.locator("h1").inner_text() == "Part one"
    assert final.locator("p strong").inner_text() == "ONE-BOLD"
    assert final.locator("ul > li strong").inner_text() == "TWO-BOLD"
    assert "**" not in final.inner_text()
    # the streamed block says the same, run together: hidden, so the message shows once.
    # A reply this short can end before the page draws its widget: the stream's
    # messages then left before the page listened, and the transcript comes with
    # the connect's sync, after the final box (a trait of the widget's state)
    texts = reply.locator('[data-testid="nbh-text"]')
    expect(texts).to_have_count(1, timeout=30_000)
    expect(texts.first).to_be_hidden()
    assert reply.get_by_text("ONE-BOLD").filter(visible=True).count() == 1
    dom = page.evaluate(DOM_JS)
    assert dom["pwned"] == "undefined" and dom["bad"] == 0, dom
    wait_execution_done(page)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
