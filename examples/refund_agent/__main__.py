"""``python -m examples.refund_agent``: replay the support tickets and grade every run as it ends.

Wiring a production agent needs only the three lines marked below; everything else here is the demo
printing what the graders saw.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from examples.refund_agent.agent import SupportAgent
from examples.refund_agent.backend import Backend
from examples.refund_agent.tickets import TICKETS, ScriptedPlanner, Ticket
from otel_traj.processor import TrajectoryProcessor
from otel_traj.reports.html import write_html
from otel_traj.serialize import verdict_to_dict
from otel_traj.sinks.base import Sink
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.store import SqliteSink
from otel_traj.verdict import Verdict

POLICY = Path(__file__).resolve().parent.parent / "policies" / "support_agent.yaml"
SERVICE = "support-agent"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m examples.refund_agent",
        description="Run the support-agent demo: seven tickets, graded while the agent runs.",
    )
    parser.add_argument(
        "--db",
        default="otel-traj.db",
        help="SQLite verdict store, started afresh on every run: the file and its -wal/-shm are deleted "
        "first, unless it holds runs of another service (default %(default)s)",
    )
    parser.add_argument("--html", default="otel-traj-report.html", help="HTML report (default %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="Prometheus metrics port (default: a free one)")
    parser.add_argument(
        "--serve-for",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep serving the Prometheus metrics this long after the tickets ran (default 0: the "
        "endpoint stops when the demo exits; Ctrl-C ends the wait)",
    )
    return parser.parse_args(argv)


def run_tickets(
    provider: TracerProvider, processor: TrajectoryProcessor, tickets: Sequence[Ticket]
) -> list[tuple[Ticket, Verdict]]:
    """Run each ticket through a fresh agent; returns each ticket with its run's verdict."""
    verdicts: dict[int, Verdict] = {}
    processor.add_callback(lambda v: verdicts.__setitem__(v.trajectory.trace_id, v))
    tracer = provider.get_tracer("examples.refund_agent", "1.0.0")
    backend = Backend()
    runs: list[tuple[Ticket, int]] = []
    for ticket in tickets:
        agent = SupportAgent(tracer, ScriptedPlanner(ticket.turns), backend.tools())
        try:
            trace_id, _ = agent.run(ticket.message, ticket.customer_id, ticket.conversation_id)
        finally:
            agent.close()
        runs.append((ticket, trace_id))
    processor.force_flush()
    return [(ticket, verdicts[trace_id]) for ticket, trace_id in runs]


def tool_path(verdict: Verdict) -> str:
    """``a & b > c (error)``: ``&`` joins calls that ran in parallel, ``>`` separates what followed."""
    groups: list[list[str]] = []
    group_end = 0
    for call in verdict.trajectory.tool_calls:
        name = call.name if call.ok else f"{call.name} (error)"
        if groups and call.start_ns < group_end:
            groups[-1].append(name)
        else:
            groups.append([name])
        group_end = max(group_end, call.end_ns)
    return " > ".join(" & ".join(g) for g in groups) or "(no tool calls)"


def format_results(results: Sequence[tuple[Ticket, Verdict]]) -> str:
    """The ticket table: outcome per run, then each failing check with its reason."""
    width = max(len(t.title) for t, _ in results)
    lines = [f"{'TICKET':<{width}}  {'AGENT':<13}  {'OUTCOME':<18}  SCORE  TOOL PATH"]
    for ticket, verdict in results:
        t = verdict.trajectory
        head = f"{ticket.title:<{width}}  {t.agent_label:<13}  {verdict.outcome:<18}  {verdict.score:.2f}"
        lines.append(f"{head}   {tool_path(verdict)}")
        for check in verdict.failed_checks:
            lines.append(f"{'':<{width}}    x {check.name} ({check.severity}): {check.reason}")
    answered = sum(1 for _, v in results if v.trajectory.final_answer)
    acceptable = sum(1 for _, v in results if v.outcome in ("pass", "pass_with_warnings"))
    lines.append("")
    lines.append(
        f"{answered} of {len(results)} runs ended with a confident answer; "
        f"{acceptable} got there by an acceptable path."
    )
    return "\n".join(lines)


def fresh_store(db: str) -> None:
    """Delete the demo's store of a previous run, so the report shows this run's tickets only.

    A store that holds runs of any other service is not the demo's (``otel-traj serve`` defaults to
    the same file name): it is kept, and the demo stops."""
    path = Path(db)
    if path.exists() and path.stat().st_size:
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                others = conn.execute(
                    "SELECT count(*) FROM trajectories WHERE service_name IS NOT ?", (SERVICE,)
                ).fetchone()[0]
        except sqlite3.Error as exc:
            raise SystemExit(f"{db}: not a store of this demo ({exc}); pass another --db") from None
        if others:
            raise SystemExit(f"{db}: holds {others} runs of other services; pass another --db")
    # A write-ahead log left without its database would be replayed into the new one.
    for leftover in (path, Path(f"{db}-wal"), Path(f"{db}-shm")):
        leftover.unlink(missing_ok=True)


def cli_command() -> str:
    """``otel-traj`` as it can be typed here: the script next to this interpreter (a venv's ``bin``,
    on PATH only when the venv is activated), relative to the working directory when inside it."""
    script = Path(sys.executable).parent / "otel-traj"
    if not script.exists():
        return f"{shlex.quote(sys.executable)} -m otel_traj.cli"
    on_path = shutil.which("otel-traj")
    if on_path and Path(on_path).resolve() == script.resolve():
        return "otel-traj"
    try:
        return shlex.quote(str(script.relative_to(Path.cwd())))
    except ValueError:
        return shlex.quote(str(script))


def _sinks(db: str) -> tuple[PrometheusSink, list[Sink], str]:
    prometheus = PrometheusSink()
    sinks: list[Sink] = [prometheus, SqliteSink(path=db)]
    langfuse = "off (set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY to send scores)"
    if os.environ.get("LANGFUSE_PUBLIC_KEY") and os.environ.get("LANGFUSE_SECRET_KEY"):
        # Imported only when configured: the langfuse package is the slowest import of the demo.
        from otel_traj.sinks.langfuse import LangfuseSink

        sink = LangfuseSink()
        sinks.append(sink)
        langfuse = f"scores sent to {sink.base_url}"
    return prometheus, sinks, langfuse


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    fresh_store(args.db)
    prometheus, sinks, langfuse = _sinks(args.db)
    port = prometheus.start_http_server(args.port)

    # The integration: a TracerProvider (usually already there) and the processor with a policy.
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    processor = TrajectoryProcessor(policy=POLICY, sinks=sinks)
    provider.add_span_processor(processor)

    try:
        results = run_tickets(provider, processor, TICKETS)
        print()
        print(format_results(results))
        print()
        write_html(args.html, [verdict_to_dict(v) for _, v in results], title="Support agent demo")
        print(f"HTML report:   {args.html}")
        print(
            f"Verdict store: {args.db}  (read it back: {cli_command()} report --store {shlex.quote(args.db)})"
        )
        print(f"Langfuse:      {langfuse}", flush=True)
        if args.serve_for > 0:
            url = f"http://127.0.0.1:{port}/metrics"
            print(f"Prometheus:    {url}  (serving for {args.serve_for:g}s, Ctrl-C to stop)", flush=True)
            time.sleep(args.serve_for)
        else:
            print("Prometheus:    metrics served only while the demo ran (--serve-for SECONDS keeps them up)")
    except KeyboardInterrupt:
        pass
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
