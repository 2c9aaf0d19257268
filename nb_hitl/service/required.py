"""The service itself refuses to run a call short of the approvals its policy asks for.

Approvals by several people are counted by the consoles
(:mod:`nb_hitl.service.approving`); only the last one sends AgentScope's
``ConfirmResult``. A client without the policy (another console, a script
posting to ``/chat/``) could answer such a call with one approval. With
``build_app(..., policies=[Policy(...)])`` (or ``NB_HITL_SERVICE_POLICIES``,
:func:`policies_from_env`) every agent of the service gets
:class:`RequiredMiddleware`, an ``on_reply`` middleware installed through
``create_app(extra_agent_middlewares=...)`` ahead of
:class:`~nb_hitl.service.told.ToldMiddleware`:

* for each call a ``UserConfirmResultEvent`` confirms, the first policy that
  matches it (:func:`covering`: :meth:`~nb_hitl.policy.Policy.match_call` on
  the tool's name and input, as the consoles match; the call as parked and as
  confirmed are both looked at) says how many approvals it needs;
* the answer's ``metadata`` carries the approvals the sending console counted
  (:data:`APPROVALS_KEY`: ``{tool_call_id: [{"decided_by", "at"}]}``,
  :func:`approvals_metadata`); an answer without them counts as one approval
  by its sender (the service user);
* fewer than needed (from distinct people, when the policy says so): the call
  is not run. The answer reaches the agent as a denial of that call, with a
  note the model reads instead of AgentScope's "denied by user"
  (``ToldMiddleware``'s road, :data:`~nb_hitl.service.told.NOTES_KEY`), and
  the call's result events are marked
  (:data:`~nb_hitl.session._promise.NOT_RUN_KEY`): the sending console's card
  expires with that text instead of saying the call was applied.

A denial always passes (any denial vetoes). What this does not protect
against: the names in :data:`APPROVALS_KEY` are what the sending console
wrote. The service authenticates nobody (its user is the ``X-User-ID``
header), so a client that lies about who approved is believed; this closes
the road of a client that does not count, not of one that forges the count.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from agentscope.event import ToolResultEndEvent, ToolResultStartEvent, UserConfirmResultEvent
from agentscope.middleware import MiddlewareBase

from ..answers.approvals import carried
from ..decisions import Decision
from ..kinds._reading import read_input
from ..pauses import Pause
from ..policy import Policy
from ..session._promise import NOT_RUN_KEY, REFUSED_KEY
from .told import NOTES_KEY, ToldMiddleware

__all__ = [
    "APPROVALS_KEY",
    "POLICIES_ENV",
    "RequiredMiddleware",
    "approvals_metadata",
    "covering",
    "load_policies",
    "policies_from_env",
    "service_middlewares",
    "shortfall",
    "not_run_text",
]

APPROVALS_KEY = "nb_hitl.approvals"
"""Key in an answer event's ``metadata``: ``{tool_call_id: [{"decided_by", "at"}]}``,
the approvals the sending console counted for each call it confirms."""

POLICIES_ENV = "NB_HITL_SERVICE_POLICIES"
"""Environment variable naming the service's policy file (:func:`load_policies`)."""

_FIELDS = ("name", "tools", "approvals", "distinct", "message")


def covering(policies: Iterable[Policy], tool_name: str, tool_input: dict[str, Any]) -> tuple[Policy, str] | None:
    """The first policy that matches a call known by its tool's name and input
    (:meth:`~nb_hitl.policy.Policy.match_call`) and why, or ``None``."""
    for policy in policies:
        why = policy.match_call(tool_name, tool_input)
        if why is not None:
            return policy, why
    return None


def load_policies(path: str | os.PathLike[str]) -> tuple[Policy, ...]:
    """The policies of a JSON (a list of objects) or TOML file (``[[policy]]``
    tables): each with ``name``, ``tools``, and optionally ``approvals`` (an
    integer or ``{tool: n}``), ``distinct`` and ``message``, the arguments of
    :class:`~nb_hitl.policy.Policy` that can be written down.

    Raises:
        OSError: the file cannot be read.
        ValueError: not JSON/TOML of that shape, an unknown field, or a
            policy :class:`~nb_hitl.policy.Policy` refuses (its message).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    data: Any = tomllib.loads(text).get("policy", []) if path.suffix == ".toml" else json.loads(text)
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ValueError(f"{path}: expected a list of policies (objects), got {type(data).__name__}.")
    out = []
    for item in data:
        unknown = sorted(set(item) - set(_FIELDS))
        if unknown:
            raise ValueError(f"{path}: unknown policy field {unknown[0]!r} (known: {', '.join(_FIELDS)}).")
        out.append(Policy(**item))
    return tuple(out)


def policies_from_env() -> tuple[Policy, ...]:
    """:func:`load_policies` of the file :data:`POLICIES_ENV` names; ``()`` when unset.

    Raises:
        OSError, ValueError: as :func:`load_policies`.
    """
    path = os.environ.get(POLICIES_ENV)
    return load_policies(path) if path else ()


def approvals_metadata(items: Iterable[tuple[Pause, Decision | None]], by: str) -> dict[str, Any]:
    """The ``metadata`` entry of an answer carrying, per call it confirms, the
    approvals counted for it (:func:`~nb_hitl.answers.approvals.carried`;
    ``by``: who sends it); ``{}`` when it confirms nothing."""
    got = {
        p.tool_call_id: carried(p, by)
        for p, d in items
        if d is not None and d.confirm_result is not None and d.confirm_result.confirmed
    }
    return {APPROVALS_KEY: got} if got else {}


def _input(raw: str) -> dict[str, Any]:
    return read_input(raw, None).executed or {}  # as the console reads a parked call (no tool at hand)


def _names(entries: Any) -> list[str]:
    if not isinstance(entries, list):
        return []
    return [str(e["decided_by"]) for e in entries if isinstance(e, dict) and isinstance(e.get("decided_by"), str)]


def shortfall(
    policies: Sequence[Policy], event: Any, sender: str, parked: dict[str, Any] | None = None
) -> dict[str, str]:
    """``{tool_call_id: what the model reads}`` for the calls ``event``
    confirms with fewer approvals than a policy asks for (see the module
    docstring); ``{}`` for anything else (a denial, another event).

    Args:
        policies: the service's policies.
        event: the answer (an ``UserConfirmResultEvent`` to be judged).
        sender: the service user who sent it (an answer without
            :data:`APPROVALS_KEY` counts as this one person's approval).
        parked: ``{tool_call_id: ToolCallBlock}`` of the calls as parked
            (a confirmation may rename or edit the call; both are matched).
    """
    if not policies or not isinstance(event, UserConfirmResultEvent):
        return {}
    counted = (event.metadata or {}).get(APPROVALS_KEY)
    counted = counted if isinstance(counted, dict) else None
    out: dict[str, str] = {}
    for result in event.confirm_results:
        if not result.confirmed:
            continue
        calls = [result.tool_call, (parked or {}).get(result.tool_call.id)]
        matched = [
            (m[0].approvals_for(c.name), m[0], m[1])
            for c in calls
            if c is not None and (m := covering(policies, c.name, _input(c.input)))
        ]
        if not matched:
            continue
        needed, policy, why = max(matched, key=lambda m: m[0])
        names = [sender] if counted is None else _names(counted.get(result.tool_call.id))
        have = list(dict.fromkeys(names)) if policy.distinct else names
        if len(have) >= needed:
            continue
        whom = "distinct people" if policy.distinct else "people"
        said = f"{len(have)} ({', '.join(have)})" if have else "none"
        out[result.tool_call.id] = (
            f"Not run: this call needs {needed} approvals from {whom} (the service's policy {policy.name!r}, "
            f"{why}); the answer carried {said}."
        )
    return out


def not_run_text(frame: dict[str, Any]) -> str | None:
    """What a result frame (stream JSON) says of a call the service did not run, or ``None``."""
    meta = frame.get("metadata")
    said = meta.get(NOT_RUN_KEY) if isinstance(meta, dict) else None
    return said if isinstance(said, str) else None


class RequiredMiddleware(MiddlewareBase):
    """``on_reply``: a confirmation short of its approvals becomes a denial
    the model reads the reason of (see the module docstring).

    Args:
        policies: the service's policies.
        sender: the service user whose answers this agent takes.
    """

    def __init__(self, policies: Sequence[Policy], sender: str) -> None:
        self.policies = tuple(policies)
        self.sender = sender

    async def on_reply(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Callable[..., AsyncGenerator]
    ) -> AsyncGenerator:
        event = input_kwargs.get("inputs")
        short = shortfall(self.policies, event, self.sender, _parked(agent))
        if short:
            assert isinstance(event, UserConfirmResultEvent)
            results = [
                r.model_copy(update={"confirmed": False, "rules": None}) if r.tool_call.id in short else r
                for r in event.confirm_results
            ]
            notes = {**((event.metadata or {}).get(NOTES_KEY) or {}), **short}
            meta = {**(event.metadata or {}), NOTES_KEY: notes}
            input_kwargs = {
                **input_kwargs,
                "inputs": event.model_copy(update={"confirm_results": results, "metadata": meta}),
            }
        async for item in next_handler(**input_kwargs):
            said = short.get(getattr(item, "tool_call_id", None) or "")
            if said and isinstance(item, ToolResultStartEvent | ToolResultEndEvent):
                item.metadata = {**(item.metadata or {}), NOT_RUN_KEY: said, REFUSED_KEY: "approvals_short"}
            yield item


def _parked(agent: Any) -> dict[str, Any]:
    """``{tool_call_id: ToolCallBlock}`` of the agent's last message (the parked calls)."""
    context = getattr(getattr(agent, "state", None), "context", None) or []
    if not context:
        return {}
    return {b.id: b for b in context[-1].get_content_blocks("tool_call")}


def service_middlewares(policies: Iterable[Policy] = ()) -> Callable[[str, str, str], Any]:
    """AgentScope ``extra_agent_middlewares`` factory: a :class:`RequiredMiddleware`
    when there are policies, then :class:`~nb_hitl.service.told.ToldMiddleware`."""
    held = tuple(policies)

    async def factory(user_id: str, _agent_id: str, _session_id: str) -> list[MiddlewareBase]:
        return [*([RequiredMiddleware(held, user_id)] if held else []), ToldMiddleware()]

    return factory
