"""A real HTTP receiver for notification hooks: ``http.server`` on
127.0.0.1 (a free port), in a thread, keeping every POST's JSON body."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class HookInbox:
    """Receives POSTs on ``url``; answers ``status`` after ``delay`` seconds.

    Attributes:
        bodies: the JSON bodies received, in order.
        headers: the headers of each request.
    """

    def __init__(self, status: int = 204, delay: float = 0.0) -> None:
        self.status, self.delay = status, delay
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        inbox = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length).decode("utf-8"))
                inbox.headers.append(dict(self.headers.items()))
                inbox.bodies.append(body)
                time.sleep(inbox.delay)
                try:
                    self.send_response(inbox.status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:  # the client gave up (a timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/secret-path?token=s3cret"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The bodies, once there are at least ``n`` (or the timeout passed)."""
        end = time.monotonic() + timeout
        while len(self.bodies) < n and time.monotonic() < end:
            time.sleep(0.02)
        return list(self.bodies)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> HookInbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
