"""Slow clients are dropped at the stated limits; an owner can close its thread.

Twenty raw sockets on 127.0.0.1 at once each trickle a request that would
take far longer than the limits: a body to the endpoint (answered 408), a
body to an unknown path or to the health path (404 / 405 answered at once
without reading the body: uvicorn's keep-alive timer restarts with every
byte, so only the body deadline ends them), headers (nothing answered), the
second request's headers on a kept-alive connection. The server closes each
connection before the client finished sending. Then ``DELETE
<path>/threads/<thread_id>``: only the owner closes its thread, a thread
waiting on interrupts is refused, and a closed thread is forgotten.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from ag_ui.core import ResumeEntry

from nb_hitl.agui import AguiServer, serve_in_background
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.threads import checkpoint_id
from tests.agui_support import Factory, post_run, user

LIMIT = 1.0  # header and body timeout of the server under test, seconds
BODY = 100_000  # bytes a trickling client announces (one byte per 50 ms: over an hour)
USERS = {"ana-token": "ana", "bo-token": "bo"}


def _auth(request: Any) -> str | None:
    return USERS.get(request.headers.get("authorization", "").removeprefix("Bearer ").strip())


@pytest.fixture(scope="module")
def slow_served(tmp_path_factory):
    server = AguiServer(Factory(tmp_path_factory.mktemp("slow")), token="slow-token", body_timeout=LIMIT)
    handle = serve_in_background(server, header_timeout=LIMIT, announce=False)
    yield handle
    handle.stop()


def _head(path: str, method: str = "POST") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer slow-token\r\n"
        f"Content-Type: application/json\r\nContent-Length: {BODY}\r\n\r\n"
    ).encode()


KEEP_ALIVE_GET = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

# how each client starts, and what it then trickles forever
CLIENTS: dict[str, tuple[bytes, bytes]] = {
    "body-to-endpoint": (_head("/"), b"x"),
    "body-to-unknown-path": (_head("/nowhere"), b"x"),
    "body-to-health": (_head("/health"), b"x"),
    "headers": (b"POST / HTTP/1.1\r\n", b"X-Slow: 1\r\n"),
    "headers-after-keep-alive": (KEEP_ALIVE_GET + b"POST / HTTP/1.1\r\n", b"X-Slow: 1\r\n"),
}


async def _trickle(port: int, start: bytes, drip: bytes, budget: int) -> tuple[bool, bytes, int]:
    """Send ``start``, then ``drip`` every 50 ms, up to ``budget`` drips.

    Returns ``(closed_by_server, what the server answered, drips sent)``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = b""

    async def read() -> None:
        nonlocal got
        while chunk := await reader.read(65536):
            got += chunk

    reading = asyncio.create_task(read())
    writer.write(start)
    sent = 0
    try:
        while sent < budget and not reading.done():
            writer.write(drip)
            await writer.drain()
            sent += 1
            await asyncio.sleep(0.05)
    except (ConnectionError, OSError):
        pass
    closed = reading.done() or writer.transport.is_closing()
    if not closed:
        try:
            await asyncio.wait_for(reading, 1.0)
            closed = True
        except TimeoutError:
            closed = False
    reading.cancel()
    writer.close()
    return closed, got, sent


def test_slow_clients_are_closed_before_they_finish_sending(slow_served):
    budget = 1200  # 60 s of drips: far past every limit, far short of the announced body

    async def go() -> list[tuple[str, tuple[bool, bytes, int]]]:
        kinds = [name for _ in range(4) for name in CLIENTS]  # 20 clients at once
        results = await asyncio.gather(*(_trickle(slow_served.port, *CLIENTS[k], budget) for k in kinds))
        return list(zip(kinds, results, strict=True))

    results = asyncio.run(go())
    assert len(results) == 20
    for kind, (closed, got, sent) in results:
        assert closed and sent < budget, (kind, sent, got[:80])  # the server ended it, not the client
        if kind == "body-to-endpoint":
            assert got.startswith(b"HTTP/1.1 408") and b"body_timeout" in got, got[:200]
        elif kind == "body-to-unknown-path":
            assert got.startswith(b"HTTP/1.1 404"), got[:80]
        elif kind == "body-to-health":
            assert got.startswith(b"HTTP/1.1 405"), got[:80]
        elif kind == "headers-after-keep-alive":
            assert got.startswith(b"HTTP/1.1 200") and got.count(b"HTTP/1.1") == 1, got[:200]
        else:
            assert got == b"", got[:80]  # nothing to answer: headers never ended
    # the server still serves
    done = asyncio.run(post_run(slow_served, AguiClient.make_input("plain-after", [user("hi", "s1")])))
    assert done.status == 200 and done.types[-1] == "RUN_FINISHED"


def _unread(port: int, budget: int = 1200) -> list[tuple[bool, bytes, int]]:
    async def go() -> list[tuple[bool, bytes, int]]:
        starts = [_head("/nowhere"), _head("/health")] * 2
        return list(await asyncio.gather(*(_trickle(port, start, b"x", budget) for start in starts)))

    return asyncio.run(go())


def test_a_body_nobody_reads_closes_the_connection_under_plain_uvicorn(tmp_path):
    """The app's own guard (close_unread): under uvicorn's stock h11 protocol,
    without serve_in_background's deadlines, a 404 / 405 answered before the
    body was read says Connection: close and the connection ends."""
    import socket
    import threading

    import uvicorn

    server = AguiServer(Factory(tmp_path), token="slow-token")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(32)
    plain = uvicorn.Server(uvicorn.Config(server, http="h11", lifespan="off", log_level="warning"))
    thread = threading.Thread(target=plain.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not plain.started:
            assert thread.is_alive()
            threading.Event().wait(0.01)
        results = _unread(sock.getsockname()[1], budget=200)
    finally:
        plain.should_exit = True
        thread.join(10)
        sock.close()
    for closed, got, sent in results:
        assert closed and sent < 200, (sent, got[:80])
        assert got.split(b"\r\n", 1)[0] in (b"HTTP/1.1 404 Not Found", b"HTTP/1.1 405 Method Not Allowed")
        assert b"connection: close" in got.lower()


def test_the_protocol_ends_a_trickled_body_for_any_app():
    """serve_in_background's own deadline, for an app without the guard: a
    body still arriving after body_timeout is cut off."""
    from starlette.applications import Starlette

    with serve_in_background(Starlette(), header_timeout=LIMIT, body_timeout=LIMIT, announce=False) as handle:
        results = _unread(handle.port)
    for closed, got, sent in results:
        assert closed and sent < 1200, (sent, got[:80])
        assert b"connection: close" not in got.lower()  # answered keep-alive: only the deadline ends it


def test_the_owner_closes_its_thread_and_nobody_else_can(tmp_path):
    factory = Factory(tmp_path / "sandboxes")
    server = AguiServer(factory, auth=_auth, session_kwargs={"checkpoints": str(tmp_path / "checkpoints")})
    store = server.registry.store
    assert store is not None
    with serve_in_background(server, announce=False) as handle:
        base = handle.url.rstrip("/")

        def delete(thread_id: str, token: str | None) -> httpx.Response:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return httpx.delete(f"{base}/threads/{thread_id}", headers=headers, timeout=30)

        def run(thread_id: str, token: str, messages: list[Any], resume: Any = None) -> Any:
            inp = AguiClient.make_input(thread_id, messages, resume)
            return asyncio.run(post_run(handle.url, inp, token=token))

        tid = "tidy-close"
        first = run(tid, "ana-token", [user("Please tidy up.", "c1")])
        interrupts = first.last().outcome.interrupts
        assert delete(tid, None).status_code == 401
        assert delete(tid, "bo-token").status_code == 404  # another principal's: not said to exist
        busy = delete(tid, "ana-token")
        assert busy.status_code == 409 and busy.json()["code"] == "thread_busy"  # it waits on interrupts
        cancelled = [ResumeEntry(interrupt_id=i.id, status="cancelled") for i in interrupts]
        assert run(tid, "ana-token", [], cancelled).last().outcome.type == "success"
        assert store.path(checkpoint_id(tid)).exists()
        closed = delete(tid, "ana-token")
        assert closed.status_code == 200 and closed.json() == {"status": "closed", "thread_id": tid}
        assert tid not in server.threads and not store.path(checkpoint_id(tid)).exists()
        assert delete(tid, "ana-token").status_code == 404  # gone
        # the same id starts a new conversation
        again = run(tid, "ana-token", [user("Please tidy up.", "c2")])
        assert again.last().outcome.type == "interrupt" and len(factory.agents[tid].state.context) == 2
