"""A side of the release gate read from the store: the runs of live traffic whose verdicts match
``--baseline-where`` / ``--candidate-where`` (``KEY=VALUE``, all of them), since ``--since``.

KEY is a verdict field kept as an indexed column (``agent``, ``service_name``, ``service_version``,
``conversation_id``: the store filters on it), or ``versions.<key>`` (``versions.prompt``,
``versions.models``: a run matches when one of its models is VALUE) or ``attributes.<key>``, which
are read from each run's verdict JSON. The runs are then paired and judged as those of files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_traj.gate.runs import CaseFinder, GateInputError, Run, run_from_dict
from otel_traj.sinks.store_schema import COLUMN_FILTERS, Query

if TYPE_CHECKING:
    from otel_traj.sinks.store_reader import StoreReader

SECTIONS = ("versions", "attributes")


@dataclass(slots=True, frozen=True)
class Where:
    """One ``KEY=VALUE`` condition on a stored run."""

    key: str
    value: str

    @property
    def column(self) -> bool:
        return self.key in COLUMN_FILTERS

    def matches(self, verdict: Mapping[str, Any]) -> bool:
        if self.column:
            return verdict.get(self.key) == self.value
        section, _, name = self.key.partition(".")
        values = verdict.get(section)
        held = values.get(name) if isinstance(values, Mapping) else None
        if isinstance(held, list):
            return any(_text(item) == self.value for item in held)
        return held is not None and _text(held) == self.value

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_where(text: str) -> Where:
    """``KEY=VALUE``; raises ValueError naming what KEY may be."""
    key, sep, value = text.partition("=")
    key = key.strip()
    section, dot, name = key.partition(".")
    if not sep or not (key in COLUMN_FILTERS or (dot and section in SECTIONS and name)):
        raise ValueError(
            f"{text!r}: expected KEY=VALUE, KEY one of {', '.join(COLUMN_FILTERS)}, "
            "versions.<key> or attributes.<key>"
        )
    return Where(key, value)


def load_stored_side(
    store: StoreReader, wheres: Sequence[Where], since_ns: int | None, finder: CaseFinder, side: str
) -> list[Run]:
    """The runs of one side from ``store``; raises :class:`GateInputError` when none matches."""
    query = Query(since_ns=since_ns, equal=tuple((w.key, w.value) for w in wheres if w.column))
    stored = [v for v in store.verdicts(query) if all(w.matches(v) for w in wheres)]
    runs = [run_from_dict(data, store.name, i, finder) for i, data in enumerate(stored)]
    if not runs:
        conditions = " ".join(str(w) for w in wheres)
        raise GateInputError(f"--{side}-where {conditions}: no run in {store.name}")
    return runs
