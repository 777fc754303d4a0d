"""Which build of the per-span modules this process runs: compiled with Cython, or the Python source.

Installs with a C compiler carry the per-span modules compiled (see ``hatch_build.py``); they are
the same source, compiled with Python's semantics. ``OTEL_TRAJ_PURE_PYTHON=1`` makes a process import
the Python source even where compiled modules exist: to compare the two, or to rule the compiled
build out when investigating a problem.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES, SOURCE_SUFFIXES, FileFinder, ModuleSpec, SourceFileLoader
from types import ModuleType

PURE_PYTHON_ENV = "OTEL_TRAJ_PURE_PYTHON"
_PACKAGE = __name__.rpartition(".")[0]


def pure_python_requested() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


class _SourceFirst:
    """A meta path finder for this package's modules that sees only ``.py`` files."""

    @staticmethod
    def find_spec(
        name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is None or not name.startswith(_PACKAGE + "."):
            return None
        for entry in path:
            spec = FileFinder(entry, (SourceFileLoader, SOURCE_SUFFIXES)).find_spec(name, target)
            if spec is not None:
                return spec
        return None


def prefer_source() -> None:
    """Import this package's modules from their Python source from now on (idempotent)."""
    if not any(finder is _SourceFirst for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst)


# Imported first by the package's ``__init__``, before any module that may be compiled.
if pure_python_requested():
    prefer_source()


def is_compiled(module: ModuleType) -> bool:
    return (module.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))


def build() -> str:
    """``"compiled"`` when the grading core runs compiled, else ``"pure Python"``."""
    from otel_traj import builder

    return "compiled" if is_compiled(builder) else "pure Python"
