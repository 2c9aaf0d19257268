"""Kind ``sampling`` (nb_hitl.kinds.sampling) and the request as the card shows it
(nb_hitl.mcp._sampling.request_view), without a server: what each answer becomes,
what is refused, the deadline and AG-UI defaults, and a request that cannot be sent."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from agentscope.message import ToolCallBlock

from nb_hitl import DecisionError
from nb_hitl.decisions import decide
from nb_hitl.kinds import kind_spec
from nb_hitl.kinds._schema import validate_payload
from nb_hitl.mcp._sampling import request_view
from nb_hitl.pauses import Pause

SPEC = kind_spec("sampling")


def params(*contents: Any, **over: Any) -> types.CreateMessageRequestParams:
    messages = [types.SamplingMessage(role="user", content=c) for c in contents]
    return types.CreateMessageRequestParams(messages=messages, max_tokens=50, **over)


def text(t: str) -> types.TextContent:
    return types.TextContent(type="text", text=t)


def pause(stage: str = "request", **over: Any) -> Pause:
    view, problem = request_view(params(text("Summarize customers."), text("In one line."), system_prompt="Be brief."))
    view["stage"] = stage
    if stage == "completion":
        view["completion"], view["model"] = "3 rows.", "scripted"
    call = ToolCallBlock(id="c1~sampling-1", name="mcp__db__summarize_table", input="{}")
    fields: dict[str, Any] = {"sampling": view, "form_error": problem, **over}
    return Pause(reply_id="r1", tool_call=call, kind="sampling", **fields)


def act(p: Pause, **msg: Any) -> Any:
    return decide(p, {"tool_call_id": p.tool_call_id, **msg})


def test_the_request_as_the_card_shows_it() -> None:
    prefs = types.ModelPreferences(hints=[types.ModelHint(name="small")], cost_priority=0.1, speed_priority=0.9)
    view, problem = request_view(
        params(text("Hi"), system_prompt="Sys", model_preferences=prefs, temperature=0.3, stop_sequences=["END"])
    )
    assert problem is None
    assert view["messages"] == [{"role": "user", "text": "Hi"}]
    assert (view["system_prompt"], view["model_hints"], view["priorities"]) == (
        "Sys",
        ["small"],
        {"cost": 0.1, "speed": 0.9},
    )
    assert (view["max_tokens"], view["temperature"], view["stop_sequences"]) == (50, 0.3, ["END"])


def test_a_request_that_is_not_text_can_only_be_denied() -> None:
    image = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    view, problem = request_view(params(text("Look:"), image))
    assert problem == "Message 2 holds image content; only text is shown and sent to the model."
    p = pause(form_error=problem)
    with pytest.raises(DecisionError, match="cannot be sent: Message 2 holds image content") as err:
        act(p, action="approve")
    assert err.value.field == "action"
    assert act(p, action="deny").action == "deny"
    assert SPEC.response_schema(p)["properties"]["action"]["enum"] == ["deny"]


def test_request_answers() -> None:
    p = pause()
    assert (act(p, action="approve").action, act(p, action="approve").content) == ("approve", None)
    edited = act(p, action="edit", messages=["Summarize clients.", ""])
    assert edited.content == {
        "messages": [{"role": "user", "text": "Summarize clients."}, {"role": "user", "text": ""}]
    }
    for bad in (["one"], ["", " "], [1, 2]):
        with pytest.raises(DecisionError) as err:
            act(p, action="edit", messages=bad)
        assert err.value.field in ("messages", "messages.0")
    with pytest.raises(DecisionError) as err:  # the request's edit is its messages
        act(p, action="edit", output="text")
    assert err.value.field == "output"
    denied = act(p, action="deny", reason="no")
    assert (denied.action, denied.reason, denied.cause) == ("deny", "no", "person")
    with pytest.raises(DecisionError, match="no rules"):
        act(p, action="deny", deny_rules=[0])
    with pytest.raises(DecisionError):  # another kind's action
        act(p, action="accept")


def test_completion_answers() -> None:
    p = pause("completion")
    assert act(p, action="edit", output="Three rows.").content == {"text": "Three rows."}
    with pytest.raises(DecisionError) as err:
        act(p, action="edit", messages=["x", "y"])
    assert err.value.field == "output"


def test_an_edit_that_changes_nothing_is_refused_not_recorded_as_an_edit() -> None:
    """As a confirm's Modify: an edit equal to what Approve sends would read "Edited" and be
    audited as an edit when nothing was edited."""
    with pytest.raises(DecisionError, match=r"^Your edit changes nothing: press Approve to call the model") as err:
        act(pause(), action="edit", messages=["Summarize customers.", "In one line."])
    assert err.value.field == "messages"
    with pytest.raises(DecisionError, match=r"^Your edit changes nothing: press Approve to send the completion") as err:
        act(pause("completion"), action="edit", output="3 rows.")
    assert err.value.field == "output"
    # one character changed is an edit
    assert act(pause(), action="edit", messages=["Summarize customers!", "In one line."]).action == "edit"
    assert act(pause("completion"), action="edit", output="3 rows").content == {"text": "3 rows"}


def test_deadline_and_ag_ui_cancel_deny() -> None:
    p = pause()
    late = decide(p, SPEC.timeout_message(p))
    assert (late.action, late.cause) == ("deny", "timeout")
    assert decide(p, SPEC.cancel_message(p)).cause == "cancelled"
    assert SPEC.timeout_applied == "an error sent to the MCP server (no completion)"


@pytest.mark.parametrize(
    "stage, message",
    [
        ("request", {"action": "edit", "messages": ["a", "b"]}),
        ("completion", {"action": "edit", "output": "x"}),
        ("request", {"action": "deny", "reason": "no"}),
        ("completion", {"action": "approve"}),
    ],
)
def test_ag_ui_payloads_round_trip(stage: str, message: dict[str, Any]) -> None:
    p = pause(stage)
    schema = SPEC.response_schema(p)
    payload = SPEC.entry_payload(None, message, schema)  # type: ignore[arg-type]
    validate_payload(schema, payload)
    back = SPEC.resume_message(p, payload)
    assert decide(p, back).action == message["action"]


@pytest.mark.parametrize("stream", [True, False])
def test_the_agents_model_answers_the_reviewed_messages(stream: bool) -> None:
    from nb_hitl.mcp._sampling import call_model
    from nb_hitl.models import ScriptedChatModel, Turn
    from tests.support import run_async

    model = ScriptedChatModel(
        [lambda msgs: Turn(" | ".join(f"{m.role}: {m.get_text_content()}" for m in msgs))], stream=stream
    )
    got = run_async(
        call_model(model, "Be brief.", [{"role": "user", "text": "Hi"}, {"role": "assistant", "text": "Yo"}])
    )
    assert got == "system: Be brief. | user: Hi | assistant: Yo"


def test_a_cancelled_model_call_ends_cancelled_not_with_an_empty_completion() -> None:
    """AgentScope's ChatModelBase answers a cancelled API call with an ``interrupted`` response;
    the sampling review then ends as cancelled instead of showing an empty completion."""
    import asyncio

    from agentscope.credential import CredentialBase
    from agentscope.model import ChatModelBase
    from pydantic import BaseModel

    from nb_hitl.mcp._sampling import call_model
    from tests.support import run_async

    class Cancelled(ChatModelBase):
        class Parameters(BaseModel):
            pass

        async def _call_api(
            self, model_name: str, messages: list, tools: Any = None, tool_choice: Any = None, **kw: Any
        ) -> Any:
            raise asyncio.CancelledError

    model = Cancelled(credential=CredentialBase(), model="m", parameters=Cancelled.Parameters(), stream=False)

    async def call() -> str:
        try:
            await call_model(model, None, [{"role": "user", "text": "Hi"}])
        except asyncio.CancelledError:
            return "cancelled"
        return "answered"

    assert run_async(call()) == "cancelled"


def test_the_request_settings_each_agentscope_model_takes() -> None:
    """max tokens and temperature through the model's own AgentScope Parameters, stop sequences
    through the keyword its class passes on; what a model does not take is said, not dropped."""
    from agentscope.credential import OllamaCredential, OpenAICredential
    from agentscope.model import OllamaChatModel, OpenAIChatModel

    from nb_hitl.mcp._sampling import Generation, generation_plan
    from nb_hitl.models import ScriptedChatModel

    openai = OpenAIChatModel(OpenAICredential(api_key="sk-x", base_url="http://127.0.0.1:9/v1"), "gpt-x")
    plan = generation_plan(openai, 50, 0.2, ["END"])
    assert (plan.parameters, plan.kwargs, plan.not_applied) == (
        {"max_tokens": 50, "temperature": 0.2},
        {"stop": ["END"]},
        (),
    )
    assert plan.note == "Applied to the notebook's model (OpenAIChatModel): max tokens, temperature, stop sequences."
    ollama = OllamaChatModel(OllamaCredential(host="http://127.0.0.1:9"), "llama")
    plan = generation_plan(ollama, 50, None, ["END"])
    assert (plan.parameters, plan.kwargs, plan.not_applied) == ({"max_tokens": 50}, {}, ("stop sequences",))
    assert plan.note == (
        "Applied to the notebook's model (OllamaChatModel): max tokens. "
        "Not applied: stop sequences (OllamaChatModel takes no such setting)."
    )
    scripted = generation_plan(ScriptedChatModel([]), 50, 0.2, [])
    assert scripted.parameters == {} and scripted.not_applied == ("max tokens", "temperature")
    assert generation_plan(openai, None, None, []) == Generation()  # the server set nothing: nothing to say


def test_a_peers_sampling_request_is_drawn_only_when_whole() -> None:
    """Over AG-UI the request comes from the peer: each part must be of the type the card reads."""
    from nb_hitl.kinds.sampling import sampling_problem

    view, _ = request_view(params(text("Hi"), stop_sequences=["END"]))
    assert sampling_problem(view) is None
    assert SPEC.meta_ok({"sampling": view}) and SPEC.meta_ok({"sampling": None, "form_error": "no request"})
    for bad, said in (
        ({**view, "stage": "later"}, "sampling.stage"),
        ({**view, "messages": [{"role": "user", "text": 3}]}, "sampling.messages"),
        ({**view, "max_tokens": "50"}, "sampling.max_tokens"),
        ({**view, "error": ["x"]}, "sampling.error"),
        ({**view, "stop_sequences": "END"}, "sampling.model_hints and sampling.stop_sequences"),
        ({**view, "priorities": {"speed": True}}, "sampling.priorities"),
    ):
        assert (sampling_problem(bad) or "").startswith(said), bad
        assert not SPEC.meta_ok({"sampling": bad})
    assert not SPEC.meta_ok({"sampling": None})  # neither a request nor why there is none


def test_a_remote_cards_decision_reads_as_the_local_one() -> None:
    assert SPEC.answer_summary({"action": "approve"}, {}) == {"action": "approve"}
    assert SPEC.answer_summary({"action": "edit", "output": "3 rows."}, {}) == {
        "action": "edit",
        "content": {"text": "3 rows."},
    }
    assert SPEC.answer_summary({"action": "deny", "reason": "no"}, {}) == {"action": "deny", "reason": "no"}
