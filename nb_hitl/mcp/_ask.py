"""An MCP server's question becomes a pause card; the person's answer goes back to it.

:func:`open_card` builds a pause under the running tool call of the Session
that drives the agent, shows it, and waits: it is shared by
:func:`ask_person` (what :class:`~nb_hitl.mcp.AskingMCPClient`'s elicitation
callback awaits; kind ``elicitation``, :mod:`nb_hitl.kinds.elicitation`) and
the sampling review (:mod:`nb_hitl.mcp._sampling`; kind ``sampling``). The answer takes the
front door like every other (``Session.act``, a click: ``front.admit``,
``front.verify``, the audit record); the Session hands it to the pause's
:class:`Carrier` instead of resuming the agent (the agent is inside the tool
call, awaiting its result). The server reads MCP's ``ElicitResult``:
``accept`` with the checked content, ``decline`` or ``cancel``.

Nobody chose (the deadline passed, the reply was interrupted, the session
was closed or superseded): the server reads ``cancel`` (a sampling request:
an error), the pause says why, and the audit log has a ``cancelled`` line. The server stops while asking
(its request is cancelled on a legacy connection; the connection's watcher
sees it close on the current protocol) or the call is cancelled: the card
expires with that reason and nothing is sent. The kernel shuts down
(:mod:`nb_hitl.mcp._shutdown`): the card expires saying so and the server gets
an MCP error, since nobody will ever answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from agentscope.message import ToolCallBlock

from ..answers.lifecycle import transition
from ..kinds import Decision, kind_spec
from ..pauses import UNANSWERED, Pause
from ._shutdown import WAITING, Unanswered

__all__ = ["ask_person", "open_card", "Carrier", "ELICITATION_SEP", "session_of"]

log = logging.getLogger("nb_hitl.mcp")

ELICITATION_SEP = "~elicitation-"
"""An elicitation pause's key is ``<tool_call_id>~elicitation-<n>`` (the
``n``-th question of that call): a tool call may be asked several times, and
its confirmation card keeps its own key."""

CANCEL = types.ElicitResult(action="cancel")


class Carrier:
    """Takes an elicitation pause's answer to the MCP callback waiting for it
    (``Pause.carrier``). Safe to call from any thread; the first word wins.

    Args:
        loop: the loop the MCP callback waits on.
        told: what the server is told when the pause ends unanswered (a
            sentence the card adds to the expiry's reason; ``""`` once
            nothing will be sent).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, told: str = "") -> None:
        self.loop = loop
        self.told = told
        self.future: asyncio.Future[Decision | str] = loop.create_future()

    def _settle(self, value: Decision | str) -> None:
        def settle() -> None:
            if not self.future.done():
                self.future.set_result(value)

        try:
            if asyncio.get_running_loop() is self.loop:
                settle()
                return
        except RuntimeError:
            pass
        self.loop.call_soon_threadsafe(settle)

    def deliver(self, decision: Decision) -> None:
        """The person's (or the deadline's) decision, recorded."""
        self._settle(decision)

    def expired(self, reason: str) -> str:
        """The pause ended without an answer (``reason`` says why).

        Returns:
            what the card says (:func:`~nb_hitl.answers.lifecycle.transition`
            sets it as the reason): ``reason`` and what the server is told,
            or only ``reason`` when an answer went first or nothing is sent.
        """
        first = not self.future.done()
        self._settle(reason)
        return f"{reason} {self.told}" if first and self.told else reason

    def unanswerable(self, reason: Unanswered) -> None:
        """Nobody will ever answer (the kernel shuts down): the server gets an MCP error."""
        self._settle(reason)


def session_of(agent: Any) -> Any:
    """The live nb_hitl Session driving ``agent`` (its leader or a team member), or ``None``."""
    from ..session import _SESSIONS

    found = _SESSIONS.get(agent)
    if found is None:
        found = next((s for s in list(_SESSIONS.values()) if agent in s.team.agents.values()), None)
    return found if found is not None and found.superseded_by is None else None


def result_of(decision: Decision) -> types.ElicitResult:
    """MCP's ``ElicitResult`` for a decision of kind ``elicitation``."""
    if decision.action == "accept" and decision.content is None:  # URL mode: done, nothing to send
        return types.ElicitResult(action="accept")
    if decision.action == "accept":
        return types.ElicitResult(action="accept", content=decision.content)
    if decision.action == "decline":
        return types.ElicitResult(action="decline")
    return CANCEL


def numbered(run: Any, prefix: str) -> str:
    """``<prefix><n>``: the next free number among ``run``'s pause keys of that prefix."""
    return f"{prefix}{1 + sum(1 for key in run.pauses if key.startswith(prefix) and key[len(prefix) :].isdigit())}"


async def open_card(
    session: Any,
    agent: Any,
    tool_call: ToolCallBlock,
    *,
    key: Callable[[Any], str],
    server: str,
    told: str,
    gone: Callable[[], Awaitable[str]] | None = None,
    **fields: Any,
) -> Decision | str:
    """Show a pause that an MCP server raised under ``tool_call``, and wait for its answer.

    Args:
        session: the :class:`~nb_hitl.session.Session` driving ``agent``.
        agent: the agent whose tool call is running.
        tool_call: the running call (AgentScope's block).
        key: the pause's key from the current reply run (e.g. :func:`numbered`).
        server: the MCP client's name (in what the card says).
        told: what the server is told when nobody answers (said on the card).
        gone: returns (with the reason) once the connection to the server
            is lost: the card then expires saying so, and nothing is sent.
        fields: the :class:`~nb_hitl.pauses.Pause` fields of its kind
            (``kind``, ``title``, ``message``...); the kind completes it.

    Returns:
        the person's (or the deadline's) :class:`Decision`, recorded; or,
        when the pause ended unanswered or no reply takes answers, why (a
        sentence; an :class:`~nb_hitl.mcp._shutdown.Unanswered` when the kernel
        shuts down: the server is then answered with an MCP error).

    Raises:
        asyncio.CancelledError: the MCP request was cancelled (the card
            expires saying so).
    """
    if WAITING.reason is not None:
        log.warning("MCP server %r asked while the kernel shuts down: answered with an error", server)
        return Unanswered(WAITING.reason)
    run = session.current
    closed = session.desk.closed(run) if run is not None else "nothing runs"
    if closed is not None:
        log.warning("MCP server %r asked while no reply takes answers (%s): %s", server, closed, told)
        return f"No reply takes answers ({closed})."
    loop = asyncio.get_running_loop()
    carrier = Carrier(loop, told)
    with session._lock:
        pause = Pause(
            reply_id=agent.state.reply_id if session.team.is_pipeline else run.reply_id,
            tool_call=ToolCallBlock(id=key(run), name=tool_call.name, input=tool_call.input),
            agent=agent.name if session.team.is_pipeline else "",
            carrier=carrier,
            parent_tool_call_id=tool_call.id,
            **fields,
        )
        kind_spec(pause.kind).complete(pause)
        run.pauses[pause.tool_call_id] = pause
    if session.deadline is not None:
        pause.deadline = pause.created_at + session.deadline
        loop.call_later(session.deadline, session.desk.deadline_passed, run, pause)
    session._opened(run, pause)
    session._push(run)
    WAITING.add(carrier)
    watch = asyncio.ensure_future(gone()) if gone is not None else None
    waiting: set[asyncio.Future[Any]] = {carrier.future} if watch is None else {carrier.future, watch}
    lost: str | None = None
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not carrier.future.done() and watch is not None and watch.done() and watch.exception() is None:
            lost = f"The MCP server {server!r} stopped while asking ({watch.result()}); nothing was sent."
            carrier.told = ""
            if pause.status in UNANSWERED:
                transition(pause, "expired", reason=lost)
        outcome = await carrier.future
    except asyncio.CancelledError:
        carrier.told = ""
        if pause.status in UNANSWERED:
            transition(
                pause,
                "expired",
                reason=f"The MCP server {server!r} ended its request before an answer was sent "
                "(it stopped, or the call was cancelled); nothing was sent.",
            )
            session._push(run)
        raise
    finally:
        WAITING.discard(carrier)
        if watch is not None:
            watch.cancel()
    if isinstance(outcome, Decision):
        return outcome
    if isinstance(outcome, Unanswered):  # the server reads the reason; the card and the audit line what it was told
        said = f"{outcome} The MCP server was answered with an error."
        if pause.status in UNANSWERED:
            transition(pause, "expired", reason=said)
        session._audit_pause(pause, decision="expired", reason=said, decided_by="nb_hitl")
        session._push(run)
        return outcome
    if lost is not None:
        session._audit_pause(pause, decision="expired", reason=lost, decided_by="nb_hitl")
        session._push(run)
        return lost  # nobody reads it: the connection is gone
    # ended unanswered: the card says what the server was told (Carrier.expired), so does the audit log,
    # unless the question's answer is on record already (a deadline that stopped the reply): one line a question
    if pause.decision is None:
        try:
            session._audit_pause(pause, decision="cancelled", reason=pause.reason, decided_by="nb_hitl")
        except Exception:
            log.warning("the audit record of an unanswered MCP request failed", exc_info=True)
    session._push(run)
    return pause.reason or outcome


async def ask_person(
    session: Any,
    agent: Any,
    tool_call: ToolCallBlock,
    *,
    server: str,
    message: str,
    schema: Any,
    url: str | None = None,
    gone: Callable[[], Awaitable[str]] | None = None,
) -> types.ElicitResult | types.ErrorData:
    """Show an MCP server's question under ``tool_call`` and wait for the answer (:func:`open_card`).

    Args:
        session: the :class:`~nb_hitl.session.Session` driving ``agent``.
        agent: the agent whose tool call is running.
        tool_call: the running call (AgentScope's block).
        server: the MCP client's name (shown: who asks).
        message: the server's question (shown as text).
        schema: the server's ``requestedSchema`` (untrusted; form mode).
        url: URL mode: the page the server sends the person to (untrusted:
            checked by :func:`nb_hitl.kinds.elicitation.url_problem`, shown
            as text, opened only by the person's click); ``schema`` is then
            ignored. The server reads only accept (done), decline or cancel.
        gone: returns (with the reason) once the connection to the server
            is lost: the card then expires saying so, and nothing is sent.

    Returns:
        the ``ElicitResult`` for the server: the person's answer, or
        ``cancel`` when the pause ended unanswered or the reply takes no
        answer any more; ``ErrorData`` when nobody ever will (the kernel
        shuts down).

    Raises:
        asyncio.CancelledError: the MCP request was cancelled (the card
            expires saying so).
    """
    got = await open_card(
        session,
        agent,
        tool_call,
        key=lambda run: numbered(run, tool_call.id + ELICITATION_SEP),
        server=server,
        told="The MCP server was answered 'cancel'.",
        gone=gone,
        kind="elicitation",
        title=f"The MCP server {server!r} " + ("sends you to a page" if url is not None else "asks"),
        message=message,
        response_schema=schema if isinstance(schema, dict) and url is None else None,
        elicitation_url=url,
        form_error="The server sent no schema object." if url is None and not isinstance(schema, dict) else None,
    )
    if isinstance(got, Unanswered):
        return types.ErrorData(code=types.INTERNAL_ERROR, message=got)
    return result_of(got) if isinstance(got, Decision) else CANCEL
