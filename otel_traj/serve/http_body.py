"""Receiving an OTLP/HTTP request's body: bounded in size, in time and in how many wait at once.

A request whose head arrived has ``timeout_s`` for its body, and one more second for every
``min_rate`` bytes that arrive (Apache's ``RequestReadTimeout body=…,MinRate=…``): a sender that
stops, or trickles, is cut; one that keeps sending at the minimum rate finishes, however large its
body (up to the size limit). At most ``max_arriving`` bodies are awaited at once; one more cuts the
one that has waited longest. Neither holds a decoding slot: those are taken once the body is complete.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from otel_traj.serve.slots import Arrivals

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class BodyTooLarge(Exception):
    pass


class BodyTooSlow(Exception):
    pass


class BodyCut(Exception):
    """Cut to make room for a newer request (retryable)."""


class ClientGone(Exception):
    pass


class BodyReader:
    def __init__(self, *, max_bytes: int, timeout_s: float, min_rate: int, max_arriving: int) -> None:
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.min_rate = min_rate
        self.arrivals = Arrivals(limit=max_arriving)

    async def read(self, declared: bytes | None, receive: Receive) -> bytes:
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise BodyTooLarge(f"request body exceeds {self.max_bytes} bytes")
        loop = asyncio.get_running_loop()
        cut: asyncio.Future[None] = loop.create_future()
        started = loop.time()
        chunks: list[bytes] = []
        size = 0

        def cut_this() -> None:
            if not cut.done():
                cut.set_result(None)

        with self.arrivals.arriving(cut_this):
            while True:
                allowed = self.timeout_s + (size / self.min_rate if self.min_rate else 0.0)
                message = await self._next(receive, cut, started + allowed - loop.time(), size)
                if message["type"] == "http.disconnect":
                    raise ClientGone("client disconnected")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    raise BodyTooLarge(f"request body exceeds {self.max_bytes} bytes")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)

    async def _next(
        self, receive: Receive, cut: asyncio.Future[None], remaining_s: float, size: int
    ) -> MutableMapping[str, Any]:
        receiving = asyncio.ensure_future(receive())
        done, _ = await asyncio.wait(
            (receiving, cut), timeout=max(remaining_s, 0.0), return_when=asyncio.FIRST_COMPLETED
        )
        if receiving in done:
            return receiving.result()
        receiving.cancel()
        if cut in done:
            raise BodyCut(
                f"{self.arrivals.limit} request bodies were arriving: the one waiting longest is cut, "
                "retry later"
            )
        rate = f" and {self.min_rate} bytes/s" if self.min_rate else ""
        raise BodyTooSlow(
            f"the request body did not arrive in time ({self.timeout_s:g} s{rate}; {size} bytes came)"
        )
