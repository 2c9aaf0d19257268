"""Checkpoint format versions: files written before versions still restore.

``tests/fixtures/checkpoints`` holds real version-1 checkpoints written by
nb_hitl before the format carried a version (``make_checkpoints.py`` says
how), signed with the fixtures' ``test.key``: a parked confirmation, a parked
AskUser, a team parked on its worker's AskUser, and a confirmation whose
approval had been handed to the agent when the process stopped. Each is
restored with today's code (``Session.restore``) and driven to the end of its
reply; a version newer than this nb_hitl knows is refused with a clear error.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from nb_hitl import Session
from nb_hitl._agentscope import enum_value
from nb_hitl.demo import demo_agent, make_sandbox
from nb_hitl.models import result_text, tool_results
from nb_hitl.store import (
    CHECKPOINT_VERSION,
    KEY_ENV,
    CheckpointIntegrityError,
    CheckpointStore,
    CheckpointVersionError,
    _sign,
)
from nb_hitl.team_demo import LEADER, WORKER, team_demo
from tests.support import parked_on, run_async
from tests.support_agents import files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"


@pytest.fixture
def v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture checkpoints, their key named by ``NB_HITL_CHECKPOINT_KEY`` (``0600``)."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    for f in FIXTURES.glob("v1-*.json"):
        shutil.copy(f, folder / f.name)
    key = tmp_path / "test.key"
    shutil.copy(FIXTURES / "test.key", key)
    key.chmod(0o600)
    monkeypatch.setenv(KEY_ENV, str(key))
    return folder


def answer(pause: Any, pick: str) -> dict[str, Any]:
    question = pause.ask_user.questions[0].question
    return {
        "action": "answer",
        "tool_call_id": pause.tool_call_id,
        "answers": [{"question": question, "selected": [pick]}],
    }


def approve(pause: Any) -> dict[str, Any]:
    return {"action": "approve", "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}


def restore_demo(folder: Path, sid: str, box: Path, built: list[Any]) -> Session:
    """``Session.restore`` of the demo agent on ``box``; each agent built is appended to ``built``."""
    return Session.restore(
        lambda st: built.append(demo_agent(box, chunk_delay=0, state=st)) or built[-1],
        str(folder),
        sid,
        display=False,
    )


def written_version(folder: Path, sid: str) -> Any:
    return json.loads((folder / f"{sid}.json").read_text()).get("version")


def test_the_fixtures_are_version_1_files(v1: Path) -> None:
    store = CheckpointStore(v1)
    for sid in ("v1-confirm", "v1-ask-user", "v1-team", "v1-delivered"):
        assert written_version(v1, sid) is None  # written before versions
        assert store.load(sid)["version"] == 1


def test_a_version_1_parked_confirmation_restores_and_runs_once_approved(v1: Path, tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    built: list[Any] = []

    async def scenario() -> Any:
        session = restore_demo(v1, "v1-confirm", box, built)
        task = session.start_resume()
        confirm = await parked_on(session, "confirm")
        assert (confirm.tool_name, confirm.input) == ("delete_file", {"path": "old_log.txt"})
        await session.act(approve(confirm))
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert files(box) == ["draft.md", "notes.txt"]
    (result,) = tool_results(built[0].model.calls[-1], "delete_file")
    assert result_text(result) == "Deleted old_log.txt."
    assert final.get_text_content().startswith("Done. Deleted old_log.txt.")
    assert written_version(v1, "v1-confirm") == CHECKPOINT_VERSION  # rewritten in today's format


def test_a_version_1_parked_askuser_restores_and_finishes(v1: Path, tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    built: list[Any] = []

    async def scenario() -> Any:
        session = restore_demo(v1, "v1-ask-user", box, built)
        task = session.start_resume()
        ask = await parked_on(session, "ask_user")
        assert ask.ask_user is not None and ask.ask_user.questions[0].question == "Which file should I delete?"
        await session.act(answer(ask, "draft.md"))
        await session.act(approve(await parked_on(session, "confirm")))
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert files(box) == ["notes.txt", "old_log.txt"]
    (asked,) = tool_results(built[0].model.calls[-1], "AskUser")
    assert asked.metadata["answers"][0]["selected"] == ["draft.md"]
    assert "Deleted draft.md." in final.get_text_content()


def test_a_version_1_team_checkpoint_restores_and_finishes(v1: Path, tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    built: list[Any] = []

    def factory(states: dict[str, Any]) -> Any:
        built.append(team_demo(box, chunk_delay=0, states=states))
        return built[-1]

    async def scenario() -> Any:
        session = Session.restore(factory, str(v1), "v1-team", display=False)
        task = session.start_resume()
        ask = await parked_on(session, "ask_user")
        assert ask.agent == WORKER
        await session.act(answer(ask, "old_log.txt"))
        await session.act(approve(await parked_on(session, "confirm")))
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert built[0].runs == ["old_log.txt"] and files(box) == ["draft.md", "notes.txt"]
    assert final.name == LEADER and "Deleted old_log.txt." in final.get_text_content()
    assert written_version(v1, "v1-team") == CHECKPOINT_VERSION


def test_a_version_1_delivered_approval_is_closed_never_run_again(v1: Path, tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "box")
    built: list[Any] = []

    async def scenario() -> Any:
        session = restore_demo(v1, "v1-delivered", box, built)
        # the approval may have run before the process stopped: closed, not asked again
        assert session.parked_tool_calls() == []
        closed = tool_results(built[0].state.context, "delete_file")
        assert [enum_value(r.state) for r in closed] == ["interrupted"]
        assert "(approve)" in result_text(closed[0]) and "may or may not have taken effect" in result_text(closed[0])
        # and the agent goes on: a new request, driven to its end
        task = session.start("Tidy up again.")
        await session.act(answer(await parked_on(session, "ask_user"), "notes.txt"))
        await session.act(approve(await parked_on(session, "confirm")))
        return await asyncio.wait_for(task, 10)

    final = run_async(scenario())
    assert files(box) == ["draft.md", "old_log.txt"]  # old_log.txt was not deleted a second time here
    first_call = built[0].model.calls[0]
    assert "may or may not have taken effect" in result_text(tool_results(first_call, "delete_file")[0])
    assert "Deleted notes.txt." in final.get_text_content()


def test_today_s_checkpoints_carry_the_version_and_a_newer_one_is_refused_clearly(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    path = store.save("s", "tidy", demo_agent(make_sandbox(tmp_path / "box"), chunk_delay=0).state.model_dump_json())
    record = json.loads(path.read_text())
    assert record["version"] == CHECKPOINT_VERSION and store.load("s")["version"] == CHECKPOINT_VERSION

    # the version is signed: changed by hand, the file is not restored
    path.write_text(json.dumps({**record, "version": 1}))
    with pytest.raises(CheckpointIntegrityError):
        store.load("s")

    # a file from a newer nb_hitl, signed with the same key
    newer = {k: v for k, v in record.items() if k != "hmac"} | {"version": CHECKPOINT_VERSION + 1}
    newer["hmac"] = _sign(store.key, newer)
    path.write_text(json.dumps(newer))
    with pytest.raises(CheckpointVersionError) as err:
        store.load("s")
    assert err.value.version == CHECKPOINT_VERSION + 1
    assert f"newer nb_hitl (checkpoint format version {CHECKPOINT_VERSION + 1})" in str(err.value)
    assert f"reads versions 1 to {CHECKPOINT_VERSION}" in str(err.value)
    built: list[Any] = []
    with pytest.raises(CheckpointVersionError):
        Session.restore(lambda st: built.append(st), str(tmp_path / "ckpt"), "s", display=False)
    assert built == []  # nothing was built from it

    for bad in ("2", 0, True, None):
        path.write_text(json.dumps({**record, "version": bad}))
        with pytest.raises(ValueError, match="format version"):
            store.load("s")
