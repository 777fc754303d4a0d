"""The compiled build of the per-span modules: current with its sources, and grading as the source does.

``make`` compiles the modules of ``hatch_build.COMPILED`` next to their sources; Python imports a
compiled module before its source, so one older than its source would run old code.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

import pytest

from otel_traj import builder
from otel_traj.compiled import PURE_PYTHON_ENV, is_compiled

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "real"
POLICY = ROOT / "examples" / "policies" / "support_agent.yaml"


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compiled_module(source: Path) -> Path | None:
    for suffix in EXTENSION_SUFFIXES:
        candidate = source.with_name(source.stem + suffix)
        if candidate.exists():
            return candidate
    return None


def test_every_compiled_module_is_as_new_as_its_source() -> None:
    sources = _hook().sources(ROOT)
    assert len(sources) > 20 and all(path.suffix == ".py" for path in sources)
    stale = [
        str(source.relative_to(ROOT))
        for source in sources
        if (compiled := _compiled_module(source)) is not None
        and compiled.stat().st_mtime < source.stat().st_mtime
    ]
    assert not stale, f"compiled before their source last changed (run `make compile`): {stale}"
    if os.environ.get("CI") == "true":
        # CI tests the build users get from a wheel: every listed module compiled.
        missing = [str(s.relative_to(ROOT)) for s in sources if _compiled_module(s) is None]
        assert not missing, f"not compiled: {missing}"


def _grade(pure: bool) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != PURE_PYTHON_ENV}
    if pure:
        env[PURE_PYTHON_ENV] = "1"
    # Different string hashes in the two processes: nothing may depend on a set's order.
    env["PYTHONHASHSEED"] = "1" if pure else "2"
    command = [sys.executable, "-m", "otel_traj.cli"]
    version = subprocess.run([*command, "--version"], env=env, capture_output=True, text=True, check=True)
    graded = subprocess.run(
        [*command, "grade", str(FIXTURES), "--policy", str(POLICY), "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert graded.returncode in (0, 1), graded.stderr
    return version.stdout, graded.stdout


def test_the_python_source_grades_every_real_fixture_as_the_compiled_build() -> None:
    if not is_compiled(builder):
        pytest.skip("the per-span modules are not compiled here: there is one build only")
    compiled_version, compiled = _grade(pure=False)
    source_version, source = _grade(pure=True)
    assert compiled_version.endswith("(compiled)\n")
    assert source_version.endswith("(pure Python)\n")
    assert compiled.count('"trace_id"') >= 10
    assert source == compiled
