"""nb_hitl: human-in-the-loop for AgentScope agents, inline in Jupyter.

Quick tour: ``session = Session(demo_agent())`` then
``await session.run("Tidy up my sandbox folder")``; pauses render inline.

* :class:`Session` (``nb_hitl.session``): drives an agent, shows each pause,
  resumes exactly once per decision.
* :mod:`nb_hitl.pauses` (what a pause is), :mod:`nb_hitl.kinds` (one module per
  pause kind), :mod:`nb_hitl.decisions` / :mod:`nb_hitl.messages` (page
  message -> AgentScope objects), :mod:`nb_hitl.store` (checkpoints, audit).
* :func:`reviewed` (a person reviews a tool's result first), :class:`FormTool`
  (structured questions), :class:`Policy` (tools that always ask).
* :class:`ScriptedChatModel` (``nb_hitl.models``): the offline model;
  :func:`model_from_env` (``NB_HITL_MODEL``): a real provider when set;
  :mod:`nb_hitl.permissions`: the permission explorer; :mod:`nb_hitl.agui`:
  AG-UI interrupts and resumes.
* :func:`pause_label` / :func:`call_label` (``nb_hitl.labels``): a pause
  or tool call in words, by its tool and input (``delete_file (path="notes.txt")``),
  never by its ids.
* :func:`answer_from_code` (``NB_HITL_ANSWER_FROM_CODE``): whether the
  notebooks under ``notebooks/`` answer their own pauses (CI) or wait for
  a person's click (the default).
"""

from .errors import AlreadyDecidedError, DecisionError, NbHitlError, PauseNotLiveError, PendingPauseError
from .kinds import FormTool, reviewed
from .labels import call_label, pause_label
from .model_config import model_from_env
from .models import ScriptedChatModel, Turn, tool_call
from .notify import Notify
from .policy import Policy, apply_policy, policy_middleware
from .session import Session
from .walkthrough import answer_from_code

__all__ = [
    "Session",
    "ScriptedChatModel",
    "Turn",
    "tool_call",
    "model_from_env",
    "answer_from_code",
    "reviewed",
    "Policy",
    "Notify",
    "policy_middleware",
    "apply_policy",
    "FormTool",
    "NbHitlError",
    "DecisionError",
    "AlreadyDecidedError",
    "PauseNotLiveError",
    "PendingPauseError",
    "call_label",
    "pause_label",
]
__version__ = "0.1.0"
