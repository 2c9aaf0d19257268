"""C37: the model sends a new tool call with the id of an earlier call of the same context.

AgentScope 2.0.11 pairs results with calls by id: without nb_hitl, a call that
reuses the id of an answered call in the same reply is never checked, shown or
run (``Agent._next_action`` counts it as finished), and the next model call
reads it next to the earlier call's result. nb_hitl gives it a fresh id
(``nb_hitl.session._call_ids``): it is asked (or refused, or run) like any
other call, its result is its own, the card and the audit log say which id the
model sent, and the model reads it in a hint. Real agents, real tools; what is
checked is what ran, what the model read next (``ScriptedChatModel.calls``),
the pauses and the audit log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import ToolResultState
from agentscope.tool import AskUser, Toolkit

from nb_hitl import Session
from nb_hitl.demo import make_sandbox, sandbox_tools
from nb_hitl.models import ScriptedChatModel, Turn, result_text, tool_call
from nb_hitl.store import AuditLog
from tests.support import parked, run_async, wait_until
from tests.support_agents import Lookup, files, sandbox_agent, scripted_agent


def pairs(messages: list[Any]) -> list[tuple[str, str, str]]:
    """``(kind, id, text)`` of every tool call / result / nb_hitl hint the model read, in order."""
    out = []
    for m in messages:
        if isinstance(m.content, str):
            continue
        for b in m.content:
            kind = getattr(b, "type", None)
            if kind == "tool_call":
                out.append(("call", b.id, f"{b.name} {b.input}"))
            elif kind == "tool_result":
                out.append(("result", b.id, result_text(b)))
            elif kind == "hint" and b.source == "nb_hitl":
                out.append(("hint", "", str(b.hint)))
    return out


def reuse_rows(audit: Path) -> list[dict[str, Any]]:
    return [r for r in AuditLog(audit).records("answered") if r.get("decision") == "id_reused"]


def approve(pause: Any) -> dict[str, Any]:
    return {"action": "approve", "tool_call_id": pause.tool_call_id, "reply_id": pause.reply_id}


# ---------------------------------------------------------------------------
def test_c37_a_confirmation_that_reuses_an_answered_id_in_the_same_reply_is_asked_and_runs_once(
    tmp_path: Path,
) -> None:
    folder = make_sandbox(tmp_path / "box")
    audit = tmp_path / "audit.jsonl"
    agent = sandbox_agent(
        folder,
        [
            Turn("First.", [tool_call("delete_file", id="X", path="old_log.txt")]),
            Turn("Second.", [tool_call("delete_file", id="X", path="notes.txt")]),
            Turn("Done."),
        ],
    )

    async def scenario() -> Session:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("tidy")
        (first,) = await parked(session)
        assert first.tool_call_id == "X" and first.message is None
        await session.act(approve(first))
        (second,) = await parked(session, resumes=1)
        # a card of its own, under a fresh id, saying which id the model sent
        assert second.kind == "confirm" and second.tool_call_id == "X_r2"
        assert second.input == {"path": "notes.txt"}
        # the card names the earlier call by tool and input, never by id
        assert (second.message or "").startswith(
            'The model reused the id of an earlier tool call (delete_file (path="old_log.txt")); '
            "nb_hitl gave this call its own id"
        )
        assert "X_r2" not in (second.message or "") and "id X" not in (second.message or "")
        assert second.to_view()["message"] == second.message
        assert files(folder) == ["draft.md", "notes.txt"]  # not run before the person approves
        await session.act(approve(second))
        await asyncio.wait_for(task, 10)
        return session

    session = run_async(scenario())
    assert files(folder) == ["draft.md"]  # each approved call ran, once
    seen = pairs(agent.model.calls[-1])
    assert seen[:4] == [
        ("call", "X", 'delete_file {"path": "old_log.txt"}'),
        ("result", "X", "Deleted old_log.txt."),
        ("call", "X_r2", 'delete_file {"path": "notes.txt"}'),
        ("result", "X_r2", "Deleted notes.txt."),
    ]
    ((_, _, hint),) = seen[4:]
    assert "sent with the id X reused the id of an earlier tool call" in hint and "X_r2" in hint
    (row,) = reuse_rows(audit)
    assert row["tool_call_id"] == "X_r2" and row["sent_tool_call_id"] == "X" and row["decided_by"] == "nb_hitl"
    decisions = [
        (r["tool_call_id"], r["decision"]) for r in AuditLog(audit).records("answered") if r["decision"] == "approve"
    ]
    assert decisions == [("X", "approve"), ("X_r2", "approve")]
    assert session.runs[-1].status == "finished"


def test_c37_a_call_reusing_the_id_of_a_call_allowed_without_asking_is_asked_and_a_denial_is_its_own(
    tmp_path: Path,
) -> None:
    folder = make_sandbox(tmp_path / "box")
    audit = tmp_path / "audit.jsonl"
    agent = sandbox_agent(
        folder,
        [
            Turn("Look.", [tool_call("list_files", id="L")]),
            Turn("Delete.", [tool_call("delete_file", id="L", path="notes.txt")]),
            Turn("Done."),
        ],
    )

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        task = session.start("tidy")
        (pause,) = await parked(session)
        assert (pause.tool_call_id, pause.tool_name) == ("L_r2", "delete_file")
        await session.act({**approve(pause), "action": "deny"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert "notes.txt" in files(folder)
    seen = pairs(agent.model.calls[-1])
    assert [(k, i) for k, i, _ in seen] == [
        ("call", "L"),
        ("result", "L"),
        ("call", "L_r2"),
        ("result", "L_r2"),
        ("hint", ""),
    ]
    assert "notes.txt" in seen[1][2]  # the listing stays the listing's result
    denied = [b for m in agent.model.calls[-1] if not isinstance(m.content, str) for b in m.content]
    assert next(b for b in denied if getattr(b, "id", None) == "L_r2" and b.type == "tool_result").state == (
        ToolResultState.DENIED
    )
    assert [r["sent_tool_call_id"] for r in reuse_rows(audit)] == ["L"]


def test_c37_an_askuser_reusing_an_id_of_an_earlier_reply_gets_its_own_card_and_answer(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    question = {
        "question": "Which color?",
        "header": "Color",
        "options": [{"label": "Red", "description": "r"}, {"label": "Blue", "description": "b"}],
    }
    agent = scripted_agent(
        [
            Turn("Asking.", [tool_call("AskUser", id="Q", questions=[question])]),
            Turn("Thanks."),
            Turn("Asking again.", [tool_call("AskUser", id="Q", questions=[question])]),
            Turn("Thanks again."),
        ],
        [AskUser()],
    )

    async def scenario() -> None:
        session = Session(agent, display=False, audit_log=str(audit))
        for reply, (expected_id, color) in enumerate([("Q", "Red"), ("Q_r2", "Blue")]):
            task = session.start(f"ask {reply}")
            pause = await wait_until(
                lambda: session.current is not None and session.current.status == "paused" and session.pending,
                "an AskUser card",
            )
            (card,) = pause
            assert (card.kind, card.tool_call_id) == ("ask_user", expected_id)
            assert (card.message is not None) == (reply == 1)
            answers = [{"question": "Which color?", "selected": [color]}]
            await session.act({"action": "answer", "tool_call_id": card.tool_call_id, "answers": answers})
            await asyncio.wait_for(task, 10)

    run_async(scenario())
    seen = [(k, i, t) for k, i, t in pairs(agent.model.calls[-1]) if k != "call"]
    results = [(i, t) for k, i, t in seen if k == "result"]
    assert [i for i, _ in results] == ["Q", "Q_r2"]
    assert "Red" in results[0][1] and "Blue" in results[1][1] and "Red" not in results[1][1]
    assert seen[-1][0] == "hint" and "Q_r2" in seen[-1][2]
    assert [(r["tool_call_id"], r["kind"]) for r in reuse_rows(audit)] == [("Q_r2", "ask_user")]


def test_c37_an_external_call_reusing_an_id_parks_again_under_a_fresh_id(tmp_path: Path) -> None:
    agent = scripted_agent(
        [
            Turn("Look up.", [tool_call("lookup", id="W", word="tidy")]),
            Turn("Again.", [tool_call("lookup", id="W", word="neat")]),
            Turn("Done."),
        ],
        [Lookup()],
    )

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("define")
        for n, (expected, word, output) in enumerate([("W", "tidy", "arranged"), ("W_r2", "neat", "clean")]):
            (pause,) = await parked(session, resumes=n)
            assert (pause.kind, pause.tool_call_id, pause.input) == ("external", expected, {"word": word})
            await session.act({"action": "external_result", "tool_call_id": expected, "output": output})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    results = [(i, t) for k, i, t in pairs(agent.model.calls[-1]) if k == "result"]
    assert results == [("W", "arranged"), ("W_r2", "clean")]


def test_c37_one_answer_holding_one_id_twice_gives_two_cards(tmp_path: Path) -> None:
    folder = make_sandbox(tmp_path / "box")
    model = ScriptedChatModel(
        [
            Turn(
                "Two.",
                [
                    tool_call("delete_file", id="D", path="old_log.txt"),
                    tool_call("delete_file", id="D", path="draft.md"),
                ],
            ),
            Turn("Done."),
        ],
        stream=False,  # a whole answer: a streamed one is merged by id in AgentScope's accumulator
        on_exhausted="raise",
    )
    agent = Agent(name="deleter", system_prompt="x", model=model, toolkit=Toolkit(tools=sandbox_tools(folder)))

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("tidy")
        first = await parked(session)
        ids = [p.tool_call_id for p in first]
        assert ids == ["D"]  # AgentScope asks the second after the first (not concurrency-safe)
        await session.act(approve(first[0]))
        (second,) = await parked(session, resumes=1)
        assert (second.tool_call_id, second.input) == ("D_r2", {"path": "draft.md"})
        await session.act({**approve(second), "action": "deny"})
        await asyncio.wait_for(task, 10)

    run_async(scenario())
    assert files(folder) == ["draft.md", "notes.txt"]
    results = [(i, t) for k, i, t in pairs(agent.model.calls[-1]) if k == "result"]
    assert results[0] == ("D", "Deleted old_log.txt.") and results[1][0] == "D_r2"


@pytest.mark.parametrize("stream", [False, True])
def test_c37_a_fresh_id_is_never_an_id_the_model_sent_in_the_same_answer(tmp_path: Path, stream: bool) -> None:
    """The model names a call ``X_r2`` (the id nb_hitl would pick) and reuses ``X`` in the same
    answer: the reused call gets ``X_r3``, the model's own ``X_r2`` keeps its id and is not
    called a reuse; each call is asked once, as itself, and runs once."""
    folder = make_sandbox(tmp_path / "box")
    model = ScriptedChatModel(
        [
            Turn("First.", [tool_call("delete_file", id="X", path="old_log.txt")]),
            Turn(
                "Second.",
                [
                    tool_call("delete_file", id="X_r2", path="notes.txt"),
                    tool_call("delete_file", id="X", path="draft.md"),
                ],
            ),
            Turn("Done."),
        ],
        stream=stream,
        on_exhausted="raise",
    )
    agent = Agent(name="deleter", system_prompt="x", model=model, toolkit=Toolkit(tools=sandbox_tools(folder)))

    async def scenario() -> None:
        session = Session(agent, display=False)
        task = session.start("tidy")
        asked: list[tuple[str, str, bool]] = []
        for resumes in range(3):
            (pause,) = await parked(session, resumes=resumes)
            asked.append((pause.tool_call_id, pause.input["path"], pause.message is not None))
            await session.act(approve(pause))
        final = await asyncio.wait_for(task, 10)
        assert final.get_text_content() == "Done."
        assert asked == [("X", "old_log.txt", False), ("X_r2", "notes.txt", False), ("X_r3", "draft.md", True)]
        results = [(k, i, t) for k, i, t in pairs(model.calls[-1]) if k == "result"]
        assert sorted(results) == [
            ("result", "X", "Deleted old_log.txt."),
            ("result", "X_r2", "Deleted notes.txt."),
            ("result", "X_r3", "Deleted draft.md."),
        ]

    run_async(scenario())
    assert files(folder) == []
