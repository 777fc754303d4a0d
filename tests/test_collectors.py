"""The collector configurations and Kubernetes manifests in ``collectors/`` are well formed: every
pipeline refers to defined components, every component type exists in the Collector Contrib
distribution, and the manifests agree with the configs and with otel-traj's own command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_traj.cli import build_parser
from otel_traj.policy import parse_policy
from otel_traj.sinks.evaluation_records import CONVERSATION_ID, SUMMARY

COLLECTORS = Path(__file__).resolve().parent.parent / "collectors"
CONFIGS = sorted(COLLECTORS.glob("*.yaml"))
MANIFESTS = sorted((COLLECTORS / "k8s").glob("*.yaml"))

# Component types of otelcol-contrib, checked against the distribution manifest of
# opentelemetry-collector-releases (distributions/otelcol-contrib/manifest.yaml, v0.136.0) for the
# components these configs use. Later releases renamed some types and kept the old names as
# deprecated aliases: otlp -> otlp_grpc and otlphttp -> otlp_http (v0.144.0), loadbalancing ->
# load_balancing (2026); both spellings are listed.
CONTRIB = {
    "receivers": {"otlp"},
    "processors": {"batch", "memory_limiter", "groupbytrace", "tail_sampling", "filter"},
    "exporters": {
        "otlp",
        "otlp_grpc",
        "otlphttp",
        "otlp_http",
        "loadbalancing",
        "load_balancing",
        "debug",
    },
    "extensions": {"health_check", "bearertokenauth", "headers_setter", "pprof", "zpages"},
}
LOAD_BALANCING = {"loadbalancing", "load_balancing"}
# Options of the load-balancing exporter (exporter/loadbalancingexporter/config.schema.yaml).
LB_OPTIONS = {"routing_key", "routing_attributes", "protocol", "resolver", "sending_queue", "timeout"}
LB_RESOLVERS = {"dns": {"hostname", "port", "interval", "timeout"}, "k8s": {"service", "ports", "timeout"}}
# Options of the filter processor for logs (processor/filterprocessor: OTTL conditions, a record
# matching one is dropped).
FILTER_OPTIONS = {"error_mode", "logs"}


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


def kind_of(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def test_there_are_configs_and_manifests() -> None:
    assert {p.name for p in CONFIGS} == {
        "agent-gateway.yaml",
        "two-tier-loadbalancing.yaml",
        "conversation-tier.yaml",
    }
    assert MANIFESTS


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_pipelines_refer_to_defined_contrib_components(path: Path) -> None:
    config = load(path)
    pipelines = config["service"]["pipelines"]
    assert pipelines
    for section in ("receivers", "processors", "exporters", "extensions"):
        for component_id in config.get(section) or {}:
            assert kind_of(component_id) in CONTRIB[section], (
                f"{section}: {component_id} is not in otelcol-contrib"
            )
    for name, pipeline in pipelines.items():
        assert kind_of(name) in {"traces", "metrics", "logs"}
        assert pipeline["receivers"] and pipeline["exporters"], name
        for section in ("receivers", "processors", "exporters"):
            for component_id in pipeline.get(section) or []:
                assert component_id in (config.get(section) or {}), f"{name}: {component_id} is not defined"
        processors = pipeline.get("processors") or []
        if "memory_limiter" in processors:
            assert processors[0] == "memory_limiter"  # it must see data first to protect the rest
    for extension in config["service"].get("extensions", []):
        assert extension in config["extensions"]


def _load_balancer(config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The config's load-balancing exporter, after checking that it reaches the replicas' headless
    Service with only options the exporter defines."""
    (lb_id,) = [e for e in config["exporters"] if kind_of(e) in LOAD_BALANCING]
    lb = config["exporters"][lb_id]
    assert set(lb) <= LB_OPTIONS
    assert "endpoint" not in lb["protocol"]["otlp"]  # the resolver sets it per backend
    (resolver,) = lb["resolver"].items()
    assert resolver[0] in LB_RESOLVERS and set(resolver[1]) <= LB_RESOLVERS[resolver[0]]
    service = _manifests("Service")[0]
    assert service["spec"]["clusterIP"] == "None"
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert resolver[1]["hostname"] == f"{name}.{namespace}.svc.cluster.local"
    assert int(resolver[1]["port"]) in {p["port"] for p in service["spec"]["ports"]}
    return lb_id, lb


def test_load_balancing_routes_by_trace_id_to_the_headless_service() -> None:
    config = load(COLLECTORS / "two-tier-loadbalancing.yaml")
    _, lb = _load_balancer(config)
    assert lb["routing_key"] == "traceID"


def test_the_conversation_tier_routes_summaries_by_conversation_id() -> None:
    """The events' conversation id attribute and summary attribute are the ones the sink writes;
    only records with a summary reach the load balancer, and it routes their logs by that id."""
    config = load(COLLECTORS / "conversation-tier.yaml")
    lb_id, lb = _load_balancer(config)
    assert lb["routing_key"] == "attributes" and lb["routing_attributes"] == [CONVERSATION_ID]
    (routed,) = [p for p in config["service"]["pipelines"].values() if lb_id in p["exporters"]]
    assert routed["exporters"] == [lb_id]
    (filter_id,) = [p for p in routed["processors"] if kind_of(p) == "filter"]
    options = config["processors"][filter_id]
    assert set(options) <= FILTER_OPTIONS and set(options["logs"]) == {"log_record"}
    assert options["logs"]["log_record"] == [f'attributes["{SUMMARY}"] == nil']
    assert all(kind_of(name) == "logs" for name in config["service"]["pipelines"])


def _manifests(kind: str) -> list[dict[str, Any]]:
    docs = [d for path in MANIFESTS for d in yaml.safe_load_all(path.read_text()) if d]
    return [d for d in docs if d["kind"] == kind]


def test_deployment_runs_a_valid_serve_command_with_probes() -> None:
    (deployment,) = _manifests("Deployment")
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (service,) = _manifests("Service")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.command == "serve" and args.host == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"otlp-grpc": args.grpc_port, "otlp-http": args.http_port, "metrics": args.metrics_port}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= set(ports)
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["resources"]["requests"].keys() == {"cpu", "memory"}
    env = {e["name"]: e for e in container["env"]}
    assert float(env["OTEL_TRAJ_TTL_S"]["value"]) > float(env["OTEL_TRAJ_GRACE_S"]["value"]) >= 5
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert str(Path(args.policy).parent) in mounts and str(Path(args.store).parent) in mounts
    (config_map,) = _manifests("ConfigMap")
    parse_policy(yaml.safe_load(config_map["data"][Path(args.policy).name]))


def test_readme_says_how_the_configs_are_validated() -> None:
    readme = (COLLECTORS / "README.md").read_text()
    assert "tests/test_collectors.py" in readme
    for path in [*CONFIGS, *MANIFESTS]:
        assert path.name in readme
