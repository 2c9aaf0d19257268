"""A scripted agent that pauses twice in one turn, for the AG-UI notebook and tests.

It runs offline on :class:`~nb_hitl.models.ScriptedChatModel` over the
quickstart's sandbox tools (:func:`nb_hitl.demo.sandbox_tools`). Its first
turn makes two calls at once: AgentScope's ``AskUser`` (an external tool:
"Which file should I archive?") and ``delete_file("old_log.txt")`` (the
permission engine asks). Both tools are concurrency-safe, so AgentScope runs
them in one concurrent batch and the reply parks on **both** pauses at once
(``agentscope/agent/_agent.py``, ``_batch_tool_calls``): over AG-UI, one
``RUN_FINISHED`` with two interrupts, answered by one resume. Its second
turn reports what really happened, read from the tool results the model got.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.state import AgentState
from agentscope.tool import Toolkit

from ..demo import make_sandbox, sandbox_tools
from ..models import ScriptedChatModel, Turn, result_shown, tool_call, tool_results

__all__ = ["two_pause_script", "two_pause_agent", "two_pause_factory"]


def two_pause_script(delete: str = "old_log.txt") -> list[Any]:
    """The scripted turns: AskUser + ``delete_file(delete)`` at once, then a
    report of both results (answer, and deleted / denied / edited)."""

    def report(messages: list[Any]) -> Turn:
        ask = (tool_results(messages, "AskUser") or [None])[-1]
        deleted = (tool_results(messages, "delete_file") or [None])[-1]
        parts = []
        if ask is not None:
            answers = (ask.metadata or {}).get("answers") or []
            chosen = ", ".join(answers[0].get("selected") or []) or (answers[0].get("other") or "") if answers else ""
            state = getattr(ask.state, "value", ask.state)
            parts.append(
                f"You chose to archive {chosen}." if state == "success" and chosen else f"No file was chosen ({state})."
            )
        if deleted is not None:
            state = getattr(deleted.state, "value", deleted.state)
            if state == "success":
                parts.append(result_shown(deleted))
            elif state == "denied":
                parts.append("You denied the deletion, so nothing was deleted.")
            else:
                parts.append(f"The deletion did not happen ({state}).")
        return Turn(" ".join(parts) or "Nothing happened.")

    return [
        Turn(
            f"Two things: which file to archive, and may I delete {delete}?",
            [
                tool_call(
                    "AskUser",
                    questions=[
                        {
                            "question": "Which file should I archive?",
                            "header": "Archive",
                            "options": [
                                {"label": "notes.txt", "description": "meeting notes"},
                                {"label": "draft.md", "description": "an unread draft"},
                            ],
                        }
                    ],
                ),
                tool_call("delete_file", path=delete),
            ],
        ),
        report,
    ]


def two_pause_agent(
    sandbox: str | Path | None = None,
    *,
    name: str = "tidy",
    chunk_delay: float = 0.0,
    state: AgentState | None = None,
) -> Agent:
    """A real ``agentscope.agent.Agent`` on the scripted model (see the
    module docstring); ``agent.sandbox`` is its folder. ``state``: an
    ``AgentState`` to continue from (a checkpoint; the folder is kept)."""
    folder = Path(sandbox) if state is not None and sandbox is not None else make_sandbox(sandbox)
    agent = Agent(
        name=name,
        system_prompt="You tidy up a folder. Ask before deleting anything.",
        # continuing from a checkpoint, the first (parked) turn was played already
        model=ScriptedChatModel(two_pause_script()[1 if state is not None else 0 :], chunk_delay=chunk_delay),
        toolkit=Toolkit(tools=sandbox_tools(folder)),
        state=state,
    )
    agent.sandbox = folder  # type: ignore[attr-defined]
    return agent


def two_pause_factory(root: str | Path | None = None, **kwargs: Any) -> Callable[[str], Agent]:
    """An :class:`~nb_hitl.agui.server.AguiServer` factory, ``(thread_id,
    state=None) -> Agent`` (``state`` when the server restores a checkpoint): one :func:`two_pause_agent` per thread, each in its own sandbox
    folder (under ``root`` when given: ``root/<thread_id>``). ``kwargs`` go
    to :func:`two_pause_agent` (``name``, ``chunk_delay``).

    Attributes of the returned function: ``agents`` (thread id -> agent).
    """
    agents: dict[str, Agent] = {}

    def factory(thread_id: str, state: AgentState | None = None) -> Agent:
        folder = None
        if root is not None:
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in thread_id)[:80]
            folder = Path(root) / safe
        agent = two_pause_agent(folder, state=state, **kwargs)
        agents[thread_id] = agent
        return agent

    factory.agents = agents  # type: ignore[attr-defined]
    return factory


def main(argv: list[str] | None = None) -> None:
    """Serve the two-pause demo agent over AG-UI from the command line::

        python -m nb_hitl.agui.demo --port 8000
        python -m nb_hitl.agui.demo --host 0.0.0.0 --allow-host agent.example.org \\
            --allow-origin https://app.example.org --token "$NB_HITL_AGUI_TOKEN"

    A token is generated and printed unless ``--token`` (or the environment
    variable ``NB_HITL_AGUI_TOKEN``) gives one.
    """
    import argparse
    import os

    from .background import serve
    from .server import AguiServer

    parser = argparse.ArgumentParser(prog="python -m nb_hitl.agui.demo", description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/")
    parser.add_argument("--token", default=os.environ.get("NB_HITL_AGUI_TOKEN"))
    parser.add_argument("--allow-host", action="append", default=[], help="a Host: name to accept (repeat)")
    parser.add_argument("--allow-origin", action="append", default=[], help="a browser origin to accept (repeat)")
    parser.add_argument("--root", help="folder for the threads' sandboxes")
    parser.add_argument("--checkpoints", help="folder for checkpoints (threads survive a restart)")
    parser.add_argument("--max-body", type=int, default=1024 * 1024, help="request body limit, bytes")
    parser.add_argument("--max-threads", type=int, default=1000)
    parser.add_argument("--thread-ttl", type=float, default=3600.0, help="seconds a finished thread is kept")
    parser.add_argument("--header-timeout", type=float, default=10.0)
    args = parser.parse_args(argv)
    server = AguiServer(
        two_pause_factory(args.root),
        path=args.path,
        token=args.token,
        allowed_hosts=args.allow_host,
        allowed_origins=args.allow_origin,
        max_body=args.max_body,
        max_threads=args.max_threads,
        thread_ttl=args.thread_ttl,
        session_kwargs={"checkpoints": args.checkpoints} if args.checkpoints else None,
    )
    if server.token_generated:
        print(f"AG-UI token: {server.token}  (send 'Authorization: Bearer <token>')", flush=True)
    serve(server, args.host, args.port, header_timeout=args.header_timeout)


if __name__ == "__main__":
    main()
