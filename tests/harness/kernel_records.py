"""The parts of the kernel harness that are plain data: where the repository and
its venv are, the environment a kernel starts with, and the records of what a
kernel sent (comms, cell executions). :mod:`tests.harness.kernel` re-exports
every name here."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The repository root (``tests/harness/kernel.py`` -> two levels up).
REPO_ROOT: Path = Path(__file__).resolve().parents[2]

_venv_python = REPO_ROOT / ".venv" / "bin" / "python"
#: The interpreter the kernel runs with: the repo's venv, else the running one.
VENV_PYTHON: Path = _venv_python if _venv_python.exists() else Path(sys.executable)


def kernel_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a kernel (or a Jupyter server starting kernels).

    ``os.environ`` with :data:`REPO_ROOT` prepended to ``PYTHONPATH`` (so
    ``import nb_hitl`` works without an install), the venv's ``bin`` first on
    ``PATH``, and the debugger's frozen-modules warning silenced. ``extra``
    wins over everything.
    """
    env = dict(os.environ)
    paths = [str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PATH"] = os.pathsep.join([str(VENV_PYTHON.parent), env.get("PATH", "")])
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    env.pop("JPY_PARENT_PID", None)
    env.pop("NB_HITL_MODEL", None)  # tests run on the scripted model, never a real provider
    env.pop("NB_HITL_ANSWER_FROM_CODE", None)  # notebooks wait for clicks unless a test asks otherwise
    if extra:
        env.update(extra)
    return env


@dataclass
class CommRecord:
    """What the harness saw of one comm opened by the kernel.

    Attributes:
        comm_id: the comm's id (``comm_open.content.comm_id``).
        target_name: ``jupyter.widget`` for widgets.
        state: ``comm_open.data.state`` merged with every later
            ``comm_msg`` ``update``/``echo_update`` state (``_esm`` kept whole),
            and ``pauses`` / ``cards_seq`` kept as a reply's page keeps them:
            with every ``nbh_cards`` message applied (:func:`apply_cards`).
        custom: the ``content`` of every ``method: custom`` message the
            kernel sent on this comm, in order (nb_hitl replies are
            ``{"request_id", "ok", ...}``).
        closed: a ``comm_close`` was seen.
        parent_msg_id: ``msg_id`` of the request during which it was opened.
    """

    comm_id: str
    target_name: str
    state: dict[str, Any] = field(default_factory=dict)
    custom: list[Any] = field(default_factory=list)
    closed: bool = False
    parent_msg_id: str | None = None

    @property
    def model_name(self) -> str:
        """``state["_model_name"]`` (``"AnyModel"`` for anywidgets) or ``""``."""
        return str(self.state.get("_model_name", ""))

    def transcript(self) -> list[dict[str, Any]]:
        """The transcript a page builds from this comm: its state's ``transcript``
        (at ``transcript_seq``), then every later ``nbh_transcript`` message's ops."""
        entries = [dict(e) for e in self.state.get("transcript") or []]
        held = int(self.state.get("transcript_seq") or 0)
        for msg in self.custom:
            if isinstance(msg, dict) and msg.get("type") == "nbh_transcript" and msg.get("seq", 0) > held:
                apply_ops(entries, msg["ops"])
        return entries

    @property
    def final_text(self) -> str:
        """The final text a page shows: ``final_text``, or the text of the entry ``final_entry`` names."""
        text = str(self.state.get("final_text") or "")
        entry = self.state.get("final_entry")
        if text or not entry:
            return text
        return next((str(e["text"]) for e in self.transcript() if e["id"] == entry), "")

    def snapshot(self) -> CommRecord:
        return CommRecord(
            self.comm_id,
            self.target_name,
            dict(self.state),
            list(self.custom),
            self.closed,
            self.parent_msg_id,
        )


def apply_ops(entries: list[dict[str, Any]], ops: list[dict[str, Any]]) -> None:
    """Apply one stream message's ``ops`` to ``entries``, as js/reply/stream.ts does."""
    by_id = {e["id"]: e for e in entries}
    for op in ops:
        if op["op"] == "add":
            if op["entry"]["id"] not in by_id:
                e = dict(op["entry"])
                entries.append(e)
                by_id[e["id"]] = e
        elif op["op"] == "append":
            by_id[op["id"]]["text"] += op["text"]
        else:  # a field set to null is removed
            e = by_id[op["id"]]
            for key, value in op["fields"].items():
                if value is None:
                    e.pop(key, None)
                else:
                    e[key] = value


def apply_cards(state: dict[str, Any], msg: Any) -> None:
    """Apply one ``nbh_cards`` message to a reply's ``state`` (its ``pauses`` and
    ``cards_seq``), as js/reply/feed.ts applies it and writes its model; any other
    message, or one the state already holds (``seq`` not above ``cards_seq``), is skipped."""
    if not (isinstance(msg, dict) and msg.get("type") == "nbh_cards"):
        return
    if msg["seq"] <= int(state.get("cards_seq") or 0):
        return
    views = {v["tool_call_id"]: v for v in state.get("pauses") or []}
    for op in msg["ops"]:
        if op["op"] == "card":
            views[op["view"]["tool_call_id"]] = op["view"]  # a new id goes last, a known one keeps its place
        else:
            views.pop(op["id"], None)
    state["pauses"] = list(views.values())
    state["cards_seq"] = msg["seq"]


@dataclass
class ExecResult:
    """What one ``execute_request`` produced (IOPub messages whose parent is it).

    Attributes:
        msg_id: the request's ``msg_id``.
        status: ``execute_reply`` status: ``"ok"``, ``"error"``, ``"aborted"``;
            ``None`` when no reply came (timeout).
        execution_count: from the reply.
        stdout / stderr: concatenated ``stream`` text.
        outputs: ``display_data``/``execute_result``/``update_display_data``
            contents (each has ``data`` mimebundle and ``metadata``), in order.
        error: ``{"ename", "evalue", "traceback"}`` of the ``error`` message
            (or of the reply) or ``None``.
        reply: the raw ``execute_reply`` content.
        messages: every IOPub message of this request.
    """

    msg_id: str
    status: str | None = None
    execution_count: int | None = None
    stdout: str = ""
    stderr: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    reply: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.error is None

    @property
    def data(self) -> list[dict[str, Any]]:
        """The mimebundles of :attr:`outputs`."""
        return [o.get("data", {}) for o in self.outputs]

    @property
    def text(self) -> str:
        """``text/plain`` of every output, newline-joined (``repr`` of the value)."""
        return "\n".join(d["text/plain"] for d in self.data if "text/plain" in d)

    def describe(self) -> str:
        parts = [f"status={self.status!r}"]
        if self.stdout:
            parts.append(f"stdout={self.stdout[-2000:]!r}")
        if self.stderr:
            parts.append(f"stderr={self.stderr[-2000:]!r}")
        if self.error:
            tb = "\n".join(self.error.get("traceback") or [])
            parts.append(f"error={self.error.get('ename')}: {self.error.get('evalue')}\n{_strip_ansi(tb)}")
        if self.outputs:
            parts.append(f"outputs={[list(d) for d in self.data]}")
        parts.append(f"iopub={[m['msg_type'] for m in self.messages]}")
        return ", ".join(parts)

    def raise_for_error(self) -> ExecResult:
        """Return ``self``; raise ``AssertionError`` (with the traceback) if the cell failed."""
        if not self.ok:
            raise AssertionError(f"cell failed: {self.describe()}")
        return self


class KernelTimeoutError(TimeoutError):
    """A wait on the kernel ran out; ``.result`` holds what was collected."""

    def __init__(self, message: str, result: ExecResult | None = None) -> None:
        super().__init__(message)
        self.result = result


def _strip_ansi(text: str) -> str:

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
