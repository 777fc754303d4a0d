"""``otel-traj serve --tls-cert/--tls-key``: the SDK's gRPC and HTTP exporters deliver over TLS with
the certificate they are told to trust; a plaintext client is refused; a pair that does not load
stops startup naming both files. With ``--tls-client-ca`` only clients with a certificate of that
authority get in."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import os
import ssl
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.semconv_agent import emit
from tests.serve_helpers import EXPORT, POLICY, Served, cli, provider, refund_for


@pytest.fixture
def exporters_use_their_certificate_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests lets these override the session's CA file, i.e. the HTTP exporter's certificate_file."""
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)


def write_pair(
    directory: Path, name: str, passphrase: bytes | None = None, client: bool = False
) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (a server's, or with ``client`` a
    client's), and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "otel-traj test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        # Its own trust anchor: verifiers with strict X.509 checks want a CA with key identifiers.
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [x509.ExtendedKeyUsageOID.CLIENT_AUTH if client else x509.ExtendedKeyUsageOID.SERVER_AUTH]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.mark.usefixtures("exporters_use_their_certificate_file")
def test_sdk_exporters_deliver_over_tls_and_plaintext_is_refused(
    served: Callable[..., Served], tmp_path: Path
) -> None:
    cert, key = write_pair(tmp_path, "server")
    server = served("--policy", str(POLICY), "--tls-cert", str(cert), "--tls-key", str(key))
    tp, _ = provider("support-agent")
    trusted = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    grpc_exporter = GrpcExporter(endpoint=f"https://127.0.0.1:{server.grpc_port}", credentials=trusted)
    http_exporter = HttpExporter(
        endpoint=f"https://127.0.0.1:{server.http_port}/v1/traces", certificate_file=str(cert)
    )
    grpc_tp, _ = provider("support-agent")
    grpc_tp.add_span_processor(SimpleSpanProcessor(grpc_exporter))
    tp.add_span_processor(SimpleSpanProcessor(http_exporter))
    over_grpc = f"{emit(grpc_tp.get_tracer('agent'), refund_for('C023')):032x}"
    over_http = f"{emit(tp.get_tracer('agent'), refund_for('C028')):032x}"
    grpc_tp.shutdown()
    tp.shutdown()

    # No silent downgrade: a plaintext gRPC call never reaches the service.
    received = server.metric("otel_traj_receiver_requests_total", transport="grpc", result="ok")
    with pytest.raises(grpc.RpcError) as refused:
        server.export_raw(b"")
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert server.metric("otel_traj_receiver_requests_total", transport="grpc", result="ok") == received
    assert server.stop() == 0
    verdicts = server.verdicts()
    assert set(verdicts) == {over_grpc, over_http}
    # C028 breaks scope.
    assert (verdicts[over_grpc]["outcome"], verdicts[over_http]["outcome"]) == ("pass", "unsafe")


def test_a_pair_that_does_not_load_stops_startup(tmp_path: Path) -> None:
    cert, _ = write_pair(tmp_path, "one")
    _, other_key = write_pair(tmp_path, "two")
    ports = ("--grpc-port", "0", "--http-port", "0", "--metrics-port", "0")
    mismatched = cli("serve", "--tls-cert", str(cert), "--tls-key", str(other_key), *ports)
    assert mismatched.returncode == 2
    assert f"TLS certificate {cert} with key {other_key}" in mismatched.stderr
    missing = cli("serve", "--tls-cert", str(tmp_path / "none.crt"), "--tls-key", str(other_key), *ports)
    assert missing.returncode == 2
    assert "none.crt" in missing.stderr
    alone = cli("serve", "--tls-cert", str(cert), *ports)
    assert alone.returncode == 2
    assert "tls_cert and tls_key" in alone.stderr
    # An encrypted key is refused at once (OpenSSL would otherwise prompt for its passphrase).
    locked_cert, locked_key = write_pair(tmp_path, "locked", passphrase=b"secret")
    locked = cli("serve", "--tls-cert", str(locked_cert), "--tls-key", str(locked_key), *ports)
    assert locked.returncode == 2
    assert "the key is encrypted" in locked.stderr
    assert mismatched.stdout == missing.stdout == alone.stdout == locked.stdout == ""


@pytest.mark.usefixtures("exporters_use_their_certificate_file")
def test_mutual_tls_takes_only_clients_with_a_certificate_of_the_given_authority(
    served: Callable[..., Served], tmp_path: Path
) -> None:
    cert, key = write_pair(tmp_path, "server")
    # Self-signed client certificates: each is its own authority.
    client_cert, client_key = write_pair(tmp_path, "client", client=True)
    stranger_cert, stranger_key = write_pair(tmp_path, "stranger", client=True)
    tls = ("--tls-cert", str(cert), "--tls-key", str(key))
    server = served("--policy", str(POLICY), *tls, "--tls-client-ca", str(client_cert))
    assert server.started.rstrip().endswith("(TLS on the OTLP ports, client certificates required)")

    grpc_tp, _ = provider("support-agent")
    credentials = grpc.ssl_channel_credentials(
        root_certificates=cert.read_bytes(),
        private_key=client_key.read_bytes(),
        certificate_chain=client_cert.read_bytes(),
    )
    grpc_tp.add_span_processor(
        SimpleSpanProcessor(GrpcExporter(endpoint=server.grpc_target, credentials=credentials))
    )
    http_tp, _ = provider("support-agent")
    http_exporter = HttpExporter(
        endpoint=f"https://127.0.0.1:{server.http_port}/v1/traces",
        certificate_file=str(cert),
        client_key_file=str(client_key),
        client_certificate_file=str(client_cert),
    )
    http_tp.add_span_processor(SimpleSpanProcessor(http_exporter))
    over_grpc = f"{emit(grpc_tp.get_tracer('agent'), refund_for('C023')):032x}"
    over_http = f"{emit(http_tp.get_tracer('agent'), refund_for('C023')):032x}"
    grpc_tp.shutdown()
    http_tp.shutdown()

    received = server.metrics()
    # Without a client certificate, or with another authority's, the handshake fails on both ports.
    assert grpc_trusting(server.grpc_target, cert) == grpc.StatusCode.UNAVAILABLE
    stranger = (stranger_cert, stranger_key)
    assert grpc_trusting(server.grpc_target, cert, stranger) == grpc.StatusCode.UNAVAILABLE
    for certificate in (None, stranger):
        with pytest.raises((ssl.SSLError, ConnectionError)):
            https_post(server.http_port, cert, certificate)
    after = server.metrics()
    for transport in ("grpc", "http"):
        # Refused handshakes never reach a request handler.
        assert _ok(after, transport) == _ok(received, transport)
    assert grpc_trusting(server.grpc_target, cert, (client_cert, client_key)) == grpc.StatusCode.OK
    assert https_post(server.http_port, cert, (client_cert, client_key)) == 400  # in: an invalid body
    assert server.stop() == 0
    assert {k: v["outcome"] for k, v in server.verdicts().items()} == {over_grpc: "pass", over_http: "pass"}


@pytest.mark.usefixtures("exporters_use_their_certificate_file")
def test_a_replaced_client_ca_is_followed_from_the_next_handshake(
    served: Callable[..., Served], tmp_path: Path
) -> None:
    cert, key = write_pair(tmp_path, "server")
    first = write_pair(tmp_path, "first", client=True)
    second = write_pair(tmp_path, "second", client=True)
    ca = tmp_path / "clients.pem"
    ca.write_bytes(first[0].read_bytes())
    server = served("--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(ca))
    assert grpc_trusting(server.grpc_target, cert, first) == grpc.StatusCode.OK
    assert https_post(server.http_port, cert, first) == 400  # in: an invalid body
    replacement = tmp_path / "clients.new"
    replacement.write_bytes(second[0].read_bytes())
    os.replace(replacement, ca)
    assert grpc_trusting(server.grpc_target, cert, second) == grpc.StatusCode.OK
    assert grpc_trusting(server.grpc_target, cert, first) == grpc.StatusCode.UNAVAILABLE
    assert https_post(server.http_port, cert, second) == 400
    with pytest.raises((ssl.SSLError, ConnectionError)):
        https_post(server.http_port, cert, first)
    assert server.metric("otel_traj_tls_reloads_total") == 1
    assert server.stop() == 0


def _ok(metrics: str, transport: str) -> float:
    line = f'otel_traj_receiver_requests_total{{result="ok",transport="{transport}"}}'
    return sum(float(row.split()[-1]) for row in metrics.splitlines() if row.startswith(line))


def https_post(port: int, trusted: Path, certificate: tuple[Path, Path] | None) -> int:
    """The status of an empty protobuf POST to the HTTP port, with ``certificate`` as the client's."""
    context = ssl.create_default_context(cafile=str(trusted))
    if certificate is not None:
        context.load_cert_chain(str(certificate[0]), str(certificate[1]))
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("POST", "/v1/traces", b"\x00", {"Content-Type": "application/x-protobuf"})
        return connection.getresponse().status
    finally:
        connection.close()


def test_a_client_ca_needs_tls_and_must_load(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "server")
    ports = ("--grpc-port", "0", "--http-port", "0", "--metrics-port", "0")
    alone = cli("serve", "--tls-client-ca", str(cert), *ports)
    assert alone.returncode == 2
    assert "tls_client_ca: client certificates need TLS" in alone.stderr
    empty = tmp_path / "empty.pem"
    empty.write_text("not a certificate\n")
    for ca in (empty, tmp_path / "missing.pem"):
        bad = cli("serve", "--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(ca), *ports)
        assert bad.returncode == 2
        assert f"TLS client CA {ca}" in bad.stderr
        assert bad.stdout == ""


def served_certificate(port: int) -> bytes:
    """The certificate a TLS handshake with the HTTP port presents (DER), without verifying it."""
    return ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", port)))


def der(cert: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert.read_text())


def grpc_trusting(target: str, cert: Path, client: tuple[Path, Path] | None = None) -> grpc.StatusCode:
    """The status of an empty export over a channel that trusts only ``cert`` (and presents the
    client certificate and key ``client``)."""
    credentials = grpc.ssl_channel_credentials(
        root_certificates=cert.read_bytes(),
        private_key=client[1].read_bytes() if client else None,
        certificate_chain=client[0].read_bytes() if client else None,
    )
    with grpc.secure_channel(target, credentials) as channel:
        export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        try:
            export(b"", timeout=10)
        except grpc.RpcError as error:
            return error.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


@pytest.mark.usefixtures("exporters_use_their_certificate_file")
def test_a_rotated_certificate_is_served_from_the_next_handshake(
    served: Callable[..., Served], tmp_path: Path
) -> None:
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    cert, key = write_pair(mounted, "tls")
    old = tmp_path / "old.crt"
    old.write_bytes(cert.read_bytes())
    server = served("--policy", str(POLICY), "--tls-cert", str(cert), "--tls-key", str(key))
    assert served_certificate(server.http_port) == der(old)
    assert grpc_trusting(server.grpc_target, old) == grpc.StatusCode.OK

    # Renewed under the running service, files replaced as a Secret's are.
    new_cert, new_key = write_pair(tmp_path, "renewed")
    os.replace(new_key, key)
    os.replace(new_cert, cert)
    assert served_certificate(server.http_port) == der(cert)
    assert grpc_trusting(server.grpc_target, cert) == grpc.StatusCode.OK
    assert grpc_trusting(server.grpc_target, old) == grpc.StatusCode.UNAVAILABLE
    # The SDK's exporters, trusting only the new certificate, deliver.
    tp, _ = provider("support-agent")
    tp.add_span_processor(
        SimpleSpanProcessor(
            HttpExporter(
                endpoint=f"https://127.0.0.1:{server.http_port}/v1/traces", certificate_file=str(cert)
            )
        )
    )
    trace = f"{emit(tp.get_tracer('agent'), refund_for('C023')):032x}"
    tp.shutdown()
    assert server.metric("otel_traj_tls_reloads_total") == 1

    # Half a rotation (a certificate without its key): the pair still served stays, counted once.
    renewed = tmp_path / "renewed-served.crt"
    renewed.write_bytes(cert.read_bytes())
    stray_cert, _ = write_pair(tmp_path, "stray")
    os.replace(stray_cert, cert)
    for _ in range(3):
        assert served_certificate(server.http_port) == der(renewed)
        assert grpc_trusting(server.grpc_target, renewed) == grpc.StatusCode.OK
    assert server.metric("otel_traj_tls_reload_errors_total") == 1
    assert server.metric("otel_traj_tls_reloads_total") == 1
    assert "does not load, still serving the old one" in server.log.read_text()
    assert server.stop() == 0
    assert list(server.verdicts()) == [trace]
