"""The collector configurations and Kubernetes manifests in ``collectors/`` are well formed: every
pipeline refers to defined components, every component type exists in the Collector Contrib
distribution, and the manifests agree with the configs and with otel-traj's own command line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from otel_traj.cli import build_parser
from otel_traj.cli.serve import settings_from_args
from otel_traj.env import strict_settings
from otel_traj.policy import parse_policy
from otel_traj.serve.settings import ServeSettings
from otel_traj.sinks.evaluation_records import CONVERSATION_ID, SUMMARY

COLLECTORS = Path(__file__).resolve().parent.parent / "collectors"
CONFIGS = sorted(COLLECTORS.glob("*.yaml"))
MANIFESTS = sorted((COLLECTORS / "k8s").glob("*.yaml"))
SERVE = COLLECTORS / "k8s" / "otel-traj-serve.yaml"
TIER = COLLECTORS / "k8s" / "conversation-tier.yaml"

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
    assert {p.name for p in MANIFESTS} == {SERVE.name, TIER.name}


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
    (service,) = _manifests("Service", SERVE)
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


def _manifests(kind: str, path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return [d for d in docs if d["kind"] == kind]


def test_deployment_runs_a_valid_serve_command_with_probes() -> None:
    (deployment,) = _manifests("Deployment", SERVE)
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (service,) = _manifests("Service", SERVE)
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
    (config_map,) = _manifests("ConfigMap", SERVE)
    parse_policy(yaml.safe_load(config_map["data"][Path(args.policy).name]))


def _pod_env(container: dict[str, Any], config_maps: list[dict[str, Any]]) -> dict[str, str]:
    """The container's environment as Kubernetes builds it: ``envFrom`` ConfigMaps that exist (an
    optional one may not), then ``env`` over them; values from Secrets are left out."""
    env: dict[str, str] = {}
    present = {m["metadata"]["name"]: m["data"] for m in config_maps}
    for source in container.get("envFrom", []):
        ref = source["configMapRef"]
        assert ref["name"] in present or ref.get("optional"), ref
        env.update(present.get(ref["name"], {}))
    env.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
    return env


def _serve_settings(monkeypatch: pytest.MonkeyPatch, config_maps: list[dict[str, Any]]) -> ServeSettings:
    """The settings the otel-traj-serve container starts with, given the ConfigMaps applied."""
    (deployment,) = _manifests("Deployment", SERVE)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    for name in [n for n in os.environ if n.startswith("OTEL_TRAJ_")]:
        monkeypatch.delenv(name)
    for name, value in _pod_env(container, config_maps).items():
        monkeypatch.setenv(name, value)
    with strict_settings():
        return settings_from_args(build_parser().parse_args(container["args"]))


def test_the_replicas_alone_grade_conversations_from_their_own_traces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _serve_settings(monkeypatch, _manifests("ConfigMap", SERVE))
    assert (settings.conversations_from, settings.emit_otel) == ("traces", None)


def test_the_conversation_tier_makes_the_replicas_send_and_grade_conversations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With conversation-tier.yaml applied, every replica exports its events to the events
    collector's Service and grades the conversations routed back to it from the summaries."""
    settings = _serve_settings(monkeypatch, _manifests("ConfigMap", SERVE) + _manifests("ConfigMap", TIER))
    assert settings.conversations_from == "logs"
    assert settings.emit_otel is not None
    url = urlsplit(settings.emit_otel)
    (service,) = _manifests("Service", TIER)
    (serve,) = _manifests("Service", SERVE)
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert namespace == serve["metadata"]["namespace"]
    assert url.scheme == "http" and url.path in ("", "/")
    assert url.hostname in {name, f"{name}.{namespace}", f"{name}.{namespace}.svc.cluster.local"}
    # OTLP/HTTP: the collector's http receiver, behind the Service port the URL names.
    receivers = load(COLLECTORS / "conversation-tier.yaml")["receivers"]["otlp"]["protocols"]
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == url.port]
    (deployment,) = _manifests("Deployment", TIER)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[port["targetPort"]] == int(receivers["http"]["endpoint"].rpartition(":")[2])


def test_the_conversation_tier_runs_the_events_collector_with_its_config() -> None:
    """The events collector's Deployment runs conversation-tier.yaml as it is, with every variable
    the config reads, the replicas' token, its receivers' ports and health probes."""
    config = load(COLLECTORS / "conversation-tier.yaml")
    (deployment,) = _manifests("Deployment", TIER)
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (service,) = _manifests("Service", TIER)
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert "clusterIP" not in service["spec"]  # one address for the replicas' exporters
    (container,) = pod["spec"]["containers"]
    assert container["image"].startswith("otel/opentelemetry-collector-contrib:")
    (arg,) = container["args"]
    config_path = Path(arg.removeprefix("--config="))
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == str(config_path.parent)]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    (config_map,) = [
        m for m in _manifests("ConfigMap", TIER) if m["metadata"]["name"] == volume["configMap"]["name"]
    ]
    assert yaml.safe_load(config_map["data"][config_path.name]) == config
    # Every ${env:NAME} of the config is set; the token is the one the replicas check.
    env = {e["name"]: e for e in container["env"]}
    assert set(re.findall(r"\$\{env:(\w+)\}", (COLLECTORS / "conversation-tier.yaml").read_text())) == set(
        env
    )
    (serve,) = _manifests("Deployment", SERVE)
    serve_env = {e["name"]: e for e in serve["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["OTEL_TRAJ_AUTH_TOKEN"]["valueFrom"] == serve_env["OTEL_TRAJ_AUTH_TOKEN"]["valueFrom"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    endpoints = [p["endpoint"] for p in config["receivers"]["otlp"]["protocols"].values()]
    assert {int(e.rpartition(":")[2]) for e in endpoints} <= set(ports.values())
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= set(ports)
    health = int(config["extensions"]["health_check"]["endpoint"].rpartition(":")[2])
    (health_port,) = [name for name, number in ports.items() if number == health]
    assert container["readinessProbe"]["httpGet"] == {"path": "/", "port": health_port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/", "port": health_port}
    assert container["resources"]["requests"].keys() == {"cpu", "memory"}


def test_readme_says_how_the_configs_are_validated() -> None:
    readme = (COLLECTORS / "README.md").read_text()
    assert "tests/test_collectors.py" in readme
    for path in [*CONFIGS, *MANIFESTS]:
        assert path.name in readme
