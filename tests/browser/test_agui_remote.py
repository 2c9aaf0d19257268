"""A remote AG-UI agent answered in real JupyterLab + Debian Chromium.

* Our server: the cell awaits ``RemoteSession.run``; the person picks a file
  in the AskUser card (nothing is sent yet), then clicks Approve on the
  confirmation: one resume carries both answers and the agent's final text
  shows in the widget.
* ag-ui-langgraph: its interrupt is not one of ours, so the card is a form
  generated from the interrupt's ``response_schema``; a value that breaks the
  schema is refused in the kernel (``jsonschema``) and shown at the field,
  then a valid one resumes the graph.
"""

from __future__ import annotations

import textwrap

from tests.harness.lab import (
    ARTIFACTS,
    JupyterLabServer,
    open_notebook,
    output_locator,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"


def start_all_cells(page) -> None:  # type: ignore[no-untyped-def]
    """Run All Cells without waiting for them: the cell awaits the person's
    clicks, and JupyterLab's run-all command resolves only when cells end."""
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); return true; }")


OURS = textwrap.dedent(
    """
    from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
    from nb_hitl.agui.demo import two_pause_factory

    factory = two_pause_factory()
    handle = serve_in_background(AguiServer(factory))
    remote = RemoteSession(handle.url, token=handle.token, agent_name="remote tidy")
    final = await remote.run("Please tidy up")
    turn = remote.current
    print("FINAL:", final)
    print("runs:", [r.outcome for r in turn.runs], "entries:", len(turn.runs[-1].resume), "posts:", remote.client.posts)
    handle.stop()
    """
)

LANGGRAPH = textwrap.dedent(
    """
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import FastAPI
    from nb_hitl.agui import RemoteSession, serve_in_background
    from tests.agui.test_agui_langgraph import RECEIVED, build_graph

    app = FastAPI()
    add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="lg", graph=build_graph(), enable_legacy_on_interrupt_event=False), "/agent")
    handle = serve_in_background(app)
    remote = RemoteSession(handle.url.rstrip("/") + "/agent", agent_name="langgraph")
    final = await remote.run("Please delete a.txt")
    print("FINAL:", final.strip())
    print("RECEIVED:", RECEIVED)
    handle.stop()
    """
)


SAME_EDIT = '{ "path":  "old_log.txt" }'  # the model's input, typed with other spaces


def _card(page, kind: str, status: str = "open"):  # type: ignore[no-untyped-def]
    return page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="{kind}"][data-status="{status}"]')


def _finishes(page, text: str, printed: str) -> None:  # type: ignore[no-untyped-def]
    """The widget shows the agent's final ``text``, the cell ends printing ``printed``, no page error."""
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == text
    wait_execution_done(page, timeout=60)
    output_locator(page, printed).wait_for(timeout=30_000)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def _start_ours(page, lab: JupyterLabServer, name: str) -> None:  # type: ignore[no-untyped-def]
    """A notebook of the OURS cell, opened and started (the cell waits for clicks)."""
    write_notebook(lab.root / name, [OURS])
    open_notebook(page, lab, name)
    start_all_cells(page)


def test_remote_agent_two_interrupts_answered_by_clicks(page, lab: JupyterLabServer) -> None:
    _start_ours(page, lab, "agui_ours.ipynb")

    ask = _card(page, "ask_user")
    ask.wait_for(timeout=90_000)
    confirm = _card(page, "confirm")
    assert "delete_file" in confirm.inner_text() and "Permission required" in confirm.inner_text()
    # the remote card shows the input as a local card does, one key a line (not the model's one-line JSON)
    assert confirm.locator('[data-testid="nbh-input"]').inner_text() == '{\n  "path": "old_log.txt"\n}'
    status = page.locator(f'{OUT} [data-testid="nbh-status"]')
    assert status.get_attribute("data-status") == "paused"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(f'{OUT} [data-testid="nbh-reply"]').screenshot(path=str(ARTIFACTS / "agui-remote-paused.png"))

    ask.locator('[data-testid="nbh-option"][data-label="draft.md"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    answered = _card(page, "ask_user", "decided")
    answered.wait_for(timeout=15_000)
    assert "Which file should I archive? → draft.md" in answered.locator('[data-testid="nbh-decision"]').inner_text()
    assert status.get_attribute("data-status") == "paused"  # one answer is not a resume

    confirm.locator('[data-testid="nbh-approve"]').click()
    _finishes(
        page,
        "You chose to archive draft.md. Deleted old_log.txt.",
        "runs: ['interrupt', 'success'] entries: 2 posts: 2",
    )


def test_langgraph_interrupt_is_a_form_checked_before_sending(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "agui_langgraph.ipynb", [LANGGRAPH])
    open_notebook(page, lab, "agui_langgraph.ipynb")
    start_all_cells(page)

    form = _card(page, "form")
    form.wait_for(timeout=90_000)
    assert "Delete a.txt?" in form.inner_text()
    note = form.locator('[data-field="note"]')
    note.fill("x" * 250)  # the schema allows 200 characters
    form.locator('[data-field="approved"]').check()
    form.locator('[data-testid="nbh-form-submit"]').click()
    error = _card(page, "form").locator('[data-testid="nbh-field-error"]')
    error.wait_for(timeout=15_000)
    assert "too long" in error.inner_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(f'{OUT} [data-testid="nbh-reply"]').screenshot(path=str(ARTIFACTS / "agui-langgraph-form-refused.png"))
    assert _card(page, "form").count() == 1  # still open: nothing was sent

    again = _card(page, "form")
    again.locator('[data-field="note"]').fill("ok")
    if not again.locator('[data-field="approved"]').is_checked():
        again.locator('[data-field="approved"]').check()
    again.locator('[data-testid="nbh-form-submit"]').click()
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text().strip() == "Result: deleted a.txt"
    wait_execution_done(page, timeout=60)
    output_locator(page, "RECEIVED: [{'approved': True, 'note': 'ok'}]").wait_for(timeout=30_000)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_a_refused_modify_is_never_said_to_have_run_and_its_note_goes_with_it(page, lab: JupyterLabServer) -> None:
    _start_ours(page, lab, "agui_refused.ipynb")

    confirm = _card(page, "confirm")
    confirm.wait_for(timeout=90_000)
    confirm.locator('[data-testid="nbh-modify"]').click()
    confirm.locator('[data-testid="nbh-modify-input"]').fill(SAME_EDIT)  # changes nothing: only the server knows
    confirm.locator('[data-testid="nbh-modify-submit"]').click()
    held = _card(page, "confirm", "decided")
    held.wait_for(timeout=15_000)
    assert "Ran with" not in held.inner_text() and "Modified to (not run yet):" in held.inner_text()

    ask = _card(page, "ask_user")
    ask.locator('[data-testid="nbh-option"][data-label="draft.md"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()  # completes the set: the server refuses the Modify
    refused = _card(page, "confirm").locator('[data-testid="nbh-refused"]')
    refused.wait_for(timeout=30_000)
    assert refused.inner_text().startswith("The server refused your answer to delete_file. Your edit changes nothing")
    answered = _card(page, "ask_user", "decided")
    answered.wait_for(timeout=15_000)
    assert answered.locator('[data-testid="nbh-error"]').count() == 0  # the refusal is not about this card
    # C22: the edit the server refused is in the editor again, as typed
    _card(page, "confirm").locator('[data-testid="nbh-modify"]').click()
    assert _card(page, "confirm").locator('[data-testid="nbh-modify-input"]').input_value() == SAME_EDIT
    _card(page, "confirm").locator('[data-testid="nbh-modify-cancel"]').click()

    _card(page, "confirm").locator('[data-testid="nbh-approve"]').click()
    final = page.locator(f'{OUT} [data-testid="nbh-final-text"]')
    final.wait_for(timeout=60_000)
    assert final.inner_text() == "You chose to archive draft.md. Deleted old_log.txt."
    reply = page.locator(f'{OUT} [data-testid="nbh-reply"]')
    assert reply.locator('[data-testid="nbh-error"], [data-testid="nbh-refused"]').count() == 0
    wait_execution_done(page, timeout=60)
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_C22_an_edit_that_breaks_the_schema_is_refused_in_the_card_and_the_text_kept(
    page, lab: JupyterLabServer
) -> None:
    _start_ours(page, lab, "agui_c22.ipynb")

    ask = _card(page, "ask_user")
    ask.wait_for(timeout=90_000)
    ask.locator('[data-testid="nbh-option"][data-label="draft.md"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    _card(page, "ask_user", "decided").wait_for(timeout=15_000)

    confirm = _card(page, "confirm")
    confirm.locator('[data-testid="nbh-modify"]').click()
    confirm.locator('[data-testid="nbh-modify-input"]').fill('{"path": "old_log.txt", "extra": 1}')
    confirm.locator('[data-testid="nbh-modify-submit"]').click()
    error = confirm.locator('[data-testid="nbh-error"]')
    error.wait_for(timeout=15_000)
    # refused before it is sent: in plain words, once, at the input; the text is kept
    assert error.inner_text() == "The input has a field the tool does not take: extra."
    assert error.get_attribute("data-field") == "input"
    assert confirm.locator('[data-testid="nbh-error"], [data-testid="nbh-refused"]').count() == 1
    assert confirm.locator('[data-testid="nbh-modify-input"]').input_value() == '{"path": "old_log.txt", "extra": 1}'
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    confirm.screenshot(path=str(ARTIFACTS / "agui-c22-refused-in-card.png"))

    # an edit only the server can refuse: the card reopens with the text as typed, the refusal said once
    confirm.locator('[data-testid="nbh-modify-input"]').fill(SAME_EDIT)
    confirm.locator('[data-testid="nbh-modify-submit"]').click()
    refused = confirm.locator('[data-testid="nbh-error"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=nbh-error]')].some(e => e.textContent.includes('changes nothing'))",
        timeout=30_000,
    )
    said = refused.inner_text()
    assert said.startswith("The server refused your answer to delete_file. Your edit changes nothing")
    assert "invalid_payload" not in said and ".." not in said and "(at input)" not in said
    assert confirm.locator('[data-testid="nbh-error"], [data-testid="nbh-refused"]').count() == 1
    assert confirm.locator('[data-testid="nbh-modify-input"]').input_value() == SAME_EDIT

    confirm.locator('[data-testid="nbh-modify-input"]').fill('{"path": "draft.md"}')
    confirm.locator('[data-testid="nbh-modify-submit"]').click()
    # the schema-breaking edit made no run; only the server's own refusal did
    _finishes(
        page,
        "You chose to archive draft.md. Deleted draft.md.",
        "runs: ['interrupt', 'error', 'success'] entries: 2 posts: 3",
    )
