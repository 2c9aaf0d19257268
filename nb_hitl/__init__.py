"""nb_hitl: human-in-the-loop for AgentScope agents, inline in Jupyter.

Quick tour::

    from nb_hitl import Session
    from nb_hitl.demo import demo_agent

    agent = demo_agent()              # a real agentscope Agent, offline model
    session = Session(agent)
    await session.run("Tidy up my sandbox folder")   # pauses render inline

Public pieces:

* :class:`Session` (``nb_hitl.session``): drives an agent in the kernel,
  shows each pause, resumes exactly once per decision.
* :class:`ScriptedChatModel`, :class:`Turn`, :func:`tool_call`
  (``nb_hitl.models``): the offline model of demos and tests.
* :mod:`nb_hitl.decisions`: page message -> AgentScope objects (pure);
  :mod:`nb_hitl.messages`: the page messages.
* :mod:`nb_hitl.pauses`: what a pause is; :mod:`nb_hitl.kinds`: one module
  per pause kind (``confirm``, ``ask_user``, ``external``, ``review``, ``form``).
* :mod:`nb_hitl.store`: checkpoints and the audit log.
* :func:`reviewed` (``nb_hitl.kinds.review_tool``): a tool whose result a
  person reviews before the model sees it; :class:`Policy`
  (``nb_hitl.policy``): tools that always ask; :class:`FormTool`
  (``nb_hitl.kinds.form``): structured questions.
* :mod:`nb_hitl.permissions`: the permission explorer; :mod:`nb_hitl.agui`:
  AG-UI interrupts and resumes.
"""

from .errors import AlreadyDecidedError, DecisionError, NbHitlError, PauseNotLiveError, PendingPauseError
from .kinds import FormTool, reviewed
from .models import ScriptedChatModel, Turn, tool_call
from .policy import Policy, apply_policy, policy_middleware
from .session import Session

__all__ = [
    "Session",
    "ScriptedChatModel",
    "Turn",
    "tool_call",
    "reviewed",
    "Policy",
    "policy_middleware",
    "apply_policy",
    "FormTool",
    "NbHitlError",
    "DecisionError",
    "AlreadyDecidedError",
    "PauseNotLiveError",
    "PendingPauseError",
]
__version__ = "0.1.0"
