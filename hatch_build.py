"""Build hook: compile the per-span modules with Cython where a C compiler is available.

The modules in ``COMPILED`` (decoding, classification, assembly, building, checks, serialization)
run for every span and every run. Cython compiles them as they are written, with Python's semantics
(annotations are not enforced as C types), which takes a quarter to a half off their CPU time. Each
stays a plain Python module: without a compiler, or with ``OTEL_TRAJ_PURE_PYTHON=1`` when building,
the package is pure Python and behaves the same; ``OTEL_TRAJ_PURE_PYTHON=1`` at run time makes a process
import the Python source even where compiled modules exist. Modules whose frames should show in
stack dumps (the worker's loop, the receivers, the store's writer) are not compiled.

Wheels get the compiled modules; an editable install (``pip install -e``) compiles them next to their
sources. ``python hatch_build.py`` recompiles what changed in the source tree (``make`` runs it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script in the development tree
    BuildHookInterface = object  # type: ignore[assignment,misc]

PURE_PYTHON = "OTEL_TRAJ_PURE_PYTHON"
COMPILED = (
    "otel_traj/adapters/otlp_proto.py",
    "otel_traj/adapters/otlp_json.py",
    "otel_traj/adapters/sdk.py",
    "otel_traj/dialects/*.py",
    "otel_traj/spanview.py",
    "otel_traj/steps.py",
    "otel_traj/trajectory.py",
    "otel_traj/verdict.py",
    "otel_traj/assembler.py",
    "otel_traj/builder.py",
    "otel_traj/checks/*.py",
    "otel_traj/grader.py",
    "otel_traj/serialize.py",
    "otel_traj/sinks/prometheus.py",
    "otel_traj/serve/ingest.py",
)
# Python's semantics exactly: annotations are documentation, functions introspectable as Python's.
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True}


def sources(root: Path) -> list[Path]:
    return sorted(path for pattern in COMPILED for path in root.glob(pattern))


def compiled_modules(root: Path) -> list[Path]:
    """The compiled modules in the source tree, of any Python version."""
    return [module for path in sources(root) for module in path.parent.glob(f"{path.stem}.*.so")]


def compile_in_place(root: Path) -> list[Path]:
    """Compile every module of ``COMPILED`` whose source is newer than its compiled module; returns
    the compiled modules (next to their sources). If Cython or the compiler fails, every compiled
    module is removed, so that none older than its source is imported, and the error raised."""
    try:
        return _compile(root)
    except BaseException:
        for module in compiled_modules(root):
            module.unlink()
        raise


def _compile(root: Path) -> list[Path]:
    from Cython.Build import cythonize
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext

    here = Path.cwd()
    # Cython names modules by their path from the working directory.
    os.chdir(root)
    try:
        extensions = cythonize(
            [str(path.relative_to(root)) for path in sources(root)],
            build_dir="build/cython",
            compiler_directives=DIRECTIVES,
            quiet=True,
        )
        if sys.platform != "win32":
            for extension in extensions:
                # Generated C: its warnings are Cython's; without debug symbols it builds faster.
                extension.extra_compile_args += ["-g0", "-w"]
        command = build_ext(Distribution({"name": "otel-traj", "ext_modules": extensions}))
        command.inplace = True
        command.parallel = os.cpu_count() or 1
        command.build_temp = "build/temp"
        command.ensure_finalized()
        command.run()
        return [root / command.get_ext_fullpath(extension.name) for extension in extensions]
    finally:
        os.chdir(here)


class CompileHook(BuildHookInterface):  # type: ignore[misc]
    """Compiles the per-span modules into wheels (and, for editable installs, into the source tree)."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get(PURE_PYTHON, "") not in ("", "0"):
            return
        root = Path(self.root)
        try:
            built = compile_in_place(root)
        except Exception as exc:  # no compiler, no Python headers: the pure-Python package works
            self.app.display_warning(f"otel-traj: not compiled ({exc}); the package is pure Python")
            return
        if version == "editable":
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["artifacts"].extend(str(path.relative_to(root)) for path in built)


if __name__ == "__main__":
    try:
        compile_in_place(Path(__file__).resolve().parent)
    except Exception as exc:
        print(f"otel-traj: not compiled ({exc}); running pure Python", file=sys.stderr)
