"""Retrieval and memory operations of the GenAI semantic conventions: context a run reads, memory it
writes.

A ``retrieval`` span returns documents (``gen_ai.retrieval.documents``: a list of ``{id, score, ...}``
objects, as structured data or a JSON string), a ``search_memory`` span memory records
(``gen_ai.memory.records``: ``{content, id, metadata, score}``); ``create_memory``,
``update_memory``, ``upsert_memory``, ``delete_memory`` and ``delete_memory_store`` change a memory
store. Each becomes a ``ContextOperation`` step: what a read returned is context for the checks that
look for where an argument came from, a write is a side effect a policy names as
``memory:<operation>``. Read from the conventions' registry and spans (repository
``open-telemetry/semantic-conventions-genai``, commit ``002c8a6``).

OpenInference records a retrieval as a ``RETRIEVER`` span: the query in ``input.value``, the
documents flattened into ``retrieval.documents.N.document.{id,content,score}`` (read as the list of
``{id, content, score}`` objects the conventions' documents are). Such a span is the ``retrieval``
operation whether or not it also says ``gen_ai.operation.name=retrieval`` (the Collector's GenAI
normalizer adds that beside the kind). A ``RETRIEVER`` span without documents is no step:
LlamaIndex nests one (``_aretrieve``) in every retrieval, recording the query object and the
documents' reprs, and the outer one holds what the search returned.

A read that records neither what it returned nor what it asked for gives a check nothing: it is no
step, as before these operations were read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import traceloop
from otel_traj.dialects._base import as_str, clip, clip_text, dumps, span_error
from otel_traj.dialects.sources import Source, attribute, first_of
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning, Refine
from otel_traj.spanview import SpanView
from otel_traj.steps import MEMORY_WRITES, ContextOperation

OPERATION = "gen_ai.operation.name"
READS = ("retrieval", "search_memory")
WRITES = tuple(sorted(MEMORY_WRITES))
DOCUMENTS = "gen_ai.retrieval.documents"
RECORDS = "gen_ai.memory.records"
# OpenInference's documents: ``retrieval.documents.N.document.<field>``.
FLAT_DOCUMENTS = "retrieval.documents."
_DOCUMENT_FIELDS = ("id", "content", "score")
# Documents read per span: a search returns a handful; a span listing thousands is cut.
MAX_DOCUMENTS = 256


def has_documents(attrs: Mapping[str, Any]) -> bool:
    """Whether the span records OpenInference's flattened documents."""
    first = FLAT_DOCUMENTS + "0.document."
    return first + "content" in attrs or first + "id" in attrs


def flat_documents(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    """OpenInference's flattened documents as JSON ``[{id, content, score}]`` (contiguous indices from
    0), None when the span has none."""
    documents: list[dict[str, Any]] = []
    for index in range(MAX_DOCUMENTS):
        prefix = f"{FLAT_DOCUMENTS}{index}.document."
        document = {key: attrs[prefix + key] for key in _DOCUMENT_FIELDS if prefix + key in attrs}
        if "id" not in document and "content" not in document:
            break
        documents.append(document)
    return dumps(documents) if documents else None


def retriever(view: SpanView, attrs: Mapping[str, Any]) -> Meaning:
    """An OpenInference ``RETRIEVER`` span: a read when it records documents, else no step."""
    return "context" if has_documents(attrs) else NOT_A_STEP


TEXT: tuple[Source, ...] = (
    attribute(DOCUMENTS),
    attribute(RECORDS),
    Source(f"`{FLAT_DOCUMENTS}N.document.*` (OpenInference)", flat_documents),
    attribute("output.value", note="OpenInference"),
    attribute(traceloop.ENTITY_OUTPUT, note="Traceloop"),
)
QUERY: tuple[Source, ...] = (
    attribute("gen_ai.retrieval.query.text"),
    attribute("gen_ai.memory.query.text"),
    attribute("input.value", note="OpenInference"),
)
SOURCE: tuple[Source, ...] = (
    attribute("gen_ai.data_source.id"),
    attribute("gen_ai.memory.store.id"),
)
# The per-field table ``docs/dialects.md`` reproduces for these operations.
TABLE: dict[str, tuple[Source, ...]] = {
    "context text": TEXT,
    "context query": QUERY,
    "context source": SOURCE,
}


def _read(view: SpanView, attrs: Mapping[str, Any]) -> Meaning | None:
    """A read is context when it records what it returned or asked for; else no step."""
    if has_documents(attrs):
        return "context"
    for sources in (TEXT, QUERY):
        if any(s.key in attrs for s in sources):
            return "context"
    return NOT_A_STEP


def _write(view: SpanView, attrs: Mapping[str, Any]) -> Meaning | None:
    """A write is always one: it changed what a memory store holds, recorded content or not."""
    return "context"


def meanings() -> dict[str, Meaning | Refine]:
    """What the conventions' operation says for each of these operations (``semconv.VOCABULARY``)."""
    return {**dict.fromkeys(READS, _read), **dict.fromkeys(WRITES, _write)}


def context_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> ContextOperation:
    # A span that says no operation of these (an OpenInference ``RETRIEVER``) is a retrieval.
    found = as_str(attrs.get(OPERATION))
    operation = found if found is not None and (found in READS or found in WRITES) else "retrieval"
    text, truncated = clip(first_of(TEXT, view, attrs, max_chars), max_chars)
    ok, error_type, _ = span_error(view, attrs)
    return ContextOperation(
        operation=operation,
        span_id=view.span_id,
        parent_id=view.parent_id,
        start_ns=view.start_ns,
        end_ns=view.end_ns,
        source=clip_text(first_of(SOURCE, view, attrs, max_chars, as_str), max_chars),
        query=clip_text(first_of(QUERY, view, attrs, max_chars, as_str), max_chars),
        text=text,
        ok=ok,
        error_type=clip_text(error_type, max_chars),
        dialect=dialect,
        truncated=truncated,
    )
