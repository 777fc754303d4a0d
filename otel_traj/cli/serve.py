"""``otel-traj serve``: receive OTLP traces from any language, grade them, store the verdicts."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from otel_traj import env
from otel_traj.cli.logs import LOG_FORMATS, LOG_LEVELS, configure_logging
from otel_traj.cli.report import duration_s
from otel_traj.config import AssemblerConfig
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
        help=f"policy file; without one, no checks run ({env.POLICY.cite()})",
    )
    parser.add_argument("--host", help=f"address to listen on ({env.HOST.cite()})")
    parser.add_argument("--grpc-port", type=int, help=f"OTLP/gRPC port ({env.GRPC_PORT.cite()})")
    parser.add_argument("--http-port", type=int, help=f"OTLP/HTTP port ({env.HTTP_PORT.cite()})")
    parser.add_argument(
        "--metrics-port",
        type=int,
        help=f"/metrics, /healthz, /readyz ({env.METRICS_PORT.cite()})",
    )
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help="verdict store: a SQLite file, or a postgresql:// URL every replica writes; empty for none "
        f"({env.STORE.cite()})",
    )
    parser.add_argument(
        "--auth-token",
        help="require `Authorization: Bearer TOKEN`; every local user can read it in the process "
        f"list, prefer --auth-token-file ({env.AUTH_TOKEN.cite()})",
    )
    parser.add_argument(
        "--auth-token-file",
        metavar="FILE",
        help="require `Authorization: Bearer TOKEN`, the token read from FILE at startup "
        f"({env.AUTH_TOKEN_FILE.cite()})",
    )
    parser.add_argument(
        "--tls-cert",
        help=f"PEM certificate chain: TLS on both OTLP ports ({env.TLS_CERT.cite()})",
    )
    parser.add_argument("--tls-key", help=f"PEM private key of --tls-cert ({env.TLS_KEY.cite()})")
    parser.add_argument(
        "--tls-client-ca",
        help=f"PEM CA certificates: require client certificates they signed ({env.TLS_CLIENT_CA.cite()})",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        help=f"decompressed request limit ({env.MAX_REQUEST_BYTES.cite()})",
    )
    parser.add_argument(
        "--retry-after",
        dest="retry_after_s",
        metavar="RETRY_AFTER",
        type=float,
        help=f"seconds an overloaded receiver asks for ({env.RETRY_AFTER_S.cite()})",
    )
    parser.add_argument(
        "--grace",
        dest="grace_s",
        metavar="GRACE",
        type=float,
        help=f"seconds to wait after a trace looks complete ({env.GRACE_S.cite()})",
    )
    parser.add_argument(
        "--ttl",
        dest="ttl_s",
        metavar="TTL",
        type=float,
        help=f"seconds before an unfinished trace is graded incomplete ({env.TTL_S.cite()})",
    )
    parser.add_argument(
        "--max-traces",
        type=int,
        help=f"traces held before requests are refused, retryable ({env.MAX_TRACES.cite()})",
    )
    parser.add_argument("--max-steps", type=int, help=f"steps kept per trace ({env.MAX_STEPS.cite()})")
    parser.add_argument(
        "--store-queue",
        type=int,
        help=f"verdicts waiting for the store writer ({env.STORE_QUEUE.cite()})",
    )
    parser.add_argument(
        "--store-retention",
        dest="store_retention_s",
        type=duration_s,
        metavar="DURATION",
        help="a PostgreSQL store deletes runs older than this (30d, 12h or seconds), in batches; 0 keeps "
        f"them ({env.STORE_RETENTION.cite()})",
    )
    parser.add_argument(
        "--mcp",
        action="store_true",
        default=None,
        help="also serve the MCP server over the store at /mcp on the OTLP/HTTP port, behind the "
        f"bearer token ({env.MCP.cite()})",
    )
    parser.add_argument(
        "--emit-otel",
        metavar="URL",
        help=f"export gen_ai.evaluation.result events over OTLP/HTTP to URL/v1/logs ({env.EMIT_OTEL.cite()})",
    )
    parser.add_argument(
        "--conversations-from",
        choices=CONVERSATIONS_FROM,
        help="grade conversations from the traces this service grades, from the trace summaries "
        "received on /v1/logs and LogsService (a fleet's conversation tier), or from every replica's "
        "summaries in the PostgreSQL --store, each claimed by one replica when idle "
        f"({env.CONVERSATIONS_FROM.cite()})",
    )
    parser.add_argument(
        "--log-level",
        default=env.LOG_LEVEL.read().upper(),
        choices=LOG_LEVELS,
        help=f"least severe log records written to stderr ({env.LOG_LEVEL.cite()})",
    )
    parser.add_argument(
        "--log-format",
        default=env.LOG_FORMAT.read(),
        choices=LOG_FORMATS,
        help=f"text, or one JSON object per line for log pipelines ({env.LOG_FORMAT.cite()})",
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
        (env.LOG_LEVEL.name, args.log_level, LOG_LEVELS),
        (env.LOG_FORMAT.name, args.log_format, LOG_FORMATS),
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
        with env.strict_settings():
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
