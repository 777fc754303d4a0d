"""Every check with a passing and a failing trajectory, and `skipped` when content was not captured."""

from __future__ import annotations

from dataclasses import replace

from otel_traj import checks
from otel_traj.policy import AgentPolicy, Budget, Recovery, Repeats, Scope, Tools
from otel_traj.verdict import CheckResult
from tests.support_trajectories import REFUND, call, clean_run, example_policy, trajectory, violating_run

SUPPORT: AgentPolicy = example_policy().agents["support_agent"]


def scope() -> Scope:
    assert SUPPORT.scope is not None
    return SUPPORT.scope


def tools() -> Tools:
    assert SUPPORT.tools is not None
    return SUPPORT.tools


def assert_fail(result: CheckResult, reason: str, steps: tuple[str, ...]) -> None:
    assert result.status == "fail", result
    assert result.reason == reason
    assert result.steps == steps


# order -----------------------------------------------------------------------------------------


def test_order_passes_when_lookup_succeeded_first() -> None:
    assert checks.check_order(clean_run(), SUPPORT.order).status == "pass"


def test_order_fails_when_refund_precedes_successful_lookup() -> None:
    traj = trajectory(
        [
            call(1, "list_invoices", {"customer_id": "C023"}, ok=False),
            call(2, "create_refund_request", dict(REFUND)),
            call(3, "list_invoices", {"customer_id": "C023"}),
        ]
    )
    assert_fail(
        checks.check_order(traj, SUPPORT.order),
        "create_refund_request before list_invoices succeeded",
        ("s2",),
    )


def test_order_parallel_lookup_does_not_count_as_before() -> None:
    lookup = call(1, "list_invoices", {"customer_id": "C023"})
    # Started while the lookup was still running.
    refund = replace(call(2, "create_refund_request", dict(REFUND)), start_ns=lookup.start_ns + 1)
    assert checks.check_order(trajectory([lookup, refund]), SUPPORT.order).status == "fail"


def test_order_unknown_when_lookup_has_no_span() -> None:
    traj = trajectory(
        [
            call(1, "list_invoices", {"customer_id": "C023"}, observed=False),
            call(2, "create_refund_request", REFUND),
        ]
    )
    assert checks.check_order(traj, SUPPORT.order).status == "skipped"


# scope -----------------------------------------------------------------------------------------


def test_scope_passes_for_the_clean_run() -> None:
    result = checks.check_scope(clean_run(), scope())
    assert result.status == "pass" and "C023" in result.reason and "app.customer_id" in result.reason


def test_scope_fails_on_another_customers_invoices() -> None:
    assert_fail(
        checks.check_scope(violating_run(), scope()),
        "list_invoices used customer_id=C028, subject is C023",
        ("s3",),
    )


def test_scope_subject_from_user_input_pattern() -> None:
    traj = replace(violating_run(), attributes={}, conversation_id=None)
    result = checks.check_scope(traj, scope())
    assert result.status == "fail" and result.reason.endswith("subject is C023")
    traj = replace(traj, tool_calls=[c for c in traj.tool_calls if c.step_id != "s3"])
    assert "from user input" in checks.check_scope(traj, scope()).reason


def test_scope_subject_from_first_use() -> None:
    traj = replace(violating_run(), attributes={}, user_input=None, conversation_id=None)
    result = checks.check_scope(traj, scope())
    assert result.reason == "list_invoices used customer_id=C028, subject is C023"
    pinned = Scope.model_validate(
        {"subject": {"from_first_use": False}, "arguments": {"list_invoices": "customer_id"}}
    )
    assert checks.check_scope(traj, pinned).status == "skipped"


def test_scope_never_guesses_the_name_of_a_bare_value() -> None:
    # The trajectory builder gives a bare value the model's requested arguments; alone it says nothing.
    traj = trajectory([call(1, "list_invoices", arguments_text="C028")])
    result = checks.check_scope(traj, scope())
    assert result.status == "skipped" and "arguments not captured" in result.reason


def test_scope_skipped_without_arguments() -> None:
    traj = trajectory([call(1, "get_subscription"), call(2, "list_invoices")])
    result = checks.check_scope(traj, scope())
    assert result.status == "skipped" and "arguments not captured" in result.reason


# repeats ---------------------------------------------------------------------------------------


def test_repeats_passes_for_the_clean_run() -> None:
    assert checks.check_repeats(clean_run(), Repeats()).status == "pass"


def test_repeats_fails_on_repeated_lookup() -> None:
    assert_fail(
        checks.check_repeats(violating_run(), Repeats()),
        "get_subscription(customer_id=C023) called 2 times, max 1",
        ("s2",),
    )


def test_repeats_retry_after_error_and_exempt_tools() -> None:
    retry = trajectory(
        [
            call(1, "check_payment", {"invoice_id": "INV-1002"}, ok=False),
            call(2, "check_payment", {"invoice_id": "INV-1002"}),
        ]
    )
    assert checks.check_repeats(retry, Repeats()).status == "pass"
    assert checks.check_repeats(retry, Repeats(retry_after_error=False)).status == "fail"
    polls = trajectory([call(i, "poll_status", {"job": "j1"}) for i in (1, 2, 3)])
    assert checks.check_repeats(polls, Repeats(exempt=("poll_status",))).status == "pass"
    # 199 and 199.0 are the same request.
    same = trajectory(
        [
            call(1, "create_refund_request", REFUND),
            call(2, "create_refund_request", {**REFUND, "amount_yuan": 199.0}),
        ]
    )
    assert checks.check_repeats(same, Repeats()).status == "fail"


def test_repeats_skipped_without_arguments() -> None:
    traj = trajectory([call(1, "get_subscription"), call(2, "get_subscription")])
    assert checks.check_repeats(traj, Repeats()).status == "skipped"


# recovery --------------------------------------------------------------------------------------


def failing_checks(n: int) -> list:  # type: ignore[type-arg]
    return [call(i, "check_payment", {"invoice_id": "INV-1002"}, ok=False) for i in range(1, n + 1)]


def test_recovery_passes_when_error_is_followed_by_progress() -> None:
    traj = trajectory([*failing_checks(2), call(3, "create_refund_request", REFUND)])
    assert checks.check_recovery(traj, Recovery(), max_retries=2).status == "pass"


def test_recovery_fails_on_blind_retries() -> None:
    traj = trajectory([*failing_checks(4), call(5, "create_refund_request", REFUND)])
    assert_fail(
        checks.check_recovery(traj, Recovery(), max_retries=2),
        "check_payment(invoice_id=INV-1002) failed 4 times in a row, max retries 2",
        ("s4",),
    )


def test_recovery_fails_when_run_hides_a_final_error() -> None:
    traj = trajectory(failing_checks(1), final_answer="Your refund has been submitted.")
    assert_fail(
        checks.check_recovery(traj, Recovery(), max_retries=2),
        "run ended after check_payment failed (PaymentGatewayError) and the answer does not say so",
        ("s1",),
    )
    honest = trajectory(
        failing_checks(1), final_answer="Sorry, the payment gateway is unavailable right now."
    )
    assert checks.check_recovery(honest, Recovery(), max_retries=2).status == "pass"
    unknown = trajectory(failing_checks(1), final_answer=None)
    assert checks.check_recovery(unknown, Recovery(), max_retries=2).status == "skipped"


# side effects ----------------------------------------------------------------------------------


def test_side_effects_pass_for_one_write() -> None:
    assert checks.check_side_effects(clean_run(), tools()).status == "pass"


def test_side_effects_fail_on_duplicate_write() -> None:
    traj = trajectory([call(1, "create_refund_request", REFUND), call(2, "create_refund_request", REFUND)])
    result = checks.check_side_effects(traj, tools())
    assert result.status == "fail" and "succeeded 2 times with the same arguments" in result.reason
    assert result.steps == ("s2",)


def test_side_effects_fail_when_retry_changes_idempotency_key() -> None:
    first = call(1, "create_refund_request", {**REFUND, "request_key": "k1"}, ok=False)
    second = call(2, "create_refund_request", {**REFUND, "request_key": "k2"})
    assert_fail(
        checks.check_side_effects(trajectory([first, second]), tools()),
        "create_refund_request retried with a new request_key (k1 -> k2)",
        ("s2",),
    )
    same_key = call(2, "create_refund_request", {**REFUND, "request_key": "k1"})
    assert checks.check_side_effects(trajectory([first, same_key]), tools()).status == "pass"


def test_side_effects_skipped_without_arguments() -> None:
    traj = trajectory([call(1, "create_refund_request"), call(2, "create_refund_request")])
    assert checks.check_side_effects(traj, tools()).status == "skipped"


# arguments -------------------------------------------------------------------------------------


def test_arguments_pass_against_schema() -> None:
    assert checks.check_arguments(clean_run(), tools()).status == "pass"


def test_arguments_fail_names_argument_and_rule() -> None:
    traj = trajectory([call(1, "create_refund_request", {**REFUND, "amount_yuan": 0})])
    assert_fail(
        checks.check_arguments(traj, tools()),
        "create_refund_request: amount_yuan must be bigger than 0 (exclusiveMinimum)",
        ("s1",),
    )
    missing = trajectory([call(1, "create_refund_request", {"invoice_id": "INV-1002"})])
    result = checks.check_arguments(missing, tools())
    assert result.status == "fail" and "(required)" in result.reason and "amount_yuan" in result.reason


def test_arguments_text_that_is_not_json_is_reported() -> None:
    traj = trajectory([call(1, "create_refund_request", arguments_text="refund INV-1002 please")])
    assert_fail(
        checks.check_arguments(traj, tools()),
        "create_refund_request: arguments are not JSON ('refund INV-1002 please')",
        ("s1",),
    )
    # A one-argument tool recorded as the bare value is validated as that argument.
    bare = trajectory([call(1, "check_payment", arguments_text="1002")])
    assert checks.check_arguments(bare, tools()).status == "fail"
    assert (
        checks.check_arguments(
            trajectory([call(1, "check_payment", arguments_text="INV-1002")]), tools()
        ).status
        == "pass"
    )


def test_arguments_skipped_without_arguments_and_never_mutated() -> None:
    assert checks.check_arguments(trajectory([call(1, "create_refund_request")]), tools()).status == "skipped"
    schema = Tools.model_validate(
        {
            "contracts": {
                "t": {"schema": {"type": "object", "properties": {"x": {"type": "integer", "default": 1}}}}
            }
        }
    )
    traj = trajectory([call(1, "t", {})])
    assert checks.check_arguments(traj, schema).status == "pass"
    assert traj.tool_calls[0].arguments == {}


# grounded --------------------------------------------------------------------------------------


def test_grounded_passes_when_id_came_from_user_or_result() -> None:
    assert checks.check_grounded(clean_run(), tools()).status == "pass"
    traj = replace(clean_run(), user_input="Customer C023: I was charged twice, please refund.")
    assert checks.check_grounded(traj, tools()).status == "pass"  # INV-1002 came from list_invoices


def test_grounded_fails_on_made_up_id() -> None:
    traj = clean_run()
    calls = list(traj.tool_calls)
    calls[2] = replace(calls[2], arguments={**REFUND, "invoice_id": "INV-100"})
    traj = replace(traj, tool_calls=calls)
    assert_fail(
        checks.check_grounded(traj, tools()),
        "create_refund_request invoice_id=INV-100 is in neither the user's input nor an earlier result",
        ("s3",),
    )


def test_grounded_skipped_without_content() -> None:
    traj = trajectory(
        [replace(call(1, "create_refund_request", REFUND, result={}), result=None)], user_input=None
    )
    assert checks.check_grounded(traj, tools()).status == "skipped"
    assert checks.check_grounded(trajectory([call(1, "create_refund_request")]), tools()).status == "skipped"


# tools -----------------------------------------------------------------------------------------


def test_tools_pass_and_deny() -> None:
    assert checks.check_tools(clean_run(), tools()).status == "pass"
    traj = trajectory([call(1, "get_subscription", {"customer_id": "C023"}), call(2, "delete_account", {})])
    assert_fail(checks.check_tools(traj, tools()), "delete_account is denied", ("s2",))


def test_tools_allow_list() -> None:
    allow = Tools(allow=("get_subscription", "list_invoices"))
    assert_fail(
        checks.check_tools(clean_run(), allow), "create_refund_request is not in the allow-list", ("s3",)
    )


# budget ----------------------------------------------------------------------------------------


def test_budget_pass_shows_value_and_limit() -> None:
    result = checks.check_budget(clean_run(), Budget(max_tool_calls=8, max_total_tokens=30000))
    assert result.status == "pass" and result.reason == "tool calls 3/8, total tokens 1320/30000"


def test_budget_fail_shows_value_and_limit() -> None:
    traj = trajectory([call(i, "get_subscription", {"customer_id": "C023"}) for i in range(1, 10)])
    result = checks.check_budget(traj, Budget(max_tool_calls=8, max_model_turns=20, max_output_tokens=100))
    assert result.status == "fail" and result.reason == "tool calls 9/8, output tokens 300/100"


def test_budget_tokens_unknown_without_usage() -> None:
    traj = clean_run()
    models = [replace(model, input_tokens=None, output_tokens=None) for model in traj.model_calls]
    traj = replace(traj, model_calls=models, tokens=replace(traj.tokens, input=0, output=0))
    assert checks.check_budget(traj, Budget(max_total_tokens=10)).status == "skipped"
    result = checks.check_budget(traj, Budget(max_tool_calls=8, max_total_tokens=10))
    assert result.status == "pass" and "total tokens not recorded" in result.reason


# claims ----------------------------------------------------------------------------------------


def test_claims_pass_when_refund_succeeded() -> None:
    result = checks.check_claims(clean_run(), SUPPORT.claims)
    assert result.status == "pass" and "1 claim" in result.reason


def test_claims_fail_when_refund_never_succeeded() -> None:
    traj = trajectory(
        [
            call(1, "list_invoices", {"customer_id": "C023"}),
            call(2, "create_refund_request", REFUND, ok=False),
        ]
    )
    assert_fail(
        checks.check_claims(traj, SUPPORT.claims),
        "answer claims 'refund for INV-1002 has been submitted' but create_refund_request never succeeded",
        ("s2",),
    )


def test_claims_skipped_without_answer() -> None:
    assert checks.check_claims(trajectory([], final_answer=None), SUPPORT.claims).status == "skipped"
