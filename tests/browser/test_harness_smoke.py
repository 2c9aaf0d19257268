"""The browser harness works end to end: real JupyterLab, real kernel, real Chromium.

An ipywidgets Button's ``on_click`` updates a Label in the page, and an
inline anywidget renders, so both widget lab extensions load from the venv
even with throw-away Jupyter config/data dirs.
"""

from __future__ import annotations

import textwrap

from tests.harness.lab import (
    JupyterLabServer,
    open_notebook,
    output_locator,
    run_all_cells,
    save_notebook,
    screenshot,
    wait_execution_done,
    write_notebook,
)

BUTTON_CELL = textwrap.dedent(
    """
    import ipywidgets as W
    clicks = 0
    label = W.Label("not clicked", _dom_classes=["nbh-test-label"])
    button = W.Button(description="Click me", _dom_classes=["nbh-test-button"])
    def on_click(_b):
        global clicks
        clicks += 1
        label.value = f"clicked {clicks}"
    button.on_click(on_click)
    W.VBox([button, label])
    """
)

ANYWIDGET_CELL = textwrap.dedent(
    '''
    import anywidget, traitlets
    class Hello(anywidget.AnyWidget):
        _esm = """
        export default {
          render({ model, el }) {
            const span = document.createElement("span");
            span.className = "nbh-hello";
            span.textContent = "anywidget says " + model.get("who");
            el.appendChild(span);
          }
        };
        """
        who = traitlets.Unicode("hi").tag(sync=True)
    Hello(who="hello from the kernel")
    '''
)


def test_ipywidgets_button_updates_label(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "smoke_button.ipynb", [BUTTON_CELL])
    open_notebook(page, lab, "smoke_button.ipynb")
    run_all_cells(page)

    label = page.locator(".jp-OutputArea-output .nbh-test-label")
    label.wait_for(timeout=30_000)
    assert "not clicked" in label.inner_text()
    page.locator(".jp-OutputArea-output button.nbh-test-button").click()
    output_locator(page, "clicked 1").wait_for(timeout=15_000)
    page.locator(".jp-OutputArea-output button.nbh-test-button").click()
    output_locator(page, "clicked 2").wait_for(timeout=15_000)
    screenshot(page, "smoke_ipywidgets_button")
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors


def test_inline_anywidget_renders_and_state_is_saved(page, lab: JupyterLabServer) -> None:
    write_notebook(lab.root / "smoke_anywidget.ipynb", [ANYWIDGET_CELL])
    open_notebook(page, lab, "smoke_anywidget.ipynb")
    run_all_cells(page)

    hello = output_locator(page, "anywidget says hello from the kernel")
    hello.wait_for(timeout=30_000)
    assert page.locator(".jp-OutputArea-output .nbh-hello").count() == 1
    wait_execution_done(page)
    screenshot(page, "smoke_anywidget")

    # saveState (written as a user setting by JupyterLabServer) is served and honoured.
    assert lab.lab_setting()["saveState"] is True
    save_notebook(page)
    nb = lab.notebook_json("smoke_anywidget.ipynb")
    state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert any(
        m["model_name"] == "AnyModel" and m["state"].get("who") == "hello from the kernel" for m in state.values()
    )
    assert not [e for e in page.nbh_errors if "pageerror" in e], page.nbh_errors
