"""The audit log of decisions: one sealed JSON line each, appended under a lock.

:class:`AuditLog` (re-exported by :mod:`nb_hitl.store`): one JSON line per
decision, appended (``0600``, never through a symlink) and ``fsync``-ed
*before* the agent is resumed, under an advisory lock (``fcntl.flock``) so
processes sharing a log never interleave; a torn last line left by a crash
never swallows the next record. Each line is chained and sealed
(:mod:`nb_hitl.audit.chain`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:  # POSIX: an advisory lock around each audit append (see AuditLog.append)
    import fcntl
except ImportError:  # pragma: no cover - Windows: appends are safe within one process only
    fcntl = None  # type: ignore[assignment]

from ._fileio import NOFOLLOW, current_user, iter_lines, read_nofollow
from ._signing import load_key

if TYPE_CHECKING:
    from .audit.tail import LogTail

__all__ = ["AuditLog"]


class AuditLog:
    """An append-only JSON-lines log of decisions (``0600``, never through a symlink).

    Args:
        path: the log file; its folder is created if missing.
        key: the key sealing each line; default :func:`load_key` of ``key_path``.
        key_path: the key file; default :func:`default_key_path`.

    Each line: ``{"time": ISO-8601 UTC, "ts": seconds, "who": OS user,
    "session_id", "reply_id", "tool_call_id", "tool_name", "original_input",
    "edited_input", "decision", "decided_by", "accepted_rules", "answers", ...,
    "prev", "hmac"}``: ``prev`` is the hash of the line before it and
    ``hmac`` seals the line (:mod:`nb_hitl.audit.chain`; check a log with
    :func:`nb_hitl.audit.verify`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        key: bytes | None = None,
        key_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._key = key
        self._key_path = key_path

    @property
    def key(self) -> bytes:
        """The key that seals each line (:func:`load_key`, the checkpoints' key;
        loaded or created on first use)."""
        if self._key is None:
            self._key = load_key(self._key_path)
        return self._key

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Append one record and ``fsync`` it before returning.

        A last line left without its newline (a crash mid-write) is closed
        first, so this record is its own line. The check of the last byte and
        the write happen under an exclusive ``fcntl.flock`` on the log (POSIX;
        advisory, released when the file is closed, even by a crash), so two
        processes appending at once never both close the same torn line nor
        take each other's last line for a torn one.

        Each line is sealed (:func:`nb_hitl.audit.chain.seal`) with the hash
        of the last line, read under the same lock, so processes appending
        at once still form one chain.

        Args:
            record: JSON-able fields; ``time``, ``ts`` and ``who`` are added,
                then ``prev`` and ``hmac``.

        Returns:
            the record as written.

        Raises:
            OSError: the log cannot be written (``ELOOP`` for a symlink).
            ValueError: the key file is unsafe (see :func:`load_key`).
        """
        return self._write(lambda _fd: record)

    def append_checked(self, tail: LogTail, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Append what ``build()`` makes of an index kept by ``tail``, under the one lock of
        :meth:`append`: ``tail`` first reads the lines appended since it last read
        (:meth:`~nb_hitl.audit.tail.LogTail.catch_up`, other processes' too), then the line
        written. Processes deciding on one log at once (the console's approvals of a call,
        :mod:`nb_hitl.service.approving`) each see every line written before; none is lost.

        Returns:
            the record as written (see :meth:`append`).

        Raises:
            whatever ``build`` raises (nothing is written); as :meth:`append`.
        """
        return self._write(lambda fd: (tail.catch_up(fd), build())[1], after=tail.catch_up)

    def catch_up(self, tail: LogTail) -> int:
        """Let ``tail`` read the lines appended since it last read, under a shared lock
        (:meth:`~nb_hitl.audit.tail.LogTail.catch_up`); 0 when there is no log yet.

        Raises:
            OSError: the log cannot be read (``ELOOP`` for a symlink).
        """
        with self._lock:
            try:
                fd = os.open(self.path, os.O_RDONLY | NOFOLLOW)
            except FileNotFoundError:
                return 0
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_SH)
                return tail.catch_up(fd)
            finally:
                os.close(fd)

    def _write(
        self, make: Callable[[int], dict[str, Any]], after: Callable[[int], Any] | None = None
    ) -> dict[str, Any]:
        from .audit.chain import GENESIS, last_line, line_hash, seal

        key = self.key
        with self._lock:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o600)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)  # released by os.close below
                record = make(fd)
                now = time.time()
                full = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "ts": now}
                full = {**full, "who": current_user(), **record}
                previous = last_line(fd)  # under the lock: concurrent writers form one chain
                full = seal(key, full, GENESIS if previous is None else line_hash(previous))
                line = (json.dumps(full, ensure_ascii=False, default=str) + "\n").encode("utf-8")
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
                if after is not None:
                    after(fd)
            finally:
                os.close(fd)
        return full

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every record, oldest first, one at a time (:meth:`records` without the list)."""
        try:
            raw = read_nofollow(self.path)
        except FileNotFoundError:
            return
        yield from iter_lines(raw)

    def records(self, event: str | None = None) -> list[dict[str, Any]]:
        """Every record, oldest first (a line that is not JSON is skipped).

        Args:
            event: only the records of this event (``"checked"``: permission
                checks; ``"answered"``: answers, and every line written before
                checks were recorded; :func:`nb_hitl.answers.record.event_of`).
        """
        out = list(self.iter_records())
        if event is not None:
            from .answers.record import event_of

            out = [r for r in out if event_of(r) == event]
        return out
