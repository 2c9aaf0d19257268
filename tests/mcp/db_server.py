"""A small MCP server for the tests, written with the MCP SDK's own ``MCPServer``.

Run as ``python db_server.py LOG`` (stdio) or ``python db_server.py LOG PORT``
(streamable HTTP on 127.0.0.1:PORT, path ``/mcp``). Each tool asks the person through
elicitation and appends what it got to ``LOG`` (one JSON object a line), so a
test reads what really reached the server.

* ``delete_rows(table)``: asks "Delete all rows of <table>?" with a boolean
  field ``confirm``, through a resolver (``Resolve`` / ``Elicit``): the SDK
  sends it as a standalone ``elicitation/create`` request on a legacy
  connection and as an input-required result on a current one.
* ``delete_rows_ctx(table)``: the same question with ``ctx.elicit`` (legacy only); it
  notes when it asks and how a question that got no answer ended.
* ``rename_table(table)``: asks twice in one call (a confirmation, then the new name).
* ``count_rows(table)``: read-only, asks nothing.
* ``sign_in(account)``: sends the person to the server's own sign-in page for
  ``account`` (:data:`SIGN_IN_PAGES`; URL-mode elicitation):
  ``ctx.elicit_url`` on a legacy connection, an input-required result
  carrying the URL request on a current one (read back from
  ``ctx.input_responses`` on the retry). Its result names the answer, never the URL.
* ``summarize_table(table)``: asks the client's model for a one-line summary
  (MCP sampling, through a ``Sample`` resolver: a server-sent
  ``sampling/createMessage`` on a legacy connection, an input-required
  result on a current one) and returns it; it notes what it got.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from mcp_types import (
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

LOG = sys.argv[1] if len(sys.argv) > 1 else os.devnull


class Confirm(BaseModel):
    confirm: bool = Field(description="Delete every row")


class NewName(BaseModel):
    name: str = Field(description="The table's new name", min_length=1, max_length=40)


def note(**entry: object) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def outcome(result: object) -> dict[str, object]:
    if isinstance(result, AcceptedElicitation):
        return {"action": "accept", "data": result.data.model_dump()}
    return {"action": getattr(result, "action", "?")}


server = MCPServer("customers-db")


def ask_delete(table: str) -> Elicit[Confirm]:
    return Elicit(f"Delete all rows of {table}?", Confirm)


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False))
async def delete_rows(table: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_delete)]) -> str:
    """Delete every row of a table (asks the user first)."""
    got = outcome(answer)
    note(tool="delete_rows", table=table, **got)
    if got["action"] == "accept":
        return (
            f"Deleted all rows of {table}."
            if got["data"]["confirm"]
            else f"Kept the rows of {table}: the user said no."
        )
    return f"Nothing deleted: the user chose {got['action']}."


@server.tool()
async def delete_rows_ctx(table: str, ctx: Context) -> str:
    """Delete every row of a table (asks the user first, with ctx.elicit).

    Notes ``{"event": "asking"}`` before it asks and, when the question ends in
    an error or is cancelled, ``{"event": "ended", "error": ...}`` (a test reads
    how a question ended that no answer reached)."""
    note(event="asking", of="delete_rows_ctx", table=table)
    try:
        answer = await ctx.elicit(f"Delete all rows of {table}?", Confirm)
    except BaseException as exc:  # an MCP error answer, or the handler cancelled
        note(event="ended", of="delete_rows_ctx", error=f"{type(exc).__name__}: {exc}")
        raise
    got = outcome(answer)
    note(tool="delete_rows_ctx", table=table, **got)
    return f"The user chose {got['action']}."


def ask_rename(table: str) -> Elicit[Confirm]:
    return Elicit(f"Rename {table}?", Confirm)


def ask_name(table: str, sure: Annotated[ElicitationResult[Confirm], Resolve(ask_rename)]) -> Elicit[NewName]:
    note(tool="rename_table", step="first", **outcome(sure))
    return Elicit(f"New name for {table}?", NewName)


@server.tool()
async def rename_table(table: str, name: Annotated[ElicitationResult[NewName], Resolve(ask_name)]) -> str:
    """Rename a table (asks twice)."""
    got = outcome(name)
    note(tool="rename_table", step="second", **got)
    return (
        f"Renamed {table} to {got['data']['name']}." if got["action"] == "accept" else f"Not renamed ({got['action']})."
    )


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def count_rows(table: str) -> str:
    """Count the rows of a table."""
    return f"{table} has 3 rows."


SIGN_IN_PAGES = {
    "alice": "https://console.db.example/sign-in?session=7f3a",
    "mallory": "https://console.db.example@evil.example/sign-in",  # a user name before the host
}


@server.tool()
async def sign_in(account: str, ctx: Context) -> str | InputRequiredResult:
    """Send the user to the sign-in page of an account."""
    url = SIGN_IN_PAGES[account]
    message = "Sign in to the database console."
    if is_version_at_least(ctx.protocol_version or "", "2026-07-28"):
        got = (ctx.input_responses or {}).get("sign-in")
        if not isinstance(got, ElicitResult):
            request = ElicitRequest(params=ElicitRequestURLParams(message=message, url=url, elicitation_id="sign-in"))
            return InputRequiredResult(input_requests={"sign-in": request}, request_state="sign-in")
        action, content = got.action, got.content
    else:
        result = await ctx.elicit_url(message, url, "sign-in")
        action, content = result.action, None
    note(tool="sign_in", action=action, **({"content": content} if content is not None else {}))
    return "Signed in." if action == "accept" else f"Not signed in: the user chose {action}."


def ask_summary(table: str) -> Sample:
    return Sample(
        [
            SamplingMessage(
                role="user", content=TextContent(type="text", text=f"Summarize the table {table} in one line.")
            )
        ],
        max_tokens=50,
        system_prompt="You summarize database tables.",
        model_preferences=ModelPreferences(hints=[ModelHint(name="small")], speed_priority=0.8),
        temperature=0.2,
        stop_sequences=["END"],
    )


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def summarize_table(table: str, summary: Annotated[CreateMessageResult, Resolve(ask_summary)]) -> str:
    """Summarize a table (asks the client's model)."""
    text = summary.content.text if isinstance(summary.content, TextContent) else "?"
    note(tool="summarize_table", table=table, text=text, model=summary.model)
    return f"Summary of {table}: {text}"


if __name__ == "__main__":
    note(event="started", pid=os.getpid())
    if len(sys.argv) > 2:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
