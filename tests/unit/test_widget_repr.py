"""A widget's text form: what a front end that cannot draw it shows."""

from __future__ import annotations

from nb_hitl.widgets import ReplyWidget
from nb_hitl.widgets.inbox import InboxWidget


def test_a_reply_reads_as_its_agent_and_prompt_in_text() -> None:
    w = ReplyWidget(agent_name="helper", prompt="Delete the temp files")
    bundle, _ = w._repr_mimebundle_()
    assert bundle["text/plain"] == "ReplyWidget(agent_name='helper', prompt='Delete the temp files')"
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.model_id
    w.status = "finished"
    assert "status" not in repr(w)  # the text is made when the widget is displayed: no state that changes


def test_a_long_prompt_is_cut_in_the_text_form_only() -> None:
    prompt = "x" * 200
    w = ReplyWidget(agent_name="helper", prompt=prompt)
    assert repr(w) == f"ReplyWidget(agent_name='helper', prompt='{'x' * 79}…')"
    assert w.prompt == prompt


def test_other_widgets_read_as_what_they_show() -> None:
    w = InboxWidget(service="http://127.0.0.1:8000", user_id="ana")
    assert repr(w) == "InboxWidget(service='http://127.0.0.1:8000', user_id='ana')"
