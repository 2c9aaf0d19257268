"""The audit record as evidence: every call on it, sealed, and read back.

* :mod:`~nb_hitl.audit.chain`: each line carries the hash of the line before
  it and an HMAC under the per-user key; :func:`verify` names the first line
  changed, removed or reordered.
* :mod:`~nb_hitl.audit.checked`: the ``on_check_permission`` middleware a
  Session with an audit log installs, recording every tool call's decision
  (``event: "checked"``), whoever or whatever decided it.
* :mod:`~nb_hitl.audit.frame`: :func:`audit_frame`, the records as a pandas DataFrame.
* :mod:`~nb_hitl.audit.rule_replay`: :func:`replay`, what a candidate rule set
  would have decided for each recorded call, with AgentScope's own engine.
* :mod:`~nb_hitl.audit.charts`: each call's outcome and each answer's time to
  decide as small tables, drawn with matplotlib (the ``charts`` extra).
* :mod:`~nb_hitl.audit.views`: approvals given in under a second, and the
  narrowest rules that would have covered what people always approved
  (offered, never applied).
"""

from __future__ import annotations

from typing import Any

from .chain import ChainVerdict, verify

__all__ = ["verify", "ChainVerdict", "audit_frame", "replay"]


def __getattr__(name: str) -> Any:
    """``audit_frame`` and ``replay``, imported on first use (they load pandas).

    The module is :mod:`nb_hitl.audit.rule_replay`, not ``replay``: a
    submodule's import sets its name on this package, and would replace the
    function with the module for whoever imported the submodule first.
    """
    found: Any
    if name == "audit_frame":
        from .frame import audit_frame as found
    elif name == "replay":
        from .rule_replay import replay as found
    else:
        raise AttributeError(name)
    globals()[name] = found
    return found
