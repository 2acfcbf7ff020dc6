"""A workload's tuning killed without a word (SIGKILL) at several points, on one fake GPU and on
two, on SQLite and on PostgreSQL (issue 51, item 4): the same command resumes the cut search,
its stored trials and seconds count, ``--max-trials`` holds over both runs, and no row stays
``running``.

The tuning runs as ``autotune tune`` in a subprocess (tests/workers.py, fake GPUs measuring on
``fakes.FakeAnyBench``'s landscape); the test kills it once a marker of the fake GPU shows it at
the moment it is about (a measurement of one problem held), waits until its processes are gone
(their pids), and checks the rows themselves before and after the resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from autotune.search.options import SearchOptions
from autotune.store.key import dims_key
from autotune.store.leases import pid_alive

from signals import H100, wait_for
from workload_fixtures import fake_gpu, record_app

WORKERS = Path(__file__).resolve().parents[1] / "workers.py"
CAP = 6
"""--max-trials of every tuning here."""
BIG, SMALL = "n=100000", "n=1000"
"""The dims of the workload's two problems (histogram256, uint8), the big one tuned first."""


def _start(db: str, marks: Path, hold: str, gpus: int = 1) -> subprocess.Popen:
    env = {**os.environ, "AUTOTUNE_FAKE_GPUS": ",".join([H100] * gpus), "AUTOTUNE_FAKE_BENCH": "any",
           "AUTOTUNE_FAKE_MARKS": str(marks), "AUTOTUNE_FAKE_HOLD": hold, "AUTOTUNE_DB": db}
    return subprocess.Popen([sys.executable, str(WORKERS), "cli", "0", "tune", "app", "--budget", "10m",
                             "--device", "all" if gpus > 1 else "0", "--max-trials", str(CAP), "--seed", "0",
                             "--db", db, "--format", "json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _kill(proc: subprocess.Popen, marks: Path) -> None:
    """SIGKILL the tuning process alone, then wait (a timeout: a hang, never a wait relied on)
    until it and every process a fake GPU was measured in (and their parents: the GPU workers)
    are gone: none may outlive it."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    pids = {int(p) for f in marks.glob("pids-*") for p in f.read_text().split()} - {proc.pid}
    deadline = time.monotonic() + 60
    while any(pid_alive(p) for p in pids):
        assert time.monotonic() < deadline, f"processes {sorted(p for p in pids if pid_alive(p))} outlived the tuning"
        time.sleep(0.01)


def _rows(db: str, sql: str) -> list[tuple]:
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    with engine.connect() as c:
        found = [tuple(r) for r in c.execute(sa.text(sql))]
    engine.dispose()
    return found


def _results(db: str) -> dict[str, tuple]:
    """dims -> (status, trials, spent_s) of every result row."""
    return {dims: (status, trials, spent) for dims, status, trials, spent in
            _rows(db, "select dims, status, trials, spent_s from autotune_workload_results")}


def _stored(db: str, dims: str) -> int:
    """Trials stored by the searches of the problem of ``dims`` (not those measured at its shape
    alongside another problem's search: a companion's, where searches have them)."""
    return _rows(db, "select count(*) from autotune_trials t join autotune_searches s on t.search_id = s.id "
                     f"where s.dims = '{dims}' and s.sampler not like '%(companion)'")[0][0]


def _running_searches(db: str) -> list[int]:
    return [i for (i,) in _rows(db, "select id from autotune_searches where status = 'running' order by id")]


def _nothing_running(db: str) -> None:
    assert _rows(db, "select status from autotune_workload_tunings") == [("finished",)]
    assert _rows(db, "select count(*) from autotune_searches where status = 'running'") == [(0,)]
    assert not {s for s, _, _ in _results(db).values()} & {"running", "pending", "interrupted"}


KILLS = {  # where the tuning is killed: (its hold, the marker it waits for, trials stored of (BIG, SMALL))
    "first-search": ("measure-100000:4", "measure-0-100000-4", (3, 0)),
    "second-search": ("measure-1000:3", "measure-0-1000-3", (CAP, 2)),
    "re-timing": ("retime-100000", "retime-0-100000", (CAP, 0)),
}


@pytest.mark.parametrize("point", list(KILLS))
def test_a_tuning_killed_resumes_its_cut_search_counting_what_it_stored(point, shared_db, monkeypatch, device_info,
                                                                        tmp_path):
    from autotune.workload.tune import tune_workload

    db, (hold, marker, stored) = shared_db, KILLS[point]
    record_app(monkeypatch, device_info, db, calls=(30, 10, 0))
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _start(db, marks, hold)
    wait_for(proc, marks, marker)
    _kill(proc, marks)
    # the rows the killed process left: its tuning and the problem it was tuning "running"
    cut = BIG if point != "second-search" else SMALL
    assert _rows(db, "select status, owner_pid from autotune_workload_tunings") == [("running", proc.pid)]
    assert _results(db)[cut][:2] == ("running", 0)
    assert (_stored(db, BIG), _stored(db, SMALL)) == stored
    assert _rows(db, f"select status from autotune_searches where dims = '{cut}' and sampler not like "
                     "'%(companion)' order by id")[-1] == ("running",)
    killed = _running_searches(db)

    benches = fake_gpu(monkeypatch, device_info)
    outcome = tune_workload("app", budget_s=600, db=db, max_trials=CAP, options=SearchOptions(seed=0))
    results = {r.dims: r for r in outcome.tuning.results}
    again = results[(("n", 100000),) if cut == BIG else (("n", 1000),)]
    assert outcome.resumed and outcome.tuning.status == "finished"
    assert again.status == "tuned" and again.trials == CAP and again.spent_s > 0  # what it stored counts
    measured = [c for b in benches if b.problem.dims == again.dims for c in b.calls if c[0] == "measure"]
    assert len(measured) == CAP - stored[0 if cut == BIG else 1]  # the cut search went on, to the cap
    assert _stored(db, cut) == CAP and _results(db)[cut][:2] == ("tuned", CAP)  # the rows themselves
    other = next(r for r in outcome.tuning.results if r is not again)  # searched, or measured only where
    assert other.status in ("tuned", "skipped")  # the plan expects no gain from it
    assert _stored(db, dims_key(other.dims)) == other.trials
    statuses = dict(_rows(db, "select id, status from autotune_searches"))
    assert {statuses[i] for i in killed} == {"interrupted"}  # the killed run's search rows, each of them
    _nothing_running(db)


def test_a_tuning_on_two_gpus_killed_takes_its_workers_and_resumes_both_searches(shared_db, monkeypatch,
                                                                                 device_info, tmp_path):
    db = shared_db
    record_app(monkeypatch, device_info, db, calls=(30, 10, 0))
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _start(db, marks, "measure-100000:3,measure-1000:3", gpus=2)  # each problem's 3rd measurement
    wait_for(proc, marks, "measure-0-100000-3", "measure-1-1000-3")
    _kill(proc, marks)  # the GPU workers and their measuring processes end with it
    assert sorted(s for s, _, _ in _results(db).values()) == ["running", "running"]
    assert (_stored(db, BIG), _stored(db, SMALL)) == (2, 2)
    killed = _running_searches(db)
    assert len(killed) >= 2

    (tmp_path / "again").mkdir()
    resumed = _start(db, tmp_path / "again", "", gpus=2)
    output, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, output
    doc = json.loads(output[output.index("{"):])
    assert doc["status"] == "finished" and doc["gpus"] == 2
    assert [(row["status"], row["trials"]) for row in doc["records"]] == [("tuned", CAP), ("tuned", CAP)]
    assert {dims: r[:2] for dims, r in _results(db).items()} == {BIG: ("tuned", CAP), SMALL: ("tuned", CAP)}
    assert (_stored(db, BIG), _stored(db, SMALL)) == (CAP, CAP)
    assert all(spent > 0 for _, _, spent in _results(db).values())
    statuses = dict(_rows(db, "select id, status from autotune_searches"))
    assert {statuses[i] for i in killed} == {"interrupted"}
    _nothing_running(db)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_tuning_stopped_by_a_signal_resumes_within_the_trial_cap(signum, db_url, monkeypatch, device_info, tmp_path):
    """Issue 51 (10): cut after 3 of its 6 trials by SIGTERM or SIGINT, the resumed search
    measures 3 more: 6 stored, not 9."""
    from autotune.workload.tune import tune_workload

    record_app(monkeypatch, device_info, db_url, calls=(30, 10, 0))
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _start(db_url, marks, "measure-100000:4")
    wait_for(proc, marks, "measure-0-100000-4")
    proc.send_signal(signum)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, output
    assert _results(db_url)[BIG][:2] == ("interrupted", 3) and _stored(db_url, BIG) == 3
    fake_gpu(monkeypatch, device_info)
    outcome = tune_workload("app", budget_s=600, db=db_url, max_trials=CAP, options=SearchOptions(seed=0))
    big = next(r for r in outcome.tuning.results if r.dims == (("n", 100000),))
    assert outcome.resumed and big.status == "tuned" and big.trials == CAP and _stored(db_url, BIG) == CAP
    _nothing_running(db_url)
