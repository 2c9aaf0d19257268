"""A real ipykernel driven through jupyter_client, for kernel-level tests.

:class:`KernelHarness` starts the venv's ``python -m ipykernel_launcher``
with :class:`jupyter_client.KernelManager`, reads **every** IOPub message on
a background thread (also those whose parent is an old cell, which is what
a background ``asyncio`` task produces), and keeps a record of each widget
comm the kernel opens. It talks to widgets exactly as JupyterLab's widget
manager does: a shell ``comm_msg`` whose ``data`` is
``{"method": "custom", "content": ...}`` (see ``@jupyter-widgets/base``
``WidgetModel.send`` and ipywidgets' ``Widget._handle_msg``).

Usage::

    with KernelHarness() as k:
        k.execute("import anywidget").raise_for_error()
        rec = k.wait_for_comm("AnyModel")
        reply = k.request(rec.comm_id, "ping")   # {"request_id", "ok": True, ...}

Shell-channel methods (``execute*``, ``wait_reply``, ``send_*``, ``request``) are serialised by a lock.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

from .kernel_records import (  # re-exported: tests import them from here
    REPO_ROOT,
    VENV_PYTHON,
    CommRecord,
    ExecResult,
    KernelTimeoutError,
    apply_cards,
    apply_ops,
    kernel_env,
)

__all__ = [
    "apply_cards",
    "apply_ops",
    "REPO_ROOT",
    "VENV_PYTHON",
    "CommRecord",
    "ExecResult",
    "KernelHarness",
    "KernelTimeoutError",
    "kernel_env",
]

T = TypeVar("T")


class KernelHarness:
    """A real ipykernel with recorded IOPub traffic and widget comms.

    Args:
        cwd: working directory of the kernel (default: a fresh temp dir,
            removed on exit).
        env: extra environment variables (see :func:`kernel_env`).
        startup_timeout: seconds to wait for ``kernel_info``.

    Use as a context manager (or call :meth:`start` / :meth:`close`).
    """

    def __init__(
        self,
        cwd: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self._tmp = Path(tempfile.mkdtemp(prefix="nbh-kernel-"))
        self.cwd = Path(cwd) if cwd is not None else self._tmp / "cwd"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self._extra_env = env or {}
        self._startup_timeout = startup_timeout
        spec_dir = self._tmp / "kernels" / "nbh-python"
        spec_dir.mkdir(parents=True)
        (spec_dir / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [str(VENV_PYTHON), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "nb_hitl test kernel",
                    "language": "python",
                }
            )
        )
        ksm = KernelSpecManager(kernel_dirs=[str(self._tmp / "kernels")], ensure_native_kernel=False)
        self.km = KernelManager(
            kernel_name="nbh-python",
            kernel_spec_manager=ksm,
            connection_file=str(self._tmp / "kernel-connection.json"),
        )
        self.kc: Any = None
        self._cond = threading.Condition()
        self._shell_lock = threading.RLock()
        self._replies: dict[str, dict[str, Any]] = {}
        self._reset_records()
        self._reader: threading.Thread | None = None
        self._stop_reader = threading.Event()
        self.reader_errors: list[str] = []
        #: The kernel process's own stdout/stderr (not IOPub): crashes, ipykernel warnings.
        self.log_path = self._tmp / "kernel.log"
        self._log_file: Any = None

    # -- lifecycle ------------------------------------------------------------
    def _reset_records(self) -> None:
        with self._cond:
            self._messages: list[dict[str, Any]] = []
            self._by_parent: dict[str, list[dict[str, Any]]] = {}
            self._idle: set[str] = set()
            self._comms: dict[str, CommRecord] = {}
            self._replies.clear()
            self._cond.notify_all()

    def start(self) -> KernelHarness:
        """Start the kernel, connect, wait for ``kernel_info``, start the IOPub reader."""
        ipython_dir = self._tmp / "ipython"
        ipython_dir.mkdir(exist_ok=True)
        env = kernel_env({"IPYTHONDIR": str(ipython_dir), **self._extra_env})
        if self._log_file is None:
            self._log_file = open(self.log_path, "ab")
        self.km.start_kernel(env=env, cwd=str(self.cwd), stdout=self._log_file, stderr=subprocess.STDOUT)
        self._connect()
        return self

    def _connect(self) -> None:
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            # Also absorbs the IOPub "slow joiner" race: returns once IOPub works.
            self.kc.wait_for_ready(timeout=self._startup_timeout)
        except RuntimeError as exc:
            raise KernelTimeoutError(f"kernel did not start: {exc}") from exc
        self._stop_reader.clear()
        self._reader = threading.Thread(target=self._read_iopub, name="nbh-iopub-reader", daemon=True)
        self._reader.start()

    def _disconnect(self) -> None:
        self._stop_reader.set()
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception:
                pass
            self.kc = None

    def close(self) -> None:
        """Stop the reader, shut the kernel down (forcefully), remove temp files."""
        self._disconnect()
        try:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
        except Exception:
            pass
        try:
            self.km.cleanup_resources()
        except Exception:
            pass
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> KernelHarness:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def kernel_log(self) -> str:
        """What the kernel process wrote to its real stdout/stderr (outside IOPub)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def pid(self) -> int | None:
        """The kernel process id, if running."""
        proc = getattr(self.km.provisioner, "process", None)
        return proc.pid if proc is not None else None

    def is_alive(self) -> bool:
        return bool(self.km.is_alive())

    def kill(self) -> None:
        """SIGKILL the kernel process (a crash, not a shutdown) and reap it."""
        proc = getattr(self.km.provisioner, "process", None)
        if proc is None:
            raise RuntimeError("no kernel process to kill")
        os.kill(proc.pid, signal.SIGKILL)
        try:
            proc.wait(timeout=10)
        except Exception:
            pass

    def restart(self, now: bool = True) -> None:
        """Restart the kernel (works after :meth:`kill` too) and reconnect.

        ``now=True`` kills the old kernel at once; ``now=False`` is JupyterLab's
        restart (jupyter_client: an interrupt, ``shutdown_request`` with
        ``restart=True``, a kill only if the kernel is still up after
        ``shutdown_wait_time``). All records (messages, comms, pending replies)
        are cleared: the old kernel's comms no longer exist.
        """
        self._disconnect()
        self.km.restart_kernel(now=now)
        self._reset_records()
        self._connect()

    # -- IOPub reader ------------------------------------------------------------
    def _read_iopub(self) -> None:
        chan = self.kc.iopub_channel
        while not self._stop_reader.is_set():
            try:
                msg = chan.get_msg(timeout=0.05)
            except queue.Empty:
                continue
            except Exception:  # socket closed during shutdown, or a bad frame
                if self._stop_reader.is_set():
                    return
                self.reader_errors.append(traceback.format_exc())
                time.sleep(0.01)
                continue
            try:
                self._record(msg)
            except Exception:
                self.reader_errors.append(traceback.format_exc())

    def _record(self, msg: dict[str, Any]) -> None:
        mtype = msg["header"]["msg_type"]
        msg["msg_type"] = mtype
        parent = (msg.get("parent_header") or {}).get("msg_id")
        content = msg.get("content") or {}
        with self._cond:
            self._messages.append(msg)
            if parent:
                self._by_parent.setdefault(parent, []).append(msg)
            if mtype == "status" and content.get("execution_state") == "idle" and parent:
                self._idle.add(parent)
            elif mtype == "comm_open":
                data = content.get("data") or {}
                cid = content["comm_id"]
                self._comms[cid] = CommRecord(
                    comm_id=cid,
                    target_name=content.get("target_name", ""),
                    state=dict(data.get("state") or {}),
                    parent_msg_id=parent,
                )
            elif mtype == "comm_msg":
                cid = content.get("comm_id")
                data = content.get("data") or {}
                rec = self._comms.get(cid)
                if rec is None:  # opened before we listened: keep what we can
                    rec = self._comms[cid] = CommRecord(comm_id=cid, target_name="")
                method = data.get("method")
                if method in ("update", "echo_update"):
                    rec.state.update(data.get("state") or {})
                elif method == "custom":
                    rec.custom.append(data.get("content"))
                    apply_cards(rec.state, data.get("content"))  # as the page holds the cards
            elif mtype == "comm_close":
                rec = self._comms.get(content.get("comm_id"))
                if rec is not None:
                    rec.closed = True
            self._cond.notify_all()

    # -- queries -------------------------------------------------------------------
    def messages(self, msg_type: str | None = None, parent_msg_id: str | None = None) -> list[dict[str, Any]]:
        """IOPub messages received so far (optionally filtered), oldest first.

        Each is a jupyter_client message dict plus ``"msg_type"``.
        """
        with self._cond:
            src = self._by_parent.get(parent_msg_id, []) if parent_msg_id else self._messages
            return [m for m in src if msg_type is None or m["msg_type"] == msg_type]

    def stream_text(self, parent_msg_id: str | None = None, name: str = "stdout") -> str:
        """All ``stream`` text with this name (of one request, or of any)."""
        return "".join(
            m["content"].get("text", "")
            for m in self.messages("stream", parent_msg_id)
            if m["content"].get("name") == name
        )

    def comms(self, model_name_contains: str | None = None, *, include_closed: bool = False) -> list[CommRecord]:
        """Snapshots of the comms the kernel opened, in opening order.

        Args:
            model_name_contains: keep only comms whose ``state._model_name``
                contains this (e.g. ``"AnyModel"``, ``"Button"``).
            include_closed: also return comms that were closed.
        """
        with self._cond:
            return [
                r.snapshot()
                for r in self._comms.values()
                if (include_closed or not r.closed)
                and (model_name_contains is None or model_name_contains in r.model_name)
            ]

    def comm(self, comm_id: str) -> CommRecord:
        """Snapshot of one comm (``KeyError`` if never seen)."""
        with self._cond:
            return self._comms[comm_id].snapshot()

    def wait_for(
        self,
        predicate: Callable[[], T],
        timeout: float = 30.0,
        what: str | None = None,
    ) -> T:
        """Wait until ``predicate()`` is truthy and return its value.

        Re-evaluated after every IOPub message (and at least every 50 ms).
        Raises :class:`KernelTimeoutError` naming ``what`` on timeout.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    recent = [m["msg_type"] for m in self._messages[-20:]]
                    raise KernelTimeoutError(
                        f"timed out after {timeout}s waiting for {what or predicate!r}; "
                        f"last IOPub messages: {recent}; reader errors: {self.reader_errors[-1:]}"
                    )
                self._cond.wait(min(remaining, 0.05))

    def wait_for_comm(self, model_name_contains: str, timeout: float = 30.0, index: int = -1) -> CommRecord:
        """Wait until an open comm with that model name exists; return it (the latest by default)."""
        found = self.wait_for(
            lambda: self.comms(model_name_contains),
            timeout,
            what=f"a comm whose _model_name contains {model_name_contains!r}",
        )
        return found[index]

    # -- shell ------------------------------------------------------------------------
    def _send_shell(self, msg_type: str, content: dict[str, Any], subshell_id: str | None = None) -> str:
        if self.kc is None:
            raise RuntimeError("kernel harness is not started")
        with self._shell_lock:
            msg = self.kc.session.msg(msg_type, content)
            msg["header"].update({"subshell_id": subshell_id} if subshell_id else {})  # on that subshell's thread
            self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def execute_async_start(self, code: str, *, silent: bool = False, store_history: bool = True) -> str:
        """Send an ``execute_request`` and return its ``msg_id`` at once.

        While the cell runs (e.g. it awaits a future at top level) the test
        can :meth:`send_custom` / :meth:`request`; ipykernel 7.4 dispatches
        comm messages while an async cell holds the execution lock.
        Finish with :meth:`wait_reply`.
        """
        return self._send_shell(
            "execute_request",
            {
                "code": code,
                "silent": silent,
                "store_history": store_history,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )

    def _shell_reply(self, msg_id: str, deadline: float) -> dict[str, Any] | None:
        while True:
            if msg_id in self._replies:
                return self._replies.pop(msg_id)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with self._shell_lock:
                try:
                    msg = self.kc.shell_channel.get_msg(timeout=min(remaining, 0.05))
                except queue.Empty:
                    continue
            parent = (msg.get("parent_header") or {}).get("msg_id")
            if parent:
                self._replies[parent] = msg

    def _collect(self, msg_id: str, reply: dict[str, Any] | None) -> ExecResult:
        res = ExecResult(msg_id=msg_id)
        res.messages = self.messages(parent_msg_id=msg_id)
        for m in res.messages:
            c = m["content"]
            t = m["msg_type"]
            if t == "stream":
                if c.get("name") == "stderr":
                    res.stderr += c.get("text", "")
                else:
                    res.stdout += c.get("text", "")
            elif t in ("display_data", "execute_result", "update_display_data"):
                res.outputs.append({"output_type": t, **c})
            elif t == "error":
                res.error = {k: c.get(k) for k in ("ename", "evalue", "traceback")}
        if reply is not None:
            rc = reply.get("content") or {}
            res.reply = rc
            res.status = rc.get("status")
            res.execution_count = rc.get("execution_count")
            if res.status == "error" and res.error is None:
                res.error = {k: rc.get(k) for k in ("ename", "evalue", "traceback")}
        return res

    def wait_reply(self, msg_id: str, timeout: float = 60.0) -> ExecResult:
        """Wait for the ``execute_reply`` and the ``idle`` status of ``msg_id``.

        Returns the :class:`ExecResult` (outputs gathered from IOPub). Raises
        :class:`KernelTimeoutError` (with ``.result`` = what was collected)
        when either does not come in ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        reply = self._shell_reply(msg_id, deadline)
        if reply is not None:
            with self._cond:
                while msg_id not in self._idle and time.monotonic() < deadline:
                    self._cond.wait(min(0.05, max(deadline - time.monotonic(), 0.001)))
        with self._cond:
            idle = msg_id in self._idle
        res = self._collect(msg_id, reply)
        if reply is None or not idle:
            missing = "execute_reply" if reply is None else "idle status"
            alive = "alive" if self.is_alive() else f"DEAD; its log ends: {self.kernel_log()[-1500:]!r}"
            raise KernelTimeoutError(
                f"no {missing} for {msg_id} after {timeout}s (kernel {alive}); collected: {res.describe()}",
                res,
            )
        return res

    def execute(self, code: str, timeout: float = 60.0) -> ExecResult:
        """Run ``code`` (top-level ``await`` allowed) and return its :class:`ExecResult`.

        Does not raise on a failing cell: check ``.ok`` or call
        ``.raise_for_error()``. Raises :class:`KernelTimeoutError` on timeout.
        Output that a background task prints *after* the cell finished is
        not in the result: use :meth:`messages` / :meth:`stream_text` with
        the cell's ``msg_id`` (``result.msg_id``).
        """
        return self.wait_reply(self.execute_async_start(code), timeout)

    # -- comms ------------------------------------------------------------------------
    def send_comm_msg(self, comm_id: str, data: dict[str, Any], subshell_id: str | None = None) -> str:
        """Send a shell ``comm_msg`` ``{"comm_id", "data": data}`` (on a subshell if given); returns its msg_id."""
        return self._send_shell("comm_msg", {"comm_id": comm_id, "data": data}, subshell_id)

    def send_custom(self, comm_id: str, content: Any, subshell_id: str | None = None) -> str:
        """What ``model.send(content)`` in the page does: ``data={"method": "custom", "content": content}``."""
        return self.send_comm_msg(comm_id, {"method": "custom", "content": content}, subshell_id)

    def send_update(self, comm_id: str, state: dict[str, Any]) -> str:
        """What ``model.set(...); model.save_changes()`` in the page does: ``method: update``."""
        return self.send_comm_msg(comm_id, {"method": "update", "state": state, "buffer_paths": []})

    def request(
        self, comm_id: str, action: str, timeout: float = 30.0, subshell_id: str | None = None, **payload: Any
    ) -> dict[str, Any]:
        """Send ``{"request_id": <new>, "action": action, **payload}`` (on ``subshell_id``) and return the reply.

        The reply is the first ``custom`` message on the comm carrying the
        same ``request_id`` (nb_hitl's ``RequestWidget`` answers every
        message ``{request_id, ok, ...}``). Returned as-is, ``ok`` true or
        false. Raises :class:`KernelTimeoutError` if none comes.
        """
        request_id = f"test-{uuid.uuid4().hex}"
        self.send_custom(comm_id, {"request_id": request_id, "action": action, **payload}, subshell_id)

        def find() -> dict[str, Any] | None:
            rec = self._comms.get(comm_id)
            for c in rec.custom if rec else ():
                if isinstance(c, dict) and c.get("request_id") == request_id:
                    return c
            return None

        return self.wait_for(find, timeout, what=f"reply to {action!r} ({request_id}) on comm {comm_id}")
