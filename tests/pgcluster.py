"""A throwaway PostgreSQL cluster of one test's own, which the test may stop and start again
(a server that goes away mid-search), made like ``.ci/postgres.sh`` makes CI's: Debian's
server binaries, a cluster in a temporary folder, trust authentication, a free loopback port.
As root, ``initdb`` and ``postgres`` run as the ``postgres`` user."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def server_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` with ``initdb``, or ``None``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: [int(x) for x in p.split("/")[4]
                                                                                  .split(".") if x.isdigit()])
    return Path(found[-1]).parent if found else None


class Cluster:
    """``url`` names its ``postgres`` database as superuser ``autotune``; :meth:`stop` stops
    it at once (``-m immediate``: connections are cut as by a crash), :meth:`start` again."""

    def __init__(self) -> None:
        self.bin = server_bin()
        if self.bin is None:
            raise RuntimeError("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin)")
        self.dir = Path(tempfile.mkdtemp(prefix="autotune-pg-own."))
        self.dir.chmod(0o755)
        self.root = os.geteuid() == 0
        if self.root:
            shutil.chown(self.dir, "postgres", "postgres")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._run("initdb", "-D", str(self.dir / "data"), "-U", "autotune", "--auth=trust", "-E", "UTF8")
        self.start()
        self.url = f"postgresql+psycopg://autotune@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self.root:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "server.log"), "-w", "start", "-o",
                  f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.dir}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        try:
            self.stop()
        except RuntimeError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
