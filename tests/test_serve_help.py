"""``otel-traj serve --help``: every option names its environment variable and its default, and both
are the ones the settings really read."""

from __future__ import annotations

import os
import re

import pytest

from otel_traj.cli import main, serve
from tests.test_serve_args import parse

ENV_DEFAULT = re.compile(r"\(env (OTEL_TRAJ_\w+), default ([^):]+)")
# option -> (environment variable, a value for it, how to read the value back from the parsed flags)
SETTINGS = {
    "--policy": ("OTEL_TRAJ_POLICY", "p.yaml", lambda s: s.policy),
    "--host": ("OTEL_TRAJ_HOST", "0.0.0.0", lambda s: s.host),
    "--grpc-port": ("OTEL_TRAJ_GRPC_PORT", "14317", lambda s: s.grpc_port),
    "--http-port": ("OTEL_TRAJ_HTTP_PORT", "14318", lambda s: s.http_port),
    "--metrics-port": ("OTEL_TRAJ_METRICS_PORT", "19464", lambda s: s.metrics_port),
    "--store": ("OTEL_TRAJ_STORE", "v.db", lambda s: s.store),
    "--auth-token": ("OTEL_TRAJ_AUTH_TOKEN", "secret", lambda s: s.auth_token),
    "--auth-token-file": ("OTEL_TRAJ_AUTH_TOKEN_FILE", None, lambda s: s.auth_token_file),
    "--tls-cert": ("OTEL_TRAJ_TLS_CERT", None, lambda s: s.tls_cert),
    "--tls-key": ("OTEL_TRAJ_TLS_KEY", None, lambda s: s.tls_key),
    "--tls-client-ca": ("OTEL_TRAJ_TLS_CLIENT_CA", None, lambda s: s.tls_client_ca),
    "--max-request-bytes": ("OTEL_TRAJ_MAX_REQUEST_BYTES", "2048", lambda s: s.max_request_bytes),
    "--retry-after": ("OTEL_TRAJ_RETRY_AFTER_S", "2.5", lambda s: s.retry_after_s),
    "--grace": ("OTEL_TRAJ_GRACE_S", "0.25", lambda s: s.assembler.grace_s),
    "--ttl": ("OTEL_TRAJ_TTL_S", "30", lambda s: s.assembler.ttl_s),
    "--max-traces": ("OTEL_TRAJ_MAX_TRACES", "7", lambda s: s.assembler.max_traces),
    "--max-steps": ("OTEL_TRAJ_MAX_STEPS", "9", lambda s: s.assembler.max_steps),
    "--store-queue": ("OTEL_TRAJ_STORE_QUEUE", "11", lambda s: s.store_queue),
    "--store-retention": ("OTEL_TRAJ_STORE_RETENTION", "3600", lambda s: s.store_retention_s),
    "--emit-otel": ("OTEL_TRAJ_EMIT_OTEL", "http://c:4318", lambda s: s.emit_otel),
    "--mcp": ("OTEL_TRAJ_MCP", "true", lambda s: s.mcp),
    "--conversations-from": ("OTEL_TRAJ_CONVERSATIONS_FROM", "logs", lambda s: s.conversations_from),
}
LOGGING = {"--log-level": ("OTEL_TRAJ_LOG_LEVEL", "debug"), "--log-format": ("OTEL_TRAJ_LOG_FORMAT", "json")}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in os.environ:
        if name.startswith("OTEL_TRAJ_"):
            monkeypatch.delenv(name)
    return monkeypatch


def options_help(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Each option of ``serve --help`` and its help text, on one line."""
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out.split("\noptions:\n", 1)[1]
    entries = re.split(r"\n  (?=-)", "\n" + text)[1:]
    options = {}
    for entry in entries:
        words = entry.split()
        name = words[0].rstrip(",")
        options[name] = " ".join(words)
    return options


def test_every_option_names_its_env_var_and_default(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    options = options_help(capsys)
    assert set(options) == {"-h", *SETTINGS, *LOGGING}
    for option, (env, *_) in {**SETTINGS, **LOGGING}.items():
        match = ENV_DEFAULT.search(options[option])
        assert match is not None, (option, options[option])
        assert match.group(1) == env, option


def test_the_defaults_named_are_the_real_ones(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    options = options_help(capsys)
    args = parse()
    settings = serve.settings_from_args(args)
    for option, (_, _, read) in SETTINGS.items():
        match = ENV_DEFAULT.search(options[option])
        assert match is not None
        named, actual = match.group(2), read(settings)
        if actual is None:
            assert named == "none", option
        elif isinstance(actual, bool):
            assert named == ("on" if actual else "off"), option
        elif isinstance(actual, str):
            assert named == actual, option
        else:
            assert float(named) == actual, option
    assert "default INFO" in options["--log-level"] and args.log_level == "INFO"
    assert "default text" in options["--log-format"] and args.log_format == "text"


def test_each_env_var_named_sets_its_option(clean_env: pytest.MonkeyPatch) -> None:
    for option, (env, value, read) in SETTINGS.items():
        if value is None:  # the TLS files are checked together; test_serve_tls covers them
            continue
        clean_env.setenv(env, value)
        actual = read(serve.settings_from_args(parse()))
        assert actual is not None and actual == type(actual)(value), option
    for env, value in LOGGING.values():
        clean_env.setenv(env, value)
    args = parse()
    assert (args.log_level, args.log_format) == ("DEBUG", "json")


def test_a_log_level_from_the_environment_is_checked(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.setenv("OTEL_TRAJ_LOG_LEVEL", "loud")
    assert parse().log_level == "LOUD"
    assert main(["serve"]) == 2
    assert (
        "OTEL_TRAJ_LOG_LEVEL='LOUD': expected one of DEBUG, INFO, WARNING, ERROR" in capsys.readouterr().err
    )
