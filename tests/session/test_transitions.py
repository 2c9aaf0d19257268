"""The pause life cycle: named transitions, illegal ones refused."""

from __future__ import annotations

import logging

import pytest
from agentscope.message import ToolCallBlock, ToolCallState

from nb_hitl.pauses import build_pause
from nb_hitl.session import PauseTransitionError, transition
from nb_hitl.session._run import TRANSITIONS


def _pause():
    call = ToolCallBlock(id="c1", name="delete_file", input='{"path": "a"}', state=ToolCallState.ASKING)
    return build_pause("r1", call, None, None)


def test_the_happy_path_is_named() -> None:
    pause = _pause()
    assert pause.status == "open"
    assert [transition(pause, s) for s in ("deciding", "decided", "delivered")] == ["decide", "record", "deliver"]
    assert pause.status == "delivered"


@pytest.mark.parametrize("start", ["open", "deciding", "decided"])
def test_expire_from_any_live_status(start: str) -> None:
    pause = _pause()
    path = {"open": [], "deciding": ["deciding"], "decided": ["deciding", "decided"]}[start]
    for s in path:
        transition(pause, s)
    assert transition(pause, "expired", reason="gone") == "expire"
    assert pause.status == "expired" and pause.reason == "gone"


@pytest.mark.parametrize(
    "path,illegal",
    [
        ([], "decided"),
        ([], "delivered"),
        (["deciding", "decided"], "open"),
        (["expired"], "open"),
        (["expired"], "deciding"),
    ],
)
def test_an_illegal_transition_is_refused_and_logged(path, illegal, caplog) -> None:
    pause = _pause()
    for s in path:
        transition(pause, s)
    before = pause.status
    assert (before, illegal) not in TRANSITIONS
    with caplog.at_level(logging.ERROR, logger="nb_hitl.session"), pytest.raises(PauseTransitionError):
        transition(pause, illegal)
    assert pause.status == before
    assert any("Illegal pause transition" in r.message for r in caplog.records)
