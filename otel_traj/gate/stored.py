"""The runs of one side of a release gate, read from the verdict store and chosen by ``KEY=VALUE``.

A filter's key names a field of the stored verdict (``service_version``, ``service_name``, ``agent``,
``policy_version``, ``conversation_id``, ...), a field of its ``versions`` as ``versions.KEY``
(``versions.agent``, ``versions.prompt``), or else one of the run's attributes (``deployment.id``).
A run belongs to the side when every filter's value equals the field's, compared as text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from otel_traj.gate.runs import CaseFinder, GateInputError, Run, run_from_dict

if TYPE_CHECKING:
    from sqlite3 import Connection

    from otel_traj.sinks.store_schema import Query

_VERSIONS = "versions."


def parse_where(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (key, value); raises :class:`GateInputError` on anything else."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise GateInputError(f"{text!r}: expected KEY=VALUE, e.g. service_version=1.2")
    return key.strip(), value


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_value(verdict: Mapping[str, Any], key: str) -> str | None:
    """The text of ``key`` in a stored verdict (see the module's docstring); None when it has none."""
    if key.startswith(_VERSIONS):
        versions = verdict.get("versions")
        return _text(versions.get(key[len(_VERSIONS) :])) if isinstance(versions, Mapping) else None
    if key in verdict:
        return _text(verdict[key])
    attributes = verdict.get("attributes")
    return _text(attributes.get(key)) if isinstance(attributes, Mapping) else None


def matches(verdict: Mapping[str, Any], where: Mapping[str, str]) -> bool:
    return all(field_value(verdict, key) == value for key, value in where.items())


def select_stored(verdicts: Iterable[Mapping[str, Any]], where: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The verdicts ``where`` chooses, in the order given."""
    return [v for v in verdicts if matches(v, where)]


def stored_side(
    conn: Connection,
    where: Mapping[str, str],
    side: str,
    finder: CaseFinder | None = None,
    query: Query | None = None,
) -> list[Run]:
    """The gate's runs of one side: the stored verdicts (of ``query``, all by default) that ``where``
    chooses; raises :class:`GateInputError` when there is none."""
    from otel_traj.sinks.store_schema import read_verdicts

    case_of = finder or CaseFinder(None, None)
    source = f"store ({side}: {_label(where)})"
    chosen = select_stored(read_verdicts(conn, query), where)
    if not chosen:
        raise GateInputError(f"{side}: no stored run has {_label(where)}")
    return [run_from_dict(v, source, i, case_of) for i, v in enumerate(chosen)]


def _label(where: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in where.items()) or "any run"
