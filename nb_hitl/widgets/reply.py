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
  "id", "text", "name", "state"}]``. A session keeps it current in the
  kernel and never sends it whole: the page builds it from the transcript's
  stream messages (and a ``transcript_sync`` on connect) and writes it into
  its own copy of the model, which is what JupyterLab saves with the notebook.
* ``pauses``: ``[Pause.to_view()]`` (see :mod:`nb_hitl.pauses`). A session
  keeps it current in the kernel and, once a view connected, never sends it
  whole (:meth:`ReplyWidget.set_record`): each new, changed or dropped card
  travels alone as an ``nbh_cards`` message op, and the page writes the cards
  it holds into its own copy of the model (what JupyterLab saves); a page that
  asks for the widget's state (a reload) gets the kernel's whole value.
* ``cards_seq``: the ``seq`` of the last ``nbh_cards`` message ``pauses``
  includes (0 when no card was streamed); ``transcript_seq`` the same for
  ``transcript`` and the ``nbh_transcript`` messages.
* ``final_text``: the reply's final message text. When it is exactly the
  text of a transcript entry (the usual case: the last text block), a session
  keeps it in the kernel and sets ``final_entry`` instead; the page, which has
  that entry, shows and saves its text.
* ``final_entry``: the id of the transcript entry whose text is the final
  text (``""``: none; ``final_text`` then reaches the page itself).
* ``final_html``: a ``final_text`` that reaches the page, as sanitised HTML
  of its Markdown (:func:`nb_hitl.markdown.markdown_html`; ``""``: shown as
  plain text).
* ``pending``: how many pauses wait for the person (status ``open``);
  derived from ``pauses`` here, so front ends that react to trait changes
  (marimo's ``mo.ui.anywidget``) can rerun a cell when a pause opens or is
  answered: ``w.value["pending"]``, ``w.value["status"]``.
* ``replay``: what "Replay" and "What if…" offer on a finished reply:
  ``{}`` (no buttons: the session keeps no record), ``{"ready": True}``, or
  ``{"reason": str}`` (the buttons shown disabled, saying why).
* ``nested``: the replays and what-ifs started from this reply, drawn below
  it: ``[{"ref": "IPY_MODEL_<id>" of a ReplyWidget, "title": str}]``.
* ``_nbh_key``: a random id of this widget (set when it is made), which each
  view of it carries in the page, so the page can tell a reply that has no
  view (a page reloaded without saving) and offer its card again.
"""

from __future__ import annotations

import uuid
from typing import Any

import traitlets

from ._base import Handler, RequestWidget

__all__ = ["ReplyWidget"]


#: the traits a session keeps current in the kernel and sends to the page only
#: before a view connected, or never (:meth:`ReplyWidget.set_record`); the page
#: gets their changes as stream messages
RECORD_TRAITS = ("cards_seq", "pauses", "transcript", "transcript_seq", "final_text")
#: the record traits a ``set_record(send=True)`` sends: the transcript and the
#: final text reach the page only as the transcript's stream
SENT_RECORD = ("cards_seq", "pauses")


class Views(traitlets.List):
    """A list of JSON dicts (pause views, transcript entries), checked as one
    list: traitlets' ``List(Dict())`` validates every element through a
    ``Dict`` trait, which on a reply of hundreds of cards (or entries) cost
    more than the push that sets it.

    Raises:
        traitlets.TraitError: the value is not a list of dicts.
    """

    def validate_elements(self, obj: Any, value: Any) -> Any:
        if not all(isinstance(v, dict) for v in value):
            self.error(obj, value)
        return value


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
    # what the reply is about; not its status, which the text form (made
    # when the widget is displayed) would keep at "running" for good
    _repr_fields = ("agent_name", "prompt")

    agent_name = traitlets.Unicode("").tag(sync=True)
    prompt = traitlets.Unicode("").tag(sync=True)
    reply_id = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("running").tag(sync=True)
    status_reason = traitlets.Unicode("").tag(sync=True)
    transcript = Views().tag(sync=True)
    pauses = Views().tag(sync=True)
    final_text = traitlets.Unicode("").tag(sync=True)
    final_entry = traitlets.Unicode("").tag(sync=True)
    final_html = traitlets.Unicode("").tag(sync=True)
    pending = traitlets.Int(0).tag(sync=True)
    cards_seq = traitlets.Int(0).tag(sync=True)
    transcript_seq = traitlets.Int(0).tag(sync=True)
    replay = traitlets.Dict().tag(sync=True)
    nested = traitlets.List(traitlets.Dict()).tag(sync=True)
    _nbh_key = traitlets.Unicode("").tag(sync=True)

    #: traits being set in the kernel only (see :meth:`set_record`)
    _kernel_only: frozenset[str] = frozenset()

    def __init__(self, handler: Handler | None = None, **traits: Any) -> None:
        unknown = set(traits) - set(self.class_trait_names(sync=True))
        if unknown:
            raise TypeError(f"ReplyWidget got unknown argument(s): {', '.join(sorted(unknown))}")
        traits.setdefault("_nbh_key", uuid.uuid4().hex)
        super().__init__(handler=handler, **traits)
        self.pending = open_count(self.pauses)

    def set_record(self, *, send: bool = False, **traits: Any) -> None:
        """Set record traits in the kernel; send the card record to the page only if ``send``.

        The page has the changes already (the ``nbh_cards`` and
        ``nbh_transcript`` stream messages) and writes them into its own model;
        it gets these values when it asks for the widget's state (a reload).
        Traits given to the constructor reach the page with the widget.

        Args:
            send: ``True`` also sends the card record (:data:`SENT_RECORD`,
                current values) in one comm update: what a session does while
                no view of the widget listens for stream messages yet.
            **traits: values of record traits: ``pauses`` (``Pause.to_view()``
                dicts, in order), ``cards_seq`` (the ``seq`` of the last
                ``nbh_cards`` message ``pauses`` includes), ``transcript`` and
                ``transcript_seq`` (the same for it), ``final_text`` (the text
                of the entry named by ``final_entry``).

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
            self.send_state(list(SENT_RECORD))

    def _should_send_property(self, key: str, value: Any) -> bool:
        # ipywidgets' hook deciding whether a trait change goes to the page
        if key in self._kernel_only:
            return False
        return bool(super()._should_send_property(key, value))

    def nest(self, child: Any, title: str) -> None:
        """Draw ``child`` (a :class:`ReplyWidget`) below this reply, headed by ``title``."""
        self.nested = [*self.nested, {"ref": f"IPY_MODEL_{child.model_id}", "title": title}]

    @traitlets.observe("pauses")
    def _count_pending(self, change: Any) -> None:
        self.pending = open_count(change["new"])


def open_count(pauses: list[dict[str, Any]]) -> int:
    """Number of pause views (``Pause.to_view()`` dicts) whose ``status`` is ``open``."""
    return sum(1 for p in pauses if isinstance(p, dict) and p.get("status") == "open")
