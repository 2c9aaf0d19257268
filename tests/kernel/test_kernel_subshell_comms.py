"""Page messages that arrive on a kernel subshell, in a real ipykernel 7.

JupyterLab sends widget comm messages on a subshell when the kernel has them
("comms over subshells"): ipykernel then runs them on the subshell's thread,
beside the main thread whose loop runs the agent. A ``transcript_sync`` handled
there read the transcript while the agent appended to it: its answer held text
that its ``seq`` did not include, and the page, which then applied the next
stream message (holding that text too), showed a streamed word twice.

Here a reply streams 2,500 words while a subshell asks for the transcript again
and again; every answer must be exactly the stream messages up to its ``seq``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.harness import KernelHarness
from tests.harness.kernel_records import apply_ops
from tests.harness.subshell import create_subshell
from tests.support import reply_widget

pytestmark = pytest.mark.kernel

AGENT = """
import asyncio
from agentscope.agent import Agent
from agentscope.message import TextBlock
from agentscope.model import ChatResponse
from agentscope.tool import Toolkit
from nb_hitl import Session
from nb_hitl.models import ScriptedChatModel, Turn

class Slow(ScriptedChatModel):
    async def _stream(self, text, calls):
        for i in range(2500):   # 17,500 characters: under the page's part of an entry
            yield ChatResponse(id="r", is_last=False, content=[TextBlock(id=text.id, text=f"w{i:05d} ")])
            await asyncio.sleep(0.002)

agent = Agent(name="streamer", system_prompt="x", model=Slow([Turn("x")]), toolkit=Toolkit())
session = Session(agent)
task = session.start("Talk.")
"""


def applied(messages: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
    """The entries a page holds after the stream messages numbered 1..``seq``."""
    entries: list[dict[str, Any]] = []
    for m in sorted((m for m in messages if m["seq"] <= seq), key=lambda m: m["seq"]):
        apply_ops(entries, m["ops"])
    return entries


def test_transcript_syncs_sent_on_a_subshell_match_the_stream_up_to_their_seq() -> None:
    with KernelHarness() as k:
        subshell = create_subshell(k)
        k.execute(AGENT).raise_for_error()
        rec = reply_widget(k, "streamer")
        answers = []
        deadline = time.monotonic() + 60
        while len(answers) < 150 and time.monotonic() < deadline:
            answer = k.request(rec.comm_id, "transcript_sync", subshell_id=subshell, seq=-1)
            assert answer["ok"] is True, answer
            answers.append(answer)
            time.sleep(0.005)
        k.execute("await asyncio.wait([task])", timeout=120).raise_for_error()
        stream = [c for c in k.comm(rec.comm_id).custom if isinstance(c, dict) and c.get("type") == "nbh_transcript"]
        assert [m["seq"] for m in stream] == list(range(1, len(stream) + 1)), "the stream has no gap"
        texts = [e["text"] for e in applied(stream, stream[-1]["seq"]) if e["kind"] == "text"]
        assert texts == ["".join(f"w{i:05d} " for i in range(2500))]
        mid_stream = [a for a in answers if 0 < a["seq"] < stream[-1]["seq"]]
        assert len(mid_stream) >= 30, f"only {len(mid_stream)} answers came while the reply streamed"
        for answer in answers:
            assert answer["entries"] == applied(stream, answer["seq"]), (
                f"the answer at seq {answer['seq']} is not the stream up to that seq"
            )
