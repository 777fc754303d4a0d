"""TLS on the OTLP ports: one PEM certificate chain and its private key (and, for mutual TLS, the
certificates of the authorities whose client certificates are accepted), checked at startup and
followed afterwards.

A service that started and then failed every handshake would look healthy to its probes while
refusing all spans, so a pair that does not load stops startup with the reason instead.

Certificates are rotated under running services (cert-manager renews a Secret, the kubelet swaps the
mounted files): a service that kept serving the pair it started with would present an expired
certificate one day and every exporter would fail. So each handshake first looks at the files
(a ``stat`` call each) and, when they changed and the new files load, serves them; files that do
not load (one file written, the other not yet) keep the old ones, logged and counted.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

logger = logging.getLogger("otel_traj.serve")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path
    cert_pem: bytes
    key_pem: bytes
    # Mutual TLS: the authorities whose client certificates are accepted (None: no client certificate).
    client_ca: Path | None = None
    client_ca_pem: bytes | None = None


def load_tls(cert: str, key: str, client_ca: str | None = None) -> TlsFiles:
    """The pair at ``cert`` / ``key`` and the client CAs at ``client_ca``; ``ValueError`` naming the
    files if they do not load."""
    client_ca_pem = _client_ca_pem(client_ca) if client_ca is not None else None
    asked: list[bool] = []

    def no_passphrase() -> bytes:
        # Without a callback OpenSSL would prompt on the terminal and the service would hang.
        asked.append(True)
        return b""

    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key, password=no_passphrase)
        files = TlsFiles(Path(cert), Path(key), Path(cert).read_bytes(), Path(key).read_bytes())
    except (OSError, ssl.SSLError) as exc:
        if asked:
            reason = "the key is encrypted; otel-traj reads no passphrase, give it the key unencrypted"
        elif isinstance(exc, ssl.SSLError):
            reason = str(exc)
        else:
            reason = exc.strerror or str(exc)
        raise ValueError(f"TLS certificate {cert} with key {key}: {reason}") from None
    if client_ca is None:
        return files
    return replace(files, client_ca=Path(client_ca), client_ca_pem=client_ca_pem)


def _client_ca_pem(client_ca: str) -> bytes:
    """The file's PEM certificates, read once and checked as read: ``ValueError`` naming the file
    unless OpenSSL can verify clients with them."""
    try:
        pem = Path(client_ca).read_bytes()
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_verify_locations(cadata=pem.decode("ascii"))
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError, UnicodeDecodeError a ValueError
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"TLS client CA {client_ca}: {reason}") from None
    return pem


def _stamp(path: Path) -> tuple[int, int, int]:
    # The kubelet replaces a Secret's files by swapping a symlink: the inode changes, maybe not mtime.
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


class ServedCertificate:
    """The pair the OTLP ports serve: :meth:`latest` is the pair as its files are now, if it loads.
    Called on every handshake by both receivers; ``reloads`` and ``reload_errors`` count changes."""

    def __init__(self, files: TlsFiles) -> None:
        self._files = files
        self._stamps = self._read_stamps()
        self._lock = threading.Lock()
        self.reloads = 0
        self.reload_errors = 0

    def _read_stamps(self) -> tuple[tuple[int, int, int], ...] | None:
        files = self._files
        try:
            return tuple(_stamp(p) for p in (files.cert, files.key, files.client_ca) if p is not None)
        except OSError:
            return None  # being replaced: look again at the next handshake

    def latest(self) -> TlsFiles:
        with self._lock:
            stamps = self._read_stamps()
            if stamps is None or stamps == self._stamps:
                return self._files
            self._stamps = stamps
            try:
                served = self._files
                files = load_tls(
                    str(served.cert), str(served.key), str(served.client_ca) if served.client_ca else None
                )
            except ValueError as exc:
                self.reload_errors += 1
                logger.error("TLS certificate changed but does not load, still serving the old one: %s", exc)
            else:
                self._files = files
                self.reloads += 1
                logger.info("TLS certificate %s reloaded", files.cert)
            return self._files


def follow_in_handshakes(
    context: ssl.SSLContext, certificate: ServedCertificate, context_for: Callable[[TlsFiles], ssl.SSLContext]
) -> None:
    """Make every handshake on ``context`` (a server's, its pair loaded) serve the latest pair: a
    changed pair gets a context of its own (``context_for``), which the handshake switches to. The
    hook runs for every handshake, with server name indication or without."""
    served = certificate.latest()
    current = context

    def switch(connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext) -> None:
        nonlocal served, current
        files = certificate.latest()
        if files is not served:
            try:
                current = context_for(files)
            except (OSError, ssl.SSLError):
                # Replaced again since it was checked: keep the old context, look at the next handshake.
                logger.exception("TLS certificate %s could not be loaded", files.cert)
            else:
                served = files
        if current is not context:
            connection.context = current

    context.sni_callback = switch
