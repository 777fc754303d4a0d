"""The PrometheusSink's metrics served to a scraper: its own HTTP server, and the WSGI and ASGI apps
a host server mounts."""

from __future__ import annotations

import asyncio
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
import uvicorn

from otel_traj.sinks.prometheus import PrometheusSink
from tests.test_prometheus_sink import OPENMETRICS, VIOLATING_STEP, VIOLATING_TRACE, live, make_verdict


def fetch(url: str, accept: str | None = None) -> tuple[str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def test_http_server_serves_openmetrics_exemplars_and_stops_on_shutdown() -> None:
    sink = PrometheusSink()
    sink.on_live_violation(live(VIOLATING_TRACE, VIOLATING_STEP))
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    port = sink.start_http_server(0)
    assert port > 0
    try:
        content_type, body = fetch(f"http://127.0.0.1:{port}/metrics", OPENMETRICS)
        assert content_type.startswith("application/openmetrics-text")
        violation = next(
            line for line in body.splitlines() if line.startswith("otel_traj_scope_violations_total")
        )
        assert violation.endswith(f'# {{trace_id="{VIOLATING_TRACE:032x}"}} 1.0 ' + violation.split()[-1])
        assert f'{VIOLATING_TRACE:032x}"}} 1.0' in body

        # The classic text format has no exemplars, and trace ids are never labels.
        content_type, body = fetch(f"http://127.0.0.1:{port}/metrics")
        assert content_type.startswith("text/plain")
        assert f"{VIOLATING_TRACE:032x}" not in body
        assert 'otel_traj_scope_violations_total{agent="support_agent",tool="list_invoices"} 1.0' in body
    finally:
        sink.shutdown()
    with pytest.raises(urllib.error.URLError):
        fetch(f"http://127.0.0.1:{port}/metrics")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_wsgi_app_mounted_by_a_host_server() -> None:
    sink = PrometheusSink()
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    server = make_server("127.0.0.1", 0, sink.wsgi_app(), handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        content_type, body = fetch(f"http://127.0.0.1:{server.server_port}/metrics", OPENMETRICS)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert content_type.startswith("application/openmetrics-text")
    assert f'trace_id="{VIOLATING_TRACE:032x}"' in body
    assert body.rstrip().endswith("# EOF")


@pytest.fixture
def asgi_server() -> Iterator[tuple[PrometheusSink, int]]:
    sink = PrometheusSink()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # Listening before the server starts queues the first request instead of refusing it.
    sock.listen()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(sink.asgi_app(), lifespan="off", log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        yield sink, port
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def test_asgi_app_mounted_by_a_host_server(asgi_server: tuple[PrometheusSink, int]) -> None:
    sink, port = asgi_server
    sink.export(make_verdict(VIOLATING_TRACE, violating=True))
    content_type, body = fetch(f"http://127.0.0.1:{port}/metrics", OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text")
    assert f'trace_id="{VIOLATING_TRACE:032x}"' in body
    unsafe = 'agent="support_agent",outcome="unsafe",stage="parameters",version=""'
    assert f"otel_traj_trajectories_total{{{unsafe}}} 1.0" in body


# The public contract the dashboards and alert rules read: family, type, labels, and bucket bounds as
# exposed (a changed ``le`` string starts a new series and breaks histogram_quantile over the change).
