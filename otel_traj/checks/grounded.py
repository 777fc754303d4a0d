"""``grounded``: listed arguments must appear in the user's input, an earlier tool result, or what an
earlier retrieval or memory search returned (``Trajectory.context_reads``).

Catches made-up ids: a refund for an invoice nobody mentioned and no lookup returned.

Linear in the size of the trajectory: each source (the user's input, each tool result) is split into
words once, and each word remembers the earliest end of a source holding it. A value that is one
word (an id: letters, digits, ``-`` and ``_``) is then one dictionary look-up; searching every
earlier result for every argument made a 400-call run take seconds. A value with other characters
(``199.5``, ``a b``) is searched only in the sources holding its rarest word, each source at most once
per distinct value.
"""

from __future__ import annotations

import re
from typing import Any

from otel_traj.checks.base import (
    NOT_CAPTURED,
    contains_token,
    step_id,
    tallied,
)
from otel_traj.policy import Tools
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import CheckResult, Severity

NAME = "grounded"

# A maximal run of the characters ``contains_token`` treats as part of an id: ``\w`` is exactly
# ``str.isalnum()`` plus ``_``. A one-word value is in a text iff it is one of the text's words.
_WORD = re.compile(r"[\w-]+")
# End of a source that counts as before any call: the user's input, a result without an end time.
_ALWAYS = -1


def _text(value: Any) -> str | None:
    """The text a scalar argument would appear as; containers and booleans are not grounded."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


# Characters a run's look-ups may scan before its sources are indexed: a short run costs a few
# searches, less than splitting its results into words; past this, the index keeps it linear.
SCAN_CHARS = 16_384


class _Sources:
    """The user's input and the tool results seen so far, indexed by word once they are many."""

    __slots__ = ("earliest", "first_end", "indexed", "pending", "postings", "scanned", "texts")

    def __init__(self) -> None:
        self.texts: list[tuple[str, int]] = []  # (text, end) in order
        self.earliest: dict[str, int] = {}  # word -> earliest end of a source holding it
        self.postings: dict[str, list[int]] = {}  # word -> indices of the sources holding it
        self.first_end: int | None = None  # earliest end of any source
        # value with other characters -> (its rarest word, postings read so far, earliest end found)
        self.pending: dict[str, tuple[str, int, int | None]] = {}
        self.indexed = 0  # sources split into words so far
        self.scanned = 0  # characters searched before the index was built

    def add(self, text: str, end: int) -> None:
        self.texts.append((text, end))
        if self.first_end is None or end < self.first_end:
            self.first_end = end
        if self.indexed:
            self._index()

    def _index(self) -> None:
        earliest = self.earliest
        postings = self.postings
        for index in range(self.indexed, len(self.texts)):
            text, end = self.texts[index]
            for word in set(_WORD.findall(text)):
                known = earliest.get(word)
                if known is None:
                    earliest[word] = end
                    postings[word] = [index]
                else:
                    if end < known:
                        earliest[word] = end
                    postings[word].append(index)
        self.indexed = len(self.texts)

    def any_before(self, start: int) -> bool:
        return self.first_end is not None and (not start or self.first_end <= start)

    def _earliest(self, value: str) -> int | None:
        if _WORD.fullmatch(value):
            return self.earliest.get(value)
        rarest, read, best = self.pending.get(value) or (self._rarest(value), 0, None)
        # A value without any word (``...``) is compared with every source, each once.
        indices = self.postings.get(rarest, []) if rarest else range(len(self.texts))
        for index in indices[read:]:
            text, end = self.texts[index]
            if (best is None or end < best) and contains_token(text, value):
                best = end
        self.pending[value] = (rarest, len(indices), best)
        return best

    def _rarest(self, value: str) -> str:
        # Every word of the value is a whole word of any text holding it, so any one narrows the
        # search; the one in the fewest sources so far narrows it most.
        words = _WORD.findall(value)
        return min(words, key=lambda w: len(self.postings.get(w, ()))) if words else ""

    def holds(self, value: str, start: int) -> bool:
        """``value`` is in a source that ended before ``start`` (0: unknown, every source counts)."""
        if not self.indexed:
            if self.scanned < SCAN_CHARS:
                for text, end in self.texts:
                    if not start or end <= start:
                        self.scanned += len(text)
                        if contains_token(text, value):
                            return True
                return False
            self._index()
        found = self._earliest(value)
        return found is not None and (not start or found <= start)


def check_grounded(traj: Trajectory, tools: Tools, severity: Severity = "error") -> CheckResult:
    problems: list[str] = []
    steps: list[str] = []
    unknown: list[str] = []
    checked = 0
    sources = _Sources()
    if traj.user_input:
        sources.add(traj.user_input, _ALWAYS)
    # What a retrieval or memory search returned counts, as a result does, once it had ended.
    for read in traj.context_reads:
        if read.text:
            sources.add(read.text, read.end_ns or _ALWAYS)
    for call in traj.tool_calls:
        contract = tools.contracts.get(call.name)
        if contract is not None and contract.grounded:
            if call.arguments is None:
                unknown.append(f"{call.name} {NOT_CAPTURED}")
            else:
                for name in contract.grounded:
                    value = _text(call.arguments.get(name))
                    if value is None:
                        continue
                    if not sources.any_before(call.start_ns):
                        unknown.append(f"{call.name} {name}: user input and tool results not captured")
                        continue
                    checked += 1
                    if not sources.holds(value, call.start_ns):
                        problems.append(
                            f"{call.name} {name}={value} is in neither the user's input nor an earlier result"
                        )
                        steps.append(step_id(call))
        # A result counts for the calls after it that started once it had ended.
        if call.result:
            sources.add(call.result, call.end_ns or _ALWAYS)
    return tallied(
        NAME, severity, problems, steps, unknown, checked, "grounded argument", "found in earlier context"
    )
