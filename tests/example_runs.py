"""Running the framework examples as a user would: ``python -m <module>`` from the repository root.

The subprocess gets none of the caller's ``LANGFUSE_*``, ``OPENAI_*`` or ``OTEL_*`` variables, so a
developer's own credentials or exporter settings cannot change what an example does.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def missing_modules(modules: Iterable[str]) -> list[str]:
    """The modules of ``modules`` this interpreter cannot import (frameworks are an optional extra)."""
    return [name for name in modules if not _installed(name)]


def run_module(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "OPENAI_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
