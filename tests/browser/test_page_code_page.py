"""The widgets' page code is saved once per notebook, not once per reply (real JupyterLab + Chromium).

Three replies are run and the notebook saved (widget ``saveState`` on): the
saved widget state holds the reply bundle once (the shared page-code model)
and each reply only its loader; after a kernel restart the reopened notebook
draws every saved reply, themed, from that one copy. A saved page-code model
whose code no longer matches the digest in the replies' loaders is not run:
the replies say they cannot be drawn. With ``NB_HITL_PAGE_CODE=inline`` (for
hosts whose widget manager cannot hand one model to another) each reply carries
its own bundle, the usual anywidget way, and is drawn and answered as well.
"""

from __future__ import annotations

import re
import textwrap

import nbformat
from nbformat.sign import NotebookNotary

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    restart_kernel,
    run_all_cells,
    save_notebook,
    wait_execution_done,
    write_notebook,
)

OUT = ".jp-OutputArea-output"
ANSWERS = ["First answer PCX1.", "Second answer PCX2.", "Third answer PCX3."]
SETUP = textwrap.dedent(
    f"""
    from agentscope.agent import Agent
    from agentscope.tool import Toolkit
    from nb_hitl import Session
    from nb_hitl.models import ScriptedChatModel, Turn
    agent = Agent(name="pc", system_prompt="x", model=ScriptedChatModel([Turn(t) for t in {ANSWERS!r}]),
                  toolkit=Toolkit())
    session = Session(agent)
    """
)


def _saved_models(lab: JupyterLabServer, name: str) -> dict[str, dict]:
    saved = lab.notebook_json(name)
    return saved["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]


def _wait_replies_drawn(page) -> None:  # type: ignore[no-untyped-def]
    for text in ANSWERS:
        page.locator(f'{OUT} [data-testid="nbh-final-text"]').get_by_text(text).wait_for(timeout=60_000)


def test_page_code_saved_once_and_reopened_notebook_draws_every_reply(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "page_code.ipynb", [SETUP] + [f'await session.run("q{i}")' for i in range(3)])
    open_notebook(page, lab, "page_code.ipynb")
    run_all_cells(page)
    _wait_replies_drawn(page)
    wait_execution_done(page)
    save_notebook(page)

    models = _saved_models(lab, "page_code.ipynb")
    shared = {mid: m["state"] for mid, m in models.items() if "code" in m["state"]}
    replies = [m["state"] for m in models.values() if "pauses" in m["state"]]
    assert len(replies) == 3 and len(shared) == 1, (len(replies), len(shared))
    ((shared_id, code_state),) = shared.items()
    assert code_state["name"] == "reply" and len(code_state["code"]) > 10_000
    for reply in replies:
        assert reply["_nbh_page_code"] == f"IPY_MODEL_{shared_id}"
        assert code_state["digest"] in reply["_esm"] and len(reply["_esm"]) < 4_000
        assert "_css" not in reply

    # what a front end that cannot draw the widget shows (nbviewer, or JupyterLab
    # opened with "No Kernel", whose widget manager then restores no widget)
    outputs = [o for c in lab.notebook_json("page_code.ipynb")["cells"] for o in c.get("outputs", [])]
    texts = [
        "".join(o["data"]["text/plain"])
        for o in outputs
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert texts == [f"ReplyWidget(agent_name='pc', prompt='q{i}')" for i in range(3)], texts

    restart_kernel(page, lab)
    open_notebook(page, lab, "page_code.ipynb")
    _wait_replies_drawn(page)
    page.locator(f'{OUT} [data-testid="nbh-reply"][data-live="false"]').nth(2).wait_for(timeout=30_000)
    assert page.locator(f'{OUT} [data-testid="nbh-reply"]').count() == 3
    # the theme came with the page code: the fallback palette is defined on the card
    brand = page.evaluate(
        "() => getComputedStyle(document.querySelector('.nbh')).getPropertyValue('--nbh-brand').trim()"
    )
    assert brand.lower() == "#1565c0", brand
    assert output_locator(page, re.compile("model not found|Error displaying widget")).count() == 0
    assert page.locator('[data-testid="nbh-load-error"]').count() == 0
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors

    # a saved page-code model whose code was changed behind the loaders' back is not run
    path = lab.root / "page_code.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    state[shared_id]["state"]["code"] = "window.__nbhPwned = 1; export default { render() {} };"
    # signed with the server's key, as a save from the page would be: an untrusted
    # notebook shows widgets as plain text and would not test the loader
    NotebookNotary(data_dir=str(lab.data_dir)).sign(nb)
    nbformat.write(nb, str(path))
    restart_kernel(page, lab)
    open_notebook(page, lab, "page_code.ipynb")
    errors = page.locator(f'{OUT} [data-testid="nbh-load-error"]')
    errors.nth(2).wait_for(timeout=60_000)
    assert "does not hold the code this widget was made with" in errors.first.inner_text()
    assert "NB_HITL_PAGE_CODE=inline" in errors.first.inner_text()  # what a person can do about it
    assert page.evaluate("() => window.__nbhPwned") is None
    assert page.locator(f'{OUT} [data-testid="nbh-final-text"]').count() == 0


INLINE_SETUP = textwrap.dedent(
    """
    import os
    os.environ["NB_HITL_PAGE_CODE"] = "inline"
    from nb_hitl import Session
    from nb_hitl.demo import demo_agent
    session = Session(demo_agent(chunk_delay=0))
    task = session.start("Please tidy up my sandbox folder.")
    """
)


def test_inline_page_code_draws_each_reply_from_its_own_bundle(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "inline.ipynb", [INLINE_SETUP, 'await task; print("STATUS", session.current.status)'])
    open_notebook(page, lab, "inline.ipynb")
    run_all_cells(page)
    ask = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="ask_user"][data-status="open"]')
    ask.wait_for(timeout=60_000)
    ask.locator('[data-testid="nbh-option"][data-label="notes.txt"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    confirm = page.locator(f'{OUT} [data-testid="nbh-card"][data-kind="confirm"][data-status="open"]')
    confirm.wait_for(timeout=60_000)
    confirm.locator('[data-testid="nbh-approve"]').click()
    output_locator(page, "STATUS finished").wait_for(timeout=60_000)
    wait_execution_done(page)
    save_notebook(page)
    models = _saved_models(lab, "inline.ipynb")
    assert not [m for m in models.values() if "code" in m["state"]], "no shared page-code model"
    (reply,) = [m["state"] for m in models.values() if "pauses" in m["state"]]
    assert reply.get("_nbh_page_code", "") == "" and len(reply["_esm"]) > 10_000 and "--nbh-brand" in reply["_css"]
    assert page.locator('[data-testid="nbh-load-error"]').count() == 0
    stderr = page.locator(f'{OUT}[data-mime-type="application/vnd.jupyter.stderr"]')
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
