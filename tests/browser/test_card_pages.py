"""Page limits in real JupyterLab + Debian Chromium.

* A reply of 10,000 pause cards draws a page of them (``PAGE_SIZE``, 50),
  "Show more" draws the next page, a card message redraws only its own card
  (the other cards' nodes stay the same), a click on one card sends one
  decision, and "Approve all" sends every open card as ONE ``batch`` message.
  The assertions are on DOM size and on what reached the kernel, not on time.
* A form of 20,000 fields is refused in its card with the reason, and
  "Return this error to the agent" sends ``return_error``; no field is drawn.

The views are real ``Pause.to_view()`` dicts (``build_pause`` over real
``ToolCallBlock``s and the demo's ``delete_file`` tool, AgentScope's
``AskForm`` shaped by ``FormTool.prepare_pause``); the widget's handler
records what the page sends; the card message is made by the session's own
``CardFeed``.
"""

from __future__ import annotations

import textwrap

from playwright.sync_api import expect

from tests.browser.test_review_page import kernel_json, run_cell
from tests.harness.lab import JupyterLabServer, open_notebook, screenshot, write_notebook

OUT = ".jp-OutputArea-output"
REPLY = f'{OUT} [data-testid="nbh-reply"]'
N = 10_000
PAGE = 50

MANY_SETUP = textwrap.dedent(
    f"""
    import json
    from agentscope.message import ToolCallBlock
    from IPython.display import display
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.pauses import build_pause
    from nb_hitl.widgets._cards import CardFeed
    from nb_hitl.widgets.reply import ReplyWidget

    delete = {{t.name: t for t in sandbox_tools(make_sandbox())}}["delete_file"]

    def view(i):
        call = ToolCallBlock(id=f"c{{i:05d}}", name="delete_file", input=json.dumps({{"path": f"f{{i}}.txt"}}), state="asking")
        return build_pause("many", call, delete).to_view()

    first = view(0)
    PAUSES = [first] + [
        {{**first, "tool_call_id": f"c{{i:05d}}", "input_text": json.dumps({{"path": f"f{{i}}.txt"}}, indent=2)}}
        for i in range(1, {N})
    ]
    got = []

    def handler(m):
        got.append(m)
        if m.get("action") == "batch":
            return {{"status": "decided", "results": [{{"tool_call_id": i["tool_call_id"], "ok": True}} for i in m["items"]]}}
        return {{"status": "decided"}}

    feed = CardFeed()
    feed.take_ops(PAUSES)
    w = ReplyWidget(
        handler=handler, agent_name="many", prompt="archive", reply_id="many", status="paused",
        pauses=PAUSES, cards_seq=feed.seq,
    )
    display(w)
    """
)
# one card changes: only its view travels, as the session sends it
ONE_CARD = textwrap.dedent(
    """
    PAUSES[1] = {**PAUSES[1], "status": "decided", "decision": {"action": "approve"}}
    w.send(feed.message(feed.take_ops(PAUSES)))
    """
)
GOT = 'print("GOT", json.dumps([(m.get("action"), m.get("tool_call_id"), len(m.get("items") or [])) for m in got if m.get("action") not in ("ping", "sync", "transcript_sync", "cards_sync")]))'


def test_10000_cards_draw_a_page_and_approve_all_is_one_message(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "cp_many.ipynb", [MANY_SETUP, ONE_CARD, GOT, GOT])
    open_notebook(page, lab, "cp_many.ipynb")
    run_cell(page, 0)
    reply = page.locator(REPLY)
    cards = reply.locator('[data-testid="nbh-card"]')
    cards.first.wait_for(timeout=120_000)
    assert cards.first.get_attribute("data-tool-call-id") == "c00000"
    assert cards.first.locator('[data-testid="nbh-approve"]').is_visible()
    # a page of cards, not 10,000
    assert cards.count() == PAGE
    approve_all = reply.locator('[data-testid="nbh-group"] button', has_text="Approve all")
    assert approve_all.inner_text() == f"Approve all ({N})"
    pager = reply.locator('[data-testid="nbh-pager"]')
    assert pager.is_visible()
    assert pager.locator('[data-testid="nbh-pager-text"]').inner_text().startswith(f"Showing {PAGE} of {N} cards")

    pager.locator('[data-testid="nbh-show-more"]').click()
    page.wait_for_function(
        f"""() => document.querySelectorAll('{REPLY} [data-testid="nbh-card"]').length === {2 * PAGE}""",
        timeout=30_000,
    )
    assert cards.nth(2 * PAGE - 1).get_attribute("data-tool-call-id") == f"c{2 * PAGE - 1:05d}"

    # a card message redraws its own card only: the other cards keep their nodes
    page.evaluate(f"""() => {{ document.querySelector('{REPLY} [data-tool-call-id="c00002"]').nbhKeep = 1; }}""")
    run_cell(page, 1)
    decided = reply.locator('[data-testid="nbh-card"][data-tool-call-id="c00001"][data-status="decided"]')
    decided.wait_for(timeout=30_000)
    assert page.evaluate(f"""() => document.querySelector('{REPLY} [data-tool-call-id="c00002"]').nbhKeep""") == 1
    assert cards.count() == 2 * PAGE
    assert approve_all.inner_text() == f"Approve all ({N - 1})"

    # a click on one card sends that decision; the kernel's answer is waited for
    # before a cell reads what it got (ipykernel dispatches a comm message apart
    # from the cells' queue, so the two are not ordered)
    cards.first.locator('[data-testid="nbh-approve"]').click()
    page.wait_for_function(
        f"""() => !document.querySelector('{REPLY} [data-tool-call-id="c00000"] [data-testid="nbh-approve"]')?.disabled""",
        timeout=30_000,
    )
    assert kernel_json(page, 2, "GOT") == [["approve", "c00000", 0]]
    # "Approve all" acts on every open card, drawn or not, as one message
    approve_all.click()
    page.wait_for_function(
        f"""() => document.querySelectorAll('{REPLY} [data-testid="nbh-card"]').length === {2 * PAGE}
                  && !Array.from(document.querySelectorAll('{REPLY} [data-testid="nbh-card"]')).some((c) => c.textContent.includes("Sending…"))""",
        timeout=60_000,
    )
    got = kernel_json(page, 3, "GOT")
    assert got == [["approve", "c00000", 0], ["batch", None, N - 1]]
    assert cards.count() == 2 * PAGE
    screenshot(page, "card-pages-10000")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


HUGE_FORM = textwrap.dedent(
    """
    import json
    from agentscope.message import ToolCallBlock
    from IPython.display import display
    from nb_hitl.kinds.form import FormTool
    from nb_hitl.pauses import build_pause
    from nb_hitl.widgets.reply import ReplyWidget

    SCHEMA = {"type": "object", "properties": {f"field_{i}": {"type": "string"} for i in range(20_000)}}
    tool = FormTool()
    call = ToolCallBlock(id="huge", name=tool.name, input=json.dumps({"title": "Everything", "schema": SCHEMA}), state="submitted")
    pause = build_pause("form", call, tool)
    await tool.prepare_pause(pause, None)
    got = []
    form = ReplyWidget(handler=lambda m: got.append(m) or {"status": "decided"}, agent_name="asker", reply_id="form",
                       status="paused", pauses=[pause.to_view()])
    display(form)
    """
)


def test_a_form_of_20000_fields_is_refused_in_its_card(page, lab: JupyterLabServer) -> None:
    """The kernel refuses the form (``form_error``) and sends no schema: the
    card says why and can only return the error to the agent."""
    write_notebook(lab.root / "cp_form.ipynb", [HUGE_FORM, GOT])
    open_notebook(page, lab, "cp_form.ipynb")
    run_cell(page, 0)
    card = page.locator(f'{REPLY} [data-testid="nbh-card"][data-kind="form"]')
    card.wait_for(timeout=120_000)
    refusal = card.locator('[data-testid="nbh-form-invalid"]')
    assert "it has 20000 fields (at most 200 are drawn)" in refusal.inner_text()
    assert card.locator("[data-field]").count() == 0
    assert card.locator('[data-testid="nbh-form-submit"]').count() == 0
    card.locator('[data-testid="nbh-return-error"]').click()
    # the kernel answered the click ("Sending…" gone) before a cell reads what it got
    expect(card).not_to_contain_text("Sending…", timeout=30_000)
    assert kernel_json(page, 1, "GOT") == [["return_error", "huge", 0]]
    screenshot(page, "card-pages-huge-form")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
