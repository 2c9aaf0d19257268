"""``ReplyWidget``: one agent reply, inline in the notebook.

A live transcript (the agent's text, tool calls and tool results as they
stream) with each pause drawn where it happened: confirmations, AskUser
panels and external-tool forms. The widget only carries data: the session
(or the AG-UI client) writes the traits and answers the page's actions.

Traits (all JSON, synced to the page and saved with the notebook when
JupyterLab's widget ``saveState`` is on, so a reopened notebook still shows a
readable record; case C12):

* ``agent_name``, ``prompt``: who replies, to what.
* ``reply_id``: AgentScope's ``reply_id`` (or the AG-UI ``run_id``).
* ``status``: ``running`` | ``paused`` | ``finished`` | ``interrupted`` |
  ``expired`` | ``error``; ``status_reason`` says why.
* ``transcript``: ``[{"kind": "text"|"tool_call"|"tool_result"|"note",
  "id", "text", "name", "state"}]``.
* ``pauses``: ``[Pause.to_view()]`` (see :mod:`nb_hitl.pauses`). A session
  keeps it (and ``transcript``) current in the kernel but sends them to the
  page only when the set of cards changed or the reply ended
  (:meth:`ReplyWidget.set_record`); in between, each changed card travels
  alone as an ``nbh_cards`` message (and the transcript as its stream).
* ``cards_seq``: the ``seq`` of the last ``nbh_cards`` message ``pauses``
  includes (0 when no card was streamed).
* ``final_text``: the reply's final message text.
* ``pending``: how many pauses wait for the person (status ``open``);
  derived from ``pauses`` here, so front ends that react to trait changes
  (marimo's ``mo.ui.anywidget``) can rerun a cell when a pause opens or is
  answered: ``w.value["pending"]``, ``w.value["status"]``.
"""

from __future__ import annotations

from typing import Any

import traitlets

from ._base import Handler, RequestWidget

__all__ = ["ReplyWidget"]


#: the traits a session keeps current in the kernel and sends to the page only
#: now and then (:meth:`ReplyWidget.set_record`); the page gets their changes
#: as stream messages meanwhile
RECORD_TRAITS = ("cards_seq", "pauses", "transcript")


class ReplyWidget(RequestWidget):
    """The inline view of one reply. See the module docstring for traits.

    Args:
        handler: answers page actions (``approve``, ``deny``, ``modify``,
            ``answer``, ``external_result``, ``return_error``, review
            ``accept`` / ``edit`` / ``reject``, form ``submit``, and
            ``interrupt``); see :mod:`nb_hitl.decisions`.
        **traits: initial trait values (unknown names raise ``TypeError``).
    """

    _page_code = "reply"

    agent_name = traitlets.Unicode("").tag(sync=True)
    prompt = traitlets.Unicode("").tag(sync=True)
    reply_id = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("running").tag(sync=True)
    status_reason = traitlets.Unicode("").tag(sync=True)
    transcript = traitlets.List(traitlets.Dict()).tag(sync=True)
    pauses = traitlets.List(traitlets.Dict()).tag(sync=True)
    final_text = traitlets.Unicode("").tag(sync=True)
    pending = traitlets.Int(0).tag(sync=True)
    cards_seq = traitlets.Int(0).tag(sync=True)

    #: traits being set in the kernel only (see :meth:`set_record`)
    _kernel_only: frozenset[str] = frozenset()

    def __init__(self, handler: Handler | None = None, **traits: Any) -> None:
        unknown = set(traits) - set(self.class_trait_names(sync=True))
        if unknown:
            raise TypeError(f"ReplyWidget got unknown argument(s): {', '.join(sorted(unknown))}")
        super().__init__(handler=handler, **traits)
        self.pending = open_count(self.pauses)

    def set_record(self, *, send: bool, **traits: Any) -> None:
        """Set record traits in the kernel; send the record to the page only if ``send``.

        Args:
            send: ``True`` sends every record trait (:data:`RECORD_TRAITS`, their
                current values, even when unchanged) in one comm update;
                ``False`` keeps the new values in the kernel: the page has the
                changes already (card and transcript stream messages), and gets
                the values when it asks for the widget's state (a reload) or with
                the next send.
            **traits: values of record traits: ``pauses`` (``Pause.to_view()``
                dicts, in order), ``cards_seq`` (the ``seq`` of the last
                ``nbh_cards`` message ``pauses`` includes), ``transcript``.

        Raises:
            TypeError: a name that is not a record trait.
        """
        unknown = set(traits) - set(RECORD_TRAITS)
        if unknown:
            raise TypeError(f"not record traits: {', '.join(sorted(unknown))}")
        self._kernel_only = frozenset(RECORD_TRAITS)
        try:
            for name, value in traits.items():
                setattr(self, name, value)
        finally:
            self._kernel_only = frozenset()
        if send:
            self.send_state(list(RECORD_TRAITS))

    def _should_send_property(self, key: str, value: Any) -> bool:
        # ipywidgets' hook deciding whether a trait change goes to the page
        if key in self._kernel_only:
            return False
        return bool(super()._should_send_property(key, value))

    @traitlets.observe("pauses")
    def _count_pending(self, change: Any) -> None:
        self.pending = open_count(change["new"])


def open_count(pauses: list[dict[str, Any]]) -> int:
    """Number of pause views (``Pause.to_view()`` dicts) whose ``status`` is ``open``."""
    return sum(1 for p in pauses if isinstance(p, dict) and p.get("status") == "open")
