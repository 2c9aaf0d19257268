"""File primitives of nb_hitl's records (checkpoints, the audit log, lock owner files).

Writes are atomic (a ``0600`` temporary file, ``fsync``, ``os.replace``, the
folder ``fsync``-ed) and reads never follow a symlink (``O_NOFOLLOW``).
"""

from __future__ import annotations

import getpass
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["current_user", "fsync_dir", "NOFOLLOW", "read_nofollow", "write_atomic", "parse_lines", "iter_lines"]


def current_user() -> str:
    """The OS user name recorded as "who" in the audit log."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


def fsync_dir(path: Path) -> None:
    """``fsync`` a folder (its entries: a rename or a new file) where the OS allows it."""
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


NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def read_nofollow(path: Path) -> bytes:
    """Read a file, refusing a symlink (``O_NOFOLLOW``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: ``path`` is a symlink.
    """
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if path.is_symlink():
            raise ValueError(f"{path} is a symbolic link; nb_hitl does not follow links to its records") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def write_atomic(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` via a ``0600`` temporary file, ``fsync`` and ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(target.parent)


def parse_lines(raw: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file's bytes, in order (:func:`iter_lines`)."""
    return list(iter_lines(raw))


def iter_lines(raw: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file's bytes, in order, one at a time
    (a line that is not a JSON object, e.g. one torn by a crash, is skipped)."""
    for line in raw.decode("utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(rec, dict):
            yield rec
