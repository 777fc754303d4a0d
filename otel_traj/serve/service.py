"""``otel-traj serve``: the receivers, the pipeline and its sinks, and their lifecycle.

Threads: grpcio's pool serves gRPC; one asyncio loop runs two uvicorn servers (OTLP/HTTP and the
operations port); the pipeline's worker grades; each sink delivers on its own thread. The main thread
only waits for signals: SIGTERM/SIGINT stop the service gracefully, SIGHUP reloads the policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import faulthandler
import gc
import logging
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

import uvicorn
from prometheus_client import CollectorRegistry

from otel_traj import env
from otel_traj.adapters.log_events import PendingEvents
from otel_traj.judge.sink import JudgeSink
from otel_traj.outputs import Outputs, build_sinks
from otel_traj.pipeline import Pipeline
from otel_traj.policy import PolicyError
from otel_traj.serve.connections import RequestLimit
from otel_traj.serve.conversation_source import conversations_for
from otel_traj.serve.grpc_receiver import GrpcReceiver
from otel_traj.serve.health import HealthApp, register_service_metrics
from otel_traj.serve.http_receiver import OtlpHttpApp
from otel_traj.serve.ingest import Ingest
from otel_traj.serve.listen import PortUnavailable, listen
from otel_traj.serve.logs import LogIngest, LogsCollector
from otel_traj.serve.mcp_mount import McpMount
from otel_traj.serve.policy_holder import PolicyHolder
from otel_traj.serve.servers import DRAIN_S, OPERATIONS_SERVER, uvicorn_config
from otel_traj.serve.settings import ServeSettings
from otel_traj.serve.slots import Busy
from otel_traj.serve.tls import ServedCertificate, load_tls
from otel_traj.sinks.base import Sink
from otel_traj.sinks.prometheus import PrometheusSink
from otel_traj.sinks.prometheus_health import register_pipeline_health
from otel_traj.sinks.store import SqliteSink
from otel_traj.sinks.store_postgres import PostgresSink
from otel_traj.stats import PipelineStats

logger = logging.getLogger("otel_traj.serve")


# Every request allocates a burst of short-lived objects (views, attribute dicts, steps). With the
# default gen0 threshold of 700 the collector ran about 200 times per 20,000 spans received and took
# 5-8% of the service's time. Reference counting frees nearly all of them; what the young generation
# still counts is the growth of runs in flight and verdicts waiting for the store, which the collector
# would only traverse and keep. At 10,000 a burst of 4,800 runs still set off 15 collections (3% of
# the time, 6 ms each); at 100,000 none in six such bursts in a row (RSS flat at 290 MB), and a
# collection, when one comes, traverses ten times as much (≈ 60 ms).
GC_GEN0_THRESHOLD = 100_000

# Requests whose body is complete waiting for or being decoded on the OTLP/HTTP port (those whose body
# is still arriving are bounded by max_arriving), and requests in progress on the operations port
# (/metrics; the probes are not counted); beyond them 503.
HTTP_REQUESTS = 1024
OPERATIONS_REQUESTS = 64
PROBES = ("/healthz", "/readyz")


def tune_gc() -> None:
    """Garbage-collector settings of the ``serve`` process (process-wide: the service owns it).

    What exists after startup (modules, the policy, compiled schemas) lives as long as the process:
    frozen, it is no longer traversed by every full collection.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


@dataclass(slots=True, frozen=True)
class Ports:
    grpc: int
    http: int
    metrics: int


def langfuse_configured() -> bool:
    return bool(env.LANGFUSE_PUBLIC_KEY.read() and env.LANGFUSE_SECRET_KEY.read())


class Service:
    """Everything ``serve`` runs. ``start()`` binds and returns the ports; ``stop()`` drains."""

    def __init__(self, settings: ServeSettings, extra_sinks: tuple[Sink, ...] = ()) -> None:
        self.settings = settings
        self.tls = (
            ServedCertificate(load_tls(settings.tls_cert, settings.tls_key, settings.tls_client_ca))
            if settings.tls_cert and settings.tls_key
            else None
        )
        # Read once: a token file changed later takes effect on restart, as the flag would.
        self.auth_token = settings.bearer_token()
        self._mcp = (
            McpMount(store=settings.store, host=settings.host, auth_token=self.auth_token)
            if settings.mcp and settings.store
            else None
        )
        self.stats = PipelineStats()
        self.policy = PolicyHolder(settings.policy, self.stats)
        self.prometheus = PrometheusSink()
        policy = self.policy.policy
        built = build_sinks(
            Outputs(
                store=settings.store,
                store_queue=settings.store_queue,
                store_retention=settings.store_retention_s,
                langfuse=langfuse_configured(),
                emit_otel=settings.emit_otel,
                # Each run meets the judges of the policy in force when it was graded.
                judges=policy is not None and policy.has_judges(),
            ),
            policy=lambda: self.policy.policy,
            redact=self.policy.is_sensitive,
            before=(self.prometheus,),
            after=extra_sinks,
        )
        sinks = built.sinks
        self.store: SqliteSink | PostgresSink | None = built.store
        self.judges: JudgeSink | None = built.judges
        from_logs = settings.conversations_from == "logs"
        source = settings.conversations_from
        self.conversations = conversations_for(source, lambda: self.policy.policy, self.stats, self.store)
        config = self.policy.assembler_config(settings.assembler)
        self.pipeline = Pipeline(
            grade=self.policy.grade,
            grade_all=self.policy.grade_all,
            sinks=sinks,
            config=config,
            stats=self.stats,
            live=self.policy.live,
            conversations=self.conversations,
        )
        # GenAI events received as log records wait here for their spans (bounded; what is lost is
        # counted as dropped{reason="log_events"}).
        events = PendingEvents.within(config, self.stats)
        self.ingest = Ingest(self.pipeline, settings.retry_after_s, events)
        self.logs = LogIngest(self.conversations, from_logs, settings.retry_after_s, events)
        registry: CollectorRegistry = self.prometheus.registry
        register_service_metrics(registry, self.ingest.stats, self.tls, self._starvations)
        registry.register(LogsCollector(self.logs))
        register_pipeline_health(registry, self.stats, *(sink.stats for sink in sinks))
        self._ready = False
        self._stopped = False
        self._grpc: GrpcReceiver | None = None
        self._http_app: OtlpHttpApp | None = None
        self._servers: list[uvicorn.Server] = []
        self._loop_thread: threading.Thread | None = None
        self._health = HealthApp(registry, self._not_ready, self._health_lines)

    def _health_lines(self) -> list[str]:
        """What ``/healthz`` adds to ``ok``: a store server's state (``/readyz`` does not depend on it)."""
        return [self.store.state().describe()] if isinstance(self.store, PostgresSink) else []

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Ports:
        s = self.settings
        self._grpc = GrpcReceiver(
            self.ingest,
            s.host,
            s.grpc_port,
            self.auth_token,
            s.max_request_bytes,
            s.grpc_workers,
            self.tls,
            logs=self.logs,
            body_timeout_s=s.body_timeout_s,
            max_arriving=s.max_arriving,
        )
        # Every port is bound before anything is served: a port already taken stops startup with
        # nothing started.
        http_sock: socket.socket | None = None
        try:
            http_sock = listen("http_port", s.host, s.http_port)
            metrics_sock = listen("metrics_port", s.host, s.metrics_port)
        except PortUnavailable:
            if http_sock is not None:
                http_sock.close()
            self._grpc.stop(0)
            self._grpc = None
            raise
        self._grpc.start()
        self._http_app = OtlpHttpApp(
            self.ingest,
            self.auth_token,
            s.max_request_bytes,
            logs=self.logs,
            body_timeout_s=s.body_timeout_s,
            min_body_rate=s.min_body_rate,
            max_arriving=s.max_arriving,
            max_decoding=HTTP_REQUESTS,
        )
        # Limits count requests, never idle connections (which the idle timeout closes); the OTLP
        # port's are the app's own (bodies arriving apart from requests decoded); the probes are
        # outside the operations port's limit.
        operations_app = RequestLimit(self._health, OPERATIONS_REQUESTS, exempt=PROBES)
        self._servers = [
            uvicorn.Server(
                uvicorn_config(
                    self._mcp.beside(self._http_app) if self._mcp else self._http_app,
                    s.idle_timeout_s,
                    tls=self.tls,
                )
            ),
            uvicorn.Server(uvicorn_config(operations_app, s.idle_timeout_s)),
        ]
        started = threading.Event()
        failure: list[BaseException] = []
        self._loop_thread = threading.Thread(
            target=self._serve_http,
            args=([http_sock, metrics_sock], started, failure),
            name="otel-traj-http",
            daemon=True,
        )
        self._loop_thread.start()
        started.wait()
        if failure:
            raise RuntimeError("HTTP servers failed to start") from failure[0]
        self._ready = True
        return Ports(self._grpc.port, http_sock.getsockname()[1], metrics_sock.getsockname()[1])

    def _serve_http(
        self, socks: list[socket.socket], started: threading.Event, failure: list[BaseException]
    ) -> None:
        async def main() -> None:
            # The MCP server's task group runs before any request can reach it.
            async with self._mcp.running() if self._mcp else contextlib.nullcontext():
                operations = contextvars.copy_context()
                operations.run(OPERATIONS_SERVER.set, True)
                http_server, operations_server = self._servers
                http_sock, operations_sock = socks
                tasks = [
                    asyncio.create_task(http_server.serve(sockets=[http_sock])),
                    asyncio.create_task(
                        operations_server.serve(sockets=[operations_sock]), context=operations
                    ),
                ]
                # uvicorn exposes no startup hook for servers it does not own; poll its flag briefly.
                while not all(server.started for server in self._servers):
                    if any(task.done() for task in tasks):
                        break
                    await asyncio.sleep(0.005)
                started.set()
                await asyncio.gather(*tasks)

        try:
            asyncio.run(main())
        except BaseException as exc:
            failure.append(exc)
            logger.exception("HTTP servers stopped")
        finally:
            started.set()

    def _busy(self) -> dict[str, Busy]:
        busy = {}
        if self._grpc is not None:
            busy["grpc"] = self._grpc.busy
        if self._http_app is not None:
            busy["http"] = self._http_app.busy
        return busy

    def _not_ready(self) -> str | None:
        if not self._ready:
            return "shutting down"
        starved = [transport for transport, busy in self._busy().items() if busy.starved()]
        if starved:
            return "starved: every decoding slot held past the body timeout (" + ", ".join(starved) + ")"
        return None

    def _starvations(self) -> dict[str, int]:
        """Episodes of starvation by transport, the current state looked at first."""
        counts = {"grpc": 0, "http": 0}
        for transport, busy in self._busy().items():
            busy.starved()
            counts[transport] = busy.starvations
        return counts

    def reload_policy(self) -> bool:
        """SIGHUP: load the policy file again; an invalid file keeps the old policy (logged, counted)."""
        if self.policy.path is None:
            logger.warning("SIGHUP ignored: the service was started without --policy")
            return False
        try:
            self.policy.reload(self.pipeline.assembler.config.capture_attributes, self.judges is not None)
        except PolicyError as exc:
            self.ingest.stats.count_reload(ok=False)
            logger.error("policy reload failed, keeping %s: %s", self._policy_version(), exc)
            return False
        self.ingest.stats.count_reload(ok=True)
        return True

    def _policy_version(self) -> str:
        policy = self.policy.policy
        return policy.policy_version if policy is not None else "no policy"

    def stop(self) -> None:
        """Stop accepting, finish calls in progress, grade what is buffered, flush the sinks."""
        if self._stopped:
            return
        self._stopped = True
        self._ready = False
        self.ingest.close()
        self.logs.close()
        if self._grpc is not None:
            self._grpc.stop(DRAIN_S)
        if self._servers:
            self._servers[0].should_exit = True
        self.conversations.close()  # its last claims' verdicts go out with the pipeline's shutdown
        self.pipeline.shutdown()
        # Events still waiting name spans that never came: lost, and counted as such.
        self.ingest.events.discard()
        # The operations port goes last: /metrics stays scrapeable while the pipeline drains.
        for server in self._servers:
            server.should_exit = True
        if self._loop_thread is not None:
            self._loop_thread.join()
        if self._http_app is not None:
            self._http_app.close()

    def run(self, on_started: Callable[[Ports], None]) -> int:
        """Start, then block until SIGTERM or SIGINT (SIGHUP reloads the policy; SIGUSR1 writes every
        thread's stack to stderr, for a service that seems stuck); returns 0."""
        wake = threading.Event()
        pending: list[int] = []

        def handle(signum: int, frame: FrameType | None) -> None:
            pending.append(signum)
            wake.set()

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, handle)
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        tune_gc()
        ports = self.start()
        on_started(ports)
        while True:
            wake.wait()
            wake.clear()
            while pending:
                signum = pending.pop(0)
                if signum == signal.SIGHUP:
                    self.reload_policy()
                    continue
                logger.info("received %s, shutting down", signal.Signals(signum).name)
                self.stop()
                return 0
