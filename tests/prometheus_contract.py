"""The check that registered metric families are a published contract: each family's type, labels
and, for a histogram, the buckets of its ``type="total"`` (or only) series."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.metrics_core import Metric

# A family's name -> its type, its labels and its buckets' ``le`` values (None: not a histogram).
Contract = Mapping[str, tuple[str, set[str], str | None]]


def assert_contract(families: Mapping[str, Metric], contract: Contract) -> None:
    assert set(families) == set(contract)
    for name, (kind, labels, buckets) in contract.items():
        family = families[name]
        assert family.type == kind, name
        samples = [s for s in family.samples if not s.name.endswith("_created")]
        assert {frozenset(s.labels) - {"le"} for s in samples} == {frozenset(labels)}, name
        # One agent exported, so one series per histogram once the token type is fixed.
        les = [
            s.labels["le"]
            for s in samples
            if s.name.endswith("_bucket") and s.labels.get("type", "total") == "total"
        ]
        assert " ".join(les) == (buckets or ""), name
