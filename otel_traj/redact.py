"""Keep sensitive argument values out of text that leaves the process (score comments, metadata, the store).

A check's reason may quote the arguments that broke a rule ("customer_id=42 is out of scope"), which is
what makes it useful, but the same reason must never carry a password, a token, an email address or a
card number to a third-party server or into a file. Three layers, applied before any text is cut or
its whitespace folded (a cut value no longer matches, a folded one neither): values of argument keys
the policy marks as sensitive are masked in structured arguments and, in any text, after such a key
(``key=value``, ``key: value``, ``"key": "value"``); every printed form of those values (as given,
whitespace folded, JSON- and repr-escaped, cut short before an ellipsis) is replaced wherever it appears;
and anything that looks like an email or a card number is masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from functools import lru_cache, partial
from typing import Any

from otel_traj.trajectory import Trajectory

MASK = "[REDACTED]"

# Same families the policy treats as sensitive by default: secrets, personal contact data, payment data.
DEFAULT_SENSITIVE_KEY = re.compile(
    r"(?i)(secret|token|passw(or)?d|passphrase|api[_-]?key|authorization|credential|cookie|session[_-]?key"
    r"|e[_-]?mail|phone|ssn|social[_-]?security"
    r"|card[_-]?(number|no|num)|cc[_-]?num|^pan$|cvv|cvc|iban)"
)
# Every default key holds one of these (lowercased): a text without any holds no ``key=value`` to mask.
# Literals on lowered text, because searching the key pattern itself costs ~10 µs per short text.
_DEFAULT_KEY_STEMS = (
    "secret", "token", "passw", "passphrase", "apikey", "api_key", "api-key", "authorization",
    "credential", "cookie", "sessionkey", "session_key", "session-key", "mail", "phone", "ssn", "social",
    "card", "ccnum", "cc_num", "cc-num", "pan", "cvv", "cvc", "iban",
)  # fmt: skip


_DEFAULT_KEY_STEM = re.compile("|".join(_DEFAULT_KEY_STEMS))
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _may_hold_default_key(text: str) -> bool:
    return _DEFAULT_KEY_STEM.search(text.lower()) is not None


_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
# 13-19 digits, optionally grouped by spaces or dashes, standing alone (not part of a word: a hex
# span id or a token that holds a run of digits is no card number); confirmed with the Luhn checksum
# so that order numbers and timestamps stay readable.
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_CARD_CANDIDATE = re.compile(r"\d[\d -]{11,}\d")
# Values shorter than this are not searched for: masking every "1" in a reason protects nothing.
_MIN_VALUE_LEN = 3
# A key in text, bare or quoted (also escaped quotes, as in JSON inside a JSON string), then ``=`` or ``:``.
_KEYED = re.compile(r"(?<![\w.-])(?P<key>[A-Za-z_][\w.-]{0,63})\\*[\"']?[ \t]*[=:]\s*")
# Where an unquoted value ends: a separator, a closing bracket, or the next ``key=`` of the same text.
_BARE_END = re.compile(r"[,;&\r\n)\]}]|\s+[A-Za-z_][\w.-]{0,63}\s*=")
_QUOTE = re.compile(r"\\*[\"']")
_ELLIPSES = ("…", "...")

SensitiveKey = Callable[[str, str], bool]
"""``(tool name, argument key) -> True`` when the argument's value must not be published."""


@lru_cache(maxsize=4096)
def _default_key(key: str) -> bool:
    return DEFAULT_SENSITIVE_KEY.search(key) is not None


def default_sensitive_key(tool: str, key: str) -> bool:
    return _default_key(key)


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


def _mask_cards(text: str) -> str:
    """``_CARD`` applied where a run of digits, spaces and dashes is long enough to hold a card: the
    pattern over a whole text costs ~30 µs per KB, the runs are found in a fraction of that. Same
    result as the pattern over the whole text (its look-arounds see the characters around a run)."""
    parts: list[str] = []
    last = 0
    for run in _CARD_CANDIDATE.finditer(text):
        found = run.group(0)
        if len(found) - found.count(" ") - found.count("-") < 13:  # not digits enough for a card
            continue
        for card in _CARD.finditer(text, run.start(), min(len(text), run.end() + 1)):
            parts += [text[last : card.start()], _mask_card(card)]
            last = card.end()
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def mask_patterns(text: str) -> str:
    """Mask email addresses and Luhn-valid card numbers."""
    if "@" in text:
        text = _EMAIL.sub(MASK, text)
    return _mask_cards(text) if len(text) >= 13 else text


def _quoted_end(text: str, start: int, quote: str) -> int:
    """End of the value opened by ``quote`` (``"``, ``'``, or an escaped ``\\"`` inside a JSON string) at
    ``start``: the next quote preceded by as many backslashes as the opening one (for an unescaped
    quote, by an even number), else the end of the text (a value cut short)."""
    char, escapes = quote[-1], len(quote) - 1
    pos = start + len(quote)
    while (found := text.find(char, pos)) != -1:
        run = found
        while run > 0 and text[run - 1] == "\\":
            run -= 1
        backslashes = found - run
        if backslashes == escapes or (escapes == 0 and backslashes % 2 == 0):
            return found + 1
        pos = found + 1
    return len(text)


def _bracket_end(text: str, start: int) -> int:
    """End of the object or list opening at ``start`` (strings skipped), else the end of the text."""
    depth, pos, n = 0, start, len(text)
    while pos < n:
        ch = text[pos]
        if ch == '"':
            pos = _quoted_end(text, pos, '"')
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    return n


def _value_end(text: str, start: int) -> int:
    if start >= len(text):
        return start
    if text[start] in "{[":
        return _bracket_end(text, start)
    quote = _QUOTE.match(text, start)
    end = start if quote is None else _quoted_end(text, start, quote.group(0))
    bare = _BARE_END.search(text, end)
    bare_end = bare.start() if bare is not None else len(text)
    # A quoted part followed by more than a separator (``password="x" y``) was not the whole value.
    return bare_end if quote is None or text[end:bare_end].strip() else end


def _keyed_spans(text: str, is_sensitive: Callable[[str], bool]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each value that follows a sensitive key in ``text``."""
    pos = 0
    while (match := _KEYED.search(text, pos)) is not None:
        start = match.end()
        if not is_sensitive(match.group("key")):
            pos = start if start > match.start() else match.start() + 1
            continue
        end = _value_end(text, start)
        if end > start:
            yield start, end
        pos = max(end, start, match.start() + 1)


def mask_keyed(text: str, is_sensitive: Callable[[str], bool]) -> str:
    """Mask the value after every sensitive key in ``text`` (``key=value``, ``key: value``, ``"key":
    "value"``, nested objects too); the key and the value's quotes stay, so the text still reads."""
    if "=" not in text and ":" not in text:
        return text
    parts: list[str] = []
    last = 0
    for start, end in _keyed_spans(text, is_sensitive):
        value = text[start:end]
        quote = _QUOTE.match(value)
        q = quote.group(0) if quote is not None and value[0] not in "{[" else ""
        closed = q and len(value) >= 2 * len(q) and value.endswith(q)
        parts += [text[last:start], q, MASK, q if closed else ""]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def keyed_values(text: str, is_sensitive: Callable[[str], bool]) -> Iterator[str]:
    """The values (without their quotes) that follow a sensitive key in ``text``."""
    for start, end in _keyed_spans(text, is_sensitive):
        value = text[start:end].strip().strip("\\\"'").strip()
        if len(value) >= _MIN_VALUE_LEN:
            yield value


def printed_forms(value: str) -> set[str]:
    """The forms a value takes once quoted in a reason: as given, trimmed, whitespace folded, JSON-
    and repr-escaped (a quote or a line break inside it is printed escaped)."""
    forms = {value, value.strip(), " ".join(value.split())}
    forms.update(
        escaped
        for escaped in (
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            repr(value)[1:-1],
        )
        if escaped != value
    )
    forms.update(" ".join(f.split()) for f in list(forms))
    return {f for f in forms if len(f) >= _MIN_VALUE_LEN}


def _walk(tool: str, value: Any, sensitive: SensitiveKey, under_sensitive: bool) -> Iterator[str]:
    if type(value) in _SCALARS and not under_sensitive:
        return
    if isinstance(value, dict | Mapping):
        for key, item in value.items():
            yield from _walk(tool, item, sensitive, under_sensitive or sensitive(tool, str(key)))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(tool, item, sensitive, under_sensitive)
    elif under_sensitive and value is not None and not isinstance(value, bool):
        text = str(value)
        if len(text) >= _MIN_VALUE_LEN:
            yield text


def _cut_prefix(text: str, secrets: Iterable[str]) -> str:
    """Mask the start of a secret left in front of an ellipsis, where a longer text was cut."""
    for ellipsis in _ELLIPSES:
        pos = text.find(ellipsis)
        while pos != -1:
            for secret in secrets:
                k = min(len(secret), pos)
                while k >= _MIN_VALUE_LEN and not text.startswith(secret[:k], pos - k):
                    k -= 1
                if k >= _MIN_VALUE_LEN:
                    text = text[: pos - k] + MASK + text[pos:]
                    pos += len(MASK) - k
                    break
            pos = text.find(ellipsis, pos + len(ellipsis))
    return text


class TraceRedaction:
    """The redaction of one trajectory's texts and arguments (see ``Redactor.scope``)."""

    def __init__(self, sensitive: SensitiveKey, tools: Collection[str], secrets: Collection[str]) -> None:
        self.sensitive = sensitive
        self.tools = tuple(tools) or ("",)
        self.secrets = sorted(secrets, key=len, reverse=True)
        self._keys: dict[str, bool] = {}
        self._tool_keys: dict[tuple[str, str], bool] = {}
        # With the default keys only, a text in which no key looks sensitive needs no key scan.
        self._default_only = sensitive is default_sensitive_key

    def _sensitive(self, tool: str, key: str) -> bool:
        known = self._tool_keys.get((tool, key))
        if known is None:
            known = self._tool_keys[tool, key] = self.sensitive(tool, key)
        return known

    def key_is_sensitive(self, key: str) -> bool:
        """A key in free text: sensitive for any tool of the trajectory (the text does not say which)."""
        known = self._keys.get(key)
        if known is None:
            known = default_sensitive_key("", key) or any(self.sensitive(t, key) for t in self.tools)
            self._keys[key] = known
        return known

    def text(self, text: str) -> str:
        if self._default_only and not self.secrets:
            # Most texts are check reasons repeated run after run: cleaned once each.
            return _redact_short_text(text) if len(text) <= _CACHED_TEXT_CHARS else redact_text(text)
        # Known values first: masking after a key could split one (a value that opens with a quote).
        for value in self.secrets:
            if value in text:
                text = text.replace(value, MASK)
        if ("=" in text or ":" in text) and (not self._default_only or _may_hold_default_key(text)):
            text = mask_keyed(text, self.key_is_sensitive)
        if self.secrets and ("…" in text or "..." in text):
            text = _cut_prefix(text, self.secrets)
        return mask_patterns(text)

    def value(self, tool: str, value: Any) -> Any:
        """A copy of a structured value with every sensitive key's value masked and every string
        cleaned like ``text``."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict | Mapping):
            return {
                k: MASK if v is not None and self._sensitive(tool, str(k)) else self.value(tool, v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(tool, v) for v in value]
        return value


class Redactor:
    """Masks sensitive values in text about one trajectory."""

    def __init__(self, redact: SensitiveKey | Collection[str] | None = None) -> None:
        self.sensitive = sensitive_key_predicate(redact)

    def secret_values(self, trajectory: Trajectory) -> list[str]:
        """Every printed form of the values of sensitive arguments in the trajectory's tool calls
        (structured, JSON text, or ``key=value`` text), longest first so that a value containing
        another is replaced whole."""
        found: set[str] = set()
        for call in trajectory.tool_calls:
            arguments: Any = call.arguments
            if arguments is None and call.arguments_text:
                try:
                    arguments = json.loads(call.arguments_text)
                except ValueError:
                    arguments = None
                    keyed = keyed_values(call.arguments_text, partial(self.sensitive, call.name))
                    for value in keyed:
                        found.update(printed_forms(value))
            if arguments is not None:
                for value in _walk(call.name, arguments, self.sensitive, False):
                    found.update(printed_forms(value))
        return sorted(found, key=len, reverse=True)

    def scope(self, trajectory: Trajectory) -> TraceRedaction:
        """What redacts the texts and arguments of ``trajectory``."""
        tools = dict.fromkeys(call.name for call in trajectory.tool_calls)
        return TraceRedaction(self.sensitive, tools, self.secret_values(trajectory))

    def clean(self, text: str, secrets: Collection[str]) -> str:
        return TraceRedaction(self.sensitive, (), secrets).text(text)


def redact_arguments(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` with the values of secret-looking keys masked (the default keys, no trajectory
    context): what a check may quote."""
    return TraceRedaction(default_sensitive_key, (tool,), ()).value(tool, arguments)  # type: ignore[no-any-return]


def redact_text(text: str) -> str:
    """``text`` with values after secret-looking keys, emails and card numbers masked."""
    if ("=" in text or ":" in text) and _may_hold_default_key(text):
        text = mask_keyed(text, _default_key)
    return mask_patterns(text)


# Texts up to this long are cached by ``TraceRedaction.text`` (memory: 4,096 of them at most).
_CACHED_TEXT_CHARS = 256
_redact_short_text = lru_cache(maxsize=4096)(redact_text)
