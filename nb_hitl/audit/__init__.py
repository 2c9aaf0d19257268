"""The audit record as evidence: every call on it, sealed, and read back.

* :mod:`~nb_hitl.audit.chain`: each line carries the hash of the line before
  it and an HMAC under the per-user key; :func:`verify` names the first line
  changed, removed or reordered.
* :mod:`~nb_hitl.audit.checked`: the ``on_check_permission`` middleware a
  Session with an audit log installs, recording every tool call's decision
  (``event: "checked"``), whoever or whatever decided it.
* :mod:`~nb_hitl.audit.frame`: :func:`audit_frame`, the records as a pandas DataFrame.
* :mod:`~nb_hitl.audit.replay`: :func:`replay`, what a candidate rule set
  would have decided for each recorded call, with AgentScope's own engine.
"""

from __future__ import annotations

from .chain import ChainVerdict, verify

__all__ = ["verify", "ChainVerdict", "audit_frame", "replay"]


def __getattr__(name: str):  # pandas is loaded only when a frame is asked for
    if name == "audit_frame":
        from .frame import audit_frame

        return audit_frame
    if name == "replay":
        from .replay import replay

        return replay
    raise AttributeError(name)
