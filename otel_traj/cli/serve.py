"""``otel-traj serve``: receive OTLP traces from any language, grade them, store the verdicts."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from otel_traj.cli.logs import LOG_FORMATS, LOG_LEVELS, configure_logging
from otel_traj.config import AssemblerConfig, env_str, strict_settings
from otel_traj.policy import PolicyError
from otel_traj.serve.settings import CONVERSATIONS_FROM, ServeSettings
from otel_traj.sinks.store import StoreError

if TYPE_CHECKING:
    from otel_traj.serve.service import Ports

STARTED = "otel-traj serve: listening grpc={host}:{grpc} http={host}:{http} metrics={host}:{metrics}"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="receive OTLP traces, grade them, store the verdicts",
        description="An OTLP receiver (gRPC and HTTP, protobuf and JSON) that grades each trace's "
        "trajectory. Flags default to OTEL_TRAJ_* environment variables; port 0 picks a free port. "
        "SIGHUP reloads the policy; SIGTERM drains, grades what is buffered and exits.",
    )
    parser.add_argument(
        "--policy",
        help="policy file; without one, no checks run (env OTEL_TRAJ_POLICY, default none)",
    )
    parser.add_argument("--host", help="address to listen on (env OTEL_TRAJ_HOST, default 127.0.0.1)")
    parser.add_argument(
        "--grpc-port", type=int, help="OTLP/gRPC port (env OTEL_TRAJ_GRPC_PORT, default 4317)"
    )
    parser.add_argument(
        "--http-port", type=int, help="OTLP/HTTP port (env OTEL_TRAJ_HTTP_PORT, default 4318)"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        help="/metrics, /healthz, /readyz (env OTEL_TRAJ_METRICS_PORT, default 9464)",
    )
    parser.add_argument(
        "--store",
        help="SQLite verdict store, empty for none (env OTEL_TRAJ_STORE, default otel-traj.db)",
    )
    parser.add_argument(
        "--auth-token",
        help="require `Authorization: Bearer TOKEN`; every local user can read it in the process "
        "list, prefer --auth-token-file (env OTEL_TRAJ_AUTH_TOKEN, default none)",
    )
    parser.add_argument(
        "--auth-token-file",
        metavar="FILE",
        help="require `Authorization: Bearer TOKEN`, the token read from FILE at startup "
        "(env OTEL_TRAJ_AUTH_TOKEN_FILE, default none)",
    )
    parser.add_argument(
        "--tls-cert",
        help="PEM certificate chain: TLS on both OTLP ports (env OTEL_TRAJ_TLS_CERT, default none)",
    )
    parser.add_argument(
        "--tls-key", help="PEM private key of --tls-cert (env OTEL_TRAJ_TLS_KEY, default none)"
    )
    parser.add_argument(
        "--tls-client-ca",
        help="PEM CA certificates: require client certificates they signed "
        "(env OTEL_TRAJ_TLS_CLIENT_CA, default none)",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        help="decompressed request limit (env OTEL_TRAJ_MAX_REQUEST_BYTES, default 16777216: 16 MiB)",
    )
    parser.add_argument(
        "--retry-after",
        dest="retry_after_s",
        metavar="RETRY_AFTER",
        type=float,
        help="seconds an overloaded receiver asks for (env OTEL_TRAJ_RETRY_AFTER_S, default 1)",
    )
    parser.add_argument(
        "--grace",
        dest="grace_s",
        metavar="GRACE",
        type=float,
        help="seconds to wait after a trace looks complete (env OTEL_TRAJ_GRACE_S, default 0.5)",
    )
    parser.add_argument(
        "--ttl",
        dest="ttl_s",
        metavar="TTL",
        type=float,
        help="seconds before an unfinished trace is graded incomplete (env OTEL_TRAJ_TTL_S, default 600)",
    )
    parser.add_argument(
        "--max-traces",
        type=int,
        help="traces held before requests are refused, retryable (env OTEL_TRAJ_MAX_TRACES, default 10000)",
    )
    parser.add_argument(
        "--max-steps", type=int, help="steps kept per trace (env OTEL_TRAJ_MAX_STEPS, default 1000)"
    )
    parser.add_argument(
        "--store-queue",
        type=int,
        help="verdicts waiting for the store writer (env OTEL_TRAJ_STORE_QUEUE, default 10000)",
    )
    parser.add_argument(
        "--emit-otel",
        metavar="URL",
        help="export gen_ai.evaluation.result events over OTLP/HTTP to URL/v1/logs "
        "(env OTEL_TRAJ_EMIT_OTEL, default none)",
    )
    parser.add_argument(
        "--conversations-from",
        choices=CONVERSATIONS_FROM,
        help="grade conversations from the traces this service grades, or from the trace summaries "
        "received on /v1/logs and LogsService (a fleet's conversation tier) "
        "(env OTEL_TRAJ_CONVERSATIONS_FROM, default traces)",
    )
    parser.add_argument(
        "--log-level",
        default=(env_str("OTEL_TRAJ_LOG_LEVEL", "INFO") or "INFO").upper(),
        choices=LOG_LEVELS,
        help="least severe log records written to stderr (env OTEL_TRAJ_LOG_LEVEL, default INFO)",
    )
    parser.add_argument(
        "--log-format",
        default=env_str("OTEL_TRAJ_LOG_FORMAT", "text"),
        choices=LOG_FORMATS,
        help="text, or one JSON object per line for log pipelines (env OTEL_TRAJ_LOG_FORMAT, default text)",
    )
    parser.set_defaults(run=run)


def _given(settings: type[ServeSettings | AssemblerConfig], args: argparse.Namespace) -> dict[str, Any]:
    """The fields of ``settings`` set on the command line: a flag's dest is its field's name, and an
    unset flag is None and leaves the field's default (environment variable) alone."""
    values = ((f.name, getattr(args, f.name, None)) for f in fields(settings))
    return {name: value for name, value in values if value is not None}


def settings_from_args(args: argparse.Namespace) -> ServeSettings:
    assembler = replace(AssemblerConfig(), **_given(AssemblerConfig, args))
    return ServeSettings(assembler=assembler, **_given(ServeSettings, args))


def run(args: argparse.Namespace) -> int:
    # Only the environment can get here: argparse checks a flag's value against its choices.
    for name, value, choices in (
        ("OTEL_TRAJ_LOG_LEVEL", args.log_level, LOG_LEVELS),
        ("OTEL_TRAJ_LOG_FORMAT", args.log_format, LOG_FORMATS),
    ):
        if value not in choices:
            print(
                f"otel-traj serve: {name}={value!r}: expected one of " + ", ".join(choices), file=sys.stderr
            )
            return 2
    configure_logging(args.log_level, args.log_format)
    # The receivers bring grpc and uvicorn: every other command, and `serve --help`, goes without.
    from otel_traj.serve.service import Service

    try:
        # A service refuses to start on a bad OTEL_TRAJ_* value (a library logs it and goes on).
        with strict_settings():
            settings = settings_from_args(args)
            service = Service(settings)
    except (ValueError, PolicyError, StoreError, OSError) as exc:
        print(f"otel-traj serve: {exc}", file=sys.stderr)
        return 2

    def started(ports: Ports) -> None:
        host = settings.host
        line = STARTED.format(host=host, grpc=ports.grpc, http=ports.http, metrics=ports.metrics)
        if settings.tls_cert:
            mutual = ", client certificates required" if settings.tls_client_ca else ""
            line += f" (TLS on the OTLP ports{mutual})"
        print(line, flush=True)

    from otel_traj.serve.listen import PortUnavailable

    try:
        return service.run(started)
    except PortUnavailable as exc:
        flag = "--" + exc.setting.replace("_", "-")
        print(f"otel-traj serve: {flag} {exc.port}: {exc.reason} (--host {exc.host})", file=sys.stderr)
        service.stop()
        return 2
    except OSError as exc:
        print(f"otel-traj serve: {exc}", file=sys.stderr)
        service.stop()
        return 2
