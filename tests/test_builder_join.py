"""Executed tool calls joined to the model's requests; structured-output calls; the answer chain."""

from __future__ import annotations

from dataclasses import fields, replace

from otel_traj import checks
from otel_traj.builder import build_trajectory
from otel_traj.joins import take_request
from otel_traj.policy import Scope
from otel_traj.records import TraceContext
from otel_traj.serialize import trajectory_to_dict
from otel_traj.steps import AgentRun, ModelCall, RequestedTool, ToolCall

MS = 1_000_000


def model(span_id: int, start: int, *requests: RequestedTool, text: str | None = None) -> ModelCall:
    return ModelCall(
        span_id=span_id,
        start_ns=start * MS,
        end_ns=(start + 5) * MS,
        requested_tools=requests,
        output_text=text,
        input_tokens=10,
        output_tokens=1,
    )


def tool(span_id: int, name: str, start: int, **fields: object) -> ToolCall:
    return ToolCall(name=name, span_id=span_id, start_ns=start * MS, end_ns=(start + 5) * MS, **fields)


def request(name: str, arguments: str, call_id: str | None = None) -> RequestedTool:
    return RequestedTool(name=name, call_id=call_id, arguments_text=arguments)


def test_a_bare_value_takes_the_requested_arguments() -> None:
    steps = [
        model(1, 0, request("list_invoices", '{"customer_id": "C028"}', "call_1")),
        tool(2, "list_invoices", 10, arguments_text="C028"),
        model(3, 20, text="done"),
    ]
    traj = build_trajectory(TraceContext(trace_id=1), steps)
    [call] = traj.tool_calls
    assert (call.arguments, call.arguments_source, call.turn, call.call_id) == (
        {"customer_id": "C028"},
        "request",
        0,
        "call_1",
    )
    data = trajectory_to_dict(traj)["tool_calls"][0]
    assert (data["arguments_source"], data["turn"], data["kind"]) == ("request", 0, "tool")
    scope = Scope.model_validate(
        {"subject": {"attributes": ["app.customer_id"]}, "arguments": {"list_invoices": ["customer_id"]}}
    )
    traj = replace(traj, attributes={**traj.attributes, "app.customer_id": "C023"})
    result = checks.check_scope(traj, scope)
    assert result.reason == "list_invoices used customer_id=C028, subject is C023"


def test_a_bare_value_without_a_request_is_not_guessed() -> None:
    traj = build_trajectory(TraceContext(trace_id=1), [tool(2, "list_invoices", 10, arguments_text="C028")])
    [call] = traj.tool_calls
    assert (call.arguments, call.arguments_text, call.arguments_source, call.turn) == (
        None,
        "C028",
        "execution",
        None,
    )
    scope = Scope.model_validate(
        {"subject": {"attributes": ["app.customer_id"]}, "arguments": {"list_invoices": ["customer_id"]}}
    )
    traj = replace(traj, attributes={**traj.attributes, "app.customer_id": "C023"})
    assert checks.check_scope(traj, scope).status == "skipped"


def test_execution_arguments_win_over_the_request_and_a_wrapper_does_not() -> None:
    steps = [
        model(1, 0, request("a", '{"x": 1}', "c1"), request("b", '{"y": 2}', "c2")),
        tool(2, "a", 10, call_id="c1", arguments_text='{"x": 5}'),
        tool(
            3,
            "b",
            10,
            call_id="c2",
            arguments_text='{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"y": 2}}',
        ),
    ]
    a, b = build_trajectory(TraceContext(trace_id=1), steps).tool_calls
    assert (a.arguments, a.arguments_source) == ({"x": 5}, "execution")
    assert (b.arguments, b.arguments_source) == ({"y": 2}, "request")


def test_same_name_calls_without_ids_join_in_order_within_each_turn() -> None:
    steps = [
        model(
            1, 0, request("get_weather", '{"city": "Paris"}'), request("get_weather", '{"city": "Berlin"}')
        ),
        tool(2, "get_weather", 10, arguments_text="Paris"),
        tool(3, "get_weather", 11, arguments_text="Berlin"),
        model(4, 20, request("get_weather", '{"city": "Rome"}')),
        tool(5, "get_weather", 30),
    ]
    calls = build_trajectory(TraceContext(trace_id=1), steps).tool_calls
    assert [(c.arguments, c.turn, c.observed) for c in calls] == [
        ({"city": "Paris"}, 0, True),
        ({"city": "Berlin"}, 0, True),
        ({"city": "Rome"}, 1, True),
    ]


def test_requested_calls_never_executed_stay_unobserved_with_their_turn() -> None:
    steps = [model(1, 0, request("a", '{"x": 1}', "c1")), model(2, 20, request("b", '{"y": 2}', "c2"))]
    calls = build_trajectory(TraceContext(trace_id=1), steps).tool_calls
    assert [(c.name, c.observed, c.turn, c.arguments, c.arguments_source) for c in calls] == [
        ("a", False, 0, {"x": 1}, "request"),
        ("b", False, 1, {"y": 2}, "request"),
    ]


def test_structured_output_calls_are_kept_apart_and_give_the_answer() -> None:
    steps = [
        model(1, 0, request("lookup", '{"q": 1}', "c1")),
        tool(2, "lookup", 10, call_id="c1", arguments_text='{"q": 1}'),
        model(3, 20, request("final_answer", '{"answer": "It is 42."}', "c2")),
        tool(4, "final_answer", 30, call_id="c2", arguments_text='{"answer": "It is 42."}'),
    ]
    traj = build_trajectory(TraceContext(trace_id=1), steps)
    assert [c.name for c in traj.tool_calls] == ["lookup"]
    assert [(c.name, c.output) for c in traj.output_calls] == [("final_answer", True)]
    assert traj.final_answer == "It is 42."
    kinds = [(c["name"], c["kind"]) for c in trajectory_to_dict(traj)["tool_calls"]]
    assert kinds == [("lookup", "tool"), ("final_answer", "output")]


def test_a_requested_final_result_is_no_unobserved_tool_call() -> None:
    steps = [model(1, 0, request("final_result", '{"refund_id": "RF-1", "ok": true}', "c1"))]
    traj = build_trajectory(TraceContext(trace_id=1), steps)
    assert traj.tool_calls == ()
    assert traj.final_answer == '{"refund_id": "RF-1", "ok": true}'


def test_an_agent_output_that_is_an_object_repr_is_no_answer() -> None:
    agent = AgentRun(
        span_id=9, start_ns=0, end_ns=100 * MS, output_text="StopEvent(result=AgentOutput(response=..."
    )
    traj = build_trajectory(TraceContext(trace_id=1), [agent, model(1, 0, text="Refunded.")])
    assert traj.final_answer == "Refunded."
    agent = replace(agent, output_text="{'answer': 'x'}")
    assert (
        build_trajectory(TraceContext(trace_id=1), [agent, model(1, 0, text="Refunded.")]).final_answer
        == "Refunded."
    )


def test_a_model_span_that_records_no_call_is_not_a_turn() -> None:
    prepare = ModelCall(span_id=1, start_ns=0, end_ns=1 * MS, model="gpt-4o-mini")
    traj = build_trajectory(TraceContext(trace_id=1), [prepare, model(2, 2, text="hi")])
    assert traj.model_turns == 1
    # A failed call records neither usage nor messages, only its error: still a turn, its error kept.
    failed = ModelCall(
        span_id=3, start_ns=10 * MS, end_ns=11 * MS, model="gpt-4o-mini", ok=False, error_type="500"
    )
    traj = build_trajectory(TraceContext(trace_id=1), [prepare, model(2, 2, text="hi"), failed])
    assert traj.model_turns == 2 and traj.errors == ("model gpt-4o-mini: 500",)
    # Without usage or messages anywhere (content and usage off), every model span counts.
    bare = [ModelCall(span_id=i, start_ns=i * 10 * MS, end_ns=(i * 10 + 1) * MS) for i in (1, 2)]
    assert build_trajectory(TraceContext(trace_id=1), bare).model_turns == 2


def test_sibling_tool_spans_contained_in_time_are_parallel() -> None:
    outer = replace(tool(2, "get_subscription", 10, parent_id=7), end_ns=30 * MS)
    inner = tool(3, "list_invoices", 12, parent_id=7)
    nested = tool(4, "get_subscription_http", 13, parent_id=2)
    calls = build_trajectory(TraceContext(trace_id=1), [outer, inner, nested]).tool_calls
    assert [(c.name, c.parallel) for c in calls] == [
        ("get_subscription", True),
        ("list_invoices", True),
        ("get_subscription_http", True),
    ]


def test_calls_of_one_response_under_spans_of_their_own_are_parallel_when_contained() -> None:
    """LlamaIndex runs each call of a response in a ``call_tool`` step span of its own: one call may
    start after the other and end before it. A call that a response within a call requested (an agent
    run as a tool) ran inside it, not beside it."""
    arguments = '{"customer_id": "C023"}'
    outer = replace(tool(2, "get_subscription", 10, parent_id=7, call_id="call_1"), end_ns=30 * MS)
    steps = [
        model(
            1,
            0,
            request("get_subscription", arguments, "call_1"),
            request("list_invoices", arguments, "call_2"),
        ),
        outer,
        tool(3, "list_invoices", 12, parent_id=8, call_id="call_2"),
        model(4, 11, request("search", '{"q": "C023"}', "call_9")),
        tool(5, "search", 18, parent_id=9, call_id="call_9"),
    ]
    calls = build_trajectory(TraceContext(trace_id=1), steps).tool_calls
    assert [(c.name, c.turn, c.parallel) for c in calls] == [
        ("get_subscription", 0, True),
        ("list_invoices", 0, True),
        ("search", 1, False),
    ]


def test_an_id_no_request_knows_gives_way_to_the_requests() -> None:
    # OpenLIT records LangChain's run id on a failed call: joined by name, the call takes the id the
    # model's request (and the result sent back) use.
    run_id = "01a23495-4d09-76ef-a127-c935f8e139d2"

    def joined(requested_id: str | None) -> ToolCall:
        steps = [
            model(1, 0, request("check_payment", '{"invoice_id": "INV-1002"}', requested_id)),
            tool(2, "check_payment", 10, call_id=run_id, ok=False),
            model(3, 20, text="done"),
        ]
        [call] = build_trajectory(TraceContext(trace_id=1), steps).tool_calls
        return call

    assert (joined("call_3").call_id, joined("call_3").turn) == ("call_3", 0)
    # A request that records no id leaves the span's own.
    assert (joined(None).call_id, joined(None).turn) == (run_id, 0)


def test_a_tool_the_framework_ends_its_loop_with_is_an_output_call() -> None:
    steps = [
        model(1, 0, request("finish", "{}")),
        tool(2, "finish", 10, arguments={}, result='"Completed."', output=True),
        model(
            3,
            20,
            text="[[ ## reasoning ## ]]\nDone.\n\n[[ ## answer ## ]]\nRefunded.\n\n[[ ## completed ## ]]",
        ),
    ]
    traj = build_trajectory(TraceContext(trace_id=1), steps)
    assert traj.tool_calls == () and [c.name for c in traj.output_calls] == ["finish"]
    assert traj.final_answer == "Refunded."


def test_a_call_only_its_server_recorded_is_kept() -> None:
    # An MCP server's `tools/call` span, the caller untraced: the server's record is the call.
    steps = [
        model(1, 0, request("check_payment", '{"invoice_id": "INV-1002"}', "call_3")),
        tool(2, "check_payment", 10, served=True, result='{"status": "paid"}'),
        model(3, 20, text="done"),
    ]
    [call] = build_trajectory(TraceContext(trace_id=1), steps).tool_calls
    assert (call.call_id, call.turn, call.result, call.observed) == ("call_3", 0, '{"status": "paid"}', True)


def test_a_join_keeps_every_field_it_does_not_set() -> None:
    """``take_request`` names every field of the call it builds: a field added to ``ToolCall`` and
    not to it would be lost here."""
    values: dict[str, object] = {
        "name": "n",
        "span_id": 7,
        "parent_id": 3,
        "start_ns": 5,
        "end_ns": 9,
        "call_id": "own",
        "arguments": {"a": 1},
        "arguments_text": None,
        "result": "r",
        "ok": False,
        "error_type": "E",
        "error_message": "m",
        "observed": False,
        "parallel": True,
        "dialect": "d",
        "step_id": "s",
        "truncated": True,
        "turn": None,
        "arguments_source": "execution",
        "output": True,
        "served": True,
    }
    assert set(values) == {f.name for f in fields(ToolCall) if f.init}
    call = ToolCall(**values)
    joined = take_request(call, 4, RequestedTool(name="n", call_id="req"))
    assert joined == replace(call, turn=4, call_id="req")
