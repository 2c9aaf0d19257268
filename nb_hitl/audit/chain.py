"""The hash chain of the audit log: every line says which line came before it.

A chained line carries ``"prev"``, the SHA-256 (hex) of the bytes of the line
before it (without its newline; :data:`GENESIS` for the first line of a log),
and ``"hmac"``, the SHA-256 HMAC of the rest of the record (canonical JSON,
:func:`nb_hitl._signing._sign`) under the same per-user key that signs the
checkpoints (:func:`nb_hitl.store.load_key`), kept outside the log's folder.
Whoever can write the log but not read the key cannot change, remove or
reorder a line without :func:`verify` naming it.

:meth:`nb_hitl.store.AuditLog.append` seals each line (:func:`seal`) under
its ``fcntl`` lock, after reading the last line (:func:`last_line`) under the
same lock, so processes appending at once still form one chain.

What a chain cannot show: lines cut from the *end* of the log (nothing
follows them to notice), and lines written before chaining existed (read as
``unchained``; they are covered from the first chained line on, since that
line's ``prev`` binds the one before it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._fileio import read_nofollow
from .._signing import _sign, load_key

__all__ = ["GENESIS", "line_hash", "last_line", "seal", "verify", "ChainVerdict"]

GENESIS = "0" * 64
"""The ``prev`` of the first line of a log."""

_TAIL_CHUNK = 8192


def line_hash(line: bytes) -> str:
    """The SHA-256 (hex) of one line's bytes, without its newline."""
    return hashlib.sha256(line.rstrip(b"\n")).hexdigest()


def last_line(fd: int, end: int | None = None) -> bytes | None:
    """The last line of the open file ``fd`` (without its newline), read
    backwards from the end (or from byte ``end``: the line that ends there);
    ``None`` for an empty file. A last line without its newline (torn by a
    crash) is returned as it is."""
    size = os.fstat(fd).st_size if end is None else end
    if size == 0:
        return None
    end = size - 1 if os.pread(fd, 1, size - 1) == b"\n" else size
    buf = b""
    pos = end
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        buf = os.pread(fd, step, pos) + buf
        cut = buf.rfind(b"\n")
        if cut != -1:
            return buf[cut + 1 :]
    return buf


def seal(key: bytes, record: dict[str, Any], prev: str) -> dict[str, Any]:
    """``record`` with ``prev`` (the previous line's hash) and its ``hmac``.

    Args:
        key: the per-user key (:func:`nb_hitl.store.load_key`).
        record: the JSON-able record (any ``prev``/``hmac`` it has is replaced).
        prev: :func:`line_hash` of the previous line, or :data:`GENESIS`.
    """
    body = {k: v for k, v in record.items() if k not in ("prev", "hmac")}
    body["prev"] = prev
    body["hmac"] = _sign(key, json.loads(json.dumps(body, ensure_ascii=False, default=str)))
    return body


@dataclass
class ChainVerdict:
    """What :func:`verify` found.

    Attributes:
        intact: no chained line was changed, removed or reordered.
        line: the first line (1-based) that is not what was written, or ``None``.
        problem: ``"changed"`` (its HMAC does not match: edited, or its seal
            stripped), ``"removed or reordered"`` (its ``prev`` is not the
            hash of the line before it), or ``None``.
        lines: how many lines the log has.
        chained: how many of them are chained.
        unchained: line numbers of lines before the chain began (older logs)
            and of torn lines (a crash mid-write) that a chained line binds.
        message: one sentence for a person.
    """

    intact: bool
    line: int | None = None
    problem: str | None = None
    lines: int = 0
    chained: int = 0
    unchained: list[int] = field(default_factory=list)
    message: str = ""

    def __bool__(self) -> bool:
        return self.intact


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def verify(
    log_path: str | os.PathLike[str],
    *,
    key: bytes | None = None,
    key_path: str | os.PathLike[str] | None = None,
) -> ChainVerdict:
    """Check the chain of an audit log and name the first line that broke it.

    Args:
        log_path: the JSON-lines log (:class:`nb_hitl.store.AuditLog`'s file).
        key: the signing key; default :func:`nb_hitl.store.load_key` of ``key_path``.
        key_path: the key file; default :func:`nb_hitl.store.default_key_path`.

    Returns:
        a :class:`ChainVerdict` (true when intact).

    Raises:
        FileNotFoundError: no such log.
        ValueError: the log is a symlink, or the key file is unsafe.
    """
    secret = key if key is not None else load_key(key_path)
    raw = read_nofollow(Path(log_path))
    lines = [ln for ln in raw.split(b"\n") if ln.strip()]
    verdict = ChainVerdict(intact=True, lines=len(lines))
    started = False
    for i, line in enumerate(lines, start=1):
        rec = _parse(line)
        sealed = rec is not None and isinstance(rec.get("hmac"), str) and isinstance(rec.get("prev"), str)
        if not sealed:
            # before the chain, or a torn line that the next chained line binds
            nxt = _parse(lines[i]) if i < len(lines) else None
            if not started or (rec is None and nxt is not None and nxt.get("prev") == line_hash(line)):
                verdict.unchained.append(i)
                continue
            return _broken(verdict, i, "changed", "it has no seal (its hmac or prev was removed, or it was edited)")
        assert rec is not None
        if not hmac.compare_digest(str(rec["hmac"]), _sign(secret, rec)):
            return _broken(verdict, i, "changed", "its HMAC does not match its content (edited, or another key)")
        expected = line_hash(lines[i - 2]) if i > 1 else GENESIS
        if rec["prev"] != expected:
            return _broken(verdict, i, "removed or reordered", "the line before it is not the one it was written after")
        started = True
        verdict.chained += 1
    tail = f" ({len(verdict.unchained)} unchained line(s) before the chain or torn)" if verdict.unchained else ""
    verdict.message = f"intact: {verdict.chained} chained line(s){tail}."
    return verdict


def _broken(verdict: ChainVerdict, line: int, problem: str, why: str) -> ChainVerdict:
    verdict.intact = False
    verdict.line = line
    verdict.problem = problem
    verdict.message = f"line {line} was {problem}: {why}."
    return verdict
