"""Replay a recorded session offline, and fork it at a past pause ("what if I had denied?").

:meth:`Session.replay <Replaying.replay>` builds a new agent from a
:class:`~nb_hitl.session._recording.Recording` (the agent's memory in a
checkpoint plus the audit log): its model is :class:`~nb_hitl.models.ScriptedChatModel`
playing the recorded turns, its tools are
:class:`~nb_hitl.session._replay_tools.RecordedTool` giving back what each call
returned then (keyed by ``tool_call_id``), so nothing outside the kernel
changes. :meth:`~Replaying.play` sends the recorded user messages again; each
pause shows again as a card saying what was answered then, and a person
answers it (``answers="recorded"`` gives the recorded answers again). Every
answer, a person's or the record's, goes through ``session.act``: the front
door every click takes (:mod:`nb_hitl.answers.front`).

:meth:`~Replaying.fork` replays up to a recorded pause, giving the earlier
pauses their recorded answers, and leaves that pause open for a different
answer; the model then goes on with the recorded turns (or a model the caller
passes) and the tools stay recorded unless ``live=True``. A recorded turn that
quoted a tool result quotes what the call returned in this play
(:meth:`Recording.script <nb_hitl.session._recording.Recording.script>`), so
after another answer, or a live tool, the model says what it read.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from agentscope.agent import Agent
from agentscope.message import Msg
from agentscope.tool import AskUser, ToolBase, Toolkit

from ..answers.lifecycle import retell
from ..errors import NbHitlError
from ..kinds.form import FormTool
from ..kinds.review_tool import ReviewedTool
from ..models import ScriptedChatModel
from ..permissions.tools import tools_of
from ..store import AuditLog, CheckpointStore
from ._calls import ReplyCall, ReplyTask
from ._recording import Recording, answer_message, answer_note, whole
from ._replay_tools import Book, RecordedTool, ReplayedReview, ReplayMiddleware

if TYPE_CHECKING:
    from ..pauses import Pause
    from . import Session
    from ._run import ReplyRun

__all__ = ["Replaying", "ReplayPlan", "REPLAYED_BY"]

log = logging.getLogger("nb_hitl.session")

REPLAYED_BY = "replay (the recorded answer)"
"""``decided_by`` of an answer a replay gives from the record."""

ANSWERS = ("ask", "recorded")

GIVEN_AGAIN = " Given again from the record."
"""What a replayed pause's card adds to its recorded answer when the replay gives it again."""


@dataclass
class ReplayPlan:
    """How a replayed session plays: the record, its tools, who answers.

    Attributes:
        recording: the recorded session.
        book: what the replayed tools read (:class:`~nb_hitl.session._replay_tools.Book`).
        tools: the real tools given (their schemas; run only when live).
        answers: ``"ask"`` (a person answers every pause) or ``"recorded"``
            (the recorded answers are given again).
        fork_at: the ``tool_call_id`` of the fork's pause, or ``None``.
        model: the model that goes on after the fork's pause (``None``: the recorded turns).
        live: tools run for real from the fork's pause on.
        forked: the fork's pause has been reached.
        noted: the pauses (``"<kind>:<tool_call_id>"``) whose card already says what was answered then.
    """

    recording: Recording
    book: Book
    tools: list[ToolBase]
    answers: str = "ask"
    fork_at: str | None = None
    model: Any = None
    live: bool = False
    forked: bool = False
    noted: set[str] = field(default_factory=set)
    giving: set[asyncio.Task] = field(default_factory=set)


def replay_agent(recording: Recording, tools: Sequence[ToolBase], book: Book) -> Agent:
    """A real ``Agent`` that plays ``recording``: the recorded turns on
    :class:`~nb_hitl.models.ScriptedChatModel` (more calls than recorded get
    its "no more turns" text), a ``Toolkit`` of recorded tools, external
    tools (a person runs them: ``AskUser``) kept as they are."""
    given = {t.name: t for t in tools}
    kinds = {a.get("tool_name"): a.get("kind") for a in recording.answers.values()}
    kit: list[ToolBase] = []
    for name in [*recording.tools, *(n for n in given if n not in recording.tools)]:
        like = given.get(name)
        if isinstance(like, ReviewedTool) or (like is None and kinds.get(name) == "review"):
            inner = like.inner if isinstance(like, ReviewedTool) else RecordedTool(name, book)
            kit.append(ReplayedReview(inner, book))  # the review shows again; nothing runs
        elif like is not None and like.is_external_tool:
            kit.append(like)
        elif like is None and name == "AskUser":
            kit.append(AskUser())
        elif like is None and kinds.get(name) == "form":
            kit.append(FormTool(name))
        else:
            kit.append(RecordedTool(name, book, like=like, external=kinds.get(name) == "external"))
    return Agent(
        name=recording.agent_name,
        system_prompt="A replay of a recorded session.",
        model=ScriptedChatModel(recording.script(), on_exhausted="text"),
        toolkit=Toolkit(tools=kit),
        middlewares=[ReplayMiddleware(book)],
    )


class Replaying:
    """The replay and fork part of :class:`~nb_hitl.session.Session`."""

    replay_plan: ReplayPlan | None = None

    @classmethod
    def replay(
        cls,
        record: Recording | str | os.PathLike[str] | CheckpointStore,
        *,
        audit_log: str | os.PathLike[str] | AuditLog | None = None,
        session_id: str | None = None,
        tools: Sequence[ToolBase] | Toolkit = (),
        answers: str = "ask",
        **kwargs: Any,
    ) -> Session:
        """Play a recorded session again, with no side effects:
        ``replayed = Session.replay("checkpoints/", audit_log="audit.jsonl")``,
        then ``await replayed.play()``.

        The model's turns come from the record, every tool gives back what
        that call returned then (AgentScope ``ToolBase`` tools keyed by
        ``tool_call_id``; nothing runs), and each pause shows again as a card
        saying what was answered then.

        Args:
            record: a :class:`~nb_hitl.session._recording.Recording`, or the
                checkpoint folder (or store) the session wrote.
            audit_log: the recorded session's audit log (with a checkpoint
                folder): the answers and permission checks.
            session_id: which checkpoint; the newest when omitted.
            tools: the real tools (or ``Toolkit``): their descriptions and
                input schemas are shown; they never run in a replay.
            answers: ``"ask"`` (default): a person answers each pause (the
                card says what was answered then); ``"recorded"``: the
                recorded answers are given again, through ``session.act``.
            **kwargs: more :class:`~nb_hitl.session.Session` arguments
                (``display``, ``decided_by``...). No audit log and no
                checkpoints unless given: a replay writes nothing.

        Returns:
            the replayed session; :meth:`play` sends the recorded messages.

        Raises:
            ValueError: ``answers`` is not ``"ask"`` or ``"recorded"``.
            FileNotFoundError, CheckpointIntegrityError: see
                :meth:`Recording.load <nb_hitl.session._recording.Recording.load>`.
        """
        if answers not in ANSWERS:
            raise ValueError(f"answers must be one of {ANSWERS}, got {answers!r}")
        recording = record if isinstance(record, Recording) else Recording.load(record, session_id, audit_log=audit_log)
        return cls._open_replay(recording, list(tools_of(tools).values()), answers=answers, **kwargs)

    @classmethod
    def _open_replay(
        cls,
        recording: Recording,
        tools: list[ToolBase],
        *,
        answers: str,
        fork_at: str | None = None,
        model: Any = None,
        live: bool = False,
        **kwargs: Any,
    ) -> Session:
        book = Book(recording)
        plan = ReplayPlan(recording, book, tools, answers=answers, fork_at=fork_at, model=model, live=live)
        session = cast("Session", cls(replay_agent(recording, tools, book), **kwargs))  # type: ignore[call-arg]
        session.replay_plan = plan
        session.on_change(lambda kind, run: _on_change(session, plan, kind, run))
        return session

    def play(self) -> ReplyCall[Msg | None]:
        """Send the recorded user messages again, in order, each awaiting its
        whole reply (a :class:`~nb_hitl.session.ReplyCall`, like ``run``):
        ``final = await replayed.play()``.

        Returns:
            (when awaited) the last reply's final ``Msg``; ``None`` when the
            record holds no user message.

        Raises:
            NbHitlError: (when awaited) this session is not a replay.
        """

        async def body() -> Msg | None:
            return await self.start_play()

        return ReplyCall(body, "play()", self)

    def start_play(self) -> ReplyTask:
        """Like :meth:`play`, but return the playing task at once (the first
        reply's widget shows under the current cell, like ``session.start``;
        a :class:`~nb_hitl.session.ReplyTask`: awaiting it never cancels the play).

        Raises:
            NbHitlError: this session is not a replay.
        """
        session = cast("Session", self)
        plan = session.replay_plan
        if plan is None:
            raise NbHitlError("This Session is not a replay; make one with Session.replay(...) or fork(...).")
        prompts = [p.model_copy(deep=True) for p in plan.recording.prompts]
        first = session.start(prompts[0]) if prompts else None

        async def rest() -> Msg | None:
            final = await first if first is not None else None
            for prompt in prompts[1:]:
                final = await session.run(prompt)
            return final

        return ReplyTask(rest(), owner=session, loop=asyncio.get_running_loop())

    def recorded_answer(self, tool_call_id: str, kind: str | None = None) -> dict[str, Any] | None:
        """The page message that gives again what was answered then at this
        pause (pass it to ``session.act``), or ``None`` when the record has
        no answer for it that can be given again. ``kind``: the pause's kind
        (a reviewed call that asked first was answered twice); ``None``: the
        call's last answer."""
        plan = self.replay_plan
        if plan is None:
            return None
        line = plan.recording.answer_for(tool_call_id, kind)
        return answer_message(line, plan.recording.results.get(tool_call_id)) if line is not None else None

    def fork(
        self,
        tool_call_id: str,
        *,
        model: Any = None,
        live: bool = False,
        tools: Sequence[ToolBase] | Toolkit | None = None,
        **kwargs: Any,
    ) -> Session:
        """Go back to a past pause and answer it differently: "what if I had denied?".

        Returns a new replayed session: ``await forked.play()`` replays the
        record, giving the pauses before this one their recorded answers
        (through ``session.act``), and stops at this pause with its card
        open (it says what was answered then); the person's answer goes
        through the same front door. After it, the model is ``model`` (or
        the recorded turns) and the tools give their recorded results (a
        call with none says so as its result, nothing runs) unless ``live``.

        Works on a replayed session, and on a restored or live one (the
        record is then the agent's memory and this session's audit log).

        Args:
            tool_call_id: the recorded pause to answer differently
                (``recording.pauses()`` lists them).
            model: the model after the fork's pause (an AgentScope
                ``ChatModelBase``); ``None``: the recorded turns go on.
            live: from the fork's pause on, the real tools run (pass
                ``tools`` when this session is a replay made without them).
            tools: the real tools; default: this session's.
            **kwargs: more ``Session`` arguments (``display`` defaults to this session's).

        Raises:
            NbHitlError: the record has no answered pause with this id,
                ``live`` without the real tools, or the agent's context
                was compressed.
        """
        recording, known = self.record_of()
        return self.fork_from(recording, known, tool_call_id, model=model, live=live, tools=tools, **kwargs)

    def record_of(self) -> tuple[Recording, list[ToolBase]]:
        """This session's record and its tools: a replay's recording and the
        tools it was given, or a live (or restored) session's agent memory,
        its audit lines and its toolkit.

        Raises:
            NbHitlError: the agent's context was compressed (:func:`whole`).
        """
        session = cast("Session", self)
        plan = session.replay_plan
        if plan is not None:
            return plan.recording, plan.tools
        lines = session.audit_log.records() if session.audit_log is not None else []
        mine = [r for r in lines if r.get("session_id") in (None, session.session_id)]
        whole(session.agent.state)
        recording = Recording.read(session.agent.name, session.agent.state.context, mine)
        return recording, list(tools_of(session.agent.toolkit).values())

    def fork_from(
        self,
        recording: Recording,
        known: list[ToolBase],
        tool_call_id: str,
        *,
        model: Any = None,
        live: bool = False,
        tools: Sequence[ToolBase] | Toolkit | None = None,
        **kwargs: Any,
    ) -> Session:
        """:meth:`fork` on a given record (``known``: its tools); the same arguments and errors."""
        session = cast("Session", self)
        if tool_call_id not in recording.answers:
            have = ", ".join(recording.pauses()) or "none"
            raise NbHitlError(f"No recorded pause {tool_call_id!r} to fork at; the recorded pauses are: {have}.")
        chosen = list(tools_of(tools).values()) if tools is not None else known
        if live and not [t for t in chosen if not t.is_external_tool]:
            raise NbHitlError("fork(live=True) runs the real tools: pass them as tools=[...].")
        kwargs.setdefault("display", session.display)
        return type(session)._open_replay(
            recording, chosen, answers="recorded", fork_at=tool_call_id, model=model, live=live, **kwargs
        )


def _on_change(session: Session, plan: ReplayPlan, kind: str, run: ReplyRun) -> None:
    """A new pause of a replay: say on its card what was answered then, and
    give the recorded answer again when the plan says so (before the fork)."""
    if kind != "pause":
        return
    for pause in list(run.pauses.values()):
        call_id = pause.tool_call_id
        # a reviewed call that asked first pauses twice under one id: each pause gets its own answer
        key = f"{pause.kind}:{call_id}"
        if key in plan.noted or pause.status != "open":
            continue
        plan.noted.add(key)
        line = plan.recording.answer_for(call_id, pause.kind)
        message = answer_message(line, plan.recording.results.get(call_id)) if line is not None else None
        auto = plan.answers == "recorded" and not plan.forked and call_id != plan.fork_at and message is not None
        if call_id == plan.fork_at:
            plan.forked = True
            plan.book.live = plan.live
            if plan.model is not None:
                session.agent.model = plan.model
            note = "What if: answer this pause differently. " + (answer_note(line) if line else "")
        elif line is None:
            note = "The record has no answer for this pause: answer it."
        else:
            note = answer_note(line) + (GIVEN_AGAIN if auto else "")
        pause.message = f"{note}\n\n{pause.message}" if pause.message else note
        if auto and message is not None:
            task = asyncio.get_running_loop().create_task(_give(session, run, pause, message))
            plan.giving.add(task)  # held until done
            task.add_done_callback(plan.giving.discard)


async def _give(session: Session, run: ReplyRun, pause: Pause, message: dict[str, Any]) -> None:
    """Give a recorded answer through the front door (``session.act``); a
    refusal leaves the card open for a person, says so on it (instead of
    :data:`GIVEN_AGAIN`), and is logged."""
    try:
        await session.act(message, decided_by=REPLAYED_BY)
    except Exception as exc:
        log.warning("the recorded answer to %s was refused", message.get("tool_call_id"), exc_info=True)
        shown = pause.message or ""
        if pause.status == "open" and GIVEN_AGAIN in shown:
            said = f" The recorded answer was refused this time ({exc}); answer it yourself."
            retell(pause, shown.replace(GIVEN_AGAIN, said, 1))
            session._push(run)
