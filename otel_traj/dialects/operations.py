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

Every dialect's retriever kind is the ``retrieval`` operation too, its documents read from wherever
that dialect records them (``documents``) and kept as the conventions' documents: OpenInference's
``RETRIEVER`` (the query in ``input.value``, the documents flattened into
``retrieval.documents.N.document.{id,content,score}``) and ``RERANKER`` (the query in
``reranker.query``, what it kept in ``reranker.output_documents.N.document.*``), Langfuse's
``retriever`` observations, LangSmith's ``retriever`` runs, MLflow's ``RETRIEVER`` spans and Genkit's
``retriever`` actions. Such a span is the ``retrieval`` operation whether or not it also says
``gen_ai.operation.name=retrieval`` (the Collector's GenAI normalizer adds that beside the kind). An
OpenInference ``RETRIEVER`` or ``RERANKER`` span without documents is no step: LlamaIndex nests one
(``_aretrieve``) in every retrieval, recording the query object and the documents' reprs, and the
outer one holds what the search returned.

LoongSuite's util-genai records a memory store's methods under an operation of its own,
``memory_operation``, the method in ``gen_ai.memory.operation``: each method is read as the
conventions' operation it performs (``loongsuite``), what it returned from
``gen_ai.memory.output.messages``, a search's query from ``gen_ai.memory.input.messages``.

A read that records neither what it returned nor what it asked for gives a check nothing: it is no
step, as before these operations were read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects import documents, genkit, langfuse, langsmith, loongsuite, mlflow, traceloop
from otel_traj.dialects._base import as_str, clip, clip_text, span_error
from otel_traj.dialects.sources import Source, attribute, first_of
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning, Refine
from otel_traj.spanview import SpanView
from otel_traj.steps import MEMORY_WRITES, ContextOperation

OPERATION = "gen_ai.operation.name"
READS = ("retrieval", "search_memory")
WRITES = tuple(sorted(MEMORY_WRITES))
DOCUMENTS = "gen_ai.retrieval.documents"
RECORDS = "gen_ai.memory.records"
# OpenInference's documents: ``retrieval.documents.N.document.<field>``, a reranker's
# ``reranker.output_documents.N.document.<field>``.
FLAT_DOCUMENTS = "retrieval.documents."
RERANKED = "reranker.output_documents."


def flat_documents(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return documents.flat(attrs, FLAT_DOCUMENTS)


def reranked(view: SpanView, attrs: Mapping[str, Any], max_chars: int) -> str | None:
    return documents.flat(attrs, RERANKED)


def retriever(view: SpanView, attrs: Mapping[str, Any]) -> Meaning:
    """An OpenInference ``RETRIEVER`` span: a read when it records documents, else no step."""
    return "context" if documents.has_flat(attrs, FLAT_DOCUMENTS) else NOT_A_STEP


def reranker(view: SpanView, attrs: Mapping[str, Any]) -> Meaning:
    """An OpenInference ``RERANKER`` span: a read of what it kept when it records that, else no step."""
    return "context" if documents.has_flat(attrs, RERANKED) else NOT_A_STEP


TEXT: tuple[Source, ...] = (
    attribute(DOCUMENTS),
    attribute(RECORDS),
    attribute(loongsuite.OUTPUT, note="LoongSuite"),
    Source(f"`{loongsuite.INPUT}` (LoongSuite write)", loongsuite.written, trigger=loongsuite.INPUT),
    Source(f"`{FLAT_DOCUMENTS}N.document.*` (OpenInference)", flat_documents),
    Source(f"`{RERANKED}N.document.*` (OpenInference reranker)", reranked),
    Source(f"`{langfuse.OUTPUT}` (Langfuse retriever)", langfuse.retrieved, trigger=langfuse.OUTPUT),
    Source(f"`{langsmith.OUTPUTS}` (LangSmith retriever)", langsmith.retrieved, trigger=langsmith.OUTPUTS),
    Source(f"`{mlflow.OUTPUTS}` (MLflow retriever)", mlflow.retrieved, trigger=mlflow.OUTPUTS),
    Source(f"`{genkit.OUTPUT}` (Genkit retriever)", genkit.retrieved, trigger=genkit.OUTPUT),
    attribute("output.value", note="OpenInference"),
    attribute(traceloop.ENTITY_OUTPUT, note="Traceloop"),
)
QUERY: tuple[Source, ...] = (
    attribute("gen_ai.retrieval.query.text"),
    attribute("gen_ai.memory.query.text"),
    Source(f"`{loongsuite.INPUT}` (LoongSuite read)", loongsuite.query, trigger=loongsuite.INPUT),
    attribute("reranker.query", note="OpenInference reranker"),
    attribute("input.value", note="OpenInference"),
    Source(f"`{langfuse.INPUT}` (Langfuse retriever)", langfuse.retrieval_query, trigger=langfuse.INPUT),
    Source(
        f"`{langsmith.INPUTS}` (LangSmith retriever)", langsmith.retrieval_query, trigger=langsmith.INPUTS
    ),
    Source(f"`{mlflow.INPUTS}` (MLflow retriever)", mlflow.retrieval_query, trigger=mlflow.INPUTS),
    Source(f"`{genkit.INPUT}` (Genkit retriever)", genkit.retrieval_query, trigger=genkit.INPUT),
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
    if documents.has_flat(attrs, FLAT_DOCUMENTS):
        return "context"
    for sources in (TEXT, QUERY):
        if any(s.key in attrs for s in sources):
            return "context"
    return NOT_A_STEP


def _write(view: SpanView, attrs: Mapping[str, Any]) -> Meaning | None:
    """A write is always one: it changed what a memory store holds, recorded content or not."""
    return "context"


def _loongsuite(view: SpanView, attrs: Mapping[str, Any]) -> Meaning | None:
    """LoongSuite's ``memory_operation``: its method's operation; a read that records neither its
    input nor its output is no step; a method it does not list says nothing."""
    found = loongsuite.operation(attrs)
    if found is None:
        return None
    if found in WRITES:
        return "context"
    return "context" if loongsuite.INPUT in attrs or loongsuite.OUTPUT in attrs else NOT_A_STEP


def meanings() -> dict[str, Meaning | Refine]:
    """What the conventions' operation says for each of these operations (``semconv.VOCABULARY``),
    and LoongSuite's ``memory_operation`` for the one its method performs."""
    return {
        **dict.fromkeys(READS, _read),
        **dict.fromkeys(WRITES, _write),
        loongsuite.OPERATION_VALUE: _loongsuite,
    }


def _operation(attrs: Mapping[str, Any]) -> str:
    """The operation a context span performs: the conventions' it names, LoongSuite's method's, or
    (a dialect's retriever kind, which names none) a retrieval."""
    found = as_str(attrs.get(OPERATION))
    if found == loongsuite.OPERATION_VALUE:
        return loongsuite.operation(attrs) or "retrieval"
    return found if found is not None and (found in READS or found in WRITES) else "retrieval"


def context_step(view: SpanView, attrs: Mapping[str, Any], dialect: str, max_chars: int) -> ContextOperation:
    operation = _operation(attrs)
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
