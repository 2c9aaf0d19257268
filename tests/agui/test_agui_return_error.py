"""C34: "Return the error" with a typed message on a remote (AG-UI) question.

The person answers the served agent's AskUser question from the notebook
(``RemoteSession`` over HTTP on 127.0.0.1) with "Return the error" and a
message of their own. The remote model reads that message as the call's
ERROR result, exactly as the same agent's model reads it in a local
Session; never "cancelled without an answer".
"""

from __future__ import annotations

import asyncio
from typing import Any

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.demo import two_pause_agent, two_pause_factory
from nb_hitl.models import result_text, tool_results
from nb_hitl.session import Session

TYPED = "None of these: the archive folder is read-only today, ask me tomorrow."


def _read(agent: Any) -> Any:
    """The AskUser result in the last messages the agent's model was sent."""
    (result,) = tool_results(agent.model.calls[-1], "AskUser")
    return result


async def _local_start(session: Session) -> tuple[asyncio.Task[Any], Any]:
    """The local Session started on "Please tidy up." and parked on both pauses: (run task, the AskUser pause)."""
    task = session.start("Please tidy up.")
    for _ in range(2000):
        if len(session.pending) == 2:
            break
        await asyncio.sleep(0.005)
    return task, next(p for p in session.pending if p.kind == "ask_user")


def test_c34_the_remote_model_reads_the_typed_error_as_a_local_one_does(tmp_path):
    factory = two_pause_factory(tmp_path / "remote")
    server = AguiServer(factory)
    with serve_in_background(server, announce=False) as handle:

        async def remote_go() -> tuple[str, dict[str, Any]]:
            remote = RemoteSession(handle.url, token=handle.token, thread_id="c34", display=False)
            task = remote.start("Please tidy up.")
            pending = await remote.until_paused()
            ask = next(p for p in pending if p["kind"] == "ask_user")
            confirm = next(p for p in pending if p["kind"] == "confirm")
            sent = await remote.act({"action": "return_error", "tool_call_id": ask["tool_call_id"], "message": TYPED})
            await remote.act({"action": "deny", "tool_call_id": confirm["tool_call_id"]})
            return await task, sent

        final, sent = asyncio.run(remote_go())
    remote_read = _read(factory.agents["c34"])
    assert result_text(remote_read) == TYPED and getattr(remote_read.state, "value", remote_read.state) == "error"
    assert "cancelled" not in result_text(remote_read)
    assert sent["decision"] == {"action": "return_error", "state": "error", "output": TYPED}
    assert final.startswith("No file was chosen (error).")

    # the same agent in a local Session, the same click
    agent = two_pause_agent(tmp_path / "local")
    session = Session(agent, display=False)

    async def local_go() -> None:
        task, ask = await _local_start(session)
        confirm = next(p for p in session.pending if p.kind == "confirm")
        await session.act({"action": "return_error", "tool_call_id": ask.tool_call_id, "message": TYPED})
        await session.act({"action": "deny", "tool_call_id": confirm.tool_call_id})
        await task

    asyncio.run(local_go())
    local_read = _read(agent)
    assert (result_text(local_read), local_read.state) == (result_text(remote_read), remote_read.state)


def test_c34_an_empty_return_the_error_is_refused_on_both_roads_as_the_local_card_refuses_it(tmp_path):
    """No text (empty, blank or missing): refused with the same words on the remote card as on the
    local one, nothing sent; it would otherwise go as a bare ``cancelled`` entry the model reads as
    "cancelled without an answer"."""
    from nb_hitl.errors import DecisionError

    refusals: list[tuple[str, str | None]] = []
    server = AguiServer(two_pause_factory(tmp_path / "remote"))
    with serve_in_background(server, announce=False) as handle:

        async def remote_go() -> Any:
            remote = RemoteSession(handle.url, token=handle.token, thread_id="c34-empty", display=False)
            task = remote.start("Please tidy up.")
            pending = await remote.until_paused()
            ask = next(p for p in pending if p["kind"] == "ask_user")
            for extra in ({"message": ""}, {"message": "   "}, {}):
                try:
                    await remote.act({"action": "return_error", "tool_call_id": ask["tool_call_id"], **extra})
                except DecisionError as err:
                    refusals.append((str(err), err.field))
            assert remote.current is not None and remote.current.answers == {}  # nothing taken, nothing sent
            await remote.act({"action": "return_error", "tool_call_id": ask["tool_call_id"], "message": TYPED})
            confirm = next(p for p in pending if p["kind"] == "confirm")
            await remote.act({"action": "deny", "tool_call_id": confirm["tool_call_id"]})
            return await task

        asyncio.run(remote_go())
    session = Session(two_pause_agent(tmp_path / "local"), display=False)

    async def local_go() -> str:
        task, ask = await _local_start(session)
        try:
            await session.act({"action": "return_error", "tool_call_id": ask.tool_call_id, "message": "  "})
        except DecisionError as err:
            task.cancel()
            return str(err)
        raise AssertionError("the local card took an empty error")

    local = asyncio.run(local_go())
    assert refusals == [(local, "message")] * 3
    assert local == "Say what went wrong, or answer the questions."
