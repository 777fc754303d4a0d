"""zstd-compressed data: every frame of a buffer, whether or not the frames state their size.

Input is fed a kilobyte at a time: one step can expand at most ≈ 32,000-fold (RLE blocks), so with a
``limit`` a small buffer cannot make the caller hold more than ``limit`` + 32 MiB before it stops.
"""

from __future__ import annotations

import zstandard

MAGIC = b"\x28\xb5\x2f\xfd"
_STEP = 1024


class ZstdDataError(ValueError):
    """Not zstd, or cut short."""


class ZstdTooLarge(ValueError):
    """The decompressed data would exceed the limit."""


def decompress(data: bytes, limit: int | None = None) -> bytes:
    out = bytearray()
    frame: zstandard.ZstdDecompressionObj | None = None
    try:
        for start in range(0, len(data), _STEP):
            pending = data[start : start + _STEP]
            while pending:
                if frame is None or frame.eof:
                    frame = zstandard.ZstdDecompressor().decompressobj()
                out += frame.decompress(pending)
                if limit is not None and len(out) > limit:
                    raise ZstdTooLarge(f"decompressed data exceeds the limit of {limit} bytes")
                # A frame that ended inside this step leaves the start of the next one unused.
                pending = frame.unused_data if frame.eof else b""
    except zstandard.ZstdError as exc:
        raise ZstdDataError(str(exc)) from None
    if frame is None or not frame.eof:
        raise ZstdDataError("the data ends inside a frame")
    return bytes(out)
