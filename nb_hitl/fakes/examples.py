"""Small ready-made scripts for the fake model servers (``--script nb_hitl.fakes.examples:NAME``).

Each is a function returning a fresh list of turns, usable in a thread
(``FakeOpenAIServer(confirm_delete())``) or from the command line.
"""

from __future__ import annotations

from ..models import Turn, tool_call
from .script import FakeScriptItem, wire_tool_results

__all__ = ["hello", "confirm_delete", "ask_then_delete"]


def hello() -> list[FakeScriptItem]:
    """One text answer, then the same answer to every later request."""
    return [Turn("Hello from the fake model server.")] * 100


def confirm_delete(path: str = "notes.txt") -> list[FakeScriptItem]:
    """Call ``delete_file(path=...)`` (a tool that asks), then report the tool's result."""
    return [
        Turn(f"I will delete {path}.", [tool_call("delete_file", path=path)]),
        lambda messages: Turn(f"The tool said: {(wire_tool_results(messages) or ['nothing'])[-1]}"),
    ]


def ask_then_delete() -> list[FakeScriptItem]:
    """Ask which file with AgentScope's ``AskUser``, delete the answer, report."""

    def delete(messages: list[dict]) -> Turn:
        answer = (wire_tool_results(messages) or [""])[-1]
        chosen = "notes.txt" if "notes.txt" in answer else "draft.md"
        return Turn(f"Deleting {chosen}.", [tool_call("delete_file", path=chosen)])

    return [
        Turn(
            "Which one?",
            [
                tool_call(
                    "AskUser",
                    questions=[
                        {
                            "question": "Which file should I delete?",
                            "header": "Cleanup",
                            "options": [
                                {"label": "notes.txt", "description": "meeting notes"},
                                {"label": "draft.md", "description": "a draft"},
                            ],
                        }
                    ],
                )
            ],
        ),
        delete,
        lambda messages: Turn(f"Done: {(wire_tool_results(messages) or ['nothing'])[-1]}"),
    ]
