"""How the person's own cells name an object, for messages that tell them what to type.

A note that says "`await session.resume()`" is wrong for a person who wrote
``s = Session(...)``: messages name a session by the variable the person's
namespace (IPython's ``user_ns``) binds it to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["called", "user_namespace", "variable"]


def user_namespace() -> Mapping[str, Any]:
    """The running IPython shell's ``user_ns``; ``{}`` outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    return getattr(get_ipython(), "user_ns", None) or {}


def variable(owner: object, namespace: Mapping[str, Any] | None = None) -> str | None:
    """The name the person's cells bind ``owner`` to in ``namespace`` (default:
    :func:`user_namespace`; IPython's ``_``, ``_3``... aside), or ``None``."""
    ns = user_namespace() if namespace is None else namespace
    return next((k for k, v in list(ns.items()) if v is owner and not k.startswith("_")), None)


def called(owner: object, default: str = "session") -> str:
    """:func:`variable` of ``owner``, else ``default`` (the name the docs use)."""
    return variable(owner) or default
