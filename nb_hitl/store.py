"""Checkpoints of an agent's state and the audit log of decisions.

Files only: nothing here knows AgentScope's classes beyond pydantic's
``model_dump_json`` / ``model_validate_json`` on ``AgentState``.

* :class:`CheckpointStore`: one JSON file per session, written atomically
  (temporary file, ``fsync``, ``os.replace``), created ``0600``, signed with
  an HMAC under a per-user key kept outside the checkpoint folder, and
  guarded by a cross-process lock (``filelock``, in a per-user lock folder)
  so one process at a time drives a session.
* :class:`AuditLog`: one JSON line per decision, appended (``0600``, never
  through a symlink) and ``fsync``-ed *before* the agent is resumed, under an
  advisory lock (``fcntl.flock``) so processes sharing a log never interleave;
  a torn last line left by a crash never swallows the next record.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import filelock

try:  # POSIX: an advisory lock around each audit append (see AuditLog.append)
    import fcntl
except ImportError:  # pragma: no cover - Windows: appends are safe within one process only
    fcntl = None  # type: ignore[assignment]

from ._fileio import NOFOLLOW, current_user, iter_lines, parse_lines, read_nofollow, write_atomic
from ._signing import KEY_ENV, _sign, default_key_path, load_key
from .errors import NbHitlError

__all__ = [
    "CheckpointStore",
    "CheckpointLock",
    "AuditLog",
    "parse_lines",
    "iter_lines",
    "CheckpointLockedError",
    "CheckpointIntegrityError",
    "CheckpointVersionError",
    "CHECKPOINT_VERSION",
    "current_user",
    "KEY_ENV",
    "LOCK_DIR_ENV",
    "default_lock_dir",
    "default_key_path",
    "load_key",
]

LOCK_DIR_ENV = "NB_HITL_LOCK_DIR"
"""Environment variable: the folder of the checkpoints' lock files."""


class CheckpointLockedError(NbHitlError):
    """Another process (or another session of this one) holds the checkpoint's lock.

    Attributes:
        holder: ``{"pid", "host", "user", "since"}`` as the holder wrote it
            (empty when it could not be read).
    """

    def __init__(self, message: str, holder: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.holder = holder or {}


class CheckpointIntegrityError(NbHitlError, ValueError):
    """A checkpoint's signature does not match its content (changed outside
    nb_hitl, or written under another key); it is not restored."""


class CheckpointVersionError(NbHitlError, ValueError):
    """A checkpoint was written in a format version this nb_hitl does not know
    (by a newer nb_hitl); it is not restored.

    Attributes:
        version: the file's format version.
    """

    def __init__(self, message: str, version: Any = None) -> None:
        super().__init__(message)
        self.version = version


CHECKPOINT_VERSION = 2
"""The checkpoint format :meth:`CheckpointStore.save` writes (``"version"``).

1. ``{"session_id", "agent_name", "saved_at", "state", "hmac"}``, no
   ``"version"`` key (files written before the format was versioned).
2. the same plus ``"version": 2``, covered by the signature.

:meth:`CheckpointStore.load` reads every version up to this one and refuses
a newer one (:class:`CheckpointVersionError`). A future version keeps the
``"version"`` key and the signature over the rest, so the version can
always be read."""


# ----------------------------------------------------------------------
# cross-process lock
# ----------------------------------------------------------------------
_HELD: dict[str, CheckpointLock] = {}
_HELD_GUARD = threading.Lock()


class CheckpointLock:
    """The lock of one session's checkpoint, held by this process.

    A ``filelock.FileLock`` (the OS drops it when the process ends, however
    it ends) plus an owner file naming the holder, both in
    :func:`default_lock_dir`. Within one process the same object is handed to every
    session of that checkpoint (the newer one supersedes the older).
    """

    def __init__(self, lock: filelock.BaseFileLock, owner_path: Path, key: str) -> None:
        self._lock = lock
        self.owner_path = owner_path
        self.key = key

    @property
    def held(self) -> bool:
        """Whether this process still holds the lock."""
        return bool(self._lock.is_locked)

    def release(self) -> None:
        """Release the lock (idempotent); another process may then take the checkpoint."""
        with _HELD_GUARD:
            if _HELD.get(self.key) is self:
                del _HELD[self.key]
        if self._lock.is_locked:
            try:
                self.owner_path.unlink()
            except OSError:
                pass
            self._lock.release(force=True)


def default_lock_dir() -> Path:
    """Where checkpoint locks live: ``$NB_HITL_LOCK_DIR``, else
    ``$XDG_RUNTIME_DIR/nb_hitl/locks``, else ``~/.cache/nb_hitl/locks``.

    Outside the checkpoint folder, so that folder holds checkpoints only; a
    lock is named after the SHA-256 of the checkpoint's absolute path.
    """
    env = os.environ.get(LOCK_DIR_ENV)
    if env:
        return Path(env).expanduser()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "nb_hitl" / "locks"
    return Path.home() / ".cache" / "nb_hitl" / "locks"


def _owner_record() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "user": current_user(), "since": time.time()}


def _describe_holder(holder: dict[str, Any]) -> str:
    if not holder:
        return "another process (its owner file could not be read)"
    since = holder.get("since")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since)) if isinstance(since, (int, float)) else "?"
    return f"pid {holder.get('pid')} on host {holder.get('host')!r} (user {holder.get('user')!r}, since {when})"


# ----------------------------------------------------------------------
# checkpoints
# ----------------------------------------------------------------------
class CheckpointStore:
    """A folder of checkpoints, one file ``<session_id>.json`` per session.

    Args:
        folder: where to write; created (``0700``) by the first :meth:`save`
            (reading never creates it).
        key: the HMAC key (bytes); default :func:`load_key` of ``key_path``.
        key_path: the key file; default :func:`default_key_path` (outside
            the folder, so whoever can write checkpoints cannot re-sign them).

    Each file holds ``{"version": CHECKPOINT_VERSION, "session_id",
    "agent_name", "saved_at", "state": <AgentState JSON>, "hmac": <hex
    SHA-256 HMAC of the rest>}``; files without ``"version"`` are version 1
    (see :data:`CHECKPOINT_VERSION`).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        key: bytes | None = None,
        key_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.folder = Path(folder)
        self._key = key
        self._key_path = key_path

    @property
    def key(self) -> bytes:
        """The signing key (loaded or created on first use)."""
        if self._key is None:
            self._key = load_key(self._key_path)
        return self._key

    def path(self, session_id: str) -> Path:
        """The checkpoint file of ``session_id``."""
        return self.folder / f"{self._safe(session_id)}.json"

    @staticmethod
    def _safe(session_id: str) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)

    def lock(self, session_id: str) -> CheckpointLock:
        """Take the cross-process lock of ``session_id``'s checkpoint (no waiting).

        Returns:
            the lock; the same object again when this process holds it already.

        Raises:
            CheckpointLockedError: another process holds it; the message names
                it (pid, host, user). It is free again once that process ends
                or its session is closed.
        """
        target = self.path(session_id).absolute()
        digest = hashlib.sha256(str(target.parent.resolve() / target.name).encode("utf-8")).hexdigest()[:32]
        lock_dir = default_lock_dir()
        lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_path = lock_dir / f"{digest}.lock"
        owner_path = lock_dir / f"{digest}.owner"
        key = str(lock_path)
        with _HELD_GUARD:
            held = _HELD.get(key)
            if held is not None and held.held:
                return held
            flock = filelock.FileLock(lock_path, timeout=0, mode=0o600, thread_local=False)
            try:
                flock.acquire(timeout=0)
            except filelock.Timeout:
                holder: dict[str, Any] = {}
                try:
                    holder = json.loads(read_nofollow(owner_path))
                except (OSError, ValueError):
                    pass
                raise CheckpointLockedError(
                    f"The checkpoint {session_id!r} is in use by {_describe_holder(holder)}. "
                    "Shut down that kernel (or call session.close() there) and try again.",
                    holder,
                ) from None
            lock = CheckpointLock(flock, owner_path, key)
            write_atomic(owner_path, json.dumps(_owner_record()).encode("utf-8"))
            _HELD[key] = lock
            return lock

    def save(self, session_id: str, agent_name: str, state_json: str) -> Path:
        """Write a signed checkpoint atomically (``0600``).

        Args:
            session_id: the nb_hitl session's id.
            agent_name: the agent's name (checked on restore).
            state_json: ``AgentState.model_dump_json()``.

        Returns:
            the file written.
        """
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        record: dict[str, Any] = {
            "version": CHECKPOINT_VERSION,
            "session_id": session_id,
            "agent_name": agent_name,
            "saved_at": time.time(),
            "state": json.loads(state_json),
        }
        record["hmac"] = _sign(self.key, record)
        target = self.path(session_id)
        write_atomic(target, json.dumps(record).encode("utf-8"))
        return target

    def load(self, session_id: str) -> dict[str, Any]:
        """Read a checkpoint and check its signature.

        Returns:
            the record written by :meth:`save`; ``record["state"]`` is the
            ``AgentState`` as a JSON-able dict and ``record["version"]`` the
            file's format version (``1`` for a file written before versions).

        Raises:
            FileNotFoundError: no checkpoint for ``session_id``.
            CheckpointVersionError: written in a newer format than
                :data:`CHECKPOINT_VERSION` (by a newer nb_hitl).
            CheckpointIntegrityError: unsigned, or the signature does not
                match (the file was changed outside nb_hitl).
            ValueError: the file is not a checkpoint, or is a symlink.
        """
        path = self.path(session_id)
        try:
            record = json.loads(read_nofollow(path).decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path} is not a valid checkpoint: {exc}") from None
        if not isinstance(record, dict) or "state" not in record:
            raise ValueError(f"{path} is not a valid checkpoint: no 'state'")
        version = _version(path, record)
        signature = record.get("hmac")
        if not isinstance(signature, str):
            raise CheckpointIntegrityError(f"The checkpoint {path} is not signed; it is not restored.")
        if not hmac.compare_digest(signature, _sign(self.key, record)):
            raise CheckpointIntegrityError(
                f"The checkpoint {path} was changed after nb_hitl wrote it (its signature does not match), "
                "or it was signed with another key; it is not restored."
            )
        if record.get("session_id") != session_id:
            raise CheckpointIntegrityError(
                f"The checkpoint {path} belongs to session {record.get('session_id')!r}, not {session_id!r}."
            )
        return {**record, "version": version}

    def sessions(self) -> list[str]:
        """The session ids that have a checkpoint, newest first."""
        if not self.folder.is_dir():
            return []
        files = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        return [p.stem for p in files]


def _version(path: Path, record: dict[str, Any]) -> int:
    """The format version of a checkpoint record (``1`` when it has none).

    Raises:
        CheckpointVersionError: a version newer than :data:`CHECKPOINT_VERSION`.
        ValueError: the version is not a whole number from 1.
    """
    version = record.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{path} is not a valid checkpoint: its format version is {version!r}")
    if version > CHECKPOINT_VERSION:
        raise CheckpointVersionError(
            f"The checkpoint {path} was written by a newer nb_hitl (checkpoint format version {version}); "
            f"this nb_hitl reads versions 1 to {CHECKPOINT_VERSION}. Upgrade nb_hitl to restore it.",
            version,
        )
    return version


# ----------------------------------------------------------------------
# audit log
# ----------------------------------------------------------------------
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

    def append_checked(self, build: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> dict[str, Any]:
        """Read the log and append what ``build`` makes of it, under the one lock
        of :meth:`append`: processes deciding on one log at once (the console's
        approvals of a call, :mod:`nb_hitl.service.approving`) each see every
        line the others wrote before, and none is lost.

        Args:
            build: ``(records) -> record``: every record, oldest first, to the
                record to append; it may raise (nothing is written).

        Returns:
            the record as written (see :meth:`append`).

        Raises:
            whatever ``build`` raises; as :meth:`append`.
        """
        return self._write(lambda fd: build(parse_lines(os.pread(fd, os.fstat(fd).st_size, 0))))

    def _write(self, make: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
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
