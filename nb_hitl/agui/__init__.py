"""AG-UI interop: a notebook agent served over AG-UI, and the notebook as the
client of any AG-UI agent.

* :mod:`~nb_hitl.agui.mapping`: pauses <-> interrupts (pure; the client's
  side in :mod:`~nb_hitl.agui.interrupt_views`, the one-resume rule in
  :mod:`~nb_hitl.agui.resume_rules`);
  :mod:`~nb_hitl.agui.events`: AgentScope events and history -> AG-UI (pure).
* :mod:`~nb_hitl.agui.server`: :class:`AguiServer` (ASGI, Starlette), its
  per-thread state in :mod:`~nb_hitl.agui.threads`;
  :mod:`~nb_hitl.agui.background`: :func:`serve_in_background` (uvicorn).
* :mod:`~nb_hitl.agui.client`: :class:`AguiClient` (httpx + httpx-sse);
  :mod:`~nb_hitl.agui.remote`: :class:`RemoteSession` (a conversation whose
  view data a display layer draws, :mod:`~nb_hitl.agui.remote_view`;
  :mod:`~nb_hitl.agui.turn` folds events, :mod:`~nb_hitl.agui.remote_checks`
  checks a resume before it is sent).
"""

try:  # the AG-UI pieces are an extra: pip install "nb_hitl[agui]"
    import ag_ui  # noqa: F401
    import httpx_sse  # noqa: F401
    import sse_starlette  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as _exc:
    raise ImportError(
        f'nb_hitl.agui needs the "agui" extra ({_exc.name} is not installed): pip install "nb_hitl[agui]"'
    ) from _exc

from .background import ServerHandle, serve_in_background
from .client import AguiClient, AguiClientError, RemoteRunError
from .mapping import ResumeError, interrupt_id, pause_to_interrupt, resume_to_message
from .remote import RemoteSession
from .server import AguiServer

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
