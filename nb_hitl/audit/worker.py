"""A replay's matching in a worker process, so the kernel stays free for clicks.

A replay in the kernel holds the interpreter lock while it matches: a click
waits for the event loop's next turn and for the lock at each thread it
crosses (ipykernel's shell and IOPub threads), tens of milliseconds per
click on a loaded machine. A :class:`Worker` (:func:`open_worker`) runs the same matching
(:class:`~nb_hitl.audit.judge.Judge`, AgentScope's own engine) in a
process of its own (``python -m nb_hitl.audit.worker``): the kernel sends
the candidate (rules, mode), the tools and the distinct calls in batches of
:data:`BATCH`; the worker sends each batch's outcomes back as it finishes
it; the kernel's loop only waits on the pipe meanwhile. The same worker
first reads the log, when the replay is given one (:meth:`Worker.read`):
its calls come back in pieces of :data:`PIECE` values, so the kernel never
parses the log itself.

The tools go as AgentScope's own objects (:func:`ship_tools`), less what a
permission check never uses: a ``FunctionTool``'s function (a check asks
the tool, never runs it; a function defined in a notebook cell cannot be
imported by another process) and every tool's middlewares; the shell
parser ``Bash`` holds (a ``tree_sitter.Parser``, which cannot be pickled) is
made anew by its own constructor. A tool that still cannot be sent or
loaded (an MCP tool's session, a class defined in a notebook) is left to the
kernel, which judges its calls as before.

The worker runs at a lower priority (:data:`WORKER_NICE`), ends when the
kernel does (its parent's death signal on Linux, the end of its input
everywhere) and is killed when the replay is cancelled or runs past its
``timeout``. Matching stays bounded inside it: a pathological rule is
reported on its calls (:class:`~nb_hitl.permissions.bounded.BoundedEngine`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import signal
import struct
import sys
import traceback
from array import array
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

from agentscope.permission import PermissionMode, PermissionRule
from agentscope.tool import FunctionTool, ToolBase
from agentscope.tool._builtin._bash_parser import BashCommandParser

from ..errors import DecisionError
from .calls import RecordedCalls, read_calls
from .judge import Judge, Outcome, Turns

__all__ = ["open_worker", "Worker", "ship_tools", "Item", "BATCH", "PIECE", "WORKER_TIMEOUT", "WORKER_NICE"]

Item = tuple[Any, dict[str, Any], "str | None"]
"""A distinct call to judge: ``(tool, input, key)``, ``key`` the input's
canonical JSON (:func:`~nb_hitl.audit.calls.input_key`; ``None``: not JSON)."""

BATCH = 500
"""Distinct calls per message to the worker (and outcomes per message back)."""

PIECE = 10_000
"""Values of a column per message of :meth:`Worker.read` (a fifth as many inputs)."""

WORKER_TIMEOUT = 600.0
"""Seconds a replay's worker may take, from its start to its last outcome."""

WORKER_NICE = 5
"""How much lower the worker's scheduling priority is than the kernel's
(its niceness, set by the kernel as soon as the worker is started, so its
imports, 7 s of CPU on a loaded 2-core machine, run at that priority too;
read when a worker starts): the kernel's threads get a core first, and a
replay takes longer on a machine busy with other work."""

_HEADER = struct.Struct("!Q")
_STDERR_KEPT = 4000  # characters of the worker's stderr an error quotes


def _not_run(**_kwargs: Any) -> None:
    """The function a ``FunctionTool`` sent to the worker holds: a permission check never runs it."""
    raise RuntimeError("a replay's worker decides on calls, it never runs a tool")


def _rebuild(cls: type[ToolBase], state: dict[str, Any]) -> ToolBase:
    """A tool of class ``cls`` with attributes ``state``, made without its constructor."""
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


class _ToolPickler(pickle.Pickler):
    """Pickles AgentScope tools for the worker (see the module's docstring)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, BashCommandParser):
            return BashCommandParser, ()
        if isinstance(obj, ToolBase):
            state = {**vars(obj), "_middlewares": []}
            if isinstance(obj, FunctionTool):
                state["_func"] = _not_run
            return _rebuild, (type(obj), state)
        return NotImplemented


def ship_tools(tools: dict[str, Any]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The tools as the worker gets them: ``({name: pickled tool}, {name:
    why it cannot be sent})``."""
    shipped: dict[str, bytes] = {}
    refused: dict[str, str] = {}
    for name, tool in tools.items():
        buffer = io.BytesIO()
        try:
            _ToolPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(tool)
        except Exception as exc:  # noqa: BLE001 - pickling raises TypeError, PicklingError, AttributeError... whatever a tool holds
            refused[name] = f"{type(exc).__name__}: {exc}"
        else:
            shipped[name] = buffer.getvalue()
    return shipped, refused


def encode(outcome: Outcome, index: dict[int, int]) -> tuple[Any, ...]:
    """An outcome as plain data, its rules as their positions in the candidate (``index``: ``id(rule)`` -> position)."""
    return (
        outcome.candidate,
        outcome.reason,
        outcome.rule,
        outcome.problem,
        tuple(index[id(r)] for r in outcome.matching),
        tuple(index[id(r)] for r in outcome.pathological),
    )


def decode(data: tuple[Any, ...], listed: list[PermissionRule]) -> Outcome:
    """:func:`encode`'s outcome again, with the kernel's own rule objects."""
    candidate, reason, rule, problem, matching, pathological = data
    return Outcome(
        candidate,
        reason,
        rule,
        problem,
        tuple(listed[i] for i in matching),
        tuple(listed[i] for i in pathological),
    )


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


async def _receive(stream: asyncio.StreamReader) -> Any:
    (size,) = _HEADER.unpack(await stream.readexactly(_HEADER.size))
    return pickle.loads(await stream.readexactly(size))


async def _keep_tail(stream: asyncio.StreamReader, kept: list[bytes]) -> None:
    while chunk := await stream.read(65536):
        kept.append(chunk)
        while len(kept) > 1 and sum(map(len, kept)) > _STDERR_KEPT:
            kept.pop(0)


def _worker_niceness() -> int:
    """The worker's niceness: the kernel's plus :data:`WORKER_NICE` (just
    :data:`WORKER_NICE` where there is no ``os.getpriority``: Windows)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICE
    except (OSError, AttributeError):
        return WORKER_NICE


def _lower_priority(pid: int, niceness: int) -> None:
    """Give process ``pid`` (this one: 0) ``niceness`` if its own is lower:
    the kernel does it as soon as the worker starts, the worker again once
    its imports are done (in case the kernel could not); no-op on Windows."""
    with contextlib.suppress(OSError, AttributeError):
        if os.getpriority(os.PRIO_PROCESS, pid) < niceness:
            os.setpriority(os.PRIO_PROCESS, pid, niceness)


def _worker_env() -> dict[str, str]:
    """The kernel's environment with this nb_hitl first on the worker's path."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


@contextlib.asynccontextmanager
async def open_worker(timeout: float = WORKER_TIMEOUT) -> AsyncIterator[Worker]:
    """A replay's worker process for the body, killed when the body ends
    (or is cancelled); its failures told as :class:`~nb_hitl.errors.DecisionError`.

    Args:
        timeout: seconds the body may take, the worker's start included.

    Raises:
        DecisionError: the worker failed (its error quoted), ended before
            its work was done, or the body ran past ``timeout`` (``field="replay"``).
    """
    niceness = _worker_niceness()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nb_hitl.audit.worker",
        str(os.getpid()),
        str(niceness),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_worker_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    _lower_priority(proc.pid, niceness)
    stderr: list[bytes] = []
    tail = asyncio.ensure_future(_keep_tail(proc.stderr, stderr))
    try:
        async with asyncio.timeout(timeout):
            yield Worker(proc.stdin, proc.stdout)
    except TimeoutError:
        raise DecisionError(
            f"The replay ran past {timeout:g} s in its worker process and was stopped.", field="replay"
        ) from None
    except (asyncio.IncompleteReadError, ConnectionError):
        await proc.wait()
        await tail
        said = b"".join(stderr).decode(errors="replace").strip().splitlines()
        raise DecisionError(
            f"The replay's worker process ended (exit status {proc.returncode}) before its work was done"
            + (f": {said[-1]}" if said else "."),
            field="replay",
        ) from None
    finally:
        with contextlib.suppress(ProcessLookupError):
            if proc.returncode is None:
                proc.kill()
        with contextlib.suppress(Exception):
            proc.stdin.close()
        await asyncio.shield(proc.wait())
        tail.cancel()


class Worker:
    """A replay's worker process, as :func:`open_worker` gives it: reads a
    log (:meth:`read`), judges calls (:meth:`judge`), one at a time."""

    def __init__(self, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader) -> None:
        self._stdin = stdin
        self._stdout = stdout

    async def _ask(self, message: Any) -> None:
        self._stdin.write(_frame(message))
        await self._stdin.drain()

    async def _answer(self) -> Any:
        """The worker's next message; its own error raised as :class:`~nb_hitl.errors.DecisionError`."""
        message = await _receive(self._stdout)
        if message[0] == "error":
            raise DecisionError(f"The replay's worker process failed: {message[1]}", field="replay")
        return message

    async def read(self, path: str | os.PathLike[str]) -> RecordedCalls:
        """The calls of the audit log at ``path`` (:func:`~nb_hitl.audit.calls.read_calls`),
        read in the worker and sent back in pieces (:data:`PIECE` values a
        message), so the kernel never parses the log itself; equal inputs are
        still held once, as ``read_calls`` holds them.

        Raises:
            DecisionError: the worker could not read it (a log through a symlink...).
        """
        calls = RecordedCalls()
        inputs: list[dict[str, Any]] = []
        shared = array("q")
        turn = Turns()
        await self._ask({"read": os.fspath(path)})
        while (message := await self._answer())[0] != "end":
            kind, name, part = message
            if kind == "inputs":
                inputs.extend(part)
            elif kind == "shared":
                shared.frombytes(part)
            elif kind == "keys":
                calls.keys.extend(part)
            else:
                calls.columns[name].extend(part)
            await turn()
        column = calls.columns["input"]
        for start in range(0, len(shared), PIECE):
            column.extend([inputs[i] for i in shared[start : start + PIECE]])
            await turn()
        return calls

    async def judge(
        self,
        items: list[Item],
        listed: list[PermissionRule],
        mode: PermissionMode,
        shell_rules: bool,
        into: list[Outcome | None],
    ) -> None:
        """Judge ``items`` in the worker, writing each outcome to ``into`` (same index).

        The calls of a tool that cannot be sent (:func:`ship_tools`) or
        loaded, and inputs that are not JSON, are left ``None`` in ``into``
        for the kernel to judge.

        Args:
            items: the distinct calls (:data:`Item`).
            listed: the candidate rules (outcomes name them by position).
            mode: the candidate mode.
            shell_rules: judge shell commands one simple command at a time.
            into: one slot per item.
        """
        shipped, _ = ship_tools({tool.name: tool for tool, _, key in items if key is not None})
        if not shipped:
            return
        await self._ask({"rules": listed, "mode": mode.value, "shell_rules": shell_rules, "tools": shipped})
        _, failed = await self._answer()
        sent = set(shipped) - set(failed)
        wanted = [k for k, (tool, _, key) in enumerate(items) if key is not None and tool.name in sent]
        sender = asyncio.ensure_future(self._send_batches(items, wanted))
        try:
            done = 0
            while done < len(wanted):
                _, data = await self._answer()
                for encoded in data:
                    into[wanted[done]] = decode(encoded, listed)
                    done += 1
            await sender
        finally:
            sender.cancel()
            if sender.done() and not sender.cancelled():
                sender.exception()  # a pipe closed under it: already told by the read that failed

    async def _send_batches(self, items: list[Item], wanted: list[int]) -> None:
        for start in range(0, len(wanted), BATCH):
            await self._ask(("calls", [(items[k][0].name, items[k][1]) for k in wanted[start : start + BATCH]]))
        await self._ask(("end", None))


def _send_calls(out: IO[bytes], calls: RecordedCalls) -> None:
    """:meth:`Worker.read`'s messages: the distinct inputs, which of them
    each call made (``shared``), every other column and the keys, in pieces."""
    inputs: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    shared = array("q")
    for given in calls.columns["input"]:
        index = seen.setdefault(id(given), len(inputs))
        if index == len(inputs):
            inputs.append(given)
        shared.append(index)
    for start in range(0, len(inputs), PIECE // 5):
        out.write(_frame(("inputs", None, inputs[start : start + PIECE // 5])))
    for start in range(0, len(shared), PIECE):
        out.write(_frame(("shared", None, shared[start : start + PIECE].tobytes())))
    for start in range(0, len(calls), PIECE):
        out.write(_frame(("keys", None, calls.keys[start : start + PIECE])))
        for name, values in calls.columns.items():
            if name != "input":
                out.write(_frame(("column", name, values[start : start + PIECE])))
    out.write(_frame(("end",)))
    out.flush()


def _die_with(parent: int) -> None:
    """End this process when ``parent`` (the kernel) ends (Linux: ``PR_SET_PDEATHSIG``)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # not Linux: the end of the input ends it
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it ended before the signal was asked for
        os._exit(1)


def _read(stream: IO[bytes]) -> Any:
    """The next message from the kernel; ``None`` at the end of the input."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))


async def _judge_batch(judge: Judge, tools: dict[str, Any], batch: list[tuple[str, dict[str, Any]]]) -> list[Outcome]:
    return [await judge.judge(tools[name], tool_input) for name, tool_input in batch]


def _judge_calls(inp: IO[bytes], out: IO[bytes], setup: dict[str, Any]) -> None:
    """:meth:`Worker.judge` in the worker: load the tools, say which could
    not be, then judge each batch of calls until ``("end", None)``."""
    tools: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for name, blob in setup["tools"].items():
        try:
            tools[name] = pickle.loads(blob)
        except Exception as exc:  # noqa: BLE001 - unpickling runs a tool's own code: a class defined in a notebook, a module missing here
            failed[name] = f"{type(exc).__name__}: {exc}"
    out.write(_frame(("ready", failed)))
    out.flush()
    listed: list[PermissionRule] = setup["rules"]
    index = {id(r): i for i, r in enumerate(listed)}
    loop = asyncio.new_event_loop()

    async def make() -> Judge:
        return Judge(listed, PermissionMode(setup["mode"]), setup["shell_rules"])

    judge = loop.run_until_complete(make())
    while (message := _read(inp)) is not None and message[0] == "calls":
        outcomes = loop.run_until_complete(_judge_batch(judge, tools, message[1]))
        out.write(_frame(("outcomes", [encode(o, index) for o in outcomes])))
        out.flush()
    loop.close()


def main(parent: int, niceness: int) -> None:
    """The worker: answers each request on stdin on stdout, a log to read
    (:func:`_send_calls`) or calls to judge (:func:`_judge_calls`), until its
    input ends; ``("error", text)`` if anything fails. Stdout is kept for
    those messages (whatever else prints goes to stderr)."""
    _die_with(parent)
    _lower_priority(0, niceness)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    try:
        while (asked := _read(inp)) is not None:
            if "read" in asked:
                _send_calls(out, read_calls(asked["read"]))
            else:
                _judge_calls(inp, out, asked)
    except BrokenPipeError:  # the kernel stopped listening
        sys.exit(0)
    except Exception:  # noqa: BLE001 - whatever fails is told to the kernel, which raises it
        lines = traceback.format_exc().strip().splitlines()
        with contextlib.suppress(OSError):
            out.write(_frame(("error", lines[-1])))
            out.flush()
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
