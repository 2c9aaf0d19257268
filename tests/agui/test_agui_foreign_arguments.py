"""The card of an interrupt from another AG-UI server shows the streamed tool-call arguments as a
local card shows an input once they are one complete JSON object (one key a line), and the text as
streamed when they do not parse. Compared with the card of a real local pause (a real AgentScope
agent parked through the AG-UI server in process) on the same arguments.
"""

from __future__ import annotations

import asyncio

from ag_ui.core import Interrupt

from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.interrupt_views import interrupt_view, our_kind, shown_arguments
from nb_hitl.agui.server import AguiServer
from tests.agui_support import Factory, collect, user

FOREIGN = Interrupt(id="lg-1", reason="tool_call", message="Delete it?", tool_call_id="call_1")


def card_input(arguments: str) -> str:
    view = interrupt_view(FOREIGN, key="call_1", run_id="r", tool_call_name="delete_file", tool_call_text=arguments)
    assert view["kind"] == "form" and view["tool_name"] == "delete_file"
    return str(view["input_text"])


def test_complete_arguments_read_as_the_local_card_reads_the_same_input(tmp_path) -> None:
    server = AguiServer(Factory(tmp_path))

    async def parked() -> dict:
        await collect(server, AguiClient.make_input("t-args", [user("go", "m1")]))
        pauses = server.threads["t-args"].session.current.pauses.values()
        (confirm,) = [p for p in pauses if p.kind == "confirm"]
        return {"sent": confirm.tool_call.input, "view": confirm.to_view()}

    local = asyncio.run(parked())
    assert our_kind(FOREIGN) is None
    assert card_input(local["sent"]) == local["view"]["input_text"] == '{\n  "path": "old_log.txt"\n}'
    many = '{"to":"ACME GmbH","amount":120.5,"tags":["a","b"],"n":12345678901234567890123}'
    assert card_input(many) == (
        '{\n  "to": "ACME GmbH",\n  "amount": 120.5,\n  "tags": [\n    "a",\n    "b"\n  ],\n'
        '  "n": 12345678901234567890123\n}'
    )  # one key a line, a big integer exactly as sent
    assert card_input('{"note": "a\u200bb"}') == '{\n  "note": "a\\u200bb"\n}'  # an invisible character shows


def test_arguments_that_do_not_parse_are_shown_as_streamed() -> None:
    for raw in (
        '{"path": "old_lo',  # cut short
        '{"path": "a", "path": "b"}',  # a key given twice: which one runs is the peer's to say
        '["old_log.txt"]',  # not an object
        '{"path": "a"} {"path": "b"}',  # two objects
        '{"n": NaN}',
    ):
        assert card_input(raw) == raw == shown_arguments(raw)
    assert card_input('{"path": "a\u202eb') == '{"path": "a\\u202eb'  # as streamed, every character seen
    view = interrupt_view(FOREIGN, key="call_1", run_id="r")
    assert view["input_text"] == ""  # no arguments streamed
