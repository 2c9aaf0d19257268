"""The audit log cannot be written when an AG-UI resume or an approval link answers.

A real AgentScope ``Agent`` on the scripted model whose ``send_payment`` asks
(``PaymentFactory``), served by :class:`~nb_hitl.agui.AguiServer` with an audit log; the log
file is replaced by a symlink (every append fails, ``O_NOFOLLOW``), as a broken disk would.
The answer is not taken (every road writes its audit line before the agent gets it), and what
the person is told is true: the resume ends at once with a refusal (not a run that never ends),
no trace says the interrupt or the link was answered, and once the log works again the same
answer is taken and the call runs once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from ag_ui.core import ResumeEntry

from nb_hitl.agui import AguiServer
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.payments_demo import PaymentFactory
from nb_hitl.store import AuditLog
from tests.agui.test_agui_links import World, refused
from tests.agui_support import collect, user
from tests.support import run_async


def break_log(audit: Path) -> None:
    audit.unlink()
    audit.symlink_to(audit.with_name("broken.jsonl"))  # every append now fails (O_NOFOLLOW)


def test_a_resume_whose_audit_fails_is_refused_at_once_and_taken_once_the_log_works(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    factory = PaymentFactory(approvals=1)
    server = AguiServer(factory, token=False, session_kwargs={"audit_log": str(audit)})

    async def scenario() -> tuple[list, list, list, list]:
        first = await collect(server, AguiClient.make_input("t", [user("Pay.", "u1")]))
        (interrupt,) = first[-1].outcome.interrupts
        break_log(audit)
        entry = ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True})
        failed = await asyncio.wait_for(collect(server, AguiClient.make_input("t", [], [entry])), 10)
        thread = server.threads["t"]
        kept = [list(thread.ledger), [p.status for p in thread.session.current.pauses.values()]]
        audit.unlink()  # the log works again
        again = await asyncio.wait_for(collect(server, AguiClient.make_input("t", [], [entry])), 10)
        return failed, kept[0], kept[1], again

    failed, ledger, statuses, again = run_async(scenario())
    assert failed[-1].type.value == "RUN_ERROR", [e.type.value for e in failed]
    said = failed[-1].message
    assert "The audit record of this answer could not be written (OSError): it was not taken." in said, said
    assert str(tmp_path) not in said  # the server's paths are not the client's business
    assert ledger == [] and statuses == ["open"]  # no trace of an answer that was not taken
    assert again[-1].type.value == "RUN_FINISHED" and again[-1].result == (
        "The payment: success. paid 120.0 EUR to ACME GmbH"
    )
    assert len(factory.runs) == 1
    assert [r["decision"] for r in AuditLog(audit).records("answered")] == ["approve"]


def test_a_link_whose_audit_fails_is_refused_and_stays_unused(tmp_path: Path) -> None:
    world = World(tmp_path)
    try:
        url = world.link("bob")
        break_log(world.audit)
        got = httpx.post(url, data={"action": "approve"})
        assert got.status_code == 409 and refused(got) == "refused"
        assert "could not be recorded" in got.text and "Nothing was answered" in got.text
        assert world.server.links.used == {}
        world.audit.unlink()  # the log works again: the same link answers
        again = httpx.post(url, data={"action": "approve"})
        assert again.status_code == 200, again.text
    finally:
        world.handle.stop()
    assert [(r["decision"], r["decided_by"]) for r in world.answered()] == [("approve", "bob")]
