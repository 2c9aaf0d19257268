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
* :mod:`nb_hitl.decisions`: page message -> AgentScope objects (pure).
* :mod:`nb_hitl.pauses`: what a pause is.
* :mod:`nb_hitl.store`: checkpoints and the audit log.
"""

from .errors import AlreadyDecidedError, DecisionError, NbHitlError, PauseNotLiveError, PendingPauseError
from .models import ScriptedChatModel, Turn, tool_call
from .session import Session

__all__ = [
    "Session",
    "ScriptedChatModel",
    "Turn",
    "tool_call",
    "NbHitlError",
    "DecisionError",
    "AlreadyDecidedError",
    "PauseNotLiveError",
    "PendingPauseError",
]
__version__ = "0.1.0"
