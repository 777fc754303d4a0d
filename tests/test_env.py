"""``otel_traj/env.py`` declares every environment variable otel-traj reads: the settings table of
docs/reliability.md is generated from it, no module reads an ``OTEL_TRAJ_*`` variable it does not
declare, and a variable is read when its object is made, bounded as the constructor argument is."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from otel_traj import env
from otel_traj.env import SettingError, strict_settings

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"OTEL_TRAJ_[A-Z0-9_]+")
DECLARED = {variable.name for variable in env.VARIABLES}


def _sources() -> list[Path]:
    return sorted((ROOT / "otel_traj").rglob("*.py"))


def test_the_settings_table_is_the_declarations() -> None:
    text = (ROOT / "docs" / "reliability.md").read_text()
    documented = text.split("<!-- settings-table -->\n", 1)[1].split("\n<!-- /settings-table -->", 1)[0]
    assert documented == "\n".join(env.docs_rows())


def test_every_otel_traj_variable_the_source_names_is_declared() -> None:
    undeclared = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in _sources()
        for name in NAME.findall(path.read_text())
        if name not in DECLARED
    }
    assert not undeclared


def test_every_otel_traj_variable_the_docs_name_is_declared() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    undeclared = {
        f"{page.name}: {name}"
        for page in pages
        for name in NAME.findall(page.read_text())
        if name not in DECLARED
    }
    assert not undeclared


def test_every_declaration_is_read_somewhere() -> None:
    code = "\n".join(path.read_text() for path in _sources() if path.name != "env.py")
    attributes = {value.name: attr for attr, value in vars(env).items() if isinstance(value, env.Variable)}
    assert set(attributes) == DECLARED, "every declaration is a module attribute of otel_traj.env"
    unread = [name for name, attr in attributes.items() if f"env.{attr}." not in code]
    assert not unread


def test_only_the_declarations_read_the_environment() -> None:
    readers = [
        str(path.relative_to(ROOT))
        for path in _sources()
        if path.name != "env.py" and re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text())
    ]
    assert readers == []


def test_every_declaration_is_documented_where_it_is_described() -> None:
    text = (ROOT / "docs" / "reliability.md").read_text().split("<!-- /settings-table -->", 1)[1]
    assert not [name for name in DECLARED if f"`{name}`" not in text]


def test_names_are_unique_and_defaults_are_values_of_their_kind() -> None:
    assert len(DECLARED) == len(env.VARIABLES)
    for variable in env.VARIABLES:
        assert variable.doc and variable.kind.label, variable.name
        if variable.default is not None:
            assert variable.kind.accepts(variable.default), variable.name


def test_a_variable_is_read_when_asked_not_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_TRAJ_STORE_QUEUE", raising=False)
    assert env.STORE_QUEUE.read() == 10_000
    monkeypatch.setenv("OTEL_TRAJ_STORE_QUEUE", " 25 ")
    assert env.STORE_QUEUE.read() == 25
    monkeypatch.setenv("OTEL_TRAJ_STORE_QUEUE", "  ")
    assert env.STORE_QUEUE.read() == 10_000


@pytest.mark.parametrize(
    ("variable", "raw", "expected"),
    [
        (env.STORE_QUEUE, "0", "an integer >= 1"),
        (env.PROMETHEUS_MAX_TOOLS, "-1", "an integer >= 0"),
        (env.GRPC_PORT, "70000", "a port from 0 to 65535"),
        (env.GRACE_S, "inf", "a finite number of seconds >= 0"),
        (env.IDLE_TIMEOUT_S, "0", "a finite number of seconds > 0"),
        (env.MAX_STEPS, "1.5", "an integer >= 1"),
    ],
)
def test_a_bad_value_is_logged_in_a_library_and_refused_in_a_service(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    variable: env.Variable[object],
    raw: str,
    expected: str,
) -> None:
    monkeypatch.setenv(variable.name, raw)
    with caplog.at_level(logging.WARNING, logger="otel_traj"):
        assert variable.read() == variable.default
    assert f"{variable.name}={raw!r}: expected {expected}" in caplog.text
    with strict_settings(), pytest.raises(SettingError, match=re.escape(f"{variable.name}={raw!r}")):
        variable.read()


def test_names_lists_and_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_TOOLS", " refund, lookup ,,")
    assert env.PROMETHEUS_TOOLS.read() == ["refund", "lookup"]
    monkeypatch.setenv("OTEL_TRAJ_PROMETHEUS_TOOLS", ",")
    assert env.PROMETHEUS_TOOLS.read() == []
    monkeypatch.setenv("OTEL_TRAJ_HOST", " 0.0.0.0 ")
    assert env.HOST.read() == "0.0.0.0"


def test_help_and_table_render_the_default_once_declared() -> None:
    assert env.GRACE_S.cite() == "env OTEL_TRAJ_GRACE_S, default 0.5"
    assert env.MAX_REQUEST_BYTES.cite() == "env OTEL_TRAJ_MAX_REQUEST_BYTES, default 16777216: 16 MiB"
    assert env.POLICY.cite() == "env OTEL_TRAJ_POLICY, default none"
    assert env.STORE.cite() == "env OTEL_TRAJ_STORE, default otel-traj.db"
    assert [v.default_text() for v in (env.TTL_S, env.MAX_TRACES, env.GRPC_PORT, env.MAX_EVENT_BYTES)] == [
        "600 s",
        "10,000",
        "4317",
        "64 MiB",
    ]


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (env.COUNT, 0),
        (env.COUNT, True),
        (env.COUNT, 2.0),
        (env.SIZE, -1),
        (env.PORT, 65536),
        (env.SECONDS, float("nan")),
        (env.SECONDS, -0.5),
        (env.SECONDS, "1"),
        (env.POSITIVE_SECONDS, 0.0),
    ],
)
def test_require_names_the_field_and_the_value(kind: env.Kind[object], value: object) -> None:
    with pytest.raises(ValueError) as error:
        kind.require("limit", value)
    assert str(error.value) == f"limit={value!r}: expected {kind.expected}"


def test_require_returns_an_accepted_value() -> None:
    assert env.COUNT.require("limit", 1) == 1
    assert env.PORT.require("port", 0) == 0
    assert env.SECONDS.require("wait", 0) == 0


def test_the_service_flags_table_states_the_declared_defaults() -> None:
    text = (ROOT / "docs" / "service.md").read_text()
    table = text.split("| flag | environment variable | default |\n", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| [^|]+ \| ([^|]+) \| ([^|]+) \|$", table, re.MULTILINE)
    by_name = {variable.name: variable for variable in env.VARIABLES}
    stated = {name.strip("`"): default for names, default in rows for name in names.split(", ")}
    assert len(stated) == 28
    wrong = [name for name, default in stated.items() if not default.startswith(by_name[name].default_text())]
    assert not wrong
