"""User code that a policy or a case file names: ``module:function`` paths and the checks packages
register under the entry-point group ``otel_traj.checks``.

Each is imported once, when the file that names it loads, so a missing module or a misspelt function
is an error of that file (naming the entry) instead of a failure of every run graded later.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

ENTRY_POINT_GROUP = "otel_traj.checks"


class UserFunction:
    """A function named by its import path (``mypkg.checks:refund_matches_invoice``), imported."""

    __slots__ = ("func", "path")

    def __init__(self, path: str, func: Callable[..., Any]) -> None:
        self.path = path
        self.func = func

    def __repr__(self) -> str:
        return f"UserFunction({self.path!r})"


def import_function(path: str) -> UserFunction:
    """Import ``module:attribute`` (the attribute may be dotted); raises ``ValueError`` saying why not."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"{path!r} is not a 'module:function' path")
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:  # the module's own code may raise anything while it is imported
        raise ValueError(f"cannot import {path!r}: {type(exc).__name__}: {exc}") from None
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ValueError(
                f"cannot import {path!r}: {module_name!r} has no attribute {attribute!r}"
            ) from None
    if not callable(found):
        raise ValueError(f"{path!r} is a {type(found).__name__}, not a function")
    return UserFunction(path, found)


def registered_check(name: str) -> UserFunction:
    """The check a package registered as ``name`` in the ``otel_traj.checks`` entry-point group."""
    found = entry_points(group=ENTRY_POINT_GROUP, name=name)
    if not found:
        raise ValueError(f"no 'function' given and no entry point {name!r} in group {ENTRY_POINT_GROUP!r}")
    entry = next(iter(found))
    try:
        func = entry.load()
    except Exception as exc:
        raise ValueError(
            f"cannot load entry point {name!r} ({entry.value}): {type(exc).__name__}: {exc}"
        ) from None
    if not callable(func):
        raise ValueError(f"entry point {name!r} ({entry.value}) is a {type(func).__name__}, not a function")
    return UserFunction(entry.value, func)


def _user_function(value: Any) -> Any:
    if isinstance(value, str):
        return import_function(value)
    return value


FunctionPath = Annotated[
    UserFunction,
    BeforeValidator(_user_function),
    PlainSerializer(lambda f: f.path, return_type=str),
    WithJsonSchema({"type": "string", "description": "import path 'module:function'"}),
]
"""A ``module:function`` field of a policy or case file, imported when the file is validated."""
