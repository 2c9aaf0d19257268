"""C40: a teacher opens any notebook under ``notebooks/`` and chooses Run All.

Without ``NB_HITL_ANSWER_FROM_CODE`` (``nb_hitl.answer_from_code``) every
pause waits for a person's click: the cells after it wait for its answer,
and no cell answers it from code.

* A real run of every notebook, cell after cell as Run All sends them, in a
  real kernel without the switch: the first pause a widget shows must still
  be open when a short bounded wait with the cell still running ends (a cell
  answering from code would have answered it in milliseconds and gone on).
  Then the test answers that pause through the widget's comm, as a click
  does, and the notebook goes on: the waiting cell ends, or waits at the
  next pause. The permission explorer draws no pause and runs to its end.
* Statically, for the pauses after the first: every call in a notebook that
  answers a pause (``.act(``, ``.answer(``, ``.interrupt(``) sits under an
  ``if`` on ``ANSWER_FROM_CODE`` (set from ``answer_from_code()``), or in a
  ``try`` that shows its refusal (a pause already decided, a value that
  does not fit).
"""

from __future__ import annotations

import ast
import shutil
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from nb_hitl.walkthrough import ANSWER_FROM_CODE_ENV, AnswerModeError, answer_from_code
from tests.harness import REPO_ROOT, KernelHarness
from tests.harness.kernel import CommRecord

pytestmark = pytest.mark.kernel

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
#: Notebooks that draw no pause at all: they run to their end without a click.
NO_PAUSE = {"permission_explorer.ipynb"}
#: Calls that answer (or end) a pause shown to a person.
ANSWERING = {"act", "answer", "interrupt"}
#: How long a cell must keep waiting, its pause still open, to count as stopped for a person.
HOLD = 3.0


def _code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _parse(source: str) -> ast.Module:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    return compile(source, "<cell>", "exec", flags=flags)  # type: ignore[no-any-return]


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when ``node`` runs only with the switch on, or inside a ``try`` showing a refusal."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If) and child in parent.body and "ANSWER_FROM_CODE" in ast.unparse(parent.test):
            return True
        if isinstance(parent, ast.Try) and child in parent.body and parent.handlers:
            return True
        child, parent = parent, parents.get(parent)
    return False


def _unguarded_answers(source: str) -> list[str]:
    tree = _parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return [
        ast.unparse(node)[:80]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ANSWERING
        and not _guarded(node, parents)
    ]


def test_c40_switch_reads_on_off_and_refuses_a_typo() -> None:
    assert answer_from_code({}) is False
    assert answer_from_code({ANSWER_FROM_CODE_ENV: ""}) is False
    assert answer_from_code({ANSWER_FROM_CODE_ENV: "0"}) is False
    assert answer_from_code({ANSWER_FROM_CODE_ENV: "1"}) is True
    assert answer_from_code({ANSWER_FROM_CODE_ENV: " True "}) is True
    with pytest.raises(AnswerModeError, match=ANSWER_FROM_CODE_ENV):
        answer_from_code({ANSWER_FROM_CODE_ENV: "ja"})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_c40_every_answer_from_code_is_behind_the_switch(path: Path) -> None:
    cells = _code_cells(path)
    unguarded = {i: found for i, src in enumerate(cells) if (found := _unguarded_answers(src))}
    assert unguarded == {}, f"{path.name}: cells answering a pause without the switch: {unguarded}"
    if any("ANSWER_FROM_CODE" in src for src in cells):  # the name the guards test is the switch's value
        assert any("ANSWER_FROM_CODE = answer_from_code()" in src for src in cells), path.name


def test_c40_the_static_check_sees_an_unguarded_answer() -> None:
    assert _unguarded_answers("await session.act({'action': 'approve'})")
    assert not _unguarded_answers("if ANSWER_FROM_CODE:\n    await session.act({})\nelse:\n    print('click')")
    assert _unguarded_answers("if ANSWER_FROM_CODE:\n    pass\nelse:\n    await session.act({})")


# ------------------------------------------------------------ the real run
def _cards(rec: CommRecord) -> list[dict[str, Any]]:
    """The pause cards a ``ReplyWidget`` page shows: its ``pauses`` trait, then the ``nbh_cards`` ops after it."""
    cards = {p["tool_call_id"]: p for p in rec.state.get("pauses") or [] if isinstance(p, dict)}
    seq = rec.state.get("cards_seq", 0)
    for msg in rec.custom:
        if isinstance(msg, dict) and msg.get("type") == "nbh_cards" and msg["seq"] > seq:
            for op in msg["ops"]:
                if op["op"] == "card":
                    cards[op["view"]["tool_call_id"]] = op["view"]
                else:
                    cards.pop(op["id"], None)
    return list(cards.values())


def _open_pauses(kernel: KernelHarness) -> list[tuple[str, dict[str, Any]]]:
    """Every open pause any widget shows: ``(comm_id, pause view)``."""
    return [(rec.comm_id, p) for rec in kernel.comms() for p in _cards(rec) if p.get("status") == "open"]


def _pause_status(kernel: KernelHarness, comm_id: str, tool_call_id: str) -> str:
    return next(p["status"] for p in _cards(kernel.comm(comm_id)) if p["tool_call_id"] == tool_call_id)


def _answered(kernel: KernelHarness, comm_id: str, pause: dict[str, Any]) -> bool:
    """Whether the click answered ``pause``: it is no longer open, or (a call that needs several
    approvals, four_eyes.ipynb) it stays open for the next person with one approval more."""
    now = next(p for p in _cards(kernel.comm(comm_id)) if p["tool_call_id"] == pause["tool_call_id"])
    return now["status"] != "open" or len(now.get("approvals") or []) > len(pause.get("approvals") or [])


def _click(kernel: KernelHarness, comm_id: str, pause: dict[str, Any]) -> dict[str, Any]:
    """What a click on the card sends: approve, the first option of each question, accept (a review)
    or decline (an MCP server's question)."""
    ids = {"tool_call_id": pause["tool_call_id"], "reply_id": pause["reply_id"]}
    if pause["kind"] == "ask_user":
        answers = [
            {"question": q["question"], "selected": [q["options"][0]["label"]]} for q in pause["ask_user"]["questions"]
        ]
        return kernel.request(comm_id, "answer", answers=answers, **ids)
    if pause["kind"] == "review":
        return kernel.request(comm_id, "accept", **ids)
    if pause["kind"] == "elicitation":  # an MCP server's question: its Decline button
        return kernel.request(comm_id, "decline", **ids)
    return kernel.request(comm_id, "approve", **ids)


def _run_until_a_pause_holds(kernel: KernelHarness, cells: list[str]) -> tuple[int, str, Any] | None:
    """Send the cells one by one, as Run All does; stop at the first one still running with an open pause.

    Returns ``(cell index, msg_id, the first pause seen open)`` or None when
    every cell ended. A cell that fails fails the test.
    """
    first: tuple[str, dict[str, Any]] | None = None
    for index, source in enumerate(cells):
        msg_id = kernel.execute_async_start(source)
        deadline = time.monotonic() + 240
        held_since: float | None = None
        while True:
            reply = kernel._shell_reply(msg_id, time.monotonic() + 0.2)
            if reply is not None:
                assert reply["content"]["status"] == "ok", kernel._collect(msg_id, reply).describe()
                break
            open_now = _open_pauses(kernel)
            if first is None and open_now:
                first = open_now[0]
            if open_now:
                held_since = held_since or time.monotonic()
                if time.monotonic() - held_since >= HOLD:
                    return index, msg_id, first
            else:
                held_since = None
            assert time.monotonic() < deadline, f"cell {index} neither ended nor waited at a pause"
    assert first is None, f"a pause was shown ({first}) yet no cell waited for it"
    return None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_c40_run_all_stops_at_the_first_pause_for_a_click(path: Path, tmp_path: Path) -> None:
    shutil.copy(path, tmp_path / path.name)  # notebooks may write next to themselves
    with KernelHarness(cwd=tmp_path) as kernel:
        assert ANSWER_FROM_CODE_ENV not in kernel.execute("import os; print(sorted(os.environ))").stdout
        stopped = _run_until_a_pause_holds(kernel, _code_cells(path))
        if path.name in NO_PAUSE:
            assert stopped is None and _open_pauses(kernel) == []
            return
        assert stopped is not None, f"{path.name} ran to its end: nothing waited for a click"
        index, msg_id, first = stopped
        comm_id, pause = first
        # the first pause is still open: no cell answered it from code
        assert _pause_status(kernel, comm_id, pause["tool_call_id"]) == "open", (index, pause)
        assert (comm_id, pause["tool_call_id"]) in [(c, p["tool_call_id"]) for c, p in _open_pauses(kernel)]

        # a click answers it, and the notebook goes on
        assert _click(kernel, comm_id, pause)["ok"] is True
        kernel.wait_for(lambda: _answered(kernel, comm_id, pause) or None, 30, what="the clicked pause answered")
        deadline = time.monotonic() + 60
        while (reply := kernel._shell_reply(msg_id, time.monotonic() + 0.2)) is None:
            if [p for _c, p in _open_pauses(kernel) if p["tool_call_id"] != pause["tool_call_id"]]:
                break  # the cell waits at the next pause
            assert time.monotonic() < deadline, "after the click the cell neither ended nor reached the next pause"
        if reply is not None:
            assert reply["content"]["status"] == "ok", kernel._collect(msg_id, reply).describe()


#: Notebooks whose cells wait for a click, with what their first waiting cell says, run again after it.
RUN_AGAIN = {
    "review_and_policy.ipynb": ["Already answered: "],
    # a remote card (AG-UI): alice's approval, the first of two
    "four_eyes.ipynb": ['Already answered: send_payment (to="ACME GmbH", amount=120.0): approve.'],
    # two remote cards answered in one resume: the cell says how each was answered
    "agui_remote.ipynb": ["Already answered: AskUser: answer (", 'Already answered: delete_file (path="old_log.txt"): approve.'],
}


@pytest.mark.parametrize("name", sorted(RUN_AGAIN))
def test_c40_a_cell_run_again_after_the_click_says_how_its_card_was_answered(name: str, tmp_path: Path) -> None:
    """Run All stops at the first card; a click answers each card the cell waits for (each once: a
    four-eyes card stays open for the next person), the cell ends; run again, the cell says each
    card was answered and how, at once, never "Waiting for you"."""
    path = REPO_ROOT / "notebooks" / name
    shutil.copy(path, tmp_path / path.name)
    cells = _code_cells(path)
    with KernelHarness(cwd=tmp_path) as kernel:
        stopped = _run_until_a_pause_holds(kernel, cells)
        assert stopped is not None
        index, msg_id, _first = stopped
        first_run = kernel.stream_text(msg_id)
        assert "Waiting for you: " in first_run, first_run
        clicked: set[str] = set()
        deadline = time.monotonic() + 90
        while (reply := kernel._shell_reply(msg_id, time.monotonic() + 0.2)) is None:
            for comm_id, pause in _open_pauses(kernel):
                if pause["tool_call_id"] not in clicked:
                    clicked.add(pause["tool_call_id"])
                    assert _click(kernel, comm_id, pause)["ok"] is True
            assert time.monotonic() < deadline, f"cell {index} did not end after the clicks on {clicked}"
        assert reply["content"]["status"] == "ok", kernel._collect(msg_id, reply).describe()
        again = kernel.execute(cells[index], timeout=60)
        again.raise_for_error()
        assert "Waiting for you" not in again.stdout, again.stdout
        for line in RUN_AGAIN[name]:
            assert line in again.stdout, again.stdout
