"""LoongSuite's memory operations: what its GenAI util records for a memory store's methods, read as
the conventions' memory operations.

LoongSuite's util-genai (``loongsuite-otel-util-genai``, the handler under
``loongsuite-instrumentation-mem0`` and its other instrumentations) records every memory call as one
span ``memory_operation <method>`` with ``gen_ai.operation.name=memory_operation`` (a value of its own,
not one of the conventions' operations), the method in ``gen_ai.memory.operation`` (``add``,
``search``, ``update``, ``batch_update``, ``get``, ``get_all``, ``history``, ``delete``,
``batch_delete``, ``delete_all``), and, with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``
and content capture on spans, ``gen_ai.memory.input.messages`` (a search's query, the messages an
``add`` or ``update`` writes) and ``gen_ai.memory.output.messages`` (``str()`` of what the method
returned: for Mem0, a Python repr of ``{'results': [{'id', 'memory', 'score', ...}]}``). Read from
``alibaba/loongsuite-python-agent``: ``util/opentelemetry-util-genai``'s
``extended_memory/memory_utils.py`` and ``extended_semconv/gen_ai_memory_attributes.py``, and
``loongsuite-instrumentation-mem0`` 0.9.0's ``METHOD_EXTRACTION_RULES``; recorded from Mem0 in
``tests/fixtures/real/memory/mem0_loongsuite``.

Each method is the conventions' operation that means the same for a run (``OPERATIONS``): the methods
that return memories (``search``, ``get``, ``get_all``, ``history``) are a ``search_memory`` read, what
they returned is context; ``add`` is ``create_memory``, the updates ``update_memory``, the deletions
``delete_memory`` (``delete_all`` removes a user's memories, not the store). A method it does not list
says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import as_str
from otel_traj.spanview import SpanView

OPERATION_VALUE = "memory_operation"
METHOD = "gen_ai.memory.operation"
INPUT = "gen_ai.memory.input.messages"
OUTPUT = "gen_ai.memory.output.messages"
OPERATIONS: Mapping[str, str] = {
    "search": "search_memory",
    "get": "search_memory",
    "get_all": "search_memory",
    "history": "search_memory",
    "add": "create_memory",
    "update": "update_memory",
    "batch_update": "update_memory",
    "delete": "delete_memory",
    "batch_delete": "delete_memory",
    "delete_all": "delete_memory",
}


def operation(attrs: Mapping[str, Any]) -> str | None:
    """The conventions' operation of a LoongSuite memory span (by its method); None for another span
    or a method it does not list."""
    method = as_str(attrs.get(METHOD))
    return OPERATIONS.get(method) if method is not None else None


def query(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
    """What a read asked for: its input, when the method is a read (a write's input is what it
    wrote)."""
    return attrs.get(INPUT) if operation(attrs) == "search_memory" else None


def written(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> Any:
    """What a write wrote, when it records no result of its own (an ``update``)."""
    found = operation(attrs)
    return attrs.get(INPUT) if found is not None and found != "search_memory" else None
