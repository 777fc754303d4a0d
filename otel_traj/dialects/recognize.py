"""What a span is (a tool call, a model call, an agent run, or no step), from all the evidence it carries.

Evidence, strongest first:

1. **Vendors' vocabularies**: a vendor's kind key whose value it defines (``TOOL``, ``chain``,
   ``generation``; see ``vocabulary``).
2. **Recognizers**: a vendor's own keys or span names where it has no kind key (Google ADK's tool
   arguments, Logfire's message templates, pydantic-ai's ``running tool``, LlamaIndex's chat events,
   any-agent's ``call_llm`` operation and ``gen_ai.tool.args``, Claude Code's ``claude_code.<type>``
   spans).
3. **The conventions' operation**: ``gen_ai.operation.name`` with a value the conventions define
   (``execute_tool``, ``chat``, ``embeddings``), after the vendors', which several of them also set.
4. **Structure**: a tool name makes a tool call; a request or response model, token usage or
   messages make a model call. A value the span shares with its resource is the process's, not the
   span's, and no evidence: an SDK that copies the resource attributes onto every span (Claude Code
   does) puts the model a deployment names there on spans that are no model call.
5. **Span names** (``execute_tool …``, Haystack's): only for spans with no key of any dialect.

The rule: the first piece of evidence, in this order, that defines what the span is decides, "not a
step" included (a ``CHAIN``, a ``task``, ``embeddings``: a LangSmith prompt run that its SDK also marks
``chat`` is no model call). A value no vocabulary defines, or of the wrong type, is no evidence either
way: it never hides what the span's other keys say. A vocabulary after the deciding evidence that
defines another meaning is a contradiction: the rule settles it, and the span is counted
(``otel_traj_span_contradictions_total``), unless the vendor's SDK writes that key from the deciding
vocabulary's own value (``Vocabulary.echoes``: LangSmith's run type). An agent name alone is no
evidence: instrumentations write it on every span of an agent's run, spans of operations they call
``unknown`` included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from otel_traj.dialects import (
    adk,
    agentops,
    any_agent,
    claude_code,
    genkit,
    haystack,
    langfuse,
    langsmith,
    llamaindex,
    logfire,
    mlflow,
    openinference,
    pydantic_ai,
    semconv,
    traceloop,
    vercel,
)
from otel_traj.dialects.vocabulary import NOT_A_STEP, Meaning, Vocabulary
from otel_traj.spanview import SpanView
from otel_traj.steps import StepKind

# Vendors' kind keys, most specific first; the conventions' operation after them and the recognizers.
VENDOR_VOCABULARIES: tuple[Vocabulary, ...] = (
    langfuse.VOCABULARY,
    openinference.VOCABULARY,
    traceloop.VOCABULARY,
    langsmith.VOCABULARY,
    traceloop.REQUEST_VOCABULARY,
    vercel.VOCABULARY,
    mlflow.VOCABULARY,
    genkit.VOCABULARY,
    agentops.VOCABULARY,
)
OPERATION_VOCABULARY = semconv.VOCABULARY
Recognizer = Callable[[SpanView, Mapping[str, Any]], Meaning | None]


class Recognition(NamedTuple):
    """A vendor's recognizer, and what a span must carry for it to have anything to say: one of
    ``keys``, or a name starting with one of ``names``."""

    recognize: Recognizer
    dialect: str
    keys: tuple[str, ...]
    names: tuple[str, ...] = ()


RECOGNIZERS: tuple[Recognition, ...] = (
    Recognition(llamaindex.recognize, llamaindex.DIALECT, (llamaindex.RUN_ID,)),
    Recognition(agentops.recognize, agentops.DIALECT, (agentops.CALL_ID,)),
    Recognition(adk.recognize, adk.DIALECT, (adk.TOOL_ARGS, adk.LLM_REQUEST)),
    Recognition(logfire.recognize, logfire.DIALECT, (logfire.TEMPLATE,)),
    Recognition(pydantic_ai.recognize, pydantic_ai.DIALECT, pydantic_ai.MARKERS, (pydantic_ai.TOOL_SPAN,)),
    Recognition(any_agent.recognize, any_agent.DIALECT, (any_agent.TOOL_ARGS, any_agent.OUTPUT)),
    Recognition(claude_code.recognize, claude_code.DIALECT, (), (claude_code.SPAN_PREFIX,)),
)
TOOL_NAME = "gen_ai.tool.name"
# Keys whose presence, with a value of the right type, shows a model call.
MODEL_TEXT_KEYS = ("gen_ai.request.model", "gen_ai.response.model", semconv.INPUT, semconv.OUTPUT)
MODEL_COUNT_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.usage.completion_tokens",
)
# Attribute keys of any vocabulary or structure; with the recognizers' keys, a span without one (and
# without a step's span name) is no step.
EVIDENCE_KEYS = frozenset(
    {
        *(v.key for v in VENDOR_VOCABULARIES),
        OPERATION_VOCABULARY.key,
        TOOL_NAME,
        *MODEL_TEXT_KEYS,
        *MODEL_COUNT_KEYS,
    }
)


class Kind(NamedTuple):
    """What the evidence says a span is, which dialect said it, and whether vocabularies disagreed."""

    kind: StepKind
    dialect: str
    contradicted: bool = False


_KINDS: dict[tuple[StepKind, str, bool], Kind] = {}
# Every key a recognizer needs (one of them, or a span name): most spans carry none. With the
# evidence keys, what ``dialects.MARKERS`` a span must carry one of to be read at all.
RECOGNIZER_KEYS = tuple(dict.fromkeys(key for r in RECOGNIZERS for key in r.keys))
_RECOGNIZER_NAMES = tuple(name for r in RECOGNIZERS for name in r.names)


def classify(view: SpanView, attrs: Mapping[str, Any]) -> Kind | None:
    """What the span is by the rule above; None for a span that is no step."""
    decided: tuple[Meaning, str] | None = None
    echoed: str | None = None
    contradicted = False
    # Each source of evidence is asked only when the span carries its key: most spans carry one
    # dialect's. (A membership test per key: ``frozenset.isdisjoint`` would walk every attribute.)
    for vocabulary in VENDOR_VOCABULARIES:
        if vocabulary.key not in attrs:
            continue
        meaning = vocabulary.meaning(view, attrs)
        if meaning is None:
            continue
        if decided is None:
            decided, echoed = (meaning, vocabulary.dialect), vocabulary.echoes
        elif meaning != decided[0]:
            contradicted = True
    if decided is None:
        decided = _recognized(view, attrs)
    operation = OPERATION_VOCABULARY.meaning(view, attrs) if echoed != OPERATION_VOCABULARY.key else None
    if operation is not None:
        if decided is None:
            decided = operation, semconv.DIALECT
        elif operation != decided[0]:
            contradicted = True
    if decided is None:
        kind = _structure(view, attrs)
        if kind is not None:
            return _kind(kind, semconv.DIALECT, False)
        kind = haystack.kind(view.name, attrs)
        return _kind(kind, haystack.DIALECT, False) if kind is not None else None
    meaning, dialect = decided
    return None if meaning == NOT_A_STEP else _kind(meaning, dialect, contradicted)


def _kind(kind: StepKind, dialect: str, contradicted: bool) -> Kind:
    """The few (kind, dialect, contradicted) there are, made once: one is needed for every step span."""
    key = (kind, dialect, contradicted)
    found = _KINDS.get(key)
    if found is None:
        found = _KINDS[key] = Kind(kind, dialect, contradicted)
    return found


def _recognized(view: SpanView, attrs: Mapping[str, Any]) -> tuple[Meaning, str] | None:
    name = view.name
    named = isinstance(name, str)
    for key in RECOGNIZER_KEYS:
        if key in attrs:
            break
    else:
        if not (named and name.startswith(_RECOGNIZER_NAMES)):
            return None
    for recognition in RECOGNIZERS:
        for key in recognition.keys:
            if key in attrs:
                break
        else:
            if not (recognition.names and named and name.startswith(recognition.names)):
                continue
        kind = recognition.recognize(view, attrs)
        if kind is not None:
            return kind, recognition.dialect
    return None


def _structure(view: SpanView, attrs: Mapping[str, Any]) -> StepKind | None:
    resource = view.resource
    name = attrs.get(TOOL_NAME)
    if isinstance(name, str) and name and resource.get(TOOL_NAME) != name:
        return "tool"
    for key in MODEL_TEXT_KEYS:
        text = attrs.get(key)
        if isinstance(text, str) and text and resource.get(key) != text:
            return "model"
    for key in MODEL_COUNT_KEYS:
        count = attrs.get(key)
        if _count(count) and resource.get(key) != count:
            return "model"
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def vocabulary_rows() -> list[str]:
    """The recognition table of ``docs/dialects.md``: every vocabulary in precedence order, the
    values it defines and what each means (``tests/test_docs.py`` keeps the two equal)."""
    rows = [
        "| key (dialect) | tool | model | agent | not a step | depends on the span |",
        "|---|---|---|---|---|---|",
    ]
    for vocabulary in (*VENDOR_VOCABULARIES, OPERATION_VOCABULARY):
        columns: dict[str, list[str]] = {}
        for value, meaning in vocabulary.defined():
            columns.setdefault(meaning, []).append(f"`{value}`")
        cells = [", ".join(columns.get(m, ())) for m in ("tool", "model", "agent", NOT_A_STEP, "depends")]
        rows.append(f"| `{vocabulary.key}` ({vocabulary.dialect}) | " + " | ".join(cells) + " |")
    return rows
