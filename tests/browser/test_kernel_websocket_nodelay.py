"""nb_hitl's Jupyter server extension (``nb_hitl_serverext``): the kernel websocket
of a real Jupyter server has TCP_NODELAY set, so a widget's small answer to a
click is sent at once (not held by Nagle's algorithm until the browser's delayed
ACK, ~40 ms); with ``KernelWebsocketNodelay.enabled=False`` it stays off.

The harness's server reads the tree's ``jupyter-config`` (the file the package
installs as ``etc/jupyter/jupyter_server_config.d/nb_hitl.json``); the option
is read from the server's own socket (:mod:`tests.harness.process_sockets`).
A plain websocket client (tornado's) opens the kernel channels; no page needed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from pathlib import Path

from tornado.websocket import websocket_connect

from tests.harness.lab import JupyterLabServer
from tests.harness.process_sockets import socket_option_of_peer
from tests.support import run_async


async def _kernel_websocket_nodelay(server: JupyterLabServer) -> int:
    """Open a kernel's channels websocket, wait for its kernel_info_reply (the
    server has then run ``open()``), and read TCP_NODELAY of the server's end."""
    kernel = server.api("POST", "api/kernels", {"name": "python3"})
    session = uuid.uuid4().hex
    url = f"ws://127.0.0.1:{server.port}/api/kernels/{kernel['id']}/channels?session_id={session}&token={server.token}"
    ws = await websocket_connect(url)
    try:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": "kernel_info_request",
            "session": session,
            "username": "t",
            "version": "5.3",
        }
        request = {"header": header, "parent_header": {}, "metadata": {}, "content": {}, "channel": "shell"}
        await ws.write_message(json.dumps(request))
        while True:
            raw = await asyncio.wait_for(ws.read_message(), 60)
            assert raw is not None, "the server closed the kernel websocket"
            msg = json.loads(raw)
            if msg.get("msg_type") == "kernel_info_reply" and msg["parent_header"].get("msg_id") == msg_id:
                break
        assert server.proc is not None
        peer = ws.stream.socket.getsockname()[:2]
        return socket_option_of_peer(server.proc.pid, peer, socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        ws.close()
        server.api("DELETE", f"api/kernels/{kernel['id']}")


def test_kernel_websocket_has_nodelay(lab: JupyterLabServer) -> None:
    assert run_async(_kernel_websocket_nodelay(lab)) != 0
    assert "TCP_NODELAY on ZMQChannelsWebsocketConnection" in lab.log_tail(200_000)


def test_config_trait_switches_it_off(tmp_path: Path) -> None:
    with JupyterLabServer(tmp_path, extra_args=["--KernelWebsocketNodelay.enabled=False"]) as server:
        assert run_async(_kernel_websocket_nodelay(server)) == 0
        assert "keep Nagle's algorithm" in server.log_tail(200_000)
