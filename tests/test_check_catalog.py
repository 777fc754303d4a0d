"""The check catalog is the one list of checks: the grader's binders, the policy's severities, the
failure stages, the Prometheus label set and the policy reference all follow it."""

from __future__ import annotations

from pathlib import Path

from otel_traj.check_catalog import CATALOG, NAMES, docs_rows
from otel_traj.checks import BINDERS
from otel_traj.grader import check_name, plan_checks
from otel_traj.policy import parse_policy
from otel_traj.policy.models import Severities
from otel_traj.sinks.prometheus import CHECK_NAMES
from otel_traj.stages import CHECK_STAGES

ROOT = Path(__file__).resolve().parents[1]
EVERY_SECTION = {
    "version": 3,
    "defaults": {
        "order": [{"before": "list_invoices", "after": "create_refund_request"}],
        "scope": {
            "subject": {"attributes": ["app.customer_id"]},
            "arguments": {"list_invoices": "customer_id"},
        },
        "repeats": {},
        "tools": {
            "allow": ["list_invoices", "create_refund_request"],
            "contracts": {
                "create_refund_request": {
                    "side_effect": True,
                    "schema": {"type": "object"},
                    "grounded": ["invoice_id"],
                    "postconditions": [{"path": "status", "in": ["submitted"]}],
                    "relations": [
                        {
                            "argument": "amount_yuan",
                            "op": "<=",
                            "earlier": "list_invoices",
                            "path": "[0].amount_yuan",
                        }
                    ],
                }
            },
        },
        "budget": {"max_tool_calls": 10},
        "claims": [{"pattern": "refund", "requires_success": "create_refund_request"}],
        "confirmation": {"tools": ["create_refund_request"]},
        "efficiency": {},
        "injection": {},
        "severity": {"budget": "error"},
    },
}


def test_every_check_of_the_catalog_has_one_binder_in_its_order() -> None:
    assert tuple(BINDERS) == NAMES
    assert len(set(NAMES)) == len(NAMES)


def test_a_policy_with_every_section_plans_every_check_in_the_catalog_order() -> None:
    policy = parse_policy(EVERY_SECTION).for_agent(None)
    planned = plan_checks(policy)
    assert [check_name(c) for c in planned] == list(NAMES)
    severities = {check_name(c): c.keywords["severity"] for c in planned}
    assert severities == {c.name: ("error" if c.name == "budget" else c.severity) for c in CATALOG}


def test_the_policy_severities_stages_and_metric_labels_derive_from_the_catalog() -> None:
    assert tuple(Severities.model_fields) == NAMES
    assert {name: f.default for name, f in Severities.model_fields.items()} == {
        c.name: c.severity for c in CATALOG
    }
    assert {c.name: c.stage for c in CATALOG if c.stage is not None} == CHECK_STAGES
    assert set(NAMES) <= CHECK_NAMES


def test_the_policy_reference_lists_the_catalog() -> None:
    text = (ROOT / "docs" / "policy.md").read_text()
    documented = text.split("<!-- checks-table -->\n", 1)[1].split("\n<!-- /checks-table -->", 1)[0]
    assert documented == "\n".join(docs_rows())
