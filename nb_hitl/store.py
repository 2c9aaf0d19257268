"""Checkpoints of an agent's state and the audit log of decisions.

Files only: nothing here knows AgentScope's classes beyond pydantic's
``model_dump_json`` / ``model_validate_json`` on ``AgentState``.

* :class:`CheckpointStore`: one JSON file per session in a folder the user
  chooses, written atomically (temporary file, ``fsync``, ``os.replace``), so
  a crash leaves the previous checkpoint or the new one, never half a file.
* :class:`AuditLog`: one JSON line per decision, appended and flushed with
  ``fsync`` *before* the agent is resumed, so killing the kernel right after
  a click loses no decision that reached the agent.
"""

from __future__ import annotations

import getpass
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["CheckpointStore", "AuditLog", "current_user"]


def current_user() -> str:
    """The OS user name recorded as "who" in the audit log."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class CheckpointStore:
    """A folder of checkpoints, one file ``<session_id>.json`` per session.

    Args:
        folder: where to write; created by the first :meth:`save` (reading
            never creates it).

    Each file holds ``{"session_id", "agent_name", "saved_at", "state": <AgentState JSON>}``.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path(self, session_id: str) -> Path:
        """The checkpoint file of ``session_id``."""
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)
        return self.folder / f"{safe}.json"

    def save(self, session_id: str, agent_name: str, state_json: str) -> Path:
        """Write a checkpoint atomically.

        Args:
            session_id: the nb_hitl session's id.
            agent_name: the agent's name (checked on restore).
            state_json: ``AgentState.model_dump_json()``.

        Returns:
            the file written.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.path(session_id)
        record = {
            "session_id": session_id,
            "agent_name": agent_name,
            "saved_at": time.time(),
            "state": json.loads(state_json),
        }
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".ckpt-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(record, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _fsync_dir(self.folder)
        return target

    def load(self, session_id: str) -> dict[str, Any]:
        """Read a checkpoint.

        Returns:
            the record written by :meth:`save`; ``record["state"]`` is the
            ``AgentState`` as a JSON-able dict.

        Raises:
            FileNotFoundError: no checkpoint for ``session_id``.
            ValueError: the file is not a checkpoint (the message names it).
        """
        path = self.path(session_id)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not a valid checkpoint: {exc}") from None
        if not isinstance(record, dict) or "state" not in record:
            raise ValueError(f"{path} is not a valid checkpoint: no 'state'")
        return record

    def sessions(self) -> list[str]:
        """The session ids that have a checkpoint, newest first."""
        if not self.folder.is_dir():
            return []
        files = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        return [p.stem for p in files]


class AuditLog:
    """An append-only JSON-lines log of decisions.

    Args:
        path: the log file; its folder is created if missing.

    Each line: ``{"time": ISO-8601 UTC, "ts": seconds, "session_id", "reply_id",
    "tool_call_id", "tool_name", "original_input", "edited_input",
    "decision", "accepted_rules", "answers", "who", ...}``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Append one record and ``fsync`` it before returning.

        Args:
            record: JSON-able fields; ``time``, ``ts`` and ``who`` are added.

        Returns:
            the record as written.
        """
        now = time.time()
        full = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "ts": now,
            "who": current_user(),
            **record,
        }
        line = json.dumps(full, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        return full

    def records(self) -> list[dict[str, Any]]:
        """Every record, oldest first (a torn last line is skipped)."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out
