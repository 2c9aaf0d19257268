"""Form cards in real JupyterLab + Debian Chromium: time zones, and more.

* C20: a ``date-time`` field filled in a browser whose zone is
  Europe/Berlin; the agent gets the instant with its offset
  (``2026-07-15T13:10:00+02:00``) and the card names the zone it used.
* Invalid fields: text that is not a number says so (not "required");
  every invalid field is marked at once (the kernel's ``jsonschema`` check
  reports them all); a submitted form shows its values, not its schema.
* Remote pause views: ``refused`` is shown on its card, ``unanswerable``
  says what is wrong and offers only Cancel.
* An empty "Send result" / "Edit & send" asks first; a denial is drawn in
  the warning colour, not the approval colour.
"""

from __future__ import annotations

import textwrap

from tests.browser.slow_kernel import held_until
from tests.harness.lab import JupyterLabServer, open_notebook, run_all_cells, wait_execution_done, write_notebook

OUT = ".jp-OutputArea-output"

DATETIME_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.kinds.form import FormTool
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results

    SCHEMA = {"type": "object", "properties": {
        "start": {"type": "string", "format": "date-time", "title": "Start"}}, "required": ["start"]}

    def answer(msgs):
        return Turn("The model got start=" + tool_results(msgs, "AskForm")[-1].metadata["value"]["start"])

    agent = Agent(
        name="planner", system_prompt="Plan.",
        model=ScriptedChatModel([Turn("When?", [tool_call("AskForm", title="Meeting", schema=SCHEMA)]), answer]),
        toolkit=Toolkit(tools=[FormTool()]),
    )
    session = Session(agent)
    task = session.start("book a meeting")
    """
)


def _zoned_page(browser, zone: str):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1300, "height": 900}, timezone_id=zone)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    return page, errors


def test_C20_date_time_carries_the_zone(browser, lab: JupyterLabServer) -> None:
    page, errors = _zoned_page(browser, "Europe/Berlin")
    try:
        write_notebook(lab.root / "fp_c20.ipynb", [DATETIME_CELL])
        open_notebook(page, lab, "fp_c20.ipynb")
        run_all_cells(page)
        card = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="form"][data-status="open"]')
        card.wait_for(timeout=60_000)
        field = card.locator('[data-field="start"]')
        assert field.get_attribute("type") == "datetime-local"
        assert card.locator('[data-testid="nbh-field-zone"]').inner_text() == "Time zone: Europe/Berlin"
        field.fill("2026-07-15T13:10")
        card.locator('[data-testid="nbh-form-submit"]').click()
        final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
        final.wait_for(timeout=30_000)
        # what the model read: the instant, with Berlin's summer offset
        assert final.inner_text() == "The model got start=2026-07-15T13:10:00+02:00"
        assert errors == []
    finally:
        page.context.close()
        lab.shutdown_kernels()


INVALID_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.kinds.form import FormTool
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results

    SCHEMA = {"type": "object", "properties": {
        "amount": {"type": "number", "title": "Amount", "maximum": 500},
        "date": {"type": "string", "format": "date", "title": "Date"},
        "count": {"type": "integer", "title": "Count"}},
        "required": ["amount", "date"]}

    def answer(msgs):
        return Turn("got " + repr(tool_results(msgs, "AskForm")[-1].metadata["value"]))

    agent = Agent(
        name="orders", system_prompt="x",
        model=ScriptedChatModel([Turn("Details?", [tool_call("AskForm", title="Order", schema=SCHEMA)]), answer]),
        toolkit=Toolkit(tools=[FormTool()]),
    )
    session = Session(agent)
    task = session.start("order")
    """
)


def _card(page, kind: str, status: str = "open"):  # type: ignore[no-untyped-def]
    return page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="{kind}"][data-status="{status}"]')


def _field_error(card, name: str):  # type: ignore[no-untyped-def]
    return card.locator(f'[data-testid="nbh-field"][data-name="{name}"] [data-testid="nbh-field-error"]')


def test_form_marks_every_invalid_field_and_shows_values_when_decided(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "fp_invalid.ipynb", [INVALID_CELL])
    open_notebook(page, lab, "fp_invalid.ipynb")
    run_all_cells(page)
    card = _card(page, "form")
    card.wait_for(timeout=60_000)

    # text the browser cannot read as a number: "not a number", not "required"
    card.locator('[data-field="amount"]').press_sequentially("1e")
    card.locator('[data-testid="nbh-form-submit"]').click()
    _field_error(card, "amount").wait_for(timeout=10_000)
    assert _field_error(card, "amount").inner_text() == "Amount: not a number"

    # two fields wrong at once (a maximum, a missing required date): both marked, nothing repeated below
    card.locator('[data-field="amount"]').fill("900")
    card.locator('[data-testid="nbh-form-submit"]').click()
    _field_error(card, "date").wait_for(timeout=30_000)
    assert _field_error(card, "date").inner_text() == "Date: this field is required."
    assert _field_error(card, "amount").inner_text() == "Amount: 900 is greater than the maximum of 500"
    assert card.locator('[data-testid="nbh-field-error"]').count() == 2
    assert card.locator('[data-testid="nbh-error"]').count() == 0
    assert card.locator('[aria-invalid="true"]').count() == 2

    card.locator('[data-field="amount"]').fill("45")
    card.locator('[data-field="date"]').fill("2026-01-02")
    card.locator('[data-testid="nbh-form-submit"]').click()
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=30_000)
    assert final.inner_text() == "got {'amount': 45, 'date': '2026-01-02'}"
    done = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="form"]')
    submitted = done.locator('[data-testid="nbh-submitted"]').inner_text()
    assert '"amount": 45' in submitted and '"date": "2026-01-02"' in submitted
    assert '"properties"' not in done.inner_text()  # the schema is not shown once decided
    wait_execution_done(page)


REMOTE_VIEW_CELL = textwrap.dedent(
    """
    from agentscope.message import ToolCallBlock
    from nb_hitl.pauses import Pause
    from nb_hitl.widgets.reply import ReplyWidget

    def view(call_id, **extra):
        v = dict(Pause(reply_id="r1", tool_call=ToolCallBlock(id=call_id, name="approval", input="{}"),
                       kind="form").to_view())
        v.update(title="Remote question", response_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})
        v.update(extra)
        return v

    SENT = []
    def handler(msg):
        SENT.append(msg)
        w.final_text = "sent " + msg["action"] + " for " + msg["tool_call_id"]

    w = ReplyWidget(handler, agent_name="remote", status="paused", pauses=[
        view("c-refused", refused="Refused by the server (invalid_payload): ok must be true"),
        view("c-bad", unanswerable=True,
             form_error="interrupt i-2 cannot be answered: metadata.nb_hitl is not an object. It can only be cancelled."),
    ])
    w
    """
)


def test_remote_refused_and_unanswerable_are_drawn(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "fp_remote.ipynb", [REMOTE_VIEW_CELL])
    open_notebook(page, lab, "fp_remote.ipynb")
    run_all_cells(page)
    refused = page.locator(f'{OUT} [data-testid="nbh-card"][data-tool-call-id="c-refused"]')
    refused.wait_for(timeout=60_000)
    assert refused.locator('[data-testid="nbh-refused"]').inner_text() == (
        "Refused by the server (invalid_payload): ok must be true"
    )
    assert refused.locator('[data-testid="nbh-form-submit"]').count() == 1  # still answerable
    bad = page.locator(f'{OUT} [data-testid="nbh-card"][data-tool-call-id="c-bad"]')
    assert "metadata.nb_hitl is not an object" in bad.locator('[data-testid="nbh-unanswerable"]').inner_text()
    assert bad.locator('[data-testid="nbh-form-submit"]').count() == 0
    assert bad.locator('[data-testid="nbh-refused"]').count() == 0
    bad.locator('[data-testid="nbh-cancel"]').click()
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=30_000)
    assert final.inner_text() == "sent cancel for c-bad"


EMPTY_CELL = textwrap.dedent(
    """
    from typing import Any
    from agentscope.agent import Agent
    from agentscope.permission import PermissionBehavior, PermissionDecision, PermissionRule
    from agentscope.state import AgentState
    from agentscope.tool import FunctionTool, ToolBase, Toolkit
    from nb_hitl import Session, reviewed
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call, tool_results, result_text

    from tests.support_agents import Lookup  # the kernel has the repository on its path

    def lookup_customer(customer: str) -> str:
        \"\"\"Look up a customer.

        Args:
            customer (str): the name.
        \"\"\"
        return "Ana Lima"

    def read(msgs):
        return Turn("read [" + result_text(tool_results(msgs)[-1]) + "]")

    state = AgentState()
    state.permission_context.allow_rules["lookup_customer"] = [PermissionRule(
        tool_name="lookup_customer", rule_content=None, behavior=PermissionBehavior.ALLOW, source="t")]
    external = Session(Agent(name="ext", system_prompt="x",
        model=ScriptedChatModel([Turn("Look.", [tool_call("lookup", word="tidy")]), read]),
        toolkit=Toolkit(tools=[Lookup()])))
    review = Session(Agent(name="rev", system_prompt="x", state=state,
        model=ScriptedChatModel([Turn("Look.", [tool_call("lookup_customer", customer="Ana")]), read]),
        toolkit=Toolkit(tools=[reviewed(FunctionTool(lookup_customer))])))
    t1 = external.start("look up")
    t2 = review.start("who")
    """
)


def test_empty_external_and_review_results_ask_before_sending(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "fp_empty.ipynb", [EMPTY_CELL])
    open_notebook(page, lab, "fp_empty.ipynb")
    run_all_cells(page)
    for kind, area, send in (
        ("external", "nbh-external-output", "nbh-external-submit"),
        ("review", "nbh-review-output", "nbh-review-edit"),
    ):
        card = _card(page, kind)
        card.wait_for(timeout=60_000)
        card.locator(f'[data-testid="{area}"]').fill("")
        card.locator(f'[data-testid="{send}"]').click()
        question = card.locator('[data-testid="nbh-ask-first"]')
        question.wait_for(state="visible", timeout=10_000)
        assert "empty" in question.inner_text()
        page.wait_for_timeout(500)
        assert card.get_attribute("data-status") == "open"  # nothing was sent yet
        question.locator('[data-testid="nbh-confirm-empty"]').click()
        done = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="{kind}"]')
        page.wait_for_function(
            "(k) => document.querySelector(`.jp-OutputArea-output [data-testid=nbh-card][data-kind=${k}]`)"
            "?.dataset.status === 'delivered'",
            arg=kind,
            timeout=30_000,
        )
        assert done.get_attribute("data-status") == "delivered"
    # "delivered" means resumed; the final text comes with the model's next turn
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-OutputArea-output [data-testid=nbh-final-text]').length === 2",
        timeout=30_000,
    )
    texts = page.locator(f'{OUT} [data-testid="nbh-final-text"]').all_inner_texts()
    assert sorted(texts) == ["read []", "read []"]


DENY_CELL = textwrap.dedent(
    """
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.demo import make_sandbox, sandbox_tools
    from nb_hitl.models import ScriptedChatModel, Turn, tool_call

    box = make_sandbox()
    def agent(name):
        return Agent(name=name, system_prompt="x",
                     model=ScriptedChatModel([Turn("Deleting.", [tool_call("delete_file", path="notes.txt")]), Turn("ok")]),
                     toolkit=Toolkit(tools=sandbox_tools(box)))
    denied, approved = Session(agent("denied")), Session(agent("approved"))
    t1 = denied.start("tidy")
    t2 = approved.start("tidy")
    """
)


def test_denial_is_drawn_in_the_warning_colour(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "fp_deny.ipynb", [DENY_CELL])
    open_notebook(page, lab, "fp_deny.ipynb")
    run_all_cells(page)
    cards = _card(page, "confirm")
    cards.nth(1).wait_for(timeout=60_000)
    cards.nth(0).locator('[data-testid="nbh-deny"]').click()
    page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="delivered"]').first.wait_for(
        timeout=30_000
    )
    _card(page, "confirm").first.locator('[data-testid="nbh-approve"]').click()
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-OutputArea-output [data-testid=nbh-decision]').length === 2",
        timeout=30_000,
    )
    colours = page.evaluate(
        """() => {
            const d = [...document.querySelectorAll('.jp-OutputArea-output [data-testid=nbh-decision]')];
            const probe = (v) => { const e = document.createElement('div'); e.style.color = v; document.body.append(e);
                                   const c = getComputedStyle(e).color; e.remove(); return c; };
            const css = getComputedStyle(d[0]);
            return {
                denied: getComputedStyle(d[0]).borderLeftColor, deniedText: d[0].textContent,
                approved: getComputedStyle(d[1]).borderLeftColor, approvedText: d[1].textContent,
                warn: probe(css.getPropertyValue('--jp-warn-color1').trim() || css.getPropertyValue('--nbh-warn').trim()),
                ok: probe(css.getPropertyValue('--jp-success-color1').trim() || css.getPropertyValue('--nbh-success').trim()),
            };
        }"""
    )
    assert "enied" in colours["deniedText"] and "enied" not in colours["approvedText"], colours
    assert colours["denied"] == colours["warn"], colours
    assert colours["approved"] == colours["ok"], colours
    assert colours["warn"] != colours["ok"], colours


# the kernel holds the page's messages until the test releases them: the page does not know the
# kernel is live (unknown, then "does not answer") while a card is drawn and typed into
SLOW_CONNECT = held_until("release_fp_slow_connect")


def test_typing_survives_the_kernel_proving_live(page, lab: JupyterLabServer) -> None:
    """A card drawn before the page knows the kernel is live is typed into;
    the page learning it (unknown or "does not answer" -> live) must not
    rebuild it: text a number field cannot read ("1e", which the DOM reports
    as "") would be lost, and the person told the field is required."""
    release = lab.root / "release_fp_slow_connect"
    release.unlink(missing_ok=True)
    write_notebook(lab.root / "fp_slow_connect.ipynb", [SLOW_CONNECT + INVALID_CELL])
    open_notebook(page, lab, "fp_slow_connect.ipynb")
    run_all_cells(page)
    card = _card(page, "form")
    card.wait_for(timeout=60_000)
    # not known live: the page's messages are held until the test releases them
    assert page.locator(f'{OUT} [data-live="true"]').count() == 0
    field = card.locator('[data-field="amount"]')
    field.press_sequentially("1e")
    release.touch()
    page.locator(f'{OUT} [data-live="true"]').wait_for(timeout=30_000)
    card.locator('[data-testid="nbh-form-submit"]').click()
    _field_error(card, "amount").wait_for(timeout=10_000)
    assert _field_error(card, "amount").inner_text() == "Amount: not a number"
