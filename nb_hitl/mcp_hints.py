"""MCP's tool annotations as hints with the spec's defaults (pure; no MCP import).

A server may declare ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``
and ``openWorldHint`` on a tool; they are hints, not guarantees, and only worth
trusting from a trusted server. :class:`~nb_hitl.policy.Policy` asks on them
(``mcp_hints=``) and the confirmation card shows them.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["effective_mcp_hints"]


def effective_mcp_hints(declared: Mapping[str, bool]) -> dict[str, bool]:
    """MCP's tool hints with the spec's defaults for those a server left out:
    ``readOnlyHint`` false, ``destructiveHint`` true, ``idempotentHint`` false,
    ``openWorldHint`` true. The spec gives ``destructiveHint`` and
    ``idempotentHint`` a meaning only for a tool that is not read-only: a
    read-only tool counts as not destructive and idempotent."""
    read_only = bool(declared.get("readOnlyHint", False))
    return {
        "readOnlyHint": read_only,
        "destructiveHint": False if read_only else bool(declared.get("destructiveHint", True)),
        "idempotentHint": True if read_only else bool(declared.get("idempotentHint", False)),
        "openWorldHint": bool(declared.get("openWorldHint", True)),
    }
