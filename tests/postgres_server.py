"""A throwaway PostgreSQL cluster for the fleet-store tests: Debian's server binaries, ``initdb`` into
a temporary directory, ``pg_ctl`` on a free loopback port (its socket in that directory too), one
database per test. As root (initdb refuses to run as root) the cluster runs as ``nobody``."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

from tests.installed import not_installed

INSTALL = "Debian's postgresql package: apt-get install postgresql"


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresServer:
    """``start()`` initializes and starts the cluster; ``stop()`` / ``restart()`` the server (the data
    stays); ``database()`` a new empty database's URL; ``remove()`` stops and deletes everything."""

    def __init__(self) -> None:
        initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            not_installed("PostgreSQL's server", INSTALL)
        self._initdb, self._pg_ctl = initdb, pg_ctl
        self.dir = Path(tempfile.mkdtemp(prefix="otel-traj-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody")
            self.dir.chmod(0o700)
            self._as = ["runuser", "-u", "nobody", "--"]

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        if not self.data.exists():
            self._run(
                self._initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"
            )
        options = f"-k {self.dir} -c listen_addresses=127.0.0.1 -p {self.port} -c fsync=off"
        self._run(
            self._pg_ctl, "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-o", options, "start"
        )

    def stop(self) -> None:
        self._run(self._pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        return self.url(name)

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self._run(self._pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)
