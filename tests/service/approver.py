"""A second console in its own process, for the four-eyes tests on the service.

``python -m tests.service.approver URL USER AUDIT AGENT_ID SESSION_ID BY TCID
[START_AT]`` opens the session with a :class:`~nb_hitl.service.ServiceClient`
(its own HTTP client and ledger object over the shared ``AUDIT`` file, the
policy of :data:`NOTES_TWICE`), waits until ``START_AT`` (``time.time()``
seconds; two consoles approving at once), approves the call as ``BY`` and
prints one JSON line: ``{"ok": true, "answer": {...}}`` or ``{"ok": false,
"code", "error"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from nb_hitl.errors import NbHitlError
from nb_hitl.policy import Policy
from nb_hitl.service import ServiceClient


def notes_policy(approvals: int) -> Policy:
    """The policy both processes apply: ``write_note`` needs ``approvals`` distinct people."""
    return Policy("notes", tools=["write_note"], approvals=approvals, distinct=True)


async def approve(argv: list[str]) -> dict[str, Any]:
    url, user, audit, agent_id, sid, by, tcid, approvals = argv[:8]
    start_at = float(argv[8]) if len(argv) > 8 else 0.0
    client = ServiceClient(
        url, user, audit_path=audit, service_id="cluster", decided_by=by, policies=[notes_policy(int(approvals))]
    )
    try:
        console = await client.open(sid, agent_id, show=False)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        try:
            return {"ok": True, "answer": await console.act({"action": "approve", "tool_call_id": tcid})}
        except NbHitlError as exc:
            return {"ok": False, "code": exc.code, "error": str(exc)}
    finally:
        await client.aclose()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(approve(sys.argv[1:])), default=str))
