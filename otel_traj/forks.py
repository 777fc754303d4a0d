"""Threads do not survive ``os.fork()``: components that run one start afresh in a forked child.

Preforking servers (gunicorn with ``--preload``, uWSGI, Celery's prefork pool) set up tracing in the
parent and fork their workers from it. In the child only the forking thread exists: the parent's
worker threads are gone, a lock one of them held stays held, and connections (SQLite, HTTP pools)
belong to the parent. Each such component registers a hook that leaves the child its own empty,
running copy; what the parent held (runs in flight, queued verdicts) stays the parent's to deliver.
The OpenTelemetry SDK's batch processors do the same.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("otel_traj")

# Objects inherited from the parent that must never be closed in the child (SQLite forbids using a
# connection across fork, and closing it is a use); kept here so their finalizers never run.
_PARENTS_OWN: list[Any] = []


def after_fork_in_child(method: Callable[[], None]) -> None:
    """Call the bound ``method`` in every child forked from now on, as long as its object lives
    (nothing to do where there is no ``fork``: Windows)."""
    if not hasattr(os, "register_at_fork"):
        return
    ref = weakref.WeakMethod(method)
    name = getattr(method, "__qualname__", repr(method))  # a name only: no reference to the object

    def hook() -> None:
        bound = ref()
        if bound is None:
            return
        try:
            bound()
        except Exception:
            logger.exception("%s failed in forked process %d", name, os.getpid())

    os.register_at_fork(after_in_child=hook)


def leave_to_parent(obj: Any) -> None:
    """Keep ``obj`` (a connection or client of the parent) alive and untouched in this child."""
    _PARENTS_OWN.append(obj)


def start_daemon(target: Callable[[], None], name: str) -> threading.Thread:
    """Start the background thread of such a component (at construction, and again in a child)."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread
