"""Fuzz every message the page can send, through the handler the comm uses.

A real agent is parked on three calls at once (a confirmation, an AskUser
with a single- and a multi-select question, an external tool). Hypothesis
then sends hostile page messages straight into
``ReplyWidget._on_page_message(widget, content, [])`` (the callback ipywidgets
calls for a ``custom`` comm message) and captures what the widget sends back.

Every message is invalid *by construction* (wrong types, missing fields,
huge strings, unknown ids, invalid JSON in Modify, labels not in the
question, too many selections, wrong kind, wrong ``reply_id``...). Each one
must get exactly one ``{request_id, ok: false, error}`` answer, nothing may
raise out of the handler, no refusal may be an internal error, and the agent
is never resumed: its state, the model's calls, the resumes counted by an
AgentScope ``on_reply`` middleware and the audit log stay as they were.

The session's asyncio loop runs in a thread (as the kernel's loop does while
comm messages arrive); the widget is created on it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from agentscope.tool import AskUser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nb_hitl import Session
from nb_hitl.decisions import MAX_SHORT, MAX_TEXT
from nb_hitl.demo import make_sandbox, sandbox_tools
from nb_hitl.models import Turn, tool_call, tool_results
from nb_hitl.store import AuditLog
from tests.support import InputRecorder
from tests.support_agents import Lookup, scripted_agent

CONFIRM, ASK, EXT = "c1", "q1", "x1"
IDS = (CONFIRM, ASK, EXT)
Q1, Q1_OPTS = "Pick one?", ["A", "B", "C"]
Q2, Q2_OPTS = "Pick some?", ["X", "Y"]
KNOWN_ACTIONS = {
    "approve",
    "deny",
    "modify",
    "answer",
    "external_result",
    "return_error",
    "interrupt",
    "ping",
    "batch",
    "transcript_sync",
    "cards_sync",
}


class Parked:
    """A real agent parked on a confirmation, an AskUser and an external call,
    driven by a Session on an asyncio loop in a background thread."""

    def __init__(self, tmp: Path) -> None:
        self.box = make_sandbox(tmp / "box")
        self.audit = tmp / "audit.jsonl"
        self.recorder = InputRecorder()
        questions = [
            {"question": Q1, "header": "One", "options": [{"label": label, "description": label} for label in Q1_OPTS]},
            {
                "question": Q2,
                "header": "Some",
                "multi_select": True,
                "options": [{"label": label, "description": label} for label in Q2_OPTS],
            },
        ]
        batch = [
            tool_call("delete_file", id=CONFIRM, path="notes.txt"),
            tool_call("AskUser", id=ASK, questions=questions),
            tool_call("lookup", id=EXT, word="w"),
        ]
        self.agent = scripted_agent(
            [Turn("", batch), lambda msgs: Turn(f"{len(tool_results(msgs))} results")],
            [*sandbox_tools(self.box), Lookup()],
            name="fuzzed",
            system_prompt="s",
            recorder=self.recorder,
        )
        # sandbox_tools has its own AskUser; make sure it is the one registered
        assert any(isinstance(t, AskUser) for t in sandbox_tools(self.box))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fuzz-loop", daemon=True)
        self.thread.start()
        self.session: Session = self.call(self._start())
        self.run = self.session.current
        self.widget = self.run.widget
        self.reply_id = self.run.reply_id
        self.replies: list[Any] = []
        self._lock = threading.Lock()
        self.widget.send = self._capture  # type: ignore[method-assign]
        self.state_json = self.agent.state.model_dump_json()

    def _capture(self, payload: Any) -> None:
        if isinstance(payload, dict) and payload.get("type") in ("nbh_transcript", "nbh_cards"):
            return  # the transcript and card streams, not answers
        with self._lock:
            self.replies.append(payload)

    def call(self, coro: Any, timeout: float = 20.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> Session:
        session = Session(self.agent, display=True, audit_log=str(self.audit))
        self.task = session.start("Three things.")
        end = time.monotonic() + 10
        while not (session.current.status == "paused" and len(session.current.open_pauses()) == 3):
            if time.monotonic() > end:
                raise AssertionError("the reply did not park on three calls")
            await asyncio.sleep(0.005)
        return session

    def wait_replies(self, count: int, timeout: float = 10.0) -> list[Any]:
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                if len(self.replies) >= count:
                    return list(self.replies)
            if time.monotonic() > end:
                raise AssertionError(f"{count - len(self.replies)} page message(s) got no answer")
            time.sleep(0.002)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


# ------------------------------------------------------------ strategies
junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
non_str = junk.filter(lambda v: not isinstance(v, str))
unknown_id = st.text(min_size=1, max_size=80).filter(lambda s: s not in IDS)


def huge(limit: int) -> st.SearchStrategy[str]:
    return st.builds(
        lambda ch, extra: ch * (limit + 1 + extra), st.sampled_from(["x", "é", "<", "{", "\u2028"]), st.integers(0, 50)
    )


def not_valid_edit(text: str) -> bool:
    """True when ``text`` is not a JSON object with a string ``path`` (the tool's schema)."""
    try:
        value = json.loads(text)
    except ValueError:
        return True
    return not (isinstance(value, dict) and isinstance(value.get("path"), str))


def valid_answers(draw: Any) -> list[dict[str, Any]]:
    return [
        {"question": Q1, "selected": [draw(st.sampled_from(Q1_OPTS))]},
        {"question": Q2, "selected": draw(st.lists(st.sampled_from(Q2_OPTS), min_size=1, max_size=2, unique=True))},
    ]


@st.composite
def bad_answers(draw: Any) -> dict[str, Any]:
    """An ``answer`` for the AskUser call with exactly one corruption."""
    answers = valid_answers(draw)
    how = draw(
        st.sampled_from(
            [
                "label_not_in_question",
                "too_many_single",
                "option_and_other_single",
                "unknown_question",
                "missing_question",
                "duplicate_question",
                "duplicate_selection",
                "empty",
                "selected_not_list",
                "answers_not_list",
                "extra_field",
                "too_many_answers",
                "huge_other",
                "other_not_str",
            ]
        )
    )
    if how == "label_not_in_question":
        i = draw(st.integers(0, 1))
        opts = Q1_OPTS if i == 0 else Q2_OPTS
        answers[i]["selected"] = [draw(st.text(max_size=30).filter(lambda s: s not in opts))]
    elif how == "too_many_single":
        answers[0]["selected"] = draw(st.lists(st.sampled_from(Q1_OPTS), min_size=2, max_size=3, unique=True))
    elif how == "option_and_other_single":
        answers[0]["other"] = draw(st.text(min_size=1, max_size=30).filter(lambda s: s.strip()))
    elif how == "unknown_question":
        answers[draw(st.integers(0, 1))]["question"] = draw(st.text(max_size=40).filter(lambda s: s not in (Q1, Q2)))
    elif how == "missing_question":
        answers.pop(draw(st.integers(0, 1)))
    elif how == "duplicate_question":
        answers.append(dict(answers[0]))
    elif how == "duplicate_selection":
        answers[1]["selected"] = ["X", "X"]
    elif how == "empty":
        i = draw(st.integers(0, 1))
        answers[i]["selected"] = []
        answers[i]["other"] = draw(st.sampled_from([None, "", "   ", "\n\t"]))
    elif how == "selected_not_list":
        answers[0]["selected"] = draw(st.one_of(st.sampled_from(Q1_OPTS), non_str))
    elif how == "answers_not_list":
        return {
            "action": "answer",
            "tool_call_id": ASK,
            "answers": draw(
                st.one_of(
                    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
                    st.text(max_size=10),
                    st.integers(),
                )
            ),
        }
    elif how == "extra_field":
        answers[0][
            draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in ("question", "selected", "other")))
        ] = 1
    elif how == "too_many_answers":
        answers = answers * 9
    elif how == "huge_other":
        answers[1]["other"] = draw(huge(MAX_SHORT))
    elif how == "other_not_str":
        answers[1]["other"] = draw(non_str.filter(lambda v: v is not None))
    return {"action": "answer", "tool_call_id": ASK, "answers": answers}


@st.composite
def bad_modify(draw: Any) -> dict[str, Any]:
    how = draw(
        st.sampled_from(
            ["not_json", "not_object", "schema", "rename", "huge", "input_not_str", "missing_input", "bad_rules"]
        )
    )
    msg: dict[str, Any] = {"action": "modify", "tool_call_id": CONFIRM}
    if how == "not_json":
        msg["input"] = draw(st.text(max_size=200).filter(not_valid_edit))
    elif how == "not_object":
        msg["input"] = json.dumps(
            draw(
                st.one_of(
                    st.lists(st.integers(), max_size=3), st.text(max_size=20), st.integers(), st.none(), st.booleans()
                )
            )
        )
    elif how == "schema":
        msg["input"] = json.dumps(
            draw(
                st.one_of(
                    st.fixed_dictionaries({"path": non_str}),
                    st.dictionaries(st.text(max_size=8).filter(lambda k: k != "path"), st.text(max_size=8), max_size=3),
                )
            )
        )
        if not not_valid_edit(msg["input"]):  # non_str can't yield a str, but keep it certain
            msg["input"] = "{}"
    elif how == "rename":
        msg["input"] = json.dumps({"path": "notes.txt"})
        msg["name"] = draw(st.text(max_size=40).filter(lambda n: n != "delete_file"))
    elif how == "huge":
        msg["input"] = '{"path": "' + draw(huge(MAX_TEXT)) + '"}'
    elif how == "input_not_str":
        msg["input"] = draw(non_str)
    elif how == "missing_input":
        pass
    elif how == "bad_rules":
        msg["input"] = json.dumps({"path": "notes.txt"})
        msg["rules"] = draw(
            st.one_of(
                st.lists(st.integers(1, 64), min_size=1, max_size=3),
                st.lists(st.integers(max_value=-1), min_size=1, max_size=2),
                st.lists(st.integers(65, 10**6), min_size=1, max_size=2),
                st.text(max_size=4),
                st.lists(st.text(max_size=3), min_size=1, max_size=2),
            )
        )
    return msg


@st.composite
def bad_confirm(draw: Any) -> dict[str, Any]:
    action = draw(st.sampled_from(["approve", "deny"]))
    how = draw(st.sampled_from(["rules_out_of_range", "rules_wrong_type"] if action == "approve" else ["wrong_kind"]))
    if how == "rules_out_of_range":
        return {
            "action": "approve",
            "tool_call_id": CONFIRM,
            "rules": draw(st.lists(st.integers(1, 64), min_size=1, max_size=4)),
        }
    if how == "rules_wrong_type":
        return {
            "action": "approve",
            "tool_call_id": CONFIRM,
            "rules": draw(
                st.one_of(
                    st.lists(
                        st.one_of(st.text(max_size=3), st.booleans(), st.floats(), st.none()), min_size=1, max_size=3
                    ),
                    st.integers(),
                    st.text(max_size=3),
                )
            ),
        }
    return {"action": "deny", "tool_call_id": draw(st.sampled_from([ASK, EXT]))}


@st.composite
def wrong_kind(draw: Any) -> dict[str, Any]:
    """C06: a decision of the wrong kind for the call it names."""
    return draw(
        st.sampled_from(
            [
                {"action": "external_result", "tool_call_id": CONFIRM, "output": "ran it"},
                {"action": "answer", "tool_call_id": CONFIRM, "answers": [{"question": Q1, "selected": ["A"]}]},
                {"action": "return_error", "tool_call_id": CONFIRM, "message": "no"},
                {"action": "approve", "tool_call_id": ASK},
                {"action": "modify", "tool_call_id": EXT, "input": '{"word": "x"}'},
                {"action": "external_result", "tool_call_id": ASK, "output": "A"},
                {"action": "answer", "tool_call_id": EXT, "answers": [{"question": Q1, "selected": ["A"]}]},
                {"action": "return_error", "tool_call_id": ASK},
                {"action": "return_error", "tool_call_id": ASK, "message": ""},
            ]
        )
    )


@st.composite
def bad_external(draw: Any) -> dict[str, Any]:
    how = draw(st.sampled_from(["missing_output", "output_not_str", "huge", "bad_state"]))
    msg: dict[str, Any] = {"action": "external_result", "tool_call_id": EXT}
    if how == "output_not_str":
        msg["output"] = draw(non_str)
    elif how == "huge":
        msg["output"] = draw(huge(MAX_TEXT))
    elif how == "bad_state":
        msg["output"] = "fine"
        msg["state"] = draw(st.one_of(st.text(max_size=10).filter(lambda s: s not in ("success", "error")), non_str))
    return msg


@st.composite
def wrong_ids(draw: Any) -> dict[str, Any]:
    action = draw(st.sampled_from(["approve", "deny", "modify", "answer", "external_result", "return_error"]))
    base: dict[str, Any] = {
        "action": action,
        "input": '{"path": "a"}',
        "output": "x",
        "message": "m",
        "answers": [{"question": Q1, "selected": ["A"]}],
    }
    how = draw(
        st.sampled_from(["unknown_id", "id_not_str", "missing_id", "huge_id", "wrong_reply_id", "reply_id_not_str"])
    )
    if how == "unknown_id":
        base["tool_call_id"] = draw(unknown_id)
    elif how == "id_not_str":
        base["tool_call_id"] = draw(non_str)
    elif how == "huge_id":
        base["tool_call_id"] = draw(huge(512))
    elif how == "wrong_reply_id":
        base["tool_call_id"] = draw(st.sampled_from(IDS))
        base["reply_id"] = draw(st.one_of(st.text(max_size=40), huge(512)))
    elif how == "reply_id_not_str":
        base["tool_call_id"] = draw(st.sampled_from(IDS))
        base["reply_id"] = draw(non_str.filter(lambda v: v is not None))
    return base


@st.composite
def unknown_action(draw: Any) -> dict[str, Any]:
    action = draw(st.one_of(st.text(max_size=30).filter(lambda a: a not in KNOWN_ACTIONS), non_str, st.just(None)))
    msg = {"action": action, "tool_call_id": draw(st.sampled_from(IDS))}
    if draw(st.booleans()):
        msg.pop("action")
    return msg


page_messages = st.one_of(
    bad_answers(), bad_modify(), bad_confirm(), wrong_kind(), bad_external(), wrong_ids(), unknown_action()
)
not_an_object = st.one_of(
    st.lists(junk, max_size=3), st.text(max_size=50), st.integers(), st.none(), st.floats(allow_nan=False)
)


# ------------------------------------------------------------------ test
def test_fuzz_every_hostile_page_message_is_refused_and_never_reaches_the_agent(tmp_path: Path) -> None:
    parked = Parked(tmp_path)
    sent = {"n": 0}
    reply_id = parked.reply_id
    try:
        assert [p.tool_call_id for p in parked.run.open_pauses()] == [CONFIRM, ASK, EXT]
        assert len(parked.run.pauses[CONFIRM].suggested_rules) == 1  # so rule index 0 is the only valid one

        def send(content: Any) -> dict[str, Any]:
            before = sent["n"]
            parked.widget._on_page_message(parked.widget, content, [])  # must never raise
            sent["n"] += 1
            replies = parked.wait_replies(before + 1)
            assert len(replies) == before + 1, "more than one answer to one message"
            return replies[-1]

        @settings(
            max_examples=350,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(message=page_messages, request_id=st.text(min_size=1, max_size=12), with_reply_id=st.booleans())
        def check_message(message: dict[str, Any], request_id: str, with_reply_id: bool) -> None:
            content = dict(message)
            if with_reply_id and "reply_id" not in content:
                content["reply_id"] = reply_id  # the right one: the message stays wrong for its other reason
            rid = f"{sent['n']}:{request_id}"
            content["request_id"] = rid
            reply = send(content)
            assert reply["request_id"] == rid
            assert reply["ok"] is False, (content, reply)
            assert isinstance(reply["error"], str) and reply["error"].strip()
            assert len(reply["error"]) <= 2000
            assert reply["code"] == "invalid", (content, reply)  # a readable refusal, never "internal"

        @settings(max_examples=40, deadline=None, database=None)
        @given(content=not_an_object)
        def check_not_an_object(content: Any) -> None:
            reply = send(content)
            assert reply["ok"] is False and reply["request_id"] is None and reply["error"]
            assert reply["code"] != "internal"

        check_message()
        check_not_an_object()

        # the agent was never resumed, nothing was recorded, every pause is still live
        assert len(parked.recorder.inputs) == 1
        assert parked.run.resumes == 0 and parked.run.queue == []
        assert len(parked.agent.model.calls) == 1
        assert parked.agent.state.model_dump_json() == parked.state_json
        assert [p.status for p in parked.run.pauses.values()] == ["open", "open", "open"]
        assert [p["status"] for p in parked.widget.pauses] == ["open", "open", "open"]
        assert AuditLog(parked.audit).records("answered") == []
        assert (parked.box / "notes.txt").exists()
        assert sent["n"] >= 300 and len(parked.replies) == sent["n"]

        # and the pause still takes valid decisions afterwards
        for content in (
            {"request_id": "ok1", "action": "deny", "tool_call_id": CONFIRM, "reply_id": reply_id},
            {
                "request_id": "ok2",
                "action": "answer",
                "tool_call_id": ASK,
                "answers": [{"question": Q1, "selected": ["B"]}, {"question": Q2, "selected": ["X", "Y"]}],
            },
            {"request_id": "ok3", "action": "external_result", "tool_call_id": EXT, "output": "w: a word"},
        ):
            parked.widget._on_page_message(parked.widget, content, [])
        replies = parked.wait_replies(sent["n"] + 3)
        assert [(r["request_id"], r["ok"]) for r in replies[-3:]] == [("ok1", True), ("ok2", True), ("ok3", True)]
        final = parked.call(asyncio.wait_for(parked.task, 10))
        assert final.get_text_content() == "3 results"
        assert sorted(r["tool_call_id"] for r in AuditLog(parked.audit).records("answered")) == [CONFIRM, ASK, EXT]
        assert (parked.box / "notes.txt").exists()  # denied
    finally:
        parked.close()
