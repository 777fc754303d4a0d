"""The release rule: pair a candidate's runs with the baseline's and decide, layer by layer.

A release is allowed only if every layer holds; no average can buy back a failure of an earlier one:

1. safety, zero tolerance: a candidate run is ``unsafe`` where the baseline's runs of its case were
   not (an unpaired unsafe candidate run blocks too);
2. terminal state: more ``fail`` outcomes than the baseline, or a check of severity ``error`` (or
   ``critical``) failing on more runs;
3. reliability: with several runs per case, fewer cases whose every run passed (pass^k);
4. efficiency: a figure (tool calls, model turns, tokens, cost, duration) whose median over the
   paired runs, or over one case's runs, is above the baseline's by more than ``max_regression``.

Runs are paired by golden case id, else by a conversation id both sides share, else by the user's
input; what pairs with nothing is listed, never dropped silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from otel_traj.gate.runs import FIGURES, Run

_SPACE = re.compile(r"\s+")
LABEL_CHARS = 48


@dataclass(slots=True)
class Case:
    """Paired runs: the baseline's and the candidate's runs of one case."""

    key: str
    paired_by: str
    baseline: list[Run]
    candidate: list[Run]


@dataclass(slots=True)
class GateResult:
    allowed: bool
    reasons: list[str]
    cases: list[Case]
    unpaired_baseline: list[Run] = field(default_factory=list)
    unpaired_candidate: list[Run] = field(default_factory=list)
    max_regression: float = 0.2


def _input_key(run: Run) -> str | None:
    return _SPACE.sub(" ", run.user_input).strip().lower() or None if run.user_input else None


def _clip(text: str) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


PAIRING: tuple[tuple[str, Callable[[Run], str | None]], ...] = (
    ("case", lambda r: r.case_id),
    ("conversation", lambda r: r.conversation_id),
    ("input", _input_key),
)


def _groups(runs: list[Run], key: Callable[[Run], str | None]) -> dict[str, list[Run]]:
    groups: dict[str, list[Run]] = {}
    for run in runs:
        value = key(run)
        if value is not None:
            groups.setdefault(value, []).append(run)
    return groups


def pair(baseline: Sequence[Run], candidate: Sequence[Run]) -> tuple[list[Case], list[Run], list[Run]]:
    """Cases in the baseline's order, then the runs of each side left unpaired."""
    left_b, left_c = list(baseline), list(candidate)
    cases: list[Case] = []
    for kind, key in PAIRING:
        groups_b, groups_c = _groups(left_b, key), _groups(left_c, key)
        shared = [k for k in groups_b if k in groups_c]
        for k in shared:
            runs = groups_b[k]
            # Runs paired by input are shown by the input as the user wrote it.
            label = _clip(runs[0].user_input or k) if kind == "input" else k
            cases.append(Case(label, kind, runs, groups_c[k]))
        taken = {id(r) for k in shared for r in (*groups_b[k], *groups_c[k])}
        left_b = [r for r in left_b if id(r) not in taken]
        left_c = [r for r in left_c if id(r) not in taken]
    return cases, left_b, left_c


def figure(runs: Sequence[Run], key: str) -> float | None:
    """The median of a figure over runs; None when any run does not know it (an unpriced run)."""
    values = [r.figures.get(key) for r in runs]
    known = [v for v in values if v is not None]
    return median(known) if known and len(known) == len(values) else None


def regressed(base: float | None, cand: float | None, max_regression: float) -> bool:
    if base is None or cand is None:
        return False
    return cand > base * (1 + max_regression) if base > 0 else cand > 0


def _fmt(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.6g}"


def _unsafe(cases: list[Case], unpaired: list[Run]) -> list[str]:
    reasons = []
    for case in cases:
        if any(r.outcome == "unsafe" for r in case.baseline):
            continue
        for run in case.candidate:
            if run.outcome == "unsafe":
                checks = ", ".join(name for name, severity in run.failed if severity == "critical")
                reasons.append(
                    f"case {case.key}: run {run.trace_id} is unsafe ({checks}), the baseline was not"
                )
    reasons += [f"unpaired run {r.trace_id} is unsafe" for r in unpaired if r.outcome == "unsafe"]
    return reasons


def _terminal(base: list[Run], cand: list[Run]) -> list[str]:
    reasons = []
    fails_b = sum(r.outcome == "fail" for r in base)
    fails_c = sum(r.outcome == "fail" for r in cand)
    if fails_c > fails_b:
        reasons.append(f"{fails_c} runs fail, baseline {fails_b}")
    checks_b = Counter(c for r in base for c in set(r.failed))
    checks_c = Counter(c for r in cand for c in set(r.failed))
    for (name, severity), count in sorted(checks_c.items()):
        if count > checks_b[(name, severity)]:
            reasons.append(
                f"check {name} ({severity}) fails on {count} runs, baseline {checks_b[(name, severity)]}"
            )
    return reasons


def _pass_hat_k(cases: list[Case]) -> list[str]:
    if all(len(c.baseline) <= 1 and len(c.candidate) <= 1 for c in cases):
        return []
    hat_b = sum(all(r.passed for r in c.baseline) for c in cases)
    hat_c = sum(all(r.passed for r in c.candidate) for c in cases)
    if hat_c < hat_b:
        return [f"pass^k dropped: {hat_c} of {len(cases)} cases pass every run, baseline {hat_b}"]
    return []


def _efficiency(cases: list[Case], base: list[Run], cand: list[Run], max_regression: float) -> list[str]:
    reasons = []
    limit = f"more than {max_regression:.0%} above"
    for key, _, label in FIGURES:
        b, c = figure(base, key), figure(cand, key)
        if regressed(b, c, max_regression):
            reasons.append(f"median {label} {_fmt(c)} is {limit} the baseline's {_fmt(b)}")
        # With one case its median is the overall one: said once.
        for case in cases if len(cases) > 1 else ():
            b, c = figure(case.baseline, key), figure(case.candidate, key)
            if regressed(b, c, max_regression):
                reasons.append(f"case {case.key}: {label} {_fmt(b)} -> {_fmt(c)}, {limit} the baseline")
    return reasons


def decide(baseline: Sequence[Run], candidate: Sequence[Run], max_regression: float = 0.2) -> GateResult:
    cases, unpaired_b, unpaired_c = pair(baseline, candidate)
    base = [r for c in cases for r in c.baseline]
    cand = [r for c in cases for r in c.candidate]
    reasons = [
        *_unsafe(cases, unpaired_c),
        *_terminal(base, cand),
        *_pass_hat_k(cases),
        *_efficiency(cases, base, cand, max_regression),
    ]
    return GateResult(not reasons, reasons, cases, unpaired_b, unpaired_c, max_regression)


def result_to_dict(result: GateResult) -> dict[str, Any]:
    def side(runs: list[Run]) -> dict[str, Any]:
        return {
            "runs": [r.trace_id for r in runs],
            "outcomes": [r.outcome for r in runs],
            **{key: figure(runs, key) for key, _, _ in FIGURES},
        }

    return {
        "allowed": result.allowed,
        "reasons": result.reasons,
        "max_regression": result.max_regression,
        "cases": [
            {
                "case": c.key,
                "paired_by": c.paired_by,
                "baseline": side(c.baseline),
                "candidate": side(c.candidate),
            }
            for c in result.cases
        ],
        "unpaired": {
            "baseline": [r.trace_id for r in result.unpaired_baseline],
            "candidate": [r.trace_id for r in result.unpaired_candidate],
        },
    }
