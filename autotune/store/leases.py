"""Which process holds a row that says ``running``, and whether that process is still alive.

A row a process marks ``running`` (a workload's tuning: ``autotune_workload_tunings``) also
names it: its host name, its pid on that host and a token of its own run (:class:`Owner`),
and a heartbeat the process writes every :data:`HEARTBEAT_S` seconds while it runs
(:class:`Heartbeat`). A process killed without a word (SIGKILL, the OOM killer, a machine
lost) cannot mark its row, so the next process that meets the row judges its owner
(:func:`gone`). The owner is gone where

- its heartbeat is older than :data:`LEASE_S` seconds (the only test for a process of
  another host; on this host it also catches a pid reused by another program), or
- it ran on this host and its pid is not alive (or a zombie), or
- it is this very process and that run has ended (a process that runs a second tuning after
  its first could not mark its row).

This works on any database and across processes and hosts: it needs nothing but the row. A
process of another host counts as alive until its heartbeat is :data:`LEASE_S` seconds old
(hosts' clocks are taken to agree within that: NTP). A row without an owner (stored before
schema 0010) counts as gone.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

__all__ = ["HEARTBEAT_S", "LEASE_S", "Owner", "pid_alive", "gone", "Heartbeat", "heartbeat"]

HEARTBEAT_S = 5.0
"""Seconds between two heartbeats of a running tuning."""
LEASE_S = 60.0
"""Seconds without a heartbeat after which the process holding a row counts as gone."""

_running: set[str] = set()
"""Tokens of the runs of this process whose heartbeat is beating now."""


@dataclass(frozen=True)
class Owner:
    """A process holding a row: its ``host`` name, its ``pid`` there, and the ``token`` of its
    run (a process may hold rows in several runs, one after another)."""

    host: str
    pid: int
    token: str

    @classmethod
    def mine(cls) -> Owner:
        """This process, with a new run's token."""
        return cls(socket.gethostname()[:255], os.getpid(), uuid.uuid4().hex)

    def label(self) -> str:
        return f"process {self.pid} on {self.host}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is alive (a zombie, ended but not reaped, is not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        pass
    except OSError:
        return False
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:  # the kernel's (tests/base/test_files.py allows it)
                stat = f.read()
        except OSError:
            return True
        return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")  # the state follows the command's ")"
    return True


def gone(host: str | None, pid: int | None, token: str | None, heartbeat_at: datetime | None,
         now: datetime) -> str | None:
    """Why the owner ``(host, pid, token)`` of a row whose last heartbeat was ``heartbeat_at``
    is gone at ``now`` (module doc), in a few words; ``None`` where it may still be alive."""
    if host is None or pid is None or heartbeat_at is None:
        return "no process holds it (stored before schema 0010)"
    silent = (now - heartbeat_at).total_seconds()
    if silent > LEASE_S:
        return f"process {pid} on {host} has sent no heartbeat for {silent:.0f} s"
    if host == socket.gethostname()[:255]:
        if pid == os.getpid():
            return None if token in _running else f"this process's earlier run ({pid} on {host}) has ended"
        if not pid_alive(pid):
            return f"process {pid} on {host} has ended"
    return None


class Heartbeat:
    """A thread calling ``beat()`` every :data:`HEARTBEAT_S` seconds until :meth:`stop` (or
    until ``beat`` returns ``False``: the row is not ours any more), for the run ``token``
    (which :func:`gone` counts as alive in this process meanwhile). ``beat`` must not raise
    for a database error: a beat missed is a beat missed."""

    def __init__(self, token: str, beat: Callable[[], bool], every_s: float | None = None) -> None:
        self.token, self._beat, self.every_s = token, beat, every_s or HEARTBEAT_S
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="autotune-tuning-heartbeat", daemon=True)
        self.lost = False

    def start(self) -> Heartbeat:
        _running.add(self.token)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating (waits for a beat in progress, at most :data:`HEARTBEAT_S`)."""
        self._stop.set()
        self._thread.join(self.every_s)
        _running.discard(self.token)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                if not self._beat():
                    self.lost = True
                    return
            except Exception:  # noqa: BLE001  (a beat missed; the tuning's own writes say what failed)
                continue


@contextmanager
def heartbeat(token: str, beat: Callable[[], bool], every_s: float | None = None) -> Iterator[Heartbeat]:
    """:class:`Heartbeat` for the block."""
    beating = Heartbeat(token, beat, every_s).start()
    try:
        yield beating
    finally:
        beating.stop()
