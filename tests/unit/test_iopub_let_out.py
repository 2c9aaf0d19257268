"""``let_out``: what a widget published has left ipykernel's IOPub thread when it returns.

A real ``ipykernel.iostream.IOPubThread`` on a zmq ``PUB`` socket, read by a
``SUB`` socket; the widget is a real ipywidgets widget whose comm holds that
thread's kernel as an ipykernel ``Comm`` does once it published (outside a
kernel ipywidgets' comm is ``comm.DummyComm``).
"""

from __future__ import annotations

import time
import types
import uuid
from collections.abc import Iterator
from typing import Any

import ipywidgets
import pytest
import zmq
from ipykernel.iostream import IOPubThread

from nb_hitl.widgets._iopub import let_out


@pytest.fixture
def iopub() -> Iterator[tuple[IOPubThread, zmq.Socket]]:
    """A running IOPub thread and a SUB socket that receives what it sends."""
    ctx = zmq.Context()
    address = f"inproc://let-out-{uuid.uuid4().hex}"
    pub = ctx.socket(zmq.PUB)
    pub.bind(address)
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(address)
    thread = IOPubThread(pub)
    thread.start()
    deadline = time.monotonic() + 10
    while not sub.poll(10):  # the subscription reached the PUB socket: a probe arrives
        assert time.monotonic() < deadline, "the SUB socket never connected"
        thread.send_multipart([b"probe"])
    while sub.poll(50):
        sub.recv_multipart()
    yield thread, sub
    thread.stop()
    thread.close()
    sub.close(linger=0)
    ctx.term()


def _widget(thread: Any) -> ipywidgets.Label:
    widget = ipywidgets.Label("x")
    widget.comm.kernel = types.SimpleNamespace(iopub_thread=thread)  # an ipykernel Comm, once it published
    return widget


def test_what_was_published_is_on_the_socket_when_it_returns(iopub: tuple[IOPubThread, zmq.Socket]) -> None:
    thread, sub = iopub
    widget = _widget(thread)
    thread.schedule(lambda: time.sleep(0.2))  # the IOPub thread busy: nothing it was handed is sent yet
    for i in range(3):
        thread.send_multipart([b"message %d" % i])  # what Comm.publish_msg hands over
    assert let_out(widget, 5.0) is True
    got = []
    while sub.poll(0):  # no waiting: already sent
        got.append(sub.recv_multipart())
    assert got == [[b"message 0"], [b"message 1"], [b"message 2"]]


def test_without_an_iopub_thread_it_does_not_wait() -> None:
    widget = ipywidgets.Label("x")  # outside a kernel: comm.DummyComm, no kernel
    started = time.monotonic()
    assert let_out(widget, 5.0) is False
    assert let_out(None, 5.0) is False
    assert time.monotonic() - started < 1.0


def test_a_stopped_iopub_thread_is_not_waited_for(iopub: tuple[IOPubThread, zmq.Socket]) -> None:
    thread, _ = iopub
    widget = _widget(thread)
    thread.stop()
    started = time.monotonic()
    assert let_out(widget, 5.0) is False
    assert time.monotonic() - started < 1.0
