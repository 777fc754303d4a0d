"""TLS on the OTLP ports: one PEM certificate chain and its private key, checked at startup.

A service that started and then failed every handshake would look healthy to its probes while
refusing all spans, so a pair that does not load stops startup with the reason instead.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path
    cert_pem: bytes
    key_pem: bytes


def load_tls(cert: str, key: str) -> TlsFiles:
    """The pair at ``cert`` / ``key``; ``ValueError`` naming both files if they do not load together."""
    asked: list[bool] = []

    def no_passphrase() -> bytes:
        # Without a callback OpenSSL would prompt on the terminal and the service would hang.
        asked.append(True)
        return b""

    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key, password=no_passphrase)
        return TlsFiles(Path(cert), Path(key), Path(cert).read_bytes(), Path(key).read_bytes())
    except (OSError, ssl.SSLError) as exc:
        if asked:
            reason = "the key is encrypted; otel-traj reads no passphrase, give it the key unencrypted"
        elif isinstance(exc, ssl.SSLError):
            reason = str(exc)
        else:
            reason = exc.strerror or str(exc)
        raise ValueError(f"TLS certificate {cert} with key {key}: {reason}") from None
