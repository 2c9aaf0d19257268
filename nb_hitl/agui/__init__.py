"""AG-UI interop: a notebook agent served over AG-UI, and the notebook as the
client of any AG-UI agent.

* :mod:`nb_hitl.agui.mapping`: pauses <-> interrupts, resume entries <->
  page messages (pure).
* :mod:`nb_hitl.agui.events`: AgentScope events and history -> AG-UI events
  and messages (pure).
* :mod:`nb_hitl.agui.server`: :class:`AguiServer` (ASGI, Starlette) and
  :func:`serve_in_background` (uvicorn in a thread, loopback only).
* :mod:`nb_hitl.agui.client`: :class:`AguiClient` (httpx + httpx-sse) and
  :class:`RemoteSession` (a ReplyWidget over a remote agent).
"""

try:  # the AG-UI pieces are an extra: pip install "nb_hitl[agui]"
    import ag_ui  # noqa: F401
    import httpx_sse  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as _exc:
    raise ImportError(
        f'nb_hitl.agui needs the "agui" extra ({_exc.name} is not installed): pip install "nb_hitl[agui]"'
    ) from _exc

from .client import AguiClient, AguiClientError, RemoteRunError, RemoteSession
from .mapping import ResumeError, interrupt_id, pause_to_interrupt, resume_to_message
from .server import AguiServer, ServerHandle, serve_in_background

__all__ = [
    "AguiServer",
    "AguiClient",
    "AguiClientError",
    "RemoteRunError",
    "RemoteSession",
    "ResumeError",
    "ServerHandle",
    "interrupt_id",
    "pause_to_interrupt",
    "resume_to_message",
    "serve_in_background",
]
