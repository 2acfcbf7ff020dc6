"""A workload's tuning row and the process holding it (autotune/store/workloads.py): a tuning
running in a live process is refused, one whose process is gone is taken over; the heartbeat
and the end of a run only touch a tuning their run holds; a problem left ``running`` at the end
becomes ``interrupted``. (Killed tunings end to end: tests/workload/test_tune_killed.py.)"""

from __future__ import annotations

import os
import socket
from dataclasses import replace
from datetime import timedelta

import pytest
import sqlalchemy as sa

from autotune.store.leases import LEASE_S, Heartbeat, Owner
from autotune.store.models import utcnow
from autotune.store.opening import open_results
from autotune.kernel.problem import ProblemKey
from autotune.store.workload_records import CallCount, ProblemResult
from autotune.store.workloads import (TuningBusy, beat_tuning, finish_tuning, latest_tuning, open_tuning, save_result,
                                      write_batch)

DIMS = (("rows", 64), ("cols", 64))
PROBLEM = ProblemResult(ProblemKey("smem_pad", "s", "p", DIMS, "float32", "smem_pad"))


@pytest.fixture
def store(db_url, device_info):
    s = open_results(db_url)
    write_batch(s, "app", "run", 1, [CallCount(device_info, PROBLEM.problem_key, 3)])
    yield s
    s.close()


def _set(db_url, sql: str) -> None:
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    with engine.begin() as c:
        c.execute(sa.text(sql))
    engine.dispose()


def test_a_tuning_running_in_a_live_process_is_refused_in_one_line(store, device_info):
    owner = Owner.mine()
    tuning, resumed = open_tuning(store, "app", device_info, 60.0, 1, [PROBLEM], owner=owner)
    assert not resumed
    beating = Heartbeat(owner.token, lambda: True, every_s=3600).start()  # this process's run, alive
    try:
        with pytest.raises(TuningBusy) as refused:
            open_tuning(store, "app", device_info, 60.0, 1, [PROBLEM], owner=Owner.mine())
    finally:
        beating.stop()
    message = str(refused.value)
    assert message.startswith(f"workload 'app' is being tuned on {device_info.name} now, by process {os.getpid()} "
                              f"on {socket.gethostname()}") and "\n" not in message
    again = latest_tuning(store, "app")
    assert again.status == "running" and again.id == tuning.id  # untouched


def test_a_tuning_whose_process_fell_silent_is_taken_over_and_the_first_run_cannot_touch_it(store, device_info,
                                                                                          db_url):
    first = Owner("another-host", 4242, "a" * 32)
    tuning, _ = open_tuning(store, "app", device_info, 60.0, 1, [PROBLEM], owner=first)
    save_result(store, tuning.id, replace(PROBLEM, status="running", budget_s=30.0))
    assert beat_tuning(store, tuning.id, first.token, 5.0)
    with pytest.raises(TuningBusy, match="by process 4242 on another-host"):  # its heartbeat is fresh
        open_tuning(store, "app", device_info, 60.0, 1, [PROBLEM], owner=Owner.mine())
    silent = (utcnow() - timedelta(seconds=LEASE_S + 1)).isoformat(sep=" ")
    _set(db_url, f"update autotune_workload_tunings set heartbeat_at = '{silent}'")
    second = Owner.mine()
    again, resumed = open_tuning(store, "app", device_info, 60.0, 1, [PROBLEM], owner=second)
    assert resumed and again.id == tuning.id and again.status == "running"
    (r,) = again.results
    assert r.status == "interrupted" and r.trials == 0 and "has sent no heartbeat" in r.reason
    assert not beat_tuning(store, tuning.id, first.token, 99.0)  # the first run's lease is lost
    finish_tuning(store, tuning.id, "interrupted", 99.0, token=first.token)  # ... and its end changes nothing
    assert latest_tuning(store, "app").status == "running"
    assert beat_tuning(store, tuning.id, second.token, 7.0)
    save_result(store, tuning.id, replace(PROBLEM, status="running"))
    finish_tuning(store, tuning.id, "interrupted", 8.0, token=second.token)
    done = latest_tuning(store, "app")
    assert (done.status, done.wall_s) == ("interrupted", 8.0)
    assert [(r.status, r.reason.split(";")[0]) for r in done.results] == [("interrupted",
                                                                           "its tuning stopped while it ran")]
