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

# Frameworks whose pins conflict with the main environment run from a venv of their own, which
# ``make test`` builds (Strands holds the OpenTelemetry SDK at an older release).
SEPARATE_VENVS = {"examples.strands_agent": ROOT / ".venv-strands"}


def python_for(module: str) -> str:
    venv = SEPARATE_VENVS.get(module)
    if venv is not None and (venv / "bin" / "python").exists():
        return str(venv / "bin" / "python")
    return sys.executable


def _installed(name: str, python: str) -> bool:
    if python == sys.executable:
        try:
            return importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            return False
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0


def missing_modules(modules: Iterable[str], python: str = sys.executable) -> list[str]:
    """The modules of ``modules`` that ``python`` cannot import (frameworks are an optional extra)."""
    return [name for name in modules if not _installed(name, python)]


def run_module(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "OPENAI_", "OTEL_"))}
    return subprocess.run(
        [python_for(module), "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
