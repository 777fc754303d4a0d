"""One JUnit test case per check, the same in the trajectory suites and the conversation suite."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from otel_traj.verdict import CheckResult

# Characters XML 1.0 cannot carry even escaped; a tool result may contain them.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean(text: str) -> str:
    return _INVALID_XML.sub("\ufffd", text)


def add_testcase(
    suite: ET.Element, check: CheckResult, classname: str, counts: dict[str, int], out: str, steps: str = ""
) -> None:
    """Adds the test case of ``check`` to ``suite`` and counts it; ``steps`` ends a failure's text,
    ``out`` is the case's system-out."""
    counts["tests"] += 1
    case = ET.SubElement(suite, "testcase", name=check.name, classname=classname)
    if check.status == "fail":
        counts["failures"] += 1
        failure = ET.SubElement(case, "failure", message=clean(check.reason), type=check.severity)
        failure.text = clean(f"{check.severity}: {check.reason}{steps}")
    elif check.status == "skipped":
        counts["skipped"] += 1
        ET.SubElement(case, "skipped", message=clean(check.reason))
    ET.SubElement(case, "system-out").text = clean(out)
