"""The server's threads, in process (no HTTP): one run at a time, interrupts
closed since they were announced, and the queue the Session's listeners fill.
"""

from __future__ import annotations

import asyncio

from nb_hitl.agui import AguiServer
from nb_hitl.agui.client import AguiClient
from tests.agui.test_agui_server import answers
from tests.agui_support import Factory, user


def run(coro):
    return asyncio.run(coro)


def make(thread_id: str, messages, resume=None):
    return AguiClient.make_input(thread_id, messages, resume)


def test_one_run_at_a_time_per_thread(tmp_path):
    """In process: while a run holds its thread, another run on it is refused."""
    server = AguiServer(Factory(tmp_path))

    async def go():
        first = server.run(make("two-busy", [user("tidy", "b1")]))
        assert (await first.__anext__()).type.value == "RUN_STARTED"
        second_event = await first.__anext__()  # the first run now holds the thread
        busy = [e async for e in server.run(make("two-busy", [user("more", "b2")]))]
        rest = [second_event] + [e async for e in first]
        return busy, rest

    busy, rest = run(go())
    assert [e.type.value for e in busy] == ["RUN_STARTED", "RUN_ERROR"] and busy[-1].code == "thread_busy"
    assert rest[-1].outcome.type == "interrupt"


def test_interrupts_closed_since_they_were_announced_are_refused(tmp_path):
    """In process: the thread's parked reply is interrupted without the client
    (as a Session deadline or a notebook user could); its old interrupts are refused."""
    server = AguiServer(Factory(tmp_path))

    async def go():
        first = [e async for e in server.run(make("two-closed", [user("tidy", "c1")]))]
        interrupts = list(first[-1].outcome.interrupts)
        await server.threads["two-closed"].session.interrupt("Stopped by the operator.")
        late = [e async for e in server.run(make("two-closed", [user("tidy", "c1")], answers(interrupts)))]
        fresh = [e async for e in server.run(make("two-closed", [user("tidy", "c1"), user("again", "c2")]))]
        return late, fresh

    late, fresh = run(go())
    assert late[-1].type.value == "RUN_ERROR" and late[-1].code == "interrupt_expired"
    assert "Stopped by the operator." in late[-1].message
    # the thread is usable again: new input starts a new reply (the script's report turn)
    assert fresh[-1].outcome.type == "success"
    assert fresh[-1].result == "No file was chosen (interrupted). The deletion did not happen (interrupted)."


def test_items_queued_from_another_thread_reach_the_run_in_order():
    """The Session's listeners only queue: on the server's loop directly, from
    any other thread through ``call_soon_threadsafe`` (order kept); with no
    run listening, items are dropped."""
    import threading

    from nb_hitl.agui.threads import ThreadState as _Thread

    async def go():
        t = _Thread(thread_id="t", agent=None, session=None)
        t.put(("event", "dropped"))  # nobody listens yet
        t.listen()
        worker = threading.Thread(target=lambda: [t.put(("event", i)) for i in range(200)])
        worker.start()
        await asyncio.to_thread(worker.join)
        t.put(("event", 200))  # from the loop itself, after the worker's
        return [(await t.queue.get())[1] for _ in range(201)], t.queue.empty()

    items, empty = run(go())
    assert items == list(range(201)) and empty
