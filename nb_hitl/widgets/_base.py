"""The request/response channel every nb_hitl widget speaks over its comm.

The page sends ``{"request_id": str, "action": str, ...}`` with
``model.send``; the kernel answers *every* message with the same
``request_id`` and either ``{"ok": true, ...}`` or
``{"ok": false, "error": str, "code": str, "field": str | null}``
(the pattern of quak's ``model.send`` channel). A handler that raises does
not reach the kernel's log only: the page shows the sentence where the
person clicked, and the kernel keeps running.

A handler may be synchronous or return an awaitable; an awaitable is run
as a task on the loop that owns the widget and answered when it ends.

A subclass names its page code (``_page_code = "reply"``: ``static/reply.js``
with the theme ``static/theme.css``); the code travels once per kernel in a
shared model and the widget's ``_esm`` is a small loader (see
:mod:`nb_hitl.widgets._page_code`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import anywidget
import traitlets

from ..errors import NbHitlError
from ._hold import hold_comm_dispatch
from ._kernel import answer_info_requests_while_busy, cell_now
from ._page_code import inline_page_code, inline_source, page_code

__all__ = ["RequestWidget", "Handler"]

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], "dict[str, Any] | None | Awaitable[dict[str, Any] | None]"]

_MAX_ERROR_CHARS = 2000


def error_reply(request_id: Any, exc: BaseException) -> dict[str, Any]:
    """The page-facing answer for a refused message.

    Args:
        request_id: the ``request_id`` of the message being answered.
        exc: the refusal; an :class:`NbHitlError` keeps its ``code`` and
            ``field``, anything else becomes ``code="internal"``.

    Returns:
        ``{"request_id", "ok": False, "error": str, "code": str, "field": str | None}``.
    """
    if isinstance(exc, NbHitlError):
        code, field = exc.code, exc.field
        text = str(exc)
    else:
        code, field = "internal", None
        text = f"nb_hitl could not handle this ({type(exc).__name__}: {exc})"
    return {
        "request_id": request_id,
        "ok": False,
        "error": text[:_MAX_ERROR_CHARS],
        "code": code,
        "field": field,
    }


def _cut(value: Any, limit: int = 80) -> Any:
    """``value``, or a string longer than ``limit`` characters cut with "…"."""
    return value[: limit - 1] + "…" if isinstance(value, str) and len(value) > limit else value


class RequestWidget(anywidget.AnyWidget):
    """An anywidget whose page messages are answered one for one.

    Subclasses set ``_page_code`` (the name of their bundle in ``static/``)
    and their traits; the logic lives in the ``handler`` given by the owner
    (a session or a client), so the widget only carries data between the
    page and that logic. The widget's ``_esm`` is then the loader of the
    kernel's shared page code and ``_nbh_page_code`` names that model
    (``"IPY_MODEL_<id>"``); a subclass that sets its own ``_esm`` instead,
    and every widget when ``NB_HITL_PAGE_CODE=inline``, keeps anywidget's
    usual one-copy-per-widget behaviour.

    Args:
        handler: ``(message: dict) -> dict | None | Awaitable[dict | None]``.
            Raise :class:`~nb_hitl.errors.NbHitlError` to refuse with a
            readable reason. ``ping`` messages are answered by the widget
            itself (the page uses them to tell a live kernel from a notebook
            reopened after a restart): ``{"live": True, "cell": ...}``, where
            ``cell`` is ``"its_cell"`` while the cell that made the widget
            still runs (cells run meanwhile wait behind it), ``"another"``
            while another cell runs, ``""`` when none does.
        **kwargs: trait values, passed to ``anywidget.AnyWidget``.

    Attributes:
        answered: number of page messages answered so far (for tests and the
            stress benchmark).
    """

    #: the bundle this widget is drawn with, ``static/<name>.js`` (None: own ``_esm``)
    _page_code: ClassVar[str | None] = None
    #: the traits its text form names (see ``__repr__``)
    _repr_fields: ClassVar[tuple[str, ...]] = ()

    _nbh_page_code = traitlets.Unicode("").tag(sync=True)
    #: the widget's own model id (its comm id, chosen here), by which the loader finds its model in the
    #: page's widget manager to keep it saved once its kernel is gone (``js/lib/keep_saved.ts``)
    _nbh_model_id = traitlets.Unicode("").tag(sync=True)

    def __init__(self, handler: Handler | None = None, **kwargs: Any) -> None:
        shared = None
        if self._page_code and inline_page_code():  # a host without shared models (see _page_code)
            esm, css = inline_source(self._page_code)
            kwargs.update(_esm=esm)
            # anywidget makes ``_css`` a trait only for a class that has one: as it does, here
            self.add_traits(_css=traitlets.Unicode(css).tag(sync=True))
        elif self._page_code:
            shared = page_code(self._page_code)
            own = uuid.uuid4().hex  # ipywidgets opens the comm with this id (its ``model_id`` argument)
            kwargs.update(_esm=shared.loader(), _nbh_page_code=shared.ref, _nbh_model_id=own, model_id=own)
        super().__init__(**kwargs)
        if shared is not None:
            shared.attach(self)
        self._handler = handler
        self._loop: asyncio.AbstractEventLoop | None
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._loop_thread = threading.get_ident()
        self.answered = 0
        self.on_msg(self._on_page_message)
        # a page reloaded while a cell awaits this widget must still find it
        # and a click's ``idle`` may follow what it set going (``_hold``)
        try:
            answer_info_requests_while_busy()
            hold_comm_dispatch()
        except Exception:  # never let this stop a widget from being made
            log.debug("could not install the kernel wrappers", exc_info=True)
        #: the cell that made this widget (``""``: none known), for ``ping``'s ``cell``
        self._cell = cell_now()

    def __repr__(self) -> str:
        """The widget's text form, ``ReplyWidget(agent_name='helper', prompt='…')``:
        the traits ``_repr_fields`` names, each cut to 80 characters.

        It is also the ``text/plain`` of the widget's output (anywidget puts
        ``repr()`` there), which is what a front end shows when it cannot draw
        the widget: nbviewer, GitHub, ``nbconvert`` to text, or JupyterLab
        opened with "No Kernel" (its widget manager then restores no widget
        from the saved state). anywidget's own repr is ``object.__repr__``;
        ipywidgets' would serialise every trait, the transcript included.
        """
        fields = ", ".join(f"{name}={_cut(getattr(self, name))!r}" for name in self._repr_fields)
        return f"{type(self).__name__}({fields})"

    def set_handler(self, handler: Handler | None) -> None:
        """Replace the handler (``None`` refuses every action)."""
        self._handler = handler

    def _cell_state(self) -> str:
        """``"its_cell"`` while the cell that made this widget runs, ``"another"`` while
        another cell runs, ``""`` when no cell runs (or none is known)."""
        now = cell_now()
        if not now:
            return ""
        return "its_cell" if now == self._cell else "another"

    # -- the channel ------------------------------------------------------
    def _reply(self, payload: dict[str, Any]) -> None:
        self.answered += 1
        try:
            self.send(payload)
        except Exception:  # the comm may be closed; never raise into the kernel
            log.debug("could not send reply %r", payload, exc_info=True)

    def _on_page_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        loop = self._loop
        if threading.get_ident() != self._loop_thread and loop is not None and loop.is_running():
            # ipykernel 7 runs a comm message on a subshell's thread when the page sends it
            # there (JupyterLab's "comms over subshells"), while the agent runs on this
            # widget's loop: handled there, a message would read and change the reply's
            # transcript and cards halfway through the agent's own changes (a sync answer
            # holding text its seq does not include). Every message is handled on the loop,
            # in order; while that loop is blocked nothing is answered, as without subshells.
            loop.call_soon_threadsafe(self._answer_message, content)
            return
        self._answer_message(content)

    def _answer_message(self, content: Any) -> None:
        """Answer one page message (on the widget's loop thread, or the only thread there is)."""
        request_id = content.get("request_id") if isinstance(content, dict) else None
        try:
            if not isinstance(content, dict):
                raise NbHitlError("A page message must be a JSON object.")
            if content.get("action") == "ping":
                self._reply({"request_id": request_id, "ok": True, "live": True, "cell": self._cell_state()})
                return
            if self._handler is None:
                raise NbHitlError("This widget is not connected to anything that can act on it.")
            result = self._handler(content)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise
            if not isinstance(exc, NbHitlError):
                log.exception("nb_hitl widget handler failed")
            self._reply(error_reply(request_id, exc))
            return
        if inspect.isawaitable(result):
            self._finish_later(request_id, result)
        else:
            self._reply({"request_id": request_id, "ok": True, **(result or {})})

    def _finish_later(self, request_id: Any, awaitable: Awaitable[Any]) -> None:
        async def finish() -> None:
            try:
                result = await awaitable
            except Exception as exc:
                if not isinstance(exc, NbHitlError):
                    log.exception("nb_hitl widget handler failed")
                self._reply(error_reply(request_id, exc))
            else:
                self._reply({"request_id": request_id, "ok": True, **(result or {})})

        loop = self._loop
        if loop is None or loop.is_closed():
            loop = asyncio.get_event_loop()
        if threading.get_ident() == self._loop_thread:
            loop.create_task(finish())
        else:
            loop.call_soon_threadsafe(lambda: loop.create_task(finish()))
