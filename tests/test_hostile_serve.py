"""``otel-traj serve`` against what a hostile or careless neighbour does: a second service started on
a taken port, a token read from the process list, connections opened and left idle."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from otel_traj.serve import Ports, ServeSettings, Service
from tests.serve_helpers import FIXTURES, ROOT, STARTED, Served, cli_env, post, trace_ids_of


def serve_exit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``otel-traj serve`` expected to stop at startup: its exit code and stderr, bounded in time."""
    return subprocess.run(
        [sys.executable, "-m", "otel_traj.cli", "serve", "--store", "", *args],
        cwd=ROOT,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def served(tmp_path: Path) -> Served:
    service = Served(tmp_path)
    yield service
    assert service.stop() == 0


@pytest.mark.parametrize("flag", ["--grpc-port", "--http-port", "--metrics-port"])
def test_a_second_service_on_a_taken_port_fails_naming_the_flag_and_the_port(
    served: Served, flag: str
) -> None:
    taken = {
        "--grpc-port": served.grpc_port,
        "--http-port": served.http_port,
        "--metrics-port": served.metrics_port,
    }[flag]
    ports = {"--grpc-port": "0", "--http-port": "0", "--metrics-port": "0", flag: str(taken)}
    second = serve_exit(*(item for pair in ports.items() for item in pair))
    assert second.returncode == 2, second.stderr
    assert f"otel-traj serve: {flag} {taken}: address in use" in second.stderr
    assert "Errno" not in second.stderr
    assert "listening" not in second.stdout


RUN = FIXTURES / "pydantic_ai" / "clean.otlp.pb"
FREE_PORTS = ("--grpc-port", "0", "--http-port", "0", "--metrics-port", "0")
TOKEN = "s3cr3t-token-from-a-file"


def test_a_token_read_from_a_file_guards_both_ports_and_stays_out_of_the_process_list(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"  {TOKEN}\n\n")
    body = RUN.read_bytes()
    service = Served(tmp_path, "--auth-token-file", str(token_file))
    try:
        cmdline = Path(f"/proc/{service.proc.pid}/cmdline").read_bytes()
        assert str(token_file).encode() in cmdline
        assert TOKEN.encode() not in cmdline

        bearer = (("authorization", f"Bearer {TOKEN}"),)
        assert not service.export_raw(body, bearer).HasField("partial_success")
        for metadata in ((), (("authorization", "Bearer wrong"),), (("authorization", f"Bearer  {TOKEN}"),)):
            with pytest.raises(grpc.RpcError) as refused:
                service.export_raw(body, metadata)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED

        assert service.post(body, headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert service.post(body, headers={"Authorization": "Bearer wrong"})[0] == 401
        assert service.post(body)[0] == 401
        counted = {
            transport: service.metric(
                "otel_traj_receiver_requests_total", result="unauthorized", transport=transport
            )
            for transport in ("grpc", "http")
        }
        assert counted == {"grpc": 3, "http": 2}
    finally:
        assert service.stop() == 0
    assert set(service.verdicts()) == trace_ids_of(body)


def test_the_token_file_comes_from_the_environment_too(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    env = {**cli_env(), "OTEL_TRAJ_AUTH_TOKEN_FILE": str(token_file)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_traj.cli", "serve", "--store", "", *FREE_PORTS],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = STARTED.search(proc.stdout.readline())
        assert match is not None
        url = f"http://127.0.0.1:{match.group(2)}/v1/traces"
        assert post(url, RUN.read_bytes(), headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert post(url, RUN.read_bytes())[0] == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        proc.stdout.close()


@pytest.mark.parametrize("content", [None, "", " \n\t\n"])
def test_a_missing_or_empty_token_file_stops_startup_naming_it(tmp_path: Path, content: str | None) -> None:
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    result = serve_exit(*FREE_PORTS, "--auth-token-file", str(token_file))
    assert result.returncode == 2
    assert str(token_file) in result.stderr
    assert "listening" not in result.stdout


def test_a_token_and_a_token_file_together_stop_startup(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    result = serve_exit(
        *FREE_PORTS,
        "--auth-token",
        "other",
        "--auth-token-file",
        str(token_file),
    )
    assert result.returncode == 2
    assert "auth_token and auth_token_file" in result.stderr
    assert "listening" not in result.stdout


@pytest.fixture
def in_process(request: pytest.FixtureRequest) -> Iterator[tuple[Service, Ports]]:
    """A service in this process whose HTTP connections may stay idle ``request.param`` seconds."""
    service = Service(
        ServeSettings(grpc_port=0, http_port=0, metrics_port=0, store="", idle_timeout_s=request.param)
    )
    try:
        yield service, service.start()
    finally:
        service.stop()


def connect(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(count)]


def still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    finally:
        sock.settimeout(30)


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closes ``sock`` within the socket's timeout (30 s) without answering."""
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


def get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.parametrize("in_process", [600.0], indirect=True)
def test_probes_answer_while_a_hundred_idle_connections_are_open(in_process: tuple[Service, Ports]) -> None:
    _, ports = in_process
    silent = connect(ports.metrics, 100)
    speaking_slowly = connect(ports.metrics, 10)
    for sock in speaking_slowly:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    try:
        assert [get(ports.metrics, path) for path in ("/healthz", "/readyz", "/metrics")] == [200, 200, 200]
        assert all(still_open(sock) for sock in silent + speaking_slowly)
    finally:
        for sock in silent + speaking_slowly:
            sock.close()


@pytest.mark.parametrize("in_process", [600.0], indirect=True)
def test_otlp_http_accepts_exports_while_1030_idle_connections_are_open(
    in_process: tuple[Service, Ports],
) -> None:
    _, ports = in_process
    idle = connect(ports.http, 1030)
    try:
        status, _, _ = post(f"http://127.0.0.1:{ports.http}/v1/traces", RUN.read_bytes())
        assert status == 200
        assert still_open(idle[0]) and still_open(idle[-1])
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.parametrize("in_process", [0.2], indirect=True)
def test_connections_that_send_no_complete_request_are_closed(in_process: tuple[Service, Ports]) -> None:
    _, ports = in_process
    silent, head_unfinished, kept_alive = connect(ports.metrics, 3)
    head_unfinished.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = b""
    while b"ok\n" not in answer:
        answer += kept_alive.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200")
    kept_alive.sendall(b"GET /readyz HTTP/1.1\r\n")  # the next request, never finished
    try:
        assert closed_by_server(silent)
        assert closed_by_server(head_unfinished)
        assert closed_by_server(kept_alive)
    finally:
        for sock in (silent, head_unfinished, kept_alive):
            sock.close()


@pytest.mark.parametrize("in_process", [0.2], indirect=True)
def test_a_request_whose_head_arrived_is_not_cut_by_the_idle_timeout(
    in_process: tuple[Service, Ports],
) -> None:
    service, ports = in_process
    body = RUN.read_bytes()
    (exporting,) = connect(ports.http, 1)
    exporting.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body[:10]
    )
    # Opened after the export, this one's idle timer fires after the export's would have: once the
    # server has closed it, the export's connection has outlived its own timer.
    (later,) = connect(ports.http, 1)
    try:
        assert closed_by_server(later)
        exporting.sendall(body[10:])
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += exporting.recv(4096)
        assert answer.startswith(b"HTTP/1.1 200")
    finally:
        exporting.close()
        later.close()
    assert service.ingest.stats.snapshot()[0] == {("http", "ok"): 1}
