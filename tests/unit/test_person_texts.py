"""Sentences a person reads: true, ending as sentences, without internal ids or markup
meant for the model (a session by its name, a tool result without ``<system-reminder>``)."""

from __future__ import annotations

from agentscope.message import ToolResultBlock, ToolResultState

from nb_hitl.demo import _sentence
from nb_hitl.models import result_shown, result_text
from nb_hitl.service.console import session_label


def test_a_denied_result_reads_without_agentscopes_tags() -> None:
    said = '<system-reminder>The execution of tool "delete_file" is denied by user!</system-reminder>'
    block = ToolResultBlock(id="call_1", name="delete_file", output=said, state=ToolResultState.DENIED)
    assert result_text(block) == said  # what the model reads is unchanged
    assert result_shown(block) == 'The execution of tool "delete_file" is denied by user!'


def test_a_tools_text_ends_as_a_sentence_before_the_next() -> None:
    assert _sentence("'../../etc/passwd' is outside the sandbox") == "'../../etc/passwd' is outside the sandbox."
    assert _sentence("Deleted draft.md.") == "Deleted draft.md."
    assert _sentence("Really?  ") == "Really?"
    assert _sentence("") == ""


def test_a_service_session_is_named_by_its_name_never_its_id() -> None:
    assert session_label("release notes") == 'session "release notes"'
    assert session_label("") == "a session with no name"
