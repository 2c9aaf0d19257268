"""Who may talk to the AG-UI server, whose threads are whose, and its limits.

Real uvicorn servers on 127.0.0.1 (``serve_in_background``), real agents on
``ScriptedChatModel``; raw sockets where a well-behaved client cannot send
what an attacker sends (a foreign ``Host:``, a 50 MB chunked body, headers
trickling in). Every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import httpx
import pytest

from nb_hitl.agui import AguiServer, RemoteSession, serve_in_background
from nb_hitl.agui.client import AguiClient
from nb_hitl.store import AuditLog
from tests.agui_support import Factory, post_run, user

USERS = {"alice-secret": "alice", "bob-secret": "bob"}


class CountingFactory(Factory):
    """The shared factory, counting the agents it builds."""

    def __init__(self, root: Any) -> None:
        super().__init__(root)
        self.calls = 0

    def __call__(self, thread_id: str, **kwargs: Any) -> Any:
        self.calls += 1
        return super().__call__(thread_id)


def bearer_auth(request: Any) -> str | None:
    """A deployment's auth hook: a token per person."""
    value = request.headers.get("authorization", "")
    return USERS.get(value.removeprefix("Bearer ").strip())


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    factory = CountingFactory(tmp_path_factory.mktemp("sec"))
    server = AguiServer(factory, ping=0.2)
    handle = serve_in_background(server, header_timeout=1.0, announce=False)
    yield handle, server, factory
    handle.stop()


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    root = tmp_path_factory.mktemp("people")
    factory = CountingFactory(root)
    server = AguiServer(factory, auth=bearer_auth, session_kwargs={"audit_log": str(root / "audit.jsonl")})
    handle = serve_in_background(server, announce=False)
    yield handle, server, factory, root / "audit.jsonl"
    handle.stop()


def body_of(thread_id: str, text: str = "hi") -> dict[str, Any]:
    return AguiClient.make_input(thread_id, [user(text, f"{thread_id}-u1")]).model_dump(mode="json", by_alias=True)


def raw_post(port: int, headers: dict[str, str], body: bytes, timeout: float = 10.0) -> tuple[int, bytes]:
    """One HTTP/1.1 request over a plain socket (any Host:, any header); reads
    the response body, or an SSE stream up to its terminal event."""
    lines = ["POST / HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items()), f"Content-Length: {len(body)}", "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall("\r\n".join(lines).encode() + body)
        data = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                length = [
                    int(v)
                    for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
                    if k.lower() == b"content-length"
                ]
                if (length and len(rest) >= length[0]) or b'"RUN_FINISHED"' in rest or b'"RUN_ERROR"' in rest:
                    break
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data


def test_C26_cross_origin_text_plain_post_is_refused_before_the_agent_runs(guarded):
    handle, server, factory = guarded
    before = factory.calls
    evil_origin = "http://127.0.0.1:9"  # another port on the same machine
    payload = json.dumps(body_of("c26-thread")).encode()
    host = f"127.0.0.1:{handle.port}"
    # what a page on another origin can send without a preflight: text/plain, no token
    status, _ = raw_post(handle.port, {"Host": host, "Origin": evil_origin, "Content-Type": "text/plain"}, payload)
    assert status == 403
    # even with the token (it leaked), another origin is refused
    auth = {"Authorization": f"Bearer {handle.token}"}
    status, _ = raw_post(
        handle.port, {"Host": host, "Origin": evil_origin, "Content-Type": "application/json", **auth}, payload
    )
    assert status == 403
    # same origin, token, but not JSON: refused too
    status, data = raw_post(
        handle.port, {"Host": host, "Origin": f"http://{host}", "Content-Type": "text/plain", **auth}, payload
    )
    assert status == 415 and b"application/json" in data
    assert factory.calls == before and "c26-thread" not in server.threads
    # the same request done right runs the agent
    cap = asyncio.run(post_run(handle, body_of("plain-c26"), headers={"Origin": f"http://{host}"}))
    assert cap.status == 200 and cap.types[-1] == "RUN_FINISHED"
    assert factory.calls == before + 1


def test_C26_host_check_refuses_a_rebound_name(guarded):
    handle, server, factory = guarded
    before = factory.calls
    payload = json.dumps(body_of("plain-rebind")).encode()
    auth = {"Authorization": f"Bearer {handle.token}", "Content-Type": "application/json"}
    status, data = raw_post(handle.port, {"Host": f"attacker.example:{handle.port}", **auth}, payload)
    assert status == 403 and b"bad_host" in data
    status, _ = raw_post(handle.port, {"Host": f"localhost:{handle.port}", **auth}, payload)
    assert status == 200
    assert factory.calls == before + 1


def test_C26_missing_or_wrong_token_is_refused(guarded):
    handle, server, factory = guarded
    assert handle.token and len(handle.token) >= 32
    before = factory.calls

    async def go():
        async with httpx.AsyncClient() as http:
            none = await http.post(handle.url, json=body_of("plain-notoken"))
            wrong = await http.post(handle.url, json=body_of("plain-notoken"), headers={"Authorization": "Bearer nope"})
            return none, wrong

    none, wrong = asyncio.run(go())
    assert none.status_code == 401 and wrong.status_code == 401
    assert none.headers.get("www-authenticate") == "Bearer"
    remote = RemoteSession(handle.url, display=False)  # no token: the widget says why

    async def unauth():
        with pytest.raises(Exception) as err:
            await remote.run("hello")
        return err.value

    err = asyncio.run(unauth())
    assert "401" in str(err)
    assert factory.calls == before


def test_threads_belong_to_their_principal_and_the_audit_names_who_decided(people):
    handle, server, factory, audit_path = people

    async def go():
        alice = RemoteSession(handle.url, token="alice-secret", thread_id="shared-1", display=False)
        task = alice.start("Please tidy up.")
        pending = await alice.until_paused()
        assert len(pending) == 2
        ids = sorted(p["interrupt_id"] for p in pending)
        # bob, on alice's thread: a new message, then a resume naming her interrupts
        bob = AguiClient(handle.url, token="bob-secret")
        new = [e async for e in bob.run("shared-1", [user("mine now", "bob-1")])]
        from ag_ui.core import ResumeEntry

        entries = [ResumeEntry(interrupt_id=i, status="cancelled") for i in ids]
        res = [e async for e in bob.run("shared-1", [], resume=entries)]
        for p in sorted(alice.pending, key=lambda p: p["kind"] == "confirm"):
            if p["kind"] == "ask_user":
                await alice.act(
                    {
                        "action": "answer",
                        "tool_call_id": p["tool_call_id"],
                        "answers": [{"question": "Which file should I archive?", "selected": ["notes.txt"]}],
                    }
                )
            else:
                await alice.act({"action": "approve", "tool_call_id": p["tool_call_id"]})
        return ids, new, res, await task

    ids, new, res, final = asyncio.run(go())
    for events in (new, res):
        last = events[-1]
        assert last.type.value == "RUN_ERROR" and last.code == "thread_not_found"
        dumped = json.dumps([e.model_dump(mode="json", by_alias=True) for e in events])
        assert not any(i in dumped for i in ids) and "interrupt" not in last.message.lower()
    assert final.startswith("You chose to archive notes.txt")
    records = AuditLog(audit_path).records("answered")
    decided = [r for r in records if r.get("decision")]
    assert decided and {r["decided_by"] for r in decided} == {"alice"}


def test_a_chunked_50mb_body_is_refused_early_with_413(guarded):
    handle, *_ = guarded
    chunk = b"x" * 65536
    sent = 0
    head = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{handle.port}\r\nAuthorization: Bearer {handle.token}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    reply = b""
    with socket.create_connection(("127.0.0.1", handle.port), timeout=10) as s:
        s.sendall(head.encode())
        s.setblocking(False)
        deadline = time.monotonic() + 20
        while sent < 50 * 1024 * 1024 and time.monotonic() < deadline:
            try:
                reply += s.recv(65536)
            except BlockingIOError:
                pass
            if reply:
                break
            try:
                s.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                sent += len(chunk)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                time.sleep(0.01)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert sent < 8 * 1024 * 1024  # refused after about the 1 MB limit, not after 50 MB


def test_a_client_trickling_its_headers_is_dropped(guarded):
    handle, *_ = guarded
    with socket.create_connection(("127.0.0.1", handle.port), timeout=10) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        start = time.monotonic()
        closed = False
        for _ in range(40):  # one header byte every 0.1 s, never finishing
            try:
                s.sendall(b"X")
                s.settimeout(0.1)
                if s.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
    assert closed and time.monotonic() - start < 3.5


def test_sse_keepalive_pings_while_the_agent_is_slow(tmp_path):
    from nb_hitl.agui.demo import two_pause_agent

    server = AguiServer(lambda tid: two_pause_agent(tmp_path / tid, chunk_delay=0.05), ping=0.1)
    with serve_in_background(server, announce=False) as handle:

        async def go():
            body = b""
            headers = {"Authorization": f"Bearer {handle.token}"}
            async with httpx.AsyncClient(timeout=30) as http:
                async with http.stream("POST", handle.url, json=body_of("slow-1"), headers=headers) as r:
                    async for chunk in r.aiter_bytes():
                        body += chunk
            return body

        body = asyncio.run(go())
    assert b": ping" in body and b'"RUN_FINISHED"' in body


def test_finished_threads_are_evicted(tmp_path):
    import gc
    import weakref

    factory = CountingFactory(tmp_path)
    server = AguiServer(factory, max_threads=3, thread_ttl=3600)

    async def go():
        for n in range(6):
            events = [e async for e in server.run(AguiClient.make_input(f"plain-{n}", [user("hi", f"u{n}")]))]
            assert events[-1].type.value == "RUN_FINISHED"

    asyncio.run(go())
    assert len(server.threads) <= 3 and server.registry.evicted == 3
    assert "plain-5" in server.threads and "plain-0" not in server.threads
    gone = [weakref.ref(factory.agents.pop(f"plain-{n}")) for n in range(3)]
    gc.collect()
    assert all(r() is None for r in gone)  # an evicted thread's agent and Session are freed


def test_an_allowed_origin_gets_cors_and_others_do_not(tmp_path):
    app_origin = "https://app.example"
    server = AguiServer(CountingFactory(tmp_path), allowed_origins=[app_origin])
    with serve_in_background(server, announce=False) as handle:

        async def go():
            preflight = {
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            }
            async with httpx.AsyncClient() as http:
                ok = await http.options(handle.url, headers={"Origin": app_origin, **preflight})
                bad = await http.options(handle.url, headers={"Origin": "https://evil.example", **preflight})
            cap = await post_run(handle, body_of("plain-cors"), headers={"Origin": app_origin})
            evil = await post_run(handle, body_of("plain-cors-2"), headers={"Origin": "https://evil.example"})
            return ok, bad, cap, evil

        ok, bad, cap, evil = asyncio.run(go())
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == app_origin
    assert bad.status_code == 400 and "access-control-allow-origin" not in bad.headers
    assert cap.status == 200 and cap.types[-1] == "RUN_FINISHED"
    assert evil.status == 403
