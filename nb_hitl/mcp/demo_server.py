"""A small MCP server for the MCP notebook, written with the MCP SDK's own ``MCPServer``.

Run as ``python -m nb_hitl.mcp.demo_server`` (stdio; what
:class:`~nb_hitl.mcp.AskingMCPClient` starts as a subprocess). A meeting
calendar kept in the server's memory (it starts with "Weekly sync"):

* ``list_meetings()``: read-only, asks nothing.
* ``book_meeting(topic)``: asks the person for a form (MCP elicitation, form
  mode): the day (a choice), the length in minutes (15 to 120) and whether
  it is in person. Through a resolver (``Resolve`` / ``Elicit``), so it asks
  on either protocol: a server-sent ``elicitation/create`` on a legacy
  connection, an input-required result on a current one.
* ``cancel_meeting(topic)``: declared destructive (``destructiveHint``);
  asks nothing itself (a client's policy may ask first).
* ``connect_calendar()``: sends the person to a sign-in page (MCP
  elicitation, URL mode). The page's address is for the person only: the
  tool's result says what the person answered, never the address. The
  answer is only the person's word: *Done* (MCP's ``accept``) says they
  finished on the page, and a real server would then check with the
  provider before it calls the calendar connected. The address is a
  demonstration one (``calendar.example.com`` serves no sign-in page and
  there is no provider to check with), so the result says the calendar is
  not connected, whatever the answer. Legacy connection: ``ctx.elicit_url``; current
  protocol: an input-required result carrying the URL request, read back
  from ``ctx.input_responses`` on the retry.
"""

from __future__ import annotations

from typing import Annotated, Literal

import mcp_types as types
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

__all__ = ["server", "SIGN_IN_URL", "NOT_CHECKED"]

SIGN_IN_URL = "https://calendar.example.com/connect?client=nb-hitl-demo"
"""Where ``connect_calendar`` sends the person (a demonstration address)."""

CURRENT = "2026-07-28"
"""The protocol version from which a server asks through input-required results."""

_SIGN_IN = "sign-in"
_MEETINGS: dict[str, str] = {"Weekly sync": "Monday, 30 minutes, in person"}


class Slot(BaseModel):
    """The form ``book_meeting`` asks for."""

    day: Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"] = Field(description="Day of the meeting")
    minutes: int = Field(description="Length in minutes", ge=15, le=120)
    in_person: bool = Field(default=False, description="In person (else a call)")


server = MCPServer("calendar")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def list_meetings() -> str:
    """List the booked meetings."""
    return "; ".join(f"{topic} ({when})" for topic, when in _MEETINGS.items()) or "No meetings."


def ask_slot(topic: str) -> Elicit[Slot]:
    """The resolver of ``book_meeting``'s ``slot``: the form to ask for (the SDK sends it)."""
    return Elicit(f"When should {topic!r} take place?", Slot)


@server.tool(annotations=types.ToolAnnotations(destructive_hint=False, idempotent_hint=False, open_world_hint=False))
async def book_meeting(topic: str, slot: Annotated[ElicitationResult[Slot], Resolve(ask_slot)]) -> str:
    """Book a meeting on a topic (asks the user for the day and length)."""
    if not isinstance(slot, AcceptedElicitation):
        return f"Not booked: the user chose {slot.action}."
    got = slot.data
    _MEETINGS[topic] = f"{got.day}, {got.minutes} minutes, {'in person' if got.in_person else 'a call'}"
    return f"Booked {topic!r}: {_MEETINGS[topic]}."


@server.tool(annotations=types.ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False))
async def cancel_meeting(topic: str) -> str:
    """Cancel a booked meeting."""
    if _MEETINGS.pop(topic, None) is None:
        return f"There is no meeting {topic!r}."
    return f"Cancelled {topic!r}."


NOT_CHECKED = (
    "Not connected yet: the user says they finished on the sign-in page (they accepted), but no provider "
    "confirmed a sign-in: calendar.example.com is a demonstration address."
)
"""What ``connect_calendar`` returns for Done: the person's word, which this server cannot check."""


def _said(result: types.ElicitResult | None) -> str:
    """What ``connect_calendar`` returns for the person's answer (never the address)."""
    if result is not None and result.action == "accept":
        return NOT_CHECKED
    return f"Not connected: the user chose {result.action if result is not None else 'nothing'}."


@server.tool(annotations=types.ToolAnnotations(destructive_hint=False, open_world_hint=True))
async def connect_calendar(ctx: Context) -> str | types.InputRequiredResult:
    """Connect the user's calendar (the user signs in on the provider's page)."""
    message = "Sign in to your calendar provider to connect it."
    if is_version_at_least(ctx.protocol_version or "", CURRENT):  # no server-sent requests: input-required
        got = (ctx.input_responses or {}).get(_SIGN_IN)
        if not isinstance(got, types.ElicitResult):
            request = types.ElicitRequest(
                params=types.ElicitRequestURLParams(message=message, url=SIGN_IN_URL, elicitation_id=_SIGN_IN)
            )
            return types.InputRequiredResult(input_requests={_SIGN_IN: request}, request_state=_SIGN_IN)
        return _said(got)
    result = await ctx.elicit_url(message, SIGN_IN_URL, _SIGN_IN)
    return _said(types.ElicitResult(action=result.action))


_AGENDAS: dict[str, str] = {}


def ask_agenda(topic: str) -> Sample:
    """The resolver of ``draft_agenda``'s ``draft``: the completion to ask the client's model for."""
    return Sample(
        [
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=f"Write a three-item agenda for {topic!r}.")
            )
        ],
        max_tokens=200,
        system_prompt="You write short meeting agendas.",
        model_preferences=types.ModelPreferences(hints=[types.ModelHint(name="small")], speed_priority=0.8),
    )


@server.tool(annotations=types.ToolAnnotations(destructive_hint=False, idempotent_hint=False, open_world_hint=False))
async def draft_agenda(topic: str, draft: Annotated[types.CreateMessageResult, Resolve(ask_agenda)]) -> str:
    """Draft the agenda of a meeting (asks the client's model)."""
    text = draft.content.text if isinstance(draft.content, types.TextContent) else ""
    _AGENDAS[topic] = text
    return f"Agenda for {topic!r} saved: {text}"


if __name__ == "__main__":
    server.run("stdio")
