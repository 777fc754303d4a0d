"""The bearer token of OTLP/gRPC, checked on a call's metadata as soon as the call arrives.

grpcio's sync server hands a unary call to a pool thread before the request message has arrived, and
that thread waits for the message before calling the handler: a token checked by the handler let 32
calls that never sent their message hold every place, with no token at all. Here an interceptor
(it runs when the call's headers arrive) answers a call without the token by a handler that reads
nothing: the thread it borrows is given back at once.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator
from typing import Any

import grpc

UNAUTHENTICATED = "missing or wrong bearer token"


def bearer(metadata: Any, token: bytes) -> bool:
    """Whether the ``authorization`` entry of ``metadata`` is ``token`` (constant-time)."""
    for key, value in metadata or ():
        if key == "authorization":
            given = value.encode() if isinstance(value, str) else value
            return hmac.compare_digest(given, token)
    return False


class BearerTokenInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Lets a call through when its metadata bears ``Bearer <token>``; otherwise ``refused(method)``
    is called (to count it) and the call ends UNAUTHENTICATED without its message being read."""

    def __init__(self, token: str, refused: Callable[[str], None]) -> None:
        self._token = f"Bearer {token}".encode()
        self._refused = refused

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        if bearer(handler_call_details.invocation_metadata, self._token):
            return continuation(handler_call_details)
        method: str = handler_call_details.method

        def refuse(requests: Iterator[bytes], context: grpc.ServicerContext) -> None:
            self._refused(method)
            context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED)

        # Request-streaming: grpcio calls it without waiting for a message (a unary one waits).
        return grpc.stream_unary_rpc_method_handler(refuse)
