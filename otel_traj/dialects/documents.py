"""Documents a retriever returned, read from wherever its dialect records them, kept as the conventions'
documents: the JSON list ``[{id, content, score, metadata}]`` (the fields a document has).

The shapes: OpenInference flattens them into ``<prefix>N.document.{id,content,score}``
(``retrieval.documents.`` for a retriever, ``reranker.output_documents.`` for a reranker); LangChain's
``Document`` dumped by the Langfuse and LangSmith SDKs (``{id, metadata, page_content, type}``, or
LangChain's own serialization with the fields under ``kwargs``); MLflow's ``Document``
(``{page_content, metadata, id}``); Genkit's ``DocumentData`` (``{content: [{text} | {media}],
metadata}``). A retriever whose output is no list of documents (a traced function returning its own
value) keeps that value as it was recorded: what it returned is the context all the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_traj.dialects._base import dumps, json_string, loads_once
from otel_traj.dialects._messages import content_text

# OpenInference's flattened fields of a document.
FLAT_FIELDS = ("id", "content", "score")
# Documents read per span: a search returns a handful; a span listing thousands is cut.
MAX_DOCUMENTS = 256


def has_flat(attrs: Mapping[str, Any], prefix: str) -> bool:
    """Whether the span records flattened documents under ``prefix``."""
    first = prefix + "0.document."
    return first + "content" in attrs or first + "id" in attrs


def flat(attrs: Mapping[str, Any], prefix: str) -> str | None:
    """Flattened documents as JSON ``[{id, content, score}]`` (contiguous indices from 0), None when the
    span has none."""
    documents: list[dict[str, Any]] = []
    for index in range(MAX_DOCUMENTS):
        at = f"{prefix}{index}.document."
        document = {key: attrs[at + key] for key in FLAT_FIELDS if at + key in attrs}
        if "id" not in document and "content" not in document:
            break
        documents.append(document)
    return dumps(documents) if documents else None


def _document(item: Any) -> dict[str, Any] | None:
    """One document of any of the shapes above, None for anything else."""
    if not isinstance(item, Mapping):
        return None
    kwargs = item.get("kwargs")
    fields = kwargs if item.get("lc") is not None and isinstance(kwargs, Mapping) else item
    content = fields.get("page_content")
    if content is None:
        content = content_text(fields.get("content"))
    if not isinstance(content, str):
        return None
    found = {"id": fields.get("id"), "content": content, "score": fields.get("score")}
    found["metadata"] = fields.get("metadata") or None
    return {key: value for key, value in found.items() if value is not None}


def listed(value: Any) -> str | None:
    """The documents of a retriever's output, as recorded (a JSON list, or a JSON object whose
    ``documents`` is one): as the conventions' documents when every item is a document, else the
    output as it was recorded; None when it recorded nothing."""
    raw = json_string(value)
    if not isinstance(raw, str) or not raw:
        return None
    data = loads_once(raw) if raw[:1] in ("[", "{") else None
    if isinstance(data, Mapping):
        data = data.get("documents", data)
    if isinstance(data, list) and data and len(data) <= MAX_DOCUMENTS:
        documents = [_document(item) for item in data]
        if all(d is not None for d in documents):
            return dumps(documents)
    return raw
