"""The pause life cycle: named transitions, illegal ones refused."""

from __future__ import annotations

import logging

import pytest
from agentscope.message import ToolCallBlock, ToolCallState

from nb_hitl.answers.lifecycle import TRANSITIONS
from nb_hitl.pauses import build_pause
from nb_hitl.session import PauseTransitionError, transition


def _pause():
    call = ToolCallBlock(id="c1", name="delete_file", input='{"path": "a"}', state=ToolCallState.ASKING)
    return build_pause("r1", call, None, None)


def test_a_carrier_refusal_reopens_a_decided_pause() -> None:
    """An answer handed to its carrier (an AG-UI resume) that the far side refused
    leaves the call waiting: the pause is open again, never delivered."""
    pause = _pause()
    for s in ("deciding", "decided"):
        transition(pause, s)
    assert transition(pause, "open") == "refuse"
    assert pause.status == "open"


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
        (["deciding", "decided", "delivered"], "open"),
        (["deciding", "decided"], "deciding"),
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
