"""JUnit XML for CI systems: a testsuite per agent (or any grouping), a testcase per trajectory x check."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from otel_traj.verdict import Verdict

if TYPE_CHECKING:
    from otel_traj.conversations import ConversationVerdict

# Characters XML 1.0 cannot carry even escaped; a tool result may contain them.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _INVALID_XML.sub("\ufffd", text)


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
        suite = ET.SubElement(root, "testsuite", name=_clean(name))
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for verdict in members:
            classname = _clean(f"{verdict.trajectory.agent_label}.{verdict.trajectory.trace_hex}")
            for check in verdict.checks:
                counts["tests"] += 1
                case = ET.SubElement(suite, "testcase", name=check.name, classname=classname)
                steps = f" (steps: {', '.join(check.steps)})" if check.steps else ""
                if check.status == "fail":
                    counts["failures"] += 1
                    failure = ET.SubElement(
                        case, "failure", message=_clean(check.reason), type=check.severity
                    )
                    failure.text = _clean(f"{check.severity}: {check.reason}{steps}")
                elif check.status == "skipped":
                    counts["skipped"] += 1
                    ET.SubElement(case, "skipped", message=_clean(check.reason))
                incomplete = "" if verdict.trajectory.complete else " (trajectory incomplete)"
                out = ET.SubElement(case, "system-out")
                out.text = _clean(
                    f"trace {verdict.trajectory.trace_hex} outcome {verdict.outcome}"
                    f" score {verdict.score:.2f}{incomplete}"
                )
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    if conversations:
        from otel_traj.reports.conversations import junit_suite

        for key, value in junit_suite(root, conversations, _clean).items():
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
