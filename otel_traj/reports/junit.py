"""JUnit XML for CI systems: a testsuite per agent (or any grouping), a testcase per trajectory x check."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from otel_traj.reports.junit_case import add_testcase, clean
from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict


def by_agent(verdict: Verdict) -> str:
    return verdict.trajectory.agent_label


def render_junit(
    verdicts: Sequence[Verdict],
    conversations: Sequence[ConversationVerdict] | None = None,
    group: Callable[[Verdict], str] = by_agent,
) -> str:
    suites: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        suites.setdefault(group(verdict), []).append(verdict)
    root = ET.Element("testsuites", name="otel-traj")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for name, members in suites.items():
        suite = ET.SubElement(root, "testsuite", name=clean(name))
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for verdict in members:
            classname = clean(f"{verdict.trajectory.agent_label}.{verdict.trajectory.trace_hex}")
            incomplete = "" if verdict.trajectory.complete else " (trajectory incomplete)"
            out = (
                f"trace {verdict.trajectory.trace_hex} outcome {verdict.outcome}"
                f" score {verdict.score:.2f}{incomplete}"
            )
            for check in verdict.checks:
                steps = f" (steps: {', '.join(check.steps)})" if check.steps else ""
                add_testcase(suite, check, classname, counts, out, steps)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    if conversations:
        from otel_traj.reports.conversations import junit_suite

        for key, value in junit_suite(root, conversations).items():
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
