"""The verdict store as the tools read it: opened read-only for each call (so every call sees what
``serve`` wrote since), a SQLite file or a PostgreSQL URL through ``store_reader``; what cannot be read
becomes the tool's error, naming the store."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from otel_traj.mcp.errors import ToolInputError
from otel_traj.sinks.store_reader import StoreReader, open_store, read_errors, store_name
from otel_traj.sinks.store_schema import StoreError


@dataclass(frozen=True, slots=True)
class Store:
    path: str

    @contextmanager
    def reading(self) -> Iterator[StoreReader]:
        try:
            reader = open_store(self.path)
        except read_errors(StoreError) as exc:
            raise ToolInputError(f"store: {exc}") from None
        try:
            yield reader
        except read_errors(ValueError) as exc:
            raise ToolInputError(f"store {store_name(self.path)}: {exc}") from None
        finally:
            reader.close()

    def check(self) -> None:
        """Raises :class:`ToolInputError` when the store cannot be opened (the command's startup check)."""
        with self.reading():
            pass


def since_ns(since: str | None) -> int | None:
    """``1h``, ``30m``, ``2d`` (ago) or an ISO 8601 time, as ``otel-traj report --since`` reads it."""
    if since is None:
        return None
    from otel_traj.cli.report import parse_since

    try:
        return parse_since(since)
    except argparse.ArgumentTypeError as exc:
        raise ToolInputError(str(exc).replace("--since", "since", 1)) from None
