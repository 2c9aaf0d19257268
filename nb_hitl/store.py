"""Checkpoints of an agent's state and the audit log of decisions.

Files only: nothing here knows AgentScope's classes beyond pydantic's
``model_dump_json`` / ``model_validate_json`` on ``AgentState``.

* :class:`CheckpointStore`: one JSON file per session, written atomically
  (temporary file, ``fsync``, ``os.replace``), created ``0600``, signed with
  an HMAC under a per-user key kept outside the checkpoint folder, and
  guarded by a cross-process lock (``filelock``, in a per-user lock folder)
  so one process at a time drives a session.
* :class:`AuditLog` (from :mod:`nb_hitl._auditlog`): one JSON line per
  decision, appended (``0600``, never through a symlink) and ``fsync``-ed
  *before* the agent is resumed, under an advisory lock (``fcntl.flock``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import filelock

from ._auditlog import AuditLog
from ._fileio import current_user, iter_lines, parse_lines, read_nofollow, write_atomic
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

    def session(self, session_id: str | None = None) -> str:
        """``session_id``, or when ``None`` the newest session with a checkpoint.

        Raises:
            FileNotFoundError: ``None`` given and the folder holds no checkpoint.
        """
        if session_id is not None:
            return session_id
        ids = self.sessions()
        if not ids:
            raise FileNotFoundError(f"No checkpoint in {self.folder}")
        return ids[0]


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
