"""Kernel subshells (ipykernel 7): a second shell thread, as JupyterLab opens one to send
widget comm messages on ("comms over subshells"), so they run beside the main thread's loop."""

from __future__ import annotations

import queue
import time

from .kernel import KernelHarness, KernelTimeoutError

__all__ = ["create_subshell"]


def create_subshell(k: KernelHarness, timeout: float = 30.0) -> str:
    """Ask the kernel of ``k`` for a subshell (``create_subshell_request`` on the control
    channel, as JupyterLab does); returns its id, for ``subshell_id=`` of
    :meth:`KernelHarness.request` / :meth:`KernelHarness.send_custom`.

    Raises:
        KernelTimeoutError: no ``create_subshell_reply`` within ``timeout`` seconds.
    """
    if k.kc is None:
        raise RuntimeError("kernel harness is not started")
    msg = k.kc.session.msg("create_subshell_request", {})
    k.kc.control_channel.send(msg)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            reply = k.kc.control_channel.get_msg(timeout=0.5)
        except queue.Empty:
            continue
        if (reply.get("parent_header") or {}).get("msg_id") == msg["header"]["msg_id"]:
            return str(reply["content"]["subshell_id"])
    raise KernelTimeoutError(f"no create_subshell_reply in {timeout}s")
