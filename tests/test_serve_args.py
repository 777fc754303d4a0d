"""``otel-traj serve`` flags: each one overrides the settings field it is named after; the rest keep their
environment-variable defaults."""

from __future__ import annotations

import argparse

import pytest

from otel_traj.cli import serve
from otel_traj.config import AssemblerConfig
from otel_traj.serve.settings import ServeSettings

FLAGS = [
    "--policy=p.yaml",
    "--host=0.0.0.0",
    "--grpc-port=14317",
    "--http-port=14318",
    "--metrics-port=19464",
    "--store=v.db",
    "--auth-token=secret",
    "--tls-cert=c.pem",
    "--tls-key=k.pem",
    "--max-request-bytes=2048",
    "--retry-after=2.5",
    "--grace=0.25",
    "--ttl=30",
    "--max-traces=7",
    "--max-steps=9",
    "--store-queue=11",
    "--emit-otel=http://collector:4318",
]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.register(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_every_flag_sets_its_field() -> None:
    settings = serve.settings_from_args(parse(*FLAGS))
    assert settings == ServeSettings(
        policy="p.yaml",
        host="0.0.0.0",
        grpc_port=14317,
        http_port=14318,
        metrics_port=19464,
        store="v.db",
        auth_token="secret",
        tls_cert="c.pem",
        tls_key="k.pem",
        max_request_bytes=2048,
        retry_after_s=2.5,
        store_queue=11,
        emit_otel="http://collector:4318",
        assembler=AssemblerConfig(grace_s=0.25, ttl_s=30.0, max_traces=7, max_steps=9),
    )


def test_unset_flags_keep_the_environment_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRAJ_GRPC_PORT", "24317")
    monkeypatch.setenv("OTEL_TRAJ_TTL_S", "45")
    settings = serve.settings_from_args(parse("--http-port=0"))
    assert (settings.grpc_port, settings.http_port, settings.assembler.ttl_s) == (24317, 0, 45.0)
    assert settings == ServeSettings(http_port=0)


def test_log_format_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse().log_format == "text"
    monkeypatch.setenv("OTEL_TRAJ_LOG_FORMAT", "json")
    assert parse().log_format == "json"
    assert parse("--log-format=text").log_format == "text"


def test_an_invalid_log_format_in_the_environment_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_TRAJ_LOG_FORMAT", "jsonl")
    assert serve.run(parse()) == 2
    assert "OTEL_TRAJ_LOG_FORMAT='jsonl': expected one of text, json" in capsys.readouterr().err
