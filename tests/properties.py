"""Hypothesis settings for the whole suite.

``make test`` (and CI) run the ``derandomized`` profile: a fixed seed and no example database, so a
clean clone passes or fails the same way every time. ``make fuzz`` runs the ``fuzz`` profile: random
seeds and ``FUZZ_FACTOR`` times each property's examples, the long search that finds new inputs (a
failure prints the example and a reproduce blob to paste into ``@reproduce_failure``).
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "derandomized")
FUZZ_FACTOR = int(os.environ.get("FUZZ_FACTOR", "50"))

settings.register_profile("derandomized", derandomize=True, database=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, database=None, print_blob=True)
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """A property's number of examples: ``n`` in the suite, ``FUZZ_FACTOR`` times more under fuzz."""
    return n * FUZZ_FACTOR if PROFILE == "fuzz" else n
