"""Keep sensitive argument values out of text that leaves the process (score comments, metadata).

A check's reason may quote the arguments that broke a rule ("customer_id=42 is out of scope"), which is
what makes it useful, but the same reason must never carry a password, a token, an email address or a
card number to a third-party server. Two layers: values of argument keys the policy marks as sensitive
are replaced wherever they appear, and anything that looks like an email or a card number is masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from otel_traj.trajectory import Trajectory

MASK = "[REDACTED]"

# Same families the policy treats as sensitive by default: secrets, personal contact data, payment data.
DEFAULT_SENSITIVE_KEY = re.compile(
    r"(?i)(secret|token|passw(or)?d|passphrase|api[_-]?key|authorization|credential|cookie|session[_-]?key"
    r"|e[_-]?mail|phone|ssn|social[_-]?security"
    r"|card[_-]?(number|no|num)|cc[_-]?num|^pan$|cvv|cvc|iban)"
)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
# 13-19 digits, optionally grouped by spaces or dashes; confirmed with the Luhn checksum so that order
# numbers and timestamps stay readable.
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
# Values shorter than this are not searched for: masking every "1" in a reason protects nothing.
_MIN_VALUE_LEN = 3

SensitiveKey = Callable[[str, str], bool]
"""``(tool name, argument key) -> True`` when the argument's value must not be published."""


def default_sensitive_key(tool: str, key: str) -> bool:
    return DEFAULT_SENSITIVE_KEY.search(key) is not None


def sensitive_key_predicate(redact: SensitiveKey | Collection[str] | None) -> SensitiveKey:
    """Normalise the accepted forms: a predicate (e.g. ``Policy.is_sensitive``), a set of key names
    (added to the defaults), or None for the defaults only."""
    if redact is None:
        return default_sensitive_key
    if callable(redact):
        return redact
    keys = frozenset(redact)
    return lambda tool, key: key in keys or default_sensitive_key(tool, key)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _mask_card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return MASK if _luhn_ok(digits) else match.group(0)


def mask_patterns(text: str) -> str:
    """Mask email addresses and Luhn-valid card numbers."""
    return _CARD.sub(_mask_card, _EMAIL.sub(MASK, text))


def _walk(tool: str, value: Any, sensitive: SensitiveKey, under_sensitive: bool) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(tool, item, sensitive, under_sensitive or sensitive(tool, str(key)))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(tool, item, sensitive, under_sensitive)
    elif under_sensitive and value is not None and not isinstance(value, bool):
        text = str(value)
        if len(text) >= _MIN_VALUE_LEN:
            yield text


class Redactor:
    """Masks sensitive values in text about one trajectory."""

    def __init__(self, redact: SensitiveKey | Collection[str] | None = None) -> None:
        self.sensitive = sensitive_key_predicate(redact)

    def secret_values(self, trajectory: Trajectory) -> list[str]:
        """Values of sensitive arguments in the trajectory's tool calls, longest first so that a value
        containing another is replaced whole."""
        found: set[str] = set()
        for call in trajectory.tool_calls:
            arguments: Any = call.arguments
            if arguments is None and call.arguments_text:
                try:
                    arguments = json.loads(call.arguments_text)
                except ValueError:
                    arguments = None
            if arguments is not None:
                found.update(_walk(call.name, arguments, self.sensitive, False))
        return sorted(found, key=len, reverse=True)

    def clean(self, text: str, secrets: Collection[str]) -> str:
        for value in secrets:
            text = text.replace(value, MASK)
        return mask_patterns(text)
