"""The AG-UI server hands a resume to the Session's front door, all or nothing.

A resume's entries become page messages and go through
``Session.act_all`` once: the audit lines name the road (``agui``), the
thread, the run and the principal; an answer the front door refuses (an
edited input the tool's schema refuses) refuses the whole resume with the
interrupt and the field at fault, and nothing of it is taken or audited.
"""

from __future__ import annotations

import asyncio
import re

from ag_ui.core import ResumeEntry

from nb_hitl.agui import AguiServer, serve_in_background
from nb_hitl.agui.client import AguiClient
from nb_hitl.agui.demo import two_pause_factory
from nb_hitl.agui.mapping import META_KEY
from nb_hitl.store import AuditLog
from tests.agui_support import post_run, user

QUESTION = "Which file should I archive?"


def _entries(interrupts, confirm_payload):
    out = []
    for i in interrupts:
        if i.metadata[META_KEY]["kind"] == "confirm":
            out.append(ResumeEntry(interrupt_id=i.id, status="resolved", payload=confirm_payload))
        else:
            answers = [{"question": QUESTION, "selected": ["draft.md"]}]
            out.append(ResumeEntry(interrupt_id=i.id, status="resolved", payload={"answers": answers}))
    return out


def _lines(path):
    return AuditLog(path).records("answered")


def test_a_resume_goes_through_the_front_door_once_and_is_audited_with_thread_and_run(tmp_path):
    audit = tmp_path / "audit.jsonl"
    factory = two_pause_factory(tmp_path / "sandboxes")
    server = AguiServer(factory, token="pipeline-token", session_kwargs={"audit_log": str(audit)})
    tid = "pipeline-thread"
    with serve_in_background(server, announce=False) as handle:
        first = asyncio.run(post_run(handle, AguiClient.make_input(tid, [user("Please tidy up.", "p1")])))
        interrupts = list(first.last().outcome.interrupts)
        assert len(interrupts) == 2
        # refused by the front door: an edited input with a key the tool does not take
        bad = AguiClient.make_input(
            tid, [], _entries(interrupts, {"approved": True, "editedArgs": {"path": "x", "y": 1}})
        )
        refused = asyncio.run(post_run(handle, bad))
        good = AguiClient.make_input(tid, [], _entries(interrupts, {"approved": True}))
        done = asyncio.run(post_run(handle, good))
    err = refused.last()
    confirm = next(i for i in interrupts if i.metadata[META_KEY]["kind"] == "confirm")
    assert refused.types == ["RUN_STARTED", "RUN_ERROR"]
    assert err.code == "invalid_payload" and "The input has a field the tool does not take: y." in err.message
    # the person reads the tool, not the interrupt's id (that is in the metadata, for programs)
    assert err.message.startswith("The interrupt for delete_file: ") and confirm.id not in err.message
    assert not re.search(r"nbh-[0-9a-f]{8}|call_[0-9a-f]{6}", err.message)
    assert err.metadata[META_KEY] == {"interrupt_ids": [confirm.id], "field": "input"}
    assert done.last().type.value == "RUN_FINISHED" and done.last().outcome.type == "success"
    assert done.last().result == "You chose to archive draft.md. Deleted old_log.txt."
    lines = _lines(audit)
    # the refused resume wrote nothing, not even for its valid AskUser answer (all or nothing)
    assert sorted(line["decision"] for line in lines) == ["answer", "approve"]
    for line in lines:
        assert line["v"] == 2 and line["decided_by"] == "token"
        assert line["origin"] == {"road": "agui", "thread_id": tid, "run_id": good.run_id, "principal": "token"}
