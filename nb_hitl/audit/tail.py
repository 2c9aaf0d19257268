"""Reading an audit log as it grows: only the lines appended since the last read.

A :class:`LogTail` remembers how far one process has read an
:class:`~nb_hitl.store.AuditLog` (a byte offset, the end of the last whole
line read) and the hash of that last line (:func:`~nb_hitl.audit.chain.line_hash`).
:meth:`LogTail.catch_up` reads from the offset to the end of the file and
hands each new record to its ``on_record``, so an index kept from those
records (the console's approvals of each call,
:class:`~nb_hitl.service.ledger.AnswerLedger`) costs the lines appended
since, not the length of the log. Lines other processes appended are read
the same way as this process's own.

A last line without its newline (being written, or torn by a crash) is left
for the next read. When the file is no longer the one read (shorter than the
offset, or the line before the offset is not the line read there: the log was
rewritten or replaced), the tail calls ``on_reset`` and reads the whole file
again. Whether the lines are the ones written is :func:`~nb_hitl.audit.chain.verify`'s
question, unchanged: the tail only reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .chain import _parse, last_line, line_hash

__all__ = ["LogTail"]

_CHUNK = 1 << 20


class LogTail:
    """How far one process has read an audit log (see the module docstring).

    Args:
        on_record: called with each new record (a JSON object line), oldest first.
        on_reset: called before the whole file is read again (forget what was indexed).

    Attributes:
        offset: bytes read so far (the end of the last whole line read).
        lines_read: lines read by every :meth:`catch_up` so far (a benchmark
            and test figure: it grows by the lines appended, not the log's length).
        resets: how many times the file was found rewritten and read again.
    """

    def __init__(self, on_record: Callable[[dict[str, Any]], None], on_reset: Callable[[], None]) -> None:
        self.on_record = on_record
        self.on_reset = on_reset
        self.offset = 0
        self.lines_read = 0
        self.resets = 0
        self._last: str | None = None  # line_hash of the line that ends at offset

    def catch_up(self, fd: int) -> int:
        """Read the whole lines appended to the open log ``fd`` since the last call.

        Call it under the log's lock when the index decides what to append
        (:meth:`nb_hitl.store.AuditLog.append_checked`), or under a shared
        lock to look (:meth:`nb_hitl.store.AuditLog.catch_up`). Cost: the
        bytes appended since, plus one read of the line before the offset.

        Returns:
            the number of new lines read (0: nothing new).

        Raises:
            OSError: the file cannot be read.
        """
        size = os.fstat(fd).st_size
        if self.offset and (size < self.offset or self._hash_at(fd, self.offset) != self._last):
            self.offset, self._last = 0, None
            self.resets += 1
            self.on_reset()
        if size == self.offset:
            return 0
        raw = _pread_all(fd, self.offset, size - self.offset)
        end = raw.rfind(b"\n") + 1  # whole lines only: a line still being written waits
        if end == 0:
            return 0
        lines = raw[:end].split(b"\n")[:-1]
        for line in lines:
            rec = _parse(line)
            if rec is not None:
                self.on_record(rec)
        self.offset += end
        self.lines_read += len(lines)
        self._last = self._hash_at(fd, self.offset)
        return len(lines)

    @staticmethod
    def _hash_at(fd: int, end: int) -> str | None:
        line = last_line(fd, end)
        return None if line is None else line_hash(line)


def _pread_all(fd: int, offset: int, length: int) -> bytes:
    parts = []
    while length > 0:
        got = os.pread(fd, min(length, _CHUNK), offset)
        if not got:
            break
        parts.append(got)
        offset += len(got)
        length -= len(got)
    return b"".join(parts)
