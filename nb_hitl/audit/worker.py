"""A replay's matching in a worker process, so the kernel stays free for clicks.

A replay in the kernel holds the interpreter lock while it matches: a click
waits for the event loop's next turn and for the lock at each thread it
crosses (ipykernel's shell and IOPub threads), tens of milliseconds per
click on a loaded machine. :func:`judge_in_worker` runs the same matching
(:class:`~nb_hitl.audit.judge.Judge`, AgentScope's own engine) in a
process of its own (``python -m nb_hitl.audit.worker``): the kernel sends
the candidate (rules, mode), the tools and the distinct calls in batches of
:data:`BATCH`; the worker sends each batch's outcomes back as it finishes
it; the kernel's loop only waits on the pipe meanwhile.

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
from pathlib import Path
from typing import IO, Any

from agentscope.permission import PermissionMode, PermissionRule
from agentscope.tool import FunctionTool, ToolBase
from agentscope.tool._builtin._bash_parser import BashCommandParser

from ..errors import DecisionError
from .judge import Judge, Outcome

__all__ = ["judge_in_worker", "ship_tools", "Item", "BATCH", "WORKER_TIMEOUT", "WORKER_NICE"]

Item = tuple[Any, dict[str, Any], "str | None"]
"""A distinct call to judge: ``(tool, input, key)``, ``key`` the input's
canonical JSON (:func:`~nb_hitl.audit.calls.input_key`; ``None``: not JSON)."""

BATCH = 500
"""Distinct calls per message to the worker (and outcomes per message back)."""

WORKER_TIMEOUT = 600.0
"""Seconds a replay's worker may take, from its start to its last outcome."""

WORKER_NICE = 5
"""How much lower the worker's scheduling priority is than the kernel's (``os.nice``)."""

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


async def _send_batches(stdin: asyncio.StreamWriter, items: list[Item], wanted: list[int]) -> None:
    for start in range(0, len(wanted), BATCH):
        batch = [(items[k][0].name, items[k][1]) for k in wanted[start : start + BATCH]]
        stdin.write(_frame(("calls", batch)))
        await stdin.drain()


async def _keep_tail(stream: asyncio.StreamReader, kept: list[bytes]) -> None:
    while chunk := await stream.read(65536):
        kept.append(chunk)
        while len(kept) > 1 and sum(map(len, kept)) > _STDERR_KEPT:
            kept.pop(0)


def _worker_env() -> dict[str, str]:
    """The kernel's environment with this nb_hitl first on the worker's path."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


async def judge_in_worker(
    items: list[Item],
    listed: list[PermissionRule],
    mode: PermissionMode,
    shell_rules: bool,
    into: list[Outcome | None],
    *,
    timeout: float = WORKER_TIMEOUT,
) -> None:
    """Judge ``items`` in a worker process, writing each outcome to ``into`` (same index).

    The calls of a tool that cannot be sent (:func:`ship_tools`) or loaded,
    and inputs that are not JSON, are left ``None`` in ``into`` for the
    kernel to judge. Cancelling the task running this kills the worker.

    Args:
        items: the distinct calls (:data:`Item`).
        listed: the candidate rules (outcomes name them by position).
        mode: the candidate mode.
        shell_rules: judge shell commands one simple command at a time.
        into: one slot per item.
        timeout: seconds the worker may take, start to last outcome.

    Raises:
        DecisionError: the worker ended before its last outcome (its error
            quoted) or ran past ``timeout`` (``field="replay"``).
    """
    shipped, _ = ship_tools({tool.name: tool for tool, _, key in items if key is not None})
    if not shipped:
        return
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nb_hitl.audit.worker",
        str(os.getpid()),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_worker_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stderr: list[bytes] = []
    tail = asyncio.ensure_future(_keep_tail(proc.stderr, stderr))
    sender: asyncio.Future[None] | None = None
    try:
        async with asyncio.timeout(timeout):
            proc.stdin.write(
                _frame({"rules": listed, "mode": mode.value, "shell_rules": shell_rules, "tools": shipped})
            )
            await proc.stdin.drain()
            _, failed = await _receive(proc.stdout)
            sent = set(shipped) - set(failed)
            wanted = [k for k, (tool, _, key) in enumerate(items) if key is not None and tool.name in sent]
            sender = asyncio.ensure_future(_send_batches(proc.stdin, items, wanted))
            done = 0
            while done < len(wanted):
                kind, data = await _receive(proc.stdout)
                if kind == "error":
                    raise DecisionError(f"The replay's worker process failed: {data}", field="replay")
                for encoded in data:
                    into[wanted[done]] = decode(encoded, listed)
                    done += 1
            await sender
    except TimeoutError:
        raise DecisionError(
            f"The replay ran past {timeout:g} s in its worker process and was stopped.", field="replay"
        ) from None
    except (asyncio.IncompleteReadError, ConnectionError):
        await proc.wait()
        await tail
        said = b"".join(stderr).decode(errors="replace").strip().splitlines()
        raise DecisionError(
            f"The replay's worker process ended (exit status {proc.returncode}) before its last outcome"
            + (f": {said[-1]}" if said else "."),
            field="replay",
        ) from None
    finally:
        if sender is not None:
            sender.cancel()
        with contextlib.suppress(ProcessLookupError):
            if proc.returncode is None:
                proc.kill()
        with contextlib.suppress(Exception):
            proc.stdin.close()
        await asyncio.shield(proc.wait())
        tail.cancel()


def _die_with(parent: int) -> None:
    """End this process when ``parent`` (the kernel) ends (Linux: ``PR_SET_PDEATHSIG``)."""
    with contextlib.suppress(OSError, AttributeError):
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


def main(parent: int) -> None:
    """The worker: reads the candidate and the calls from stdin, writes
    ``("ready", {tool: why not loaded})`` then ``("outcomes", [...])`` per
    batch to stdout (``("error", text)`` if anything fails); stdout is kept
    for those messages (whatever else prints goes to stderr)."""
    _die_with(parent)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    try:
        setup = _read(inp)
        if setup is None:
            return
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
        while (message := _read(inp)) is not None:
            outcomes = loop.run_until_complete(_judge_batch(judge, tools, message[1]))
            out.write(_frame(("outcomes", [encode(o, index) for o in outcomes])))
            out.flush()
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
    main(int(sys.argv[1]))
