"""Run one framework example with an exporter beside the processor; print both trajectories as JSON.

    python -m tests.inprocess_run examples.pydantic_ai_agent

The example builds its own ``TracerProvider``; this swaps the class in the example's namespace for
one that also records every span with an ``InMemorySpanExporter``, so the very spans the processor
graded in-process can be encoded as OTLP and rebuilt offline.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any, ClassVar

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_traj.adapters.otlp_proto import views_from_bytes
from otel_traj.offline import trajectories_from_views
from otel_traj.serialize import trajectory_to_dict


class RecordingProvider(TracerProvider):
    exporters: ClassVar[list[InMemorySpanExporter]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        exporter = InMemorySpanExporter()
        self.add_span_processor(SimpleSpanProcessor(exporter))
        RecordingProvider.exporters.append(exporter)


def main(module_name: str) -> None:
    module = importlib.import_module(module_name)
    module.TracerProvider = RecordingProvider  # type: ignore[attr-defined]
    verdicts = module.main()
    spans = [s for e in RecordingProvider.exporters for s in e.get_finished_spans()]
    offline = trajectories_from_views(views_from_bytes(encode_spans(spans).SerializeToString()))
    print(
        json.dumps(
            {
                "in_process": [trajectory_to_dict(v.trajectory) for v in verdicts],
                "offline": [trajectory_to_dict(t) for t in offline],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
