"""agent.telemetry: runs as OpenTelemetry spans (GenAI semantic conventions) — names, nesting
(handoffs included), attributes, the pass, refused calls as span events, errors, event
timestamps as span times — and ``import agent`` without the ``otel`` extra."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest
from fresh import run_fresh

pytest.importorskip(
    "opentelemetry.sdk", reason="the `otel` extra is not installed: pip install 'ruleengine[otel]'"
)

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

from agent import (
    Deny,
    Event,
    MaxIterationsError,
    RequirementAgent,
    tool,
)
from agent.telemetry import Telemetry, instrument
from backends import BackendError, CapabilityError, ScriptedChatModel
from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    ConflictError,
    PolicyError,
)


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def send_email(to: str) -> str:
    """Send an e-mail."""
    return f"sent to {to}"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


class NamedModel(ScriptedChatModel):
    """A scripted model that says its name, as ``OpenAIChatModel.model`` does."""

    model = "gpt-test"

    def __init__(self, script: Any) -> None:
        super().__init__(script, model=self.model)


USAGE = {"prompt_tokens": 120, "completion_tokens": 7, "cached_prompt_tokens": 100}


def call(name: str, usage: dict[str, int] | None = None, **arguments: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"tool_calls": [{"name": name, "arguments": arguments}]}
    if usage is not None:
        entry["usage"] = usage
    return entry


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def answer(text: str = "done") -> dict[str, Any]:
    return call(FINAL_ANSWER, response=text)


def run(agent: RequirementAgent[Any], prompt: str = "what is z3?", **kwargs: Any) -> Any:
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    yield found
    found.clear()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    return made


def spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)


def named(found: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def one(found: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = named(found, name)
    return span


def parent_of(found: Sequence[ReadableSpan], span: ReadableSpan) -> str | None:
    if span.parent is None:
        return None
    by_id = {s.context.span_id: s.name for s in found if s.context is not None}
    return by_id.get(span.parent.span_id, "<not exported>")


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# -- spans, names and structure ------------------------------------------------------------------


def test_a_run_is_an_agent_span_with_chat_and_tool_spans_under_it(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    llm = NamedModel(
        [call("search", usage=USAGE, query="z3"), call(FINAL_ANSWER, USAGE, response="ok")]
    )
    agent = RequirementAgent(
        llm,
        [search],
        [ConditionalRequirement(search, force_at_step=1)],
        name="researcher",
        description="Finds things out.",
    )
    instrument(agent, provider)
    run(agent)
    found = spans(exporter)
    assert [s.name for s in found] == [
        "invoke_agent researcher",
        "chat gpt-test",
        "execute_tool search",
        "chat gpt-test",
        "execute_tool final_answer",
    ]
    root = found[0]
    assert root.parent is None
    assert {parent_of(found, s) for s in found[1:]} == {"invoke_agent researcher"}
    assert len({s.context.trace_id for s in found if s.context is not None}) == 1

    run_attributes = attributes(root)
    assert {k: run_attributes[k] for k in run_attributes if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "researcher",
        "gen_ai.agent.description": "Finds things out.",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.usage.input_tokens": 240,
        "gen_ai.usage.output_tokens": 14,
        "gen_ai.usage.cache_read.input_tokens": 200,
    }
    assert run_attributes["ruleengine.mode"] == "strict"
    assert run_attributes["ruleengine.run.path"] == ("researcher",)
    assert run_attributes["ruleengine.run.steps"] == 2
    assert run_attributes["ruleengine.run.iterations"] == 2
    assert root.status.status_code is StatusCode.UNSET

    chat = attributes(found[1])
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.request.model"] == "gpt-test"
    assert chat["gen_ai.response.model"] == "gpt-test"
    assert chat["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (120, 7)
    assert chat["ruleengine.response.tool_calls"] == ("search",)
    assert chat["ruleengine.iteration"] == 1
    # The pass the model was asked under: search first (forced), no stopping before it.
    assert chat["ruleengine.pass.allowed"] == ("search",)
    assert chat["ruleengine.pass.can_stop"] is False
    assert chat["ruleengine.pass.forced"] == "search"

    tool_span = attributes(found[2])
    assert {k: tool_span[k] for k in tool_span if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Search the web.",
    }
    assert tool_span["ruleengine.tool.outcome"] == "ok"
    assert tool_span["ruleengine.pass.allowed"] == ("search",)
    # The second round's pass (after the search) lets it stop; nothing is forced.
    final = attributes(found[4])
    assert final["ruleengine.pass.can_stop"] is True
    assert "ruleengine.pass.forced" not in final


def test_spans_start_and_end_at_the_events_timestamps(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([call("search", query="z3"), answer()]), [search])
    heard: list[Event] = []
    agent.emitter.on("*", heard.append)
    instrument(agent, provider)
    run(agent)
    found = spans(exporter)

    def at(kind: str, index: int = 0) -> int:
        return int([e for e in heard if e.kind == kind][index].timestamp * 1e9)

    root = one(found, "invoke_agent agent")
    assert (root.start_time, root.end_time) == (at("run.start"), at("run.finish"))
    first_chat = named(found, "chat gpt-test")[0]
    assert (first_chat.start_time, first_chat.end_time) == (
        at("model.request"),
        at("model.response"),
    )
    searched = one(found, "execute_tool search")
    assert (searched.start_time, searched.end_time) == (at("tool.start"), at("tool.success"))


def test_a_model_that_does_not_say_its_name_names_the_span_after_its_reply(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(ScriptedChatModel([answer()], model="local-7b"), [search])
    instrument(agent, provider)
    run(agent)
    chat = one(spans(exporter), "chat local-7b")
    assert "gen_ai.request.model" not in attributes(chat)
    assert attributes(chat)["gen_ai.response.model"] == "local-7b"


def test_usage_is_left_out_when_the_server_reported_none(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([answer()]), [search])
    instrument(agent, provider)
    run(agent)
    for span in spans(exporter):
        assert not any(key.startswith("gen_ai.usage.") for key in attributes(span)), span.name


def test_a_span_around_the_run_is_the_agent_spans_parent(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([answer()]), [search])
    instrument(agent, provider)
    with provider.get_tracer("test").start_as_current_span("request"):
        run(agent)
    found = spans(exporter)
    assert parent_of(found, one(found, "invoke_agent agent")) == "request"


# -- handoffs -----------------------------------------------------------------------------------


def handoff_agents() -> tuple[RequirementAgent[Any], RequirementAgent[Any]]:
    inner = RequirementAgent(
        NamedModel([call("search", query="refunds"), answer("refunded")]),
        [search],
        name="refunds",
        description="Refunds orders.",
    )
    outer = RequirementAgent(
        NamedModel([call("refunds", task="refund order 7"), answer("Done.")]),
        [inner.as_tool()],
        name="support",
    )
    return inner, outer


def check_nesting(found: Sequence[ReadableSpan]) -> None:
    assert [s.name for s in found] == [
        "invoke_agent support",
        "chat gpt-test",
        "execute_tool refunds",
        "invoke_agent refunds",
        "chat gpt-test",
        "execute_tool search",
        "chat gpt-test",
        "execute_tool final_answer",
        "chat gpt-test",
        "execute_tool final_answer",
    ]
    inner_run = one(found, "invoke_agent refunds")
    assert parent_of(found, inner_run) == "execute_tool refunds"
    assert parent_of(found, one(found, "execute_tool search")) == "invoke_agent refunds"
    assert [parent_of(found, s) for s in named(found, "execute_tool final_answer")] == [
        "invoke_agent refunds",
        "invoke_agent support",
    ]
    assert len({s.context.trace_id for s in found if s.context is not None}) == 1
    inner_attributes = attributes(inner_run)
    assert inner_attributes["gen_ai.agent.description"] == "Refunds orders."
    assert inner_attributes["ruleengine.run.path"] == ("support", "refunds")
    assert inner_attributes["ruleengine.run.parent_id"] == attributes(found[0])["ruleengine.run.id"]


def test_a_handoffs_run_nests_under_its_tool_span(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    _, outer = handoff_agents()
    instrument(outer, provider)
    run(outer)
    check_nesting(spans(exporter))


def test_a_run_heard_by_several_listeners_is_traced_once(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    inner, outer = handoff_agents()
    telemetry = Telemetry(provider)
    telemetry.attach(inner)
    telemetry.attach(outer)
    instrument(outer, provider)  # another listener on the outer agent
    instrument(inner, provider)
    run(outer)
    check_nesting(spans(exporter))


# -- refusals, denials, retries, conflicts ---------------------------------------------------------


def test_refused_calls_are_span_events_with_who_refused_and_why(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    llm = NamedModel(
        [
            calls(("send_email", {"to": "ada"}), ("search", {"query": "z3"})),
            call("telepathy"),
            answer(),
        ]
    )
    agent = RequirementAgent(
        llm,
        [search, send_email],
        [ConditionalRequirement(send_email, only_after=[search])],
        tool_call_checker=False,
    )
    instrument(agent, provider)
    run(agent)
    found = spans(exporter)
    root = one(found, "invoke_agent agent")
    refused = [e for e in root.events if e.name == "ruleengine.tool.refused"]
    assert [dict(e.attributes or {}) for e in refused] == [
        {
            "gen_ai.tool.name": "send_email",
            "gen_ai.tool.call.id": "call_1",
            "ruleengine.refusal.reason": "`send_email` did not run: it is not allowed at this step"
            " (needs `search` first); allowed now: `search`, `final_answer`",
            "ruleengine.refusal.by": "gate",
            "ruleengine.refusal.rescued": False,
            "ruleengine.pass.allowed": ("search", FINAL_ANSWER),
            "ruleengine.pass.hidden": (),
            "ruleengine.pass.can_stop": True,
            "ruleengine.pass.tool_choice": "required",
        },
        {
            "gen_ai.tool.name": "telepathy",
            "gen_ai.tool.call.id": "call_3",
            "ruleengine.refusal.reason": "there is no tool `telepathy`: the tools are `search`,"
            " `send_email`, `final_answer`",
            "ruleengine.refusal.by": "gate",
            "ruleengine.refusal.rescued": False,
            "ruleengine.pass.allowed": ("search", "send_email", FINAL_ANSWER),
            "ruleengine.pass.hidden": (),
            "ruleengine.pass.can_stop": True,
            "ruleengine.pass.tool_choice": "required",
        },
    ]
    # A refused call never ran: no tool span; the reply it came in cost a retry.
    assert [s.name for s in found if s.name.startswith("execute_tool")] == [
        "execute_tool search",
        "execute_tool final_answer",
    ]
    retried = [e for e in root.events if e.name == "ruleengine.retry"]
    assert len(retried) == 1
    assert dict(retried[0].attributes or {})["ruleengine.retry.total"] == 1


def test_a_call_a_later_listener_refuses_ends_its_tool_span_as_refused(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([call("search", query="z3"), answer()]), [search])
    instrument(agent, provider)  # hears `tool.start` before the listener that refuses
    agent.emitter.on(
        "tool.start",
        lambda event: Deny("not today") if event.tool == "search" else None,
    )
    run(agent)
    found = spans(exporter)
    searched = attributes(one(found, "execute_tool search"))
    assert searched["ruleengine.tool.outcome"] == "refused"
    assert searched["ruleengine.refusal.reason"] == "`search` did not run: not today"
    (refused,) = [e for e in found[0].events if e.name == "ruleengine.tool.refused"]
    assert dict(refused.attributes or {})["ruleengine.refusal.by"] == "listener"


def test_a_permission_refusal_is_a_denied_event_not_a_tool_span(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    llm = NamedModel([call("send_email", to="ada"), answer("I may not.")])
    agent = RequirementAgent(
        llm,
        [send_email],
        [AskPermissionRequirement(include=[send_email], handler=lambda tool, arguments: False)],
    )
    instrument(agent, provider)
    run(agent)
    found = spans(exporter)
    assert not named(found, "execute_tool send_email")
    (denied,) = [e for e in found[0].events if e.name == "ruleengine.tool.denied"]
    assert dict(denied.attributes or {}) == {
        "gen_ai.tool.name": "send_email",
        "gen_ai.tool.call.id": "call_1",
        "ruleengine.denial.reason": "`send_email` did not run: the user refused `send_email`",
    }


def test_a_conflict_answered_is_a_span_event(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    llm = NamedModel([call("send_email", to="ada"), answer("I may not send it.")])
    agent = RequirementAgent(
        llm,
        [send_email],
        [
            ConditionalRequirement(send_email, min_invocations=1, name="must-send"),
            AskPermissionRequirement(
                include=[send_email],
                handler=lambda tool, arguments: False,
                remember_choices=True,
                name="ask",
            ),
        ],
        on_conflict="answer",
    )
    instrument(agent, provider)
    run(agent)
    root = spans(exporter)[0]
    (conflict,) = [e for e in root.events if e.name == "ruleengine.conflict"]
    details = dict(conflict.attributes or {})
    assert details["ruleengine.conflict.kind"] == "deadlock"
    assert len(details["ruleengine.conflict.core"]) == 2
    assert root.status.status_code is StatusCode.UNSET  # the run answered


# -- errors ------------------------------------------------------------------------------------


def test_a_tool_error_marks_its_span_failed_with_the_exception(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([call("explode", reason="boom"), answer()]), [explode])
    instrument(agent, provider)
    run(agent)
    found = spans(exporter)
    failed = one(found, "execute_tool explode")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == "`explode` failed: RuntimeError: boom"
    assert attributes(failed)["error.type"] == "RuntimeError"
    assert attributes(failed)["ruleengine.tool.outcome"] == "error"
    (recorded,) = [e for e in failed.events if e.name == "exception"]
    assert dict(recorded.attributes or {})["exception.message"] == "boom"
    assert found[0].status.status_code is StatusCode.UNSET  # the run went on and answered


def test_a_failed_run_marks_the_agent_span_failed(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(
        NamedModel(lambda request: call("search", query="again and again")),
        [search],
        tool_call_checker=False,
    )
    instrument(agent, provider)
    with pytest.raises(MaxIterationsError):
        run(agent, max_iterations=2)
    root = one(spans(exporter), "invoke_agent agent")
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == (
        "the run did not finish within max_iterations=2 model rounds (2 steps)"
    )
    assert attributes(root)["error.type"] == "agent.errors.MaxIterationsError"
    (recorded,) = [e for e in root.events if e.name == "exception"]
    assert dict(recorded.attributes or {})["exception.type"] == "agent.errors.MaxIterationsError"


def test_a_conflict_that_ends_the_run_marks_the_agent_span_failed(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(
        NamedModel([answer()]),
        [search],
        [
            ConditionalRequirement(search, force_at_step=1, name="first"),
            ConditionalRequirement(search, max_invocations=0, name="never"),
        ],
    )
    instrument(agent, provider)
    with pytest.raises(ConflictError):
        run(agent)
    root = one(spans(exporter), "invoke_agent agent")
    assert root.status.status_code is StatusCode.ERROR
    assert [e.name for e in root.events] == ["ruleengine.conflict", "exception"]


def test_a_failed_model_call_marks_its_chat_span_failed(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([BackendError("the server is down")]), [search])
    instrument(agent, provider)
    with pytest.raises(BackendError):
        run(agent)
    found = spans(exporter)
    chat = one(found, "chat gpt-test")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description == "the server is down"
    assert [e.name for e in chat.events] == ["exception"]
    assert parent_of(found, chat) == "invoke_agent agent"
    assert found[0].status.status_code is StatusCode.ERROR


def test_a_model_call_without_a_usable_reply_is_failed_and_asked_again(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    llm = NamedModel([CapabilityError("the model would not call a tool"), answer()])
    agent = RequirementAgent(llm, [search])
    instrument(agent, provider)
    run(agent)
    first, second = named(spans(exporter), "chat gpt-test")
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "no tool call: the model would not call a tool"
    assert second.status.status_code is StatusCode.UNSET


def test_telemetry_that_fails_never_refuses_a_call(
    exporter: InMemorySpanExporter,
    provider: TracerProvider,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = RequirementAgent(NamedModel([call("search", query="z3"), answer()]), [search])
    telemetry = Telemetry(provider)
    telemetry.attach(agent)

    def broken(agent: object, event: Event) -> None:
        raise RuntimeError("exporter on fire")

    monkeypatch.setattr(telemetry, "_handle", broken)
    out = run(agent)
    assert [s.tool for s in out.steps] == ["search", FINAL_ANSWER]
    assert "telemetry failed on tool.start" in caplog.text


# -- options and bad input ---------------------------------------------------------------------


def test_capture_content_records_arguments_and_results(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([call("search", query="z3"), answer()]), [search])
    instrument(agent, provider, capture_content=True)
    run(agent)
    searched = attributes(one(spans(exporter), "execute_tool search"))
    assert searched["gen_ai.tool.call.arguments"] == '{"query": "z3"}'
    assert searched["gen_ai.tool.call.result"] == "found z3"


def test_content_is_not_recorded_by_default(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel([call("search", query="z3"), answer()]), [search])
    instrument(agent, provider)
    run(agent)
    for span in spans(exporter):
        assert "gen_ai.tool.call.arguments" not in attributes(span)
        assert "gen_ai.tool.call.result" not in attributes(span)


def test_detaching_stops_the_spans(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    agent = RequirementAgent(NamedModel(lambda request: answer()), [search])
    detach = instrument(agent, provider)
    run(agent)
    detach()
    run(agent)
    assert len(named(spans(exporter), "invoke_agent agent")) == 1


def test_without_a_provider_the_global_one_is_used(exporter: InMemorySpanExporter) -> None:
    agent = RequirementAgent(NamedModel([call("search", query="z3"), answer()]), [search])
    instrument(agent)  # the global provider (here, none was set: spans go nowhere)
    out = run(agent)
    assert out.answer == "done"
    assert exporter.get_finished_spans() == ()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: Telemetry("provider"),  # type: ignore[arg-type]
            "tracer_provider=`'provider'` is not an OpenTelemetry `TracerProvider`",
        ),
        (
            lambda: Telemetry(capture_content="yes"),  # type: ignore[arg-type]
            "capture_content=`'yes'` must be true or false",
        ),
        (
            lambda: instrument("agent"),  # type: ignore[arg-type]
            "cannot attach telemetry to `'agent'`: not an agent or an emitter",
        ),
        (
            lambda: Telemetry().attach(None),  # type: ignore[arg-type]
            "cannot attach telemetry to `None`: not an agent or an emitter",
        ),
    ],
)
def test_bad_input_is_a_policy_error(make: Any, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        make()
    assert info.value.message == message


# -- without the extra ---------------------------------------------------------------------------


def test_agent_works_without_opentelemetry_and_telemetry_says_which_extra() -> None:
    out = run_fresh(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if the `otel` extra were not installed
        from agent import RequirementAgent, tool
        from backends import ScriptedChatModel

        @tool
        def search(query: str) -> str:
            \"\"\"Search.\"\"\"
            return "found"

        llm = ScriptedChatModel([{"tool_calls": [{"name": "final_answer",
                                                  "arguments": {"response": "ok"}}]}])
        print(RequirementAgent(llm, [search]).run_sync("hi").answer)
        try:
            import agent.telemetry
        except ModuleNotFoundError as error:
            print(type(error).__name__, error.name, "|", error)
        """
    )
    assert out.splitlines() == [
        "ok",
        "ModuleNotFoundError opentelemetry | agent.telemetry needs OpenTelemetry, which is not"
        " installed: pip install 'ruleengine[otel]'",
    ]


def test_importing_agent_does_not_import_opentelemetry() -> None:
    out = run_fresh(
        """
        import sys
        import agent
        print(any(name.split(".")[0] == "opentelemetry" for name in sys.modules))
        """
    )
    assert out == "False"
