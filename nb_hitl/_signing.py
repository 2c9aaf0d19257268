"""The per-user signing key of nb_hitl's records (checkpoints, the audit chain)
and the HMAC over a record's canonical JSON."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

from ._fileio import read_nofollow

__all__ = ["KEY_ENV", "default_key_path", "load_key"]

KEY_ENV = "NB_HITL_CHECKPOINT_KEY"
"""Environment variable: the path of the checkpoint signing key file."""


# ----------------------------------------------------------------------
# signing key
# ----------------------------------------------------------------------
def default_key_path() -> Path:
    """Where the signing key lives: ``$NB_HITL_CHECKPOINT_KEY``, else
    ``$XDG_CONFIG_HOME/nb_hitl/checkpoint.key`` (``~/.config/...``)."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "nb_hitl" / "checkpoint.key"


def load_key(path: str | os.PathLike[str] | None = None) -> bytes:
    """The per-user checkpoint signing key, created (``0600``, 32 random
    bytes, hex) on first use.

    Args:
        path: the key file; :func:`default_key_path` when omitted.

    Raises:
        ValueError: the key file is a symlink, empty, or readable by others.
    """
    key_path = Path(path) if path is not None else default_key_path()
    try:
        raw = read_nofollow(key_path)
    except FileNotFoundError:
        key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # written whole in a temporary file, then linked into place: a process
        # creating it at the same moment never reads a half-written key
        fd, tmp = tempfile.mkstemp(dir=key_path.parent, prefix=".tmp-key-")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32))
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, key_path)
            except FileExistsError:  # created meanwhile by another process: use theirs
                pass
        finally:
            os.unlink(tmp)
        raw = read_nofollow(key_path)
    mode = os.stat(key_path, follow_symlinks=False).st_mode
    if mode & 0o077:
        raise ValueError(f"The checkpoint key {key_path} is readable by others (mode {mode & 0o777:o}); chmod 600 it.")
    key = raw.strip()
    if len(key) < 32:
        raise ValueError(f"The checkpoint key {key_path} is empty or too short.")
    return key


def _canonical(record: dict[str, Any]) -> bytes:
    body = {k: v for k, v in record.items() if k != "hmac"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _sign(key: bytes, record: dict[str, Any]) -> str:
    return hmac.new(key, _canonical(record), hashlib.sha256).hexdigest()
