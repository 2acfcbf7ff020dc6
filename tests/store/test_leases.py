"""Whether the process holding a ``running`` row is alive (autotune/store/leases.py): its pid on
this host (a zombie is not alive), its heartbeat's age, this process's own runs; the heartbeat
thread."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from datetime import timedelta

from autotune.store import leases
from autotune.store.leases import Heartbeat, Owner, gone, pid_alive
from autotune.store.models import utcnow


def _ended_child() -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped yet: a zombie
    return proc


def test_a_pid_is_alive_until_its_process_ends_a_zombie_is_not():
    assert pid_alive(os.getpid())
    proc = _ended_child()
    assert not pid_alive(proc.pid)  # a zombie: ended, its parent has not reaped it
    proc.wait()
    assert not pid_alive(proc.pid) and not pid_alive(0) and not pid_alive(-5)


def test_an_owner_is_gone_by_its_pid_its_heartbeat_or_its_ended_run():
    now, host = utcnow(), socket.gethostname()
    proc = _ended_child()
    proc.wait()
    assert "no process holds it" in gone(None, None, None, None, now)
    assert gone(host, proc.pid, "t", now, now) == f"process {proc.pid} on {host} has ended"
    stale = now - timedelta(seconds=leases.LEASE_S + 5)
    assert gone("elsewhere", 123, "t", stale, now) == f"process 123 on elsewhere has sent no heartbeat for " \
                                                      f"{leases.LEASE_S + 5:.0f} s"
    assert gone("elsewhere", 123, "t", now - timedelta(seconds=2), now) is None  # another host's: by its lease
    assert "has sent no heartbeat" in gone(host, os.getppid(), "t", stale, now)  # alive, silent: a pid reused
    mine = Owner.mine()
    assert (mine.host, mine.pid) == (host, os.getpid()) and mine.token != Owner.mine().token
    assert "this process's earlier run" in gone(host, os.getpid(), mine.token, now, now)  # its run ended
    beating = Heartbeat(mine.token, lambda: True, every_s=3600).start()
    try:
        assert gone(host, os.getpid(), mine.token, now, now) is None
    finally:
        beating.stop()
    assert gone(host, os.getpid(), mine.token, now, now) is not None


def test_the_heartbeat_beats_until_stopped_or_the_row_is_not_its_own():
    beats, twice = [], threading.Event()

    def beat() -> bool:
        beats.append(1)
        if len(beats) == 2:
            twice.set()
        if len(beats) == 3:
            raise RuntimeError("a database error: a beat missed")
        return len(beats) < 5

    beating = Heartbeat("token", beat, every_s=0.001).start()
    assert twice.wait(60)
    beating._thread.join(60)  # it ends by itself: the 5th beat found the row taken over
    assert len(beats) == 5 and beating.lost
    beating.stop()
    stopped = Heartbeat("other", lambda: True, every_s=3600).start()
    stopped.stop()
    assert not stopped._thread.is_alive() and not stopped.lost
