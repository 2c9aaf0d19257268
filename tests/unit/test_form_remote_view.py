"""The remote pause view keys (``refused``, ``unanswerable``) agree between
``nb_hitl.pauses.RemotePauseView`` and ``js/types.ts``'s ``RemotePauseView``."""

from __future__ import annotations

import re
from pathlib import Path

import nb_hitl.pauses as pauses
from tests.unit.test_view_contract import ts_interface_keys

TYPES_TS = Path(__file__).resolve().parents[2] / "js" / "types.ts"


def test_remote_pause_view_keys_match() -> None:
    source = TYPES_TS.read_text(encoding="utf-8")
    match = re.search(r"export interface RemotePauseView extends PauseView \{", source)
    assert match, "RemotePauseView must extend PauseView in js/types.ts"
    ts = ts_interface_keys(source.replace("RemotePauseView extends PauseView", "RemotePauseView"), "RemotePauseView")
    assert ts == {"refused", "refused_answer", "unanswerable"} == set(pauses.RemotePauseView.__optional_keys__)
    assert set(pauses.RemotePauseView.__required_keys__) == set(pauses.PauseView.__required_keys__)
