"""The gate's report: a row per case (baseline -> candidate), then the decision and every reason."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence

from otel_traj.gate.decision import GateResult, figure, result_to_dict
from otel_traj.gate.runs import FIGURES, Run

HEADERS = ("case", "paired by", "outcome", *(label for _, _, label in FIGURES))


def _outcomes(runs: Sequence[Run]) -> str:
    if len(runs) == 1:
        return runs[0].outcome
    counts = Counter(r.outcome for r in runs)
    return " ".join(f"{n}x{outcome}" for outcome, n in sorted(counts.items()))


def _value(value: float | None) -> str:
    return "?" if value is None else f"{value:.6g}"


def _rows(result: GateResult) -> list[tuple[str, ...]]:
    rows = []
    for case in result.cases:
        figures = tuple(
            f"{_value(figure(case.baseline, key))} -> {_value(figure(case.candidate, key))}"
            for key, _, _ in FIGURES
        )
        outcome = f"{_outcomes(case.baseline)} -> {_outcomes(case.candidate)}"
        rows.append((case.key, case.paired_by, outcome, *figures))
    return rows


def _unpaired(result: GateResult) -> list[str]:
    lines = []
    for side, runs in (("baseline", result.unpaired_baseline), ("candidate", result.unpaired_candidate)):
        for run in runs:
            lines.append(f"unpaired {side} run {run.trace_id} ({run.source}): {run.outcome}")
    return lines


def _decision(result: GateResult) -> str:
    return "ALLOWED" if result.allowed else f"BLOCKED ({len(result.reasons)} reasons)"


def render_table(result: GateResult) -> str:
    rows = [HEADERS, *_rows(result)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines += _unpaired(result)
    lines.append(f"release: {_decision(result)}")
    lines += [f"  x {reason}" for reason in result.reasons]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: GateResult) -> str:
    lines = [f"### Release gate: {_decision(result)}", ""]
    if result.reasons:
        lines += [f"- {_cell(reason)}" for reason in result.reasons] + [""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "---|" * len(HEADERS))
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in _rows(result)]
    unpaired = _unpaired(result)
    if unpaired:
        lines += ["", *(f"- {_cell(line)}" for line in unpaired)]
    return "\n".join(lines) + "\n"


def render_json(result: GateResult) -> str:
    return json.dumps(result_to_dict(result), indent=2, ensure_ascii=False) + "\n"


RENDERERS: dict[str, Callable[[GateResult], str]] = {
    "table": render_table,
    "markdown": render_markdown,
    "json": render_json,
}
