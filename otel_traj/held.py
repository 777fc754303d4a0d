"""What a value held until its run is graded takes in memory, in bytes as the interpreter allocates
them (``sys.getsizeof`` of every object it is made of): the byte bounds on runs in flight are
measured with it, not estimated from characters."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from functools import partial
from operator import attrgetter
from typing import Any

_size = sys.getsizeof
_NUMBERS = frozenset({"int", "float", "bool", "int | None", "float | None", "bool | None"})
# Per step class: the getter of its fields that may hold more than a number.
_GETTERS: dict[type, Callable[[Any], Any]] = {}


def _getter(cls: type) -> Callable[[Any], Any]:
    names = [f.name for f in dataclasses.fields(cls) if str(f.type) not in _NUMBERS]
    getter = _GETTERS[cls] = attrgetter(*names) if len(names) > 1 else (lambda v: (getattr(v, names[0]),))
    return getter


def held_bytes(value: Any) -> int:
    """Bytes ``value`` holds: its object, and the texts, containers, values and deferred parses it
    references (what a deferred parse holds, not the function it calls). Objects referenced twice are
    counted twice: the bound errs on the safe side."""
    kind = type(value)
    if kind is str:
        return _size(value)
    if value is None or kind is int or kind is float or kind is bool:
        return 0
    getter = _GETTERS.get(kind)
    if getter is not None:
        return _size(value) + sum(map(held_bytes, getter(value)))
    if kind is tuple or kind is list:
        return _size(value) + sum(map(held_bytes, value)) if value else _size(value)
    if kind is dict or isinstance(value, Mapping):
        return _size(value) + sum(held_bytes(k) + held_bytes(v) for k, v in value.items())
    if kind is partial:
        return _size(value) + sum(map(held_bytes, value.args))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _size(value) + sum(map(held_bytes, _getter(kind)(value)))
    return _size(value)
