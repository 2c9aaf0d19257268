"""``PermissionExplorer``: an agent's permission rules, live, in a notebook.

The widget only carries data between the page and
:mod:`nb_hitl.permissions`, which asks AgentScope's real
``PermissionEngine``. Every page action is answered (``RequestWidget``) and
re-reads the agent's context afterwards, so rules accepted through "Always
allow" in a confirmation (``Agent._handle_incoming_event`` ->
``PermissionEngine.add_rule``) show up on the next action or refresh, and,
with ``watch=True`` (the default inside a running kernel), by themselves
within ``watch_interval`` seconds. The page actions and their answers are
listed on :class:`PermissionExplorer`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any

import traitlets

from .. import permissions as perm
from .._agentscope import permission_engine
from ..errors import DecisionError
from ..markdown import markdown_html
from ..permissions.rules import context_fingerprint
from ..permissions.tools import MAX_INPUT_DEPTH, nesting_exceeds, tools_of
from ..store import AuditLog
from ._base import RequestWidget
from ._replay import ReplayDesk

__all__ = ["PermissionExplorer", "MAX_MATRIX_CALLS"]

log = logging.getLogger(__name__)

_SOURCE = "nb_hitl"

WATCH_BUSY_FACTOR = 10
"""The watch loop waits at least this many times as long as its last read took."""

MAX_MATRIX_CALLS = 100
"""How many calls the page's ``matrix`` action may ask for (five modes each, a few ms a call):
the explorer decides them again on every rule change it sees, so a pasted log of thousands of
calls would keep the kernel busy for seconds each time. :func:`nb_hitl.permissions.mode_matrix`
called from code takes any number."""


class PermissionExplorer(RequestWidget):
    """Explore and edit an AgentScope agent's permission rules, live.

    Page actions (``{"request_id", "action", ...}``) and their answers
    (besides ``request_id`` and ``ok``):

    ============================  ==========================================  ============================
    action                        fields                                      answer
    ============================  ==========================================  ============================
    ``refresh``                   --                                          ``context``
    ``set_mode``                  ``mode``                                    ``context``
    ``add_rule``                  ``rule`` (PermissionRule dict)              ``context``, ``rule``
    ``remove_rule``               ``rule``                                    ``context``
    ``edit_rule``                 ``old``, ``new``                            ``context``, ``rule``
    ``add_working_directory``     ``path``                                    ``context``
    ``remove_working_directory``  ``path``                                    ``context``
    ``try_call``                  ``tool_name``, ``input`` (dict or JSON),    ``result`` (see
                                  optional ``mode``                           :func:`nb_hitl.permissions.try_call`)
    ``matrix``                    ``calls`` ([{tool_name, input}])            ``matrix``
    ``explain``                   ``rule``, ``tool_name``, ``input``          ``text``
    ``reach``                     ``rule``                                    ``text`` (one line,
                                                                              :func:`nb_hitl.permissions.rule_reach`)
    ``export``                    --                                          ``text``
    ``import``                    ``text``, optional ``replace``              ``count``, ``context``
    ``replay``                    optional ``rules`` (rules file text),       ``replay`` (the trait), or
                                  optional ``mode``                           ``superseded`` (a newer
                                                                              replay cancelled it)
    ``replay_page``               ``offset``, ``only_changed``                ``page``
                                                                              (:meth:`ReplayDesk.page`)
    ``replay_export``             --                                          ``text`` (the last replay's
                                                                              candidate as a rules file)
    ============================  ==========================================  ============================

    ``context`` in an answer is the view without its rule lists (the rules
    reach the page through the ``rules_json`` trait).

    After a change (rule, mode, working directory, import) the last "Try a
    call" and the matrix are decided again, so the page shows at once what
    the change does to the agent's next call.

    Args:
        agent: an ``agentscope.agent.Agent``. Its own engine's context
            (``agent._engine.context``, see
            :func:`nb_hitl._agentscope.permission_context`) is shown and changed;
            tools come from ``agent.toolkit``.
        watch: re-read the context every ``watch_interval`` seconds while
            a loop runs (the kernel's), so changes made elsewhere (an
            "Always allow", code setting the mode) appear by themselves.
            Needs a running event loop at construction; ignored otherwise.
        watch_interval: seconds between two reads (default 0.5).
        history: a recorded audit log (:class:`~nb_hitl.store.AuditLog` or
            its path): the ``replay`` action replays its calls against the
            rules and mode shown, or against candidate rules typed in the
            page (:func:`nb_hitl.audit.replay`), so the page shows which
            recorded decisions they would change. The whole result stays in
            the kernel (:attr:`replays`); the page gets one page of rows at a time.

    Raises:
        TypeError: for an object without a permission engine, or unknown
            keyword arguments.

    Traits:
        context (dict, :func:`nb_hitl.permissions.describe_context`; kept in
        the kernel, not synced). Synced to the page: agent_name (str);
        context_view (``context`` without its ``rules`` and ``by_tool``);
        rules_json (str: ``context["rules"]`` as JSON text: one string
        instead of thousands of dicts, which ipywidgets would walk one by one
        when syncing);
        tools (list, :func:`nb_hitl.permissions.list_tools`);
        last_try (dict, a :func:`nb_hitl.permissions.try_call` result or {});
        matrix (dict, a :func:`nb_hitl.permissions.mode_matrix` result or {});
        matrix_calls (list of {tool_name, input}); revision (int, bumped on every refresh);
        history_name (str: the recorded log's file name, empty without one);
        replay (dict, the last replay's summary or {}:
        :meth:`nb_hitl.widgets._replay.ReplayDesk.summary`, with the first
        page of changed calls).
    """

    _page_code = "permissions"
    _repr_fields = ("agent_name",)

    agent_name = traitlets.Unicode("").tag(sync=True)
    context = traitlets.Dict()
    context_view = traitlets.Dict().tag(sync=True)
    rules_json = traitlets.Unicode("[]").tag(sync=True)
    tools: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    last_try = traitlets.Dict().tag(sync=True)
    matrix = traitlets.Dict().tag(sync=True)
    matrix_calls: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    revision = traitlets.Int(0).tag(sync=True)
    history_name = traitlets.Unicode("").tag(sync=True)
    replay = traitlets.Dict().tag(sync=True)

    _watch_task: asyncio.Task | None = None
    _replays: ReplayDesk | None = None

    def __init__(
        self,
        agent: Any,
        *,
        watch: bool = True,
        watch_interval: float = 0.5,
        history: AuditLog | str | os.PathLike[str] | None = None,
    ) -> None:
        permission_engine(agent)  # TypeError early for anything without an engine
        self._agent = agent
        self._history = history if history is None or isinstance(history, AuditLog) else AuditLog(history)
        self._last_try_request: dict[str, Any] | None = None
        self._fingerprint: tuple[Any, ...] = ()
        super().__init__(
            handler=self._handle,
            agent_name=str(getattr(agent, "name", "") or ""),
            tools=perm.list_tools(getattr(agent, "toolkit", None)),
        )
        self.history_name = self._history.path.name if self._history is not None else ""
        self._replays = (
            ReplayDesk(self._history, agent, lambda: self.known_tools) if self._history is not None else None
        )
        self.refresh()
        self.watch_interval = float(watch_interval)
        if watch:
            self.watch()

    # -- public ------------------------------------------------------------
    @property
    def agent(self) -> Any:
        """The agent explored."""
        return self._agent

    @property
    def known_tools(self) -> list[str]:
        """Names of the tools in ``agent.toolkit`` (rules for other names are refused)."""
        return [t["name"] for t in self.tools]

    def refresh(self) -> dict[str, Any]:
        """Re-read the agent's live permission context into the ``context``,
        ``context_view`` and ``rules_json`` traits (and the toolkit's tools
        into ``tools``).

        Returns:
            dict: the new :func:`nb_hitl.permissions.describe_context` view.
        """
        view = perm.describe_context(self._agent)
        self._fingerprint = context_fingerprint(self._agent)
        tools = perm.list_tools(getattr(self._agent, "toolkit", None))
        if tools != self.tools:  # tools added to the toolkit after construction
            self.tools = tools
        self.context = view
        self.rules_json = json.dumps(view["rules"], ensure_ascii=False)
        self.context_view = _summary(view)
        self.revision = self.revision + 1
        return view

    async def refresh_all(self) -> dict[str, Any]:
        """Re-read the context, then decide the last tried call and the
        matrix again with the current rules and mode."""
        view = self.refresh()
        if self._last_try_request is not None:
            try:
                self.last_try = await perm.try_call(self._agent, None, **self._last_try_request)
            except DecisionError as exc:  # e.g. the tool was removed from the toolkit
                self.last_try = {"error": str(exc), "field": exc.field}
        if self.matrix_calls:
            try:
                self.matrix = await perm.mode_matrix(self.matrix_calls, None, self._agent)
            except DecisionError as exc:
                self.matrix = {"error": str(exc), "field": exc.field}
        return view

    def watch(self) -> asyncio.Task | None:
        """Start re-reading the context every ``watch_interval`` seconds on the
        running loop (no-op without one, or if already watching).

        Returns:
            the watching task, or ``None``.
        """
        if self._watch_task is not None and not self._watch_task.done():
            return self._watch_task
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        self._watch_task = loop.create_task(self._watch_loop())
        return self._watch_task

    def unwatch(self) -> None:
        """Stop the watching task."""
        if self._watch_task is not None:
            self._watch_task.cancel()
            self._watch_task = None

    async def poll_once(self) -> bool:
        """Re-read the context once; if it changed since the last read,
        update the page (and the last try and matrix).

        Returns:
            bool: whether something changed.
        """
        if context_fingerprint(self._agent) == self._fingerprint:
            return False
        await self.refresh_all()
        return True

    def close(self) -> None:
        """Stop watching (and any replay running) and close the comm."""
        self.unwatch()
        if self._replays is not None:
            self._replays.cancel()
        super().close()

    def _desk(self) -> ReplayDesk:
        if self._replays is None:
            raise DecisionError(
                "No recorded log to replay: open the explorer with explore(agent, history=path).", field="history"
            )
        return self._replays

    # -- internals -----------------------------------------------------------
    async def _watch_loop(self) -> None:
        # With tens of thousands of rules one read takes a noticeable time:
        # wait at least 10 times as long as the last read took, so watching
        # never keeps the kernel busy more than a tenth of the time.
        pause = self.watch_interval
        while True:
            await asyncio.sleep(pause)
            started = time.perf_counter()
            try:
                await self.poll_once()
            except Exception:
                log.debug("permission explorer watch failed", exc_info=True)
            pause = max(self.watch_interval, WATCH_BUSY_FACTOR * (time.perf_counter() - started))

    async def _handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        action = msg.get("action")
        agent = self._agent
        if action == "refresh":
            return {"context": _summary(await self.refresh_all())}
        if action == "set_mode":
            perm.set_mode(agent, msg.get("mode", ""))
            return {"context": _summary(await self.refresh_all())}
        if action == "add_rule":
            rule = perm.add_rule(agent, _dict(msg, "rule"), known_tools=self.known_tools, default_source=_SOURCE)
            return {"context": _summary(await self.refresh_all()), "rule": perm.rule_to_dict(rule)}
        if action == "remove_rule":
            perm.remove_rule(agent, _dict(msg, "rule"))
            return {"context": _summary(await self.refresh_all())}
        if action == "edit_rule":
            rule = perm.edit_rule(agent, _dict(msg, "old"), _dict(msg, "new"), known_tools=self.known_tools)
            return {"context": _summary(await self.refresh_all()), "rule": perm.rule_to_dict(rule)}
        if action == "add_working_directory":
            perm.add_working_directory(agent, msg.get("path", ""), source=_SOURCE)
            return {"context": _summary(await self.refresh_all())}
        if action == "remove_working_directory":
            perm.remove_working_directory(agent, msg.get("path", ""))
            return {"context": _summary(await self.refresh_all())}
        if action == "try_call":
            request = {"tool_name": _str(msg, "tool_name"), "input": msg.get("input", {})}
            if msg.get("mode"):
                request["mode"] = msg["mode"]
            result = await perm.try_call(agent, None, **request)
            self._last_try_request = {**request, "input": result["input"]}
            self.last_try = result
            self.refresh()
            return {"result": result}
        if action == "matrix":
            calls = msg.get("calls")
            if not isinstance(calls, list) or not calls:
                raise DecisionError("Give at least one call: [{tool_name, input}].", field="calls")
            if len(calls) > MAX_MATRIX_CALLS:
                raise DecisionError(
                    f"The matrix decides at most {MAX_MATRIX_CALLS} calls at a time; you gave {len(calls)}. "
                    "Keep the calls you want to compare, or try one call at a time.",
                    field="calls",
                )
            matrix = await perm.mode_matrix(calls, None, agent)
            self.matrix_calls = [{"tool_name": r["tool_name"], "input": r["input"]} for r in matrix["rows"]]
            self.matrix = matrix
            return {"matrix": matrix}
        if action == "explain":
            text = perm.explain_match(
                _dict(msg, "rule"),
                _str(msg, "tool_name"),
                _input_dict(msg.get("input", {})),
                tool=await perm.get_tool(getattr(agent, "toolkit", None), _str(msg, "tool_name")),
            )
            return {"text": text}
        if action == "reach":
            rule = perm.parse_rule(_dict(msg, "rule"), default_source=_SOURCE, known_tools=self.known_tools)
            tool = tools_of(getattr(agent, "toolkit", None)).get(rule.tool_name)
            text = f"This rule {perm.rule_reach(rule, tool=tool)}"  # Markdown: its patterns in backticks
            return {"text": text, "html": markdown_html(text)}  # as a card's reach (kinds/confirm_view.py)
        if action == "export":
            return {"text": perm.export_rules(agent)}
        if action == "import":
            file_text = msg.get("text")
            if not isinstance(file_text, str):
                raise DecisionError("Paste or choose a rules file first.", field="text")
            rules = perm.import_rules(
                file_text, into=agent, replace=bool(msg.get("replace")), known_tools=self.known_tools
            )
            return {"count": len(rules), "context": _summary(await self.refresh_all())}
        if action == "replay":
            candidate = msg.get("rules")
            if candidate is not None and not isinstance(candidate, str):
                raise DecisionError("rules must be a rules file's text.", field="rules")
            summary = await self.replay_history(candidate, msg.get("mode") or None)
            return {"replay": summary} if summary is not None else {"superseded": True}
        if action == "replay_page":
            return {"page": self._desk().page(msg.get("offset", 0), only_changed=bool(msg.get("only_changed", True)))}
        if action == "replay_export":
            return {"text": self._desk().export()}
        raise DecisionError(f"Unknown action {action!r}.", field="action")

    async def replay_history(self, rules: str | None = None, mode: str | None = None) -> dict[str, Any] | None:
        """Replay the recorded log against candidate rules (default: the rules
        and mode shown); sets and returns the ``replay`` trait. A replay still
        running is cancelled first (its call returns ``None``).

        Args:
            rules: a rules file's text (JSON list of ``PermissionRule``
                objects); ``None``: the agent's live rules.
            mode: the candidate mode; ``None`` or empty: the agent's live mode.

        Raises:
            DecisionError: the explorer has no recorded log (``field="history"``),
                a bad rules text (:class:`~nb_hitl.permissions.RuleFileError`,
                line and field named) or mode.
        """
        if self._replays is None:
            raise DecisionError(
                "No recorded log to replay: open the explorer with explore(agent, history=path).", field="history"
            )
        summary = await self._replays.run(rules, mode)
        if summary is not None:
            self.replay = summary
        return summary

    @property
    def replays(self) -> ReplayDesk | None:
        """The replays of the recorded log (their whole result stays in the
        kernel: ``explorer.replays.frame``), ``None`` without a log."""
        return self._replays


def _summary(view: dict[str, Any]) -> dict[str, Any]:
    """The context view without its rule lists (mode, working directories,
    counts, ...): what replies carry and ``context_view`` syncs."""
    return {k: v for k, v in view.items() if k not in ("rules", "by_tool")}


def _dict(msg: dict[str, Any], key: str) -> dict[str, Any]:
    value = msg.get(key)
    if not isinstance(value, dict):
        raise DecisionError(f"{key} must be a JSON object.", field=key)
    return value


def _str(msg: dict[str, Any], key: str) -> str:
    value = msg.get(key)
    if not isinstance(value, str) or not value:
        raise DecisionError(f"{key} is required.", field=key)
    return value


def _input_dict(value: Any) -> dict[str, Any]:
    too_deep = DecisionError(f"The input is nested more than {MAX_INPUT_DEPTH} levels deep.", field="input")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise DecisionError(f"The input is not valid JSON: {exc.msg}.", field="input") from None
        except RecursionError:
            raise too_deep from None
    if not isinstance(value, dict):
        raise DecisionError("The input must be a JSON object.", field="input")
    if nesting_exceeds(value, MAX_INPUT_DEPTH):
        raise too_deep
    return value
