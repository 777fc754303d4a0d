"""Facts: the identifiers and amounts a text or a tool result holds (``RF-5001``, ``INV-1002``, ``199``).

Result utilization asks whether something a tool returned reached the final answer. Comparing whole
texts is useless (answers paraphrase), but ids and amounts survive paraphrase, so a fact is a token
that contains a digit. Numbers are canonical (``199.0`` and ``199`` are one fact); other tokens compare
case-insensitively. Keys of JSON results are names, not facts, and are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from otel_traj.cases.values import as_number

_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_\-.]*[A-Za-z0-9])?")
_DIGIT = re.compile(r"\d")


def _canonical(token: str) -> str | None:
    if not _DIGIT.search(token):
        return None
    number = as_number(token)
    if number is not None:
        text = str(int(number)) if number.is_integer() else repr(number)
    else:
        text = token.casefold()
    # Single digits ("1 item", "step 2") are too common to tell anything.
    return text if len(text) >= 2 else None


Facts = dict[str, str]
"""Canonical fact -> the spelling first seen (for reasons a human reads)."""


def facts_in_text(text: str | None) -> Facts:
    facts: Facts = {}
    for token in _TOKEN.findall(text or ""):
        canonical = _canonical(token)
        if canonical is not None:
            facts.setdefault(canonical, token)
    return facts


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        number = float(value)
        yield str(int(number)) if number.is_integer() else repr(number)
    else:
        yield str(value)


def facts_in_result(result: str | None) -> Facts:
    """Facts in a tool result: the values of a JSON result, or the tokens of a text result."""
    if not result:
        return {}
    try:
        data = json.loads(result)
    except json.JSONDecodeError:
        return facts_in_text(result)
    facts: Facts = {}
    for leaf in _leaves(data):
        for canonical, token in facts_in_text(leaf).items():
            facts.setdefault(canonical, token)
    return facts
