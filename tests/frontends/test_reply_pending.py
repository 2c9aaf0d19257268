"""The reply widget's ``pending`` trait: the number of open pauses, synced, changing with ``pauses``.

marimo cells (and any host that watches traits) read it to react when a
pause opens or is answered; it is derived from the ``pauses`` views the
session writes, so it can never disagree with the cards.
"""

from __future__ import annotations

from nb_hitl.widgets.reply import ReplyWidget, open_count


def _view(status: str) -> dict[str, str]:
    return {"id": f"p-{status}", "kind": "confirm", "status": status}


def test_pending_counts_open_pauses_and_is_synced() -> None:
    w = ReplyWidget()
    assert "pending" in w.class_trait_names(sync=True)
    seen: list[int] = []
    w.observe(lambda change: seen.append(change["new"]), names="pending")
    assert w.pending == 0
    w.pauses = [_view("open")]
    w.pauses = [_view("open"), {**_view("open"), "id": "p2"}]
    w.pauses = [_view("decided"), {**_view("open"), "id": "p2"}]
    w.pauses = [_view("delivered"), {**_view("expired"), "id": "p2"}]
    assert seen == [1, 2, 1, 0]
    assert ReplyWidget(pauses=[_view("open"), _view("deciding")]).pending == 1


def test_open_count_ignores_non_dicts() -> None:
    assert open_count([_view("open"), "x", None, _view("open")]) == 2  # type: ignore[list-item]
