"""dashboards/ as the tests read it: the Grafana dashboard's queries with Grafana's variables expanded,
and the Prometheus binaries that check them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.installed import not_installed

ROOT = Path(__file__).resolve().parent.parent
PROM_DIR = ROOT / "dashboards" / "prometheus"
DASHBOARD = ROOT / "dashboards" / "grafana" / "otel-traj.json"

# Grafana expands these before the query reaches Prometheus.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "30s", "$__range": "6h", "$agent": ".*"}


def require_binary(name: str) -> str:
    """The path of a Prometheus binary: skipped where it is not installed, except in CI."""
    path = shutil.which(name)
    if path is None:
        not_installed(name, "Debian's prometheus package: apt-get install prometheus")
    return path


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def dashboard_queries() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]


def expand(expr: str) -> str:
    for variable, replacement in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, replacement)
    return expr
