"""Approval links over real HTTP: a real uvicorn server on 127.0.0.1, httpx.

A real AgentScope ``Agent`` on the scripted model whose ``send_payment``
needs two approvals (``nb_hitl.agui.payments_demo``). alice owns the thread
(AG-UI, bearer token); bob answers through a one-time link the server
issued. The link's page shows the card; its POST goes through the Session's
front door and is audited as bob's, from the AG-UI road, with the link's id.
A link used twice, expired, altered, forged, or made for an input that was
modified since is refused with a page saying why, and nothing is recorded.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import re
import time
from typing import Any

import httpx
import pytest
from ag_ui.core import ResumeEntry

from nb_hitl._signing import _sign
from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.link_page import CSP
from nb_hitl.agui.payments_demo import PaymentFactory
from nb_hitl.store import AuditLog
from nb_hitl.walkthrough import wait_for_answer
from tests.agui.test_agui_four_eyes import bearer
from tests.agui_support import post_run, user

TTL = 600.0


class _Recent:
    """Equal to an epoch time of the last minute (when the server took an answer)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and abs(time.time() - other) < 60


ANY_TIME = _Recent()
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:")


def run_sync(coro: Any) -> Any:
    """Run a coroutine to its end in a thread of its own (the caller may be
    inside a running loop: Playwright's sync API)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class World:
    """A served payment agent, alice's paused thread, and a clock that can jump."""

    def __init__(self, tmp_path: Any, payee: str = "ACME GmbH") -> None:
        self.offset = 0.0
        self.audit = tmp_path / "audit.jsonl"
        self.factory = PaymentFactory(to=payee)
        self.server = AguiServer(
            self.factory,
            auth=bearer,
            interrupt_ttl=TTL,
            clock=lambda: time.time() + self.offset,
            session_kwargs={"audit_log": str(self.audit)},
        )
        self.handle = serve_in_background(self.server, announce=False)
        self.tid = "pay-thread"
        first = run_sync(
            post_run(self.handle.url, AguiClient.make_input(self.tid, [user("Pay.", "u1")]), token="alice-token")
        )
        (self.interrupt,) = first.last().outcome.interrupts

    def link(self, approver: str = "bob") -> str:
        return self.server.links.issue(self.tid, self.interrupt.tool_call_id, approver, base_url=self.handle.url)

    def resume(self, payload: dict[str, Any], token: str = "alice-token") -> Any:
        entry = ResumeEntry(interrupt_id=self.interrupt.id, status="resolved", payload=payload)
        return run_sync(post_run(self.handle.url, AguiClient.make_input(self.tid, [], [entry]), token=token))

    def answered(self) -> list[dict[str, Any]]:
        return AuditLog(self.audit).records("answered")

    def wait_runs(self, n: int, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while len(self.factory.runs) < n and time.monotonic() < end:
            time.sleep(0.05)


async def alice_then_bob_by_link(remote: RemoteSession, server: AguiServer, url: str, prompt: str) -> tuple[Any, ...]:
    """alice starts ``prompt`` and approves its first card (1 of 2: the card stays open for the next
    person), then bob approves it through his link; ``(task, card, alice's reply, the link's response)``."""
    task = remote.start(prompt)
    (card,) = await remote.until_paused()
    reply = await remote.act({"action": "approve", "tool_call_id": card["tool_call_id"]})
    (again,) = await remote.until_paused()
    assert [a["by"] for a in again["approvals"]] == ["alice"] and not task.done()
    link = server.links.issue(remote.thread_id, card["tool_call_id"], "bob", base_url=url)
    async with httpx.AsyncClient() as http:
        done = await http.post(link, data={"action": "approve"})
    return task, card, reply, done


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    try:
        yield w
    finally:
        w.handle.stop()


def refused(response: httpx.Response) -> str:
    """The reason a refusal page gives (its ``data-code``), after checking it is a page."""
    assert response.headers["content-type"].startswith("text/html")
    got = re.search(r'data-testid="nbh-link-refused" data-code="([a-z_]+)"', response.text)
    assert got, response.text
    return got.group(1)


def test_a_link_shows_the_card_and_its_approval_is_counted_audited_and_single_use(world):
    url = world.link("bob")
    page = httpx.get(url)
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    assert "script-src" not in CSP and "default-src 'none'" in CSP
    assert page.headers["referrer-policy"] == "same-origin" and page.headers["cache-control"] == "no-store"
    assert "<script" not in page.text
    assert 'data-testid="nbh-link-tool">send_payment<' in page.text
    assert "ACME GmbH" in page.text and "0 of 2 approvals so far." in page.text
    assert 'data-testid="nbh-link-approver">bob<' in page.text
    done = httpx.post(url, data={"action": "approve"})
    assert done.status_code == 200, done.text
    assert "Your approval is recorded. 1 of 2 approvals: bob (" in done.text
    # times a person reads are the server's local time, never raw ISO
    assert re.search(r"bob \(\d\d:\d\d:\d\d [^)]+\)", done.text) and not ISO.search(done.text)
    assert re.search(r"expires at (\d+ \w+ \d{4}, )?\d\d:\d\d:\d\d ", page.text)  # a date when not today
    assert not ISO.search(page.text)
    assert world.factory.runs == []
    (line,) = world.answered()
    assert (line["decision"], line["decided_by"], line["approval"]) == ("approve", "bob", {"count": 1, "needed": 2})
    assert line["origin"]["road"] == "agui" and line["origin"]["principal"] == "bob"
    assert line["origin"]["thread_id"] == world.tid and line["origin"]["link"]
    # twice: refused, nothing more recorded; the page says who used it and when
    again = httpx.post(url, data={"action": "approve"})
    assert again.status_code == 410 and refused(again) == "used"
    assert re.search(r"This link was already used: bob answered approve at \d\d:\d\d:\d\d ", again.text)
    assert refused(httpx.get(url)) == "used"
    assert len(world.answered()) == 1
    # alice's AG-UI approval is the second: the payment runs once
    two = world.resume({"approved": True})
    assert two.last().outcome.type == "success"
    assert [r[1:] for r in world.factory.runs] == [("ACME GmbH", 120.0)]
    assert [a["by"] for a in world.answered()[-1]["approvals"]] == ["bob", "alice"]


def test_the_last_approval_through_a_link_runs_the_call_once(world):
    one = world.resume({"approved": True})
    assert one.last().outcome.type == "interrupt"
    done = httpx.post(world.link("bob"), data={"action": "approve"})
    assert done.status_code == 200
    assert "was the last one needed: send_payment goes to the agent now." in done.text
    world.wait_runs(1)
    assert [r[1:] for r in world.factory.runs] == [("ACME GmbH", 120.0)]
    lines = world.answered()
    assert [(r["decided_by"], r["origin"]["road"]) for r in lines] == [("alice", "agui"), ("bob", "agui")]


def test_the_same_person_through_a_link_is_refused_and_the_link_stays_unused(world):
    world.resume({"approved": True})
    url = world.link("alice")
    first = httpx.post(url, data={"action": "approve"})
    assert first.status_code == 409 and refused(first) == "refused"
    assert "alice already approved this call; it needs 2 approvals from distinct people" in first.text
    assert world.server.links.used == {}
    assert len(world.answered()) == 1


def test_a_denial_through_a_link_vetoes_the_call_with_its_reason(world):
    done = httpx.post(world.link("bob"), data={"action": "deny", "reason": "wrong IBAN"})
    assert done.status_code == 200 and "Your denial is recorded" in done.text
    (line,) = world.answered()
    assert (line["decision"], line["decided_by"], line["reason"]) == ("deny", "bob", "wrong IBAN")
    time.sleep(0.5)
    assert world.factory.runs == []


def test_an_expired_link_is_refused(world):
    url = world.link("bob")
    world.offset = TTL + 5
    got = httpx.post(url, data={"action": "approve"})
    assert got.status_code == 410 and refused(got) == "expired"
    assert "This link expired at " in got.text and "with its pause" in got.text
    assert refused(httpx.get(url)) == "expired"
    assert world.answered() == []


def test_an_altered_or_forged_link_is_refused(world):
    url = world.link("bob")
    base, token = url.rsplit("/", 1)
    body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    as_mallory = base64.urlsafe_b64encode(json.dumps({**claims, "approver": "mallory"}).encode()).decode().rstrip("=")
    flipped = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    # signed with the right key, but not as a link (any other record the key signs)
    other = {k: v for k, v in claims.items() if k != "purpose"}
    not_a_link = base64.urlsafe_b64encode(json.dumps(other).encode()).decode().rstrip("=")
    not_a_link += "." + _sign(world.server.links.key, other)
    for bad in (f"{as_mallory}.{signature}", f"{body}.{flipped}", "nonsense", f"{body}.", not_a_link):
        got = httpx.post(f"{base}/{bad}", data={"action": "approve"})
        assert got.status_code == 403 and refused(got) == "forged", bad
        assert "it was altered, or it was not made by this server. Nothing was answered." in got.text
    assert world.answered() == []
    assert httpx.get(url).status_code == 200  # the real link still works


def test_a_link_made_for_another_input_is_refused_after_a_modify(world):
    old = world.link("bob")
    one = world.resume({"approved": True, "editedArgs": {"to": "ACME GmbH", "amount": 99.0}})
    assert one.last().outcome.type == "interrupt"  # alice's modify: 1 of 2 for the new input
    got = httpx.post(old, data={"action": "approve"})
    assert got.status_code == 409 and refused(got) == "input_changed"
    assert "The input of send_payment changed since this link was made (someone modified the call)" in got.text
    assert world.factory.runs == []
    fresh = world.link("bob")
    page = httpx.get(fresh)
    assert "99.0" in page.text and "1 of 2 approvals: alice (" in page.text
    assert httpx.post(fresh, data={"action": "approve"}).status_code == 200
    world.wait_runs(1)
    assert [r[1:] for r in world.factory.runs] == [("ACME GmbH", 99.0)]


def test_another_principal_may_only_approve_or_deny_never_edit_the_call(world):
    assert world.resume({"approved": True}).last().outcome.type == "interrupt"  # alice: 1 of 2
    eve = world.resume({"approved": True, "editedArgs": {"to": "EVE Ltd", "amount": 9999.0}}, token="eve-token")
    assert eve.last().type.value == "RUN_ERROR" and eve.last().code == "not_owner"
    assert "only the thread's owner may edit the call" in eve.last().message
    assert "approve or deny it as shown. Nothing was taken." in eve.last().message
    assert [r["decided_by"] for r in world.answered()] == ["alice"]  # nothing of eve's was taken
    assert world.resume({"approved": True}, token="bob-token").last().outcome.type == "success"
    world.wait_runs(1)
    assert [r[1:] for r in world.factory.runs] == [("ACME GmbH", 120.0)]


def test_an_approval_against_the_interrupt_raised_before_a_modify_is_refused_as_stale(world):
    edited = world.resume({"approved": True, "editedArgs": {"to": "ACME GmbH", "amount": 99.0}})
    (fresh,) = edited.last().outcome.interrupts  # alice's modify: 1 of 2 for the new input, a new interrupt
    assert fresh.id != world.interrupt.id and fresh.tool_call_id == world.interrupt.tool_call_id
    bob = world.resume({"approved": True}, token="bob-token")  # the interrupt bob saw: the model's 120.0
    assert bob.last().type.value == "RUN_ERROR" and bob.last().code == "interrupt_stale"
    assert "was raised for an input that someone has modified since" in bob.last().message
    assert world.factory.runs == [] and [r["decided_by"] for r in world.answered()] == ["alice"]
    entry = ResumeEntry(interrupt_id=fresh.id, status="resolved", payload={"approved": True})
    done = run_sync(post_run(world.handle.url, AguiClient.make_input(world.tid, [], [entry]), token="bob-token"))
    assert done.last().outcome.type == "success"
    world.wait_runs(1)
    assert [r[1:] for r in world.factory.runs] == [("ACME GmbH", 99.0)]


def test_untrusted_strings_are_text_on_the_page(tmp_path):
    w = World(tmp_path, payee='<img src=x onerror="alert(1)"></pre><script>alert(2)</script>')
    try:
        page = httpx.get(w.link("<b>bob</b>")).text
    finally:
        w.handle.stop()
    assert "<script>" not in page and "<img" not in page and "<b>bob" not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page and "&lt;b&gt;bob&lt;/b&gt;" in page


def test_a_link_for_a_foreign_host_or_origin_is_refused(world):
    url = world.link("bob")
    assert refused(httpx.get(url, headers={"host": "evil.example"})) == "bad_host"
    got = httpx.post(url, data={"action": "approve"}, headers={"origin": "https://evil.example"})
    assert got.status_code == 403 and refused(got) == "bad_origin"
    assert world.answered() == []


def test_the_owners_notebook_client_catches_up_when_the_last_approval_came_through_a_link(tmp_path):
    factory = PaymentFactory()
    server = AguiServer(factory, auth=bearer, session_kwargs={"audit_log": str(tmp_path / "audit.jsonl")})
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task, _, reply, done = await alice_then_bob_by_link(remote, server, handle.url, "Pay the invoice.")
            status = await remote.follow(every=0.2, timeout=30)
            return reply, done, status, await task, remote.current

        reply, done, status, final, turn = run_sync(scenario())
    assert reply["sent"] is True and done.status_code == 200
    assert status == "finished"
    assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"
    (view,) = turn.pauses.values()
    assert view["status"] == "delivered" and view["decision"] == {"action": "approve", "by": "bob", "at": ANY_TIME}
    assert view["reason"] == "Answered elsewhere: bob (approve)."
    assert [r[1:] for r in factory.runs] == [("ACME GmbH", 120.0)]
    assert [(r["decided_by"], r["origin"]["road"]) for r in AuditLog(tmp_path / "audit.jsonl").records("answered")] == [
        ("alice", "agui"),
        ("bob", "agui"),
    ]


def test_a_notebook_cell_waits_for_bobs_link_by_following_and_run_again_says_he_approved(tmp_path, capsys):
    """four_eyes.ipynb's last cell: ``wait_for_answer(card, ..., follow=remote.follow)`` says what to do,
    follows the server until bob's approval through his link arrives, and ends; run again, it says
    at once that bob approved."""
    factory = PaymentFactory()
    server = AguiServer(factory, auth=bearer)
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task, card, _, done = await alice_then_bob_by_link(remote, server, handle.url, "Pay the invoice.")
            bobs_card = remote.current.pauses[card["tool_call_id"]]
            status_then = bobs_card["status"]  # open here: nothing told this kernel of bob's answer yet
            await asyncio.wait_for(
                wait_for_answer(bobs_card, "open bob's link", follow=lambda: remote.follow(every=0.2, timeout=30)), 60
            )
            waited = capsys.readouterr().out
            again = wait_for_answer(bobs_card, "open bob's link")
            try:
                again.send(None)
                again_waited = True
            except StopIteration:
                again_waited = False
            return done, status_then, waited, again_waited, capsys.readouterr().out, await task, bobs_card

        done, status_then, waited, again_waited, again, final, view = run_sync(scenario())
    assert done.status_code == 200 and status_then == "open"
    assert waited == "Waiting for you: open bob's link.\n"
    assert view["status"] == "delivered" and view["decision"]["by"] == "bob"
    assert again_waited is False
    assert again == 'Already answered: send_payment (to="ACME GmbH", amount=120.0): approve by bob.\n'
    assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"


def test_the_owners_client_also_catches_up_after_another_principals_resume(tmp_path):
    factory = PaymentFactory()
    server = AguiServer(factory, auth=bearer)
    with serve_in_background(server, announce=False) as handle:

        async def scenario() -> tuple[Any, ...]:
            remote = RemoteSession(handle.url, token="alice-token", display=False)
            task = remote.start("Pay the invoice.")
            (card,) = await remote.until_paused()
            await remote.act({"action": "approve", "tool_call_id": card["tool_call_id"]})
            await remote.until_paused()
            (iid,) = remote.current.interrupts
            entry = ResumeEntry(interrupt_id=iid, status="resolved", payload={"approved": True})
            bob = await post_run(handle.url, AguiClient.make_input(remote.thread_id, [], [entry]), token="bob-token")
            status = await remote.follow(every=0.2, timeout=30)
            return bob, status, await task, remote.current

        bob, status, final, turn = run_sync(scenario())
    assert bob.last().outcome.type == "success" and status == "finished"
    assert final == "The payment: success. paid 120.0 EUR to ACME GmbH"
    (view,) = turn.pauses.values()
    assert view["status"] == "delivered" and view["decision"] == {"action": "approve", "by": "bob", "at": ANY_TIME}
    assert len(factory.runs) == 1


def test_a_time_of_another_day_names_its_date():
    from nb_hitl.agui.ids import readable_time

    now = time.time()
    assert re.fullmatch(r"\d\d:\d\d:\d\d \S+", readable_time(now, now=now))
    assert re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d:\d\d \S+", readable_time(now - 3 * 86400, now=now))
