"""Measurement isolation without a GPU: the fake benchmark (``tests/workers.py``) runs in the
measuring child process and, for planted configs, fails as a sticky CUDA error does, ends the
process, or hangs forever (``$AUTOTUNE_FAKE_FAULTS``). The trial is stored as ``crash`` or
``timeout`` with its reason, later configs are measured in a fresh process, the search ends,
and no failed config becomes the best. Nothing here waits for time to pass: a hang blocks on
an Event that is never set, and the tests wait on the marker files the fake leaves."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

import autotune
from autotune.errors import AutotuneError, InvalidInputError, StoreError, TrialFailed
from autotune.measure import benchmark, device
from autotune.kernel.problem import Problem
from autotune.measure.isolation import IsolatedBenchmark, open_isolated
from autotune.measure.measure_options import MeasureOptions
from autotune.kernel.catalog import get_kernel
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype

from fakes import OPTIMUM
from signals import repeat, signal_loaded, start_cli, wait_for
from workers import fake_device, fake_open_benchmark

SMEM_PAD_64 = Problem.of("smem_pad", (("rows", 64), ("cols", 64)), "float32")

BEST = ",".join(f"{k}={v}" for k, v in sorted(OPTIMUM.items()))  # the fastest of the fake landscape
EXITS = "BLOCK_ROWS=16,DIAGONAL=0,IPAD=2,TILE_DIM=32"
HANGS = "BLOCK_ROWS=4,DIAGONAL=0,IPAD=2,TILE_DIM=32"


def _config(key: str) -> Config:
    return Config.of("smem_pad", {k: int(v) for k, v in (item.split("=") for item in key.split(","))})


def _pids(marks: Path) -> list[tuple[str, int]]:
    """(config key, pid of the process that measured it), in order."""
    return [(k, int(p)) for k, p in (line.split() for line in (marks / "pids").read_text().splitlines())]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def faults(monkeypatch, tmp_path):
    """Plant ``{config key: kind}`` in the fake GPU (run in the measuring process); returns its
    marker folder."""
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(benchmark, "open_benchmark", fake_open_benchmark)
    monkeypatch.setattr(device, "query_device", fake_device)
    monkeypatch.setenv("AUTOTUNE_FAKE_MARKS", str(marks))
    monkeypatch.delenv("AUTOTUNE_FAKE_HOLD", raising=False)

    def plant(planted: dict[str, str]) -> Path:
        monkeypatch.setenv("AUTOTUNE_FAKE_FAULTS", ";".join(f"{k}|{v}" for k, v in planted.items()))
        return marks

    return plant


def test_crash_and_hang_fail_their_trials_and_the_search_goes_on_in_a_fresh_process(faults, db_url):
    marks = faults({BEST: "sticky", EXITS: "exit", HANGS: "hang"})
    result = autotune.tune("smem_pad", {"rows": 64, "cols": 64}, trials=100, sampler="grid", db=db_url,
                           trial_timeout=0.5)
    assert result.stopped == "exhausted"
    by_key = {o.config.key: o for o in result.outcomes if o.status not in ("constraint", "duplicate")}
    assert len(by_key) == 54
    assert (by_key[BEST].status, by_key[BEST].reason) == (
        "crash", "illegal_address: an illegal memory access was encountered")
    assert by_key[EXITS].status == "crash" and by_key[EXITS].reason.startswith("process_died: ")
    assert "exit code 3" in by_key[EXITS].reason
    assert by_key[HANGS].status == "timeout" and "0.5 s" in by_key[HANGS].reason
    assert sum(o.status == "ok" for o in by_key.values()) == 51
    # stored as such, and never the best: neither the fastest single measurement nor the winner
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:
        stored = dict(db.execute("select config_key, status from autotune_trials"))
        best = db.execute("select t.config_key, t.status from autotune_best b join autotune_trials t "
                          "on t.id = b.trial_id").fetchall()
    assert (stored[BEST], stored[EXITS], stored[HANGS]) == ("crash", "crash", "timeout")
    assert len(best) == 1 and best[0][1] == "ok" and best[0][0] not in (BEST, EXITS, HANGS)
    assert result.best[0].key not in (BEST, EXITS, HANGS) and result.decision.winner.config.key == best[0][0]
    # each fault ended its process; what came next was measured in a fresh one; none is left
    order = _pids(marks)
    pids = [p for _, p in order]
    for key in (BEST, EXITS, HANGS):
        i = next(i for i, (k, _) in enumerate(order) if k == key)
        assert i + 1 == len(order) or pids[i + 1] != pids[i], key
    assert len(set(pids)) == 4 and all(_gone(p) for p in set(pids))


def test_a_re_timing_that_crashes_ends_the_search_with_one_error_and_every_trial_stored(faults, db_url):
    faults({"retime": "exit"})
    with pytest.raises(AutotuneError, match=r"re-timing of the top 5 configs failed: crash: process_died: .*"
                                            r"exit code 3\); every trial of the search is stored"):
        autotune.tune("smem_pad", {"rows": 64, "cols": 64}, trials=6, sampler="grid", db=db_url)
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:
        assert db.execute("select status from autotune_searches").fetchall() == [("failed",)]
        assert db.execute("select count(*) from autotune_trials where status = 'ok'").fetchone() == (6,)
        # the key's best stays the fastest single measurement, not a re-timed winner
        assert db.execute("select rounds, pooled_median_ms from autotune_best").fetchall() == [(None, None)]


def test_a_config_measured_in_the_child_comes_back_whole(faults):
    faults({})
    kernel, dtype = get_kernel("smem_pad"), get_dtype("float32")
    with open_isolated(fake_open_benchmark, 0, Problem.of(kernel, (("rows", 64), ("cols", 64)), dtype),
                       MeasureOptions(trial_timeout=30, repeats=50)) as bench:
        assert isinstance(bench, IsolatedBenchmark) and bench.device.uuid == "GPU-fake-0"
        assert (bench.memcpy_gbps, bench.copy_gbps, bench.l2_mode) == (3000.0, 2900.0, "single")
        m = bench.measure(_config(BEST))
        assert m.gbps == 2800.0
        [r] = bench.retime([_config(BEST)], 3)
        assert len(r.round_medians_ms) == 3
        pid = bench.pid
    assert _gone(pid)


def test_the_caller_works_meanwhile_while_the_child_opens_the_gpu(faults, monkeypatch):
    """``meanwhile`` (the search opens its database there) runs while the child is still
    opening the GPU: the child is held at its open until ``meanwhile`` releases it."""
    marks = faults({})
    monkeypatch.setenv("AUTOTUNE_FAKE_HOLD", "open")
    seen = []

    def meanwhile():
        while not (marks / "open-0").exists():  # the child is at its open, held
            time.sleep(0.01)
        seen.append("meanwhile")
        (marks / "release").touch()

    with open_isolated(fake_open_benchmark, 0, SMEM_PAD_64, MeasureOptions(trial_timeout=30), meanwhile=meanwhile) as bench:
        assert seen == ["meanwhile"] and bench.device.uuid == "GPU-fake-0"
        assert bench.measure(_config(BEST)).gbps == 2800.0


def test_an_error_meanwhile_kills_the_child_and_is_raised(faults, monkeypatch):
    marks = faults({})
    monkeypatch.setenv("AUTOTUNE_FAKE_HOLD", "open")  # the child never gets to answer

    def meanwhile():
        while not (marks / "open-0").exists():
            time.sleep(0.01)
        raise StoreError("the database is newer")

    pids_before = set(multiprocessing.active_children())
    with pytest.raises(StoreError, match="newer"):
        with open_isolated(fake_open_benchmark, 0, SMEM_PAD_64, meanwhile=meanwhile):
            pass
    assert set(multiprocessing.active_children()) <= pids_before  # the child was killed and reaped


def test_a_local_fake_is_measured_in_this_process(device_info):
    import contextlib

    opened = []

    @contextlib.contextmanager
    def opener(ordinal, problem, measure, also=()):  # a closure cannot be sent to a child: used as it is
        opened.append((ordinal, problem, measure, also))
        yield "in-process"

    measure = MeasureOptions(repeats=33, ci=0, seed=4)
    with open_isolated(opener, 0, SMEM_PAD_64, measure, also=[SMEM_PAD_64.ref]) as bench:
        assert bench == "in-process"
    with open_isolated(opener, 0, SMEM_PAD_64):
        pass
    assert opened == [(0, SMEM_PAD_64, measure, (SMEM_PAD_64.ref,)), (0, SMEM_PAD_64, MeasureOptions(), ())]


def test_the_measure_options_go_whole_to_the_child_and_set_its_trial_limit(faults):
    faults({})
    measure = MeasureOptions(trial_timeout=7.5, repeats=21, seed=2)
    with open_isolated(fake_open_benchmark, 0, SMEM_PAD_64, measure) as bench:
        assert isinstance(bench, IsolatedBenchmark) and bench.trial_timeout == 7.5
        assert bench.measure(_config(BEST)).gbps == 2800.0  # the fake opened with them in the child


def test_an_error_opening_the_gpu_in_the_child_is_raised_in_the_parent(faults, monkeypatch):
    faults({})
    monkeypatch.setenv("AUTOTUNE_FAKE_GPUS", "NVIDIA H100 80GB HBM3")
    for precheck in (False, True):  # raised in the child, or by the check here before it starts
        with pytest.raises(InvalidInputError, match="--device 3 is out of range"):
            with open_isolated(fake_open_benchmark, 3, SMEM_PAD_64, precheck=precheck):
                pass


def test_a_timeout_kills_the_child_and_the_next_request_starts_another(faults):
    faults({HANGS: "hang"})
    with open_isolated(fake_open_benchmark, 0, SMEM_PAD_64, MeasureOptions(trial_timeout=0.5)) as bench:
        first = bench.pid
        with pytest.raises(TrialFailed) as failed:
            bench.measure(_config(HANGS))
        assert failed.value.status == "timeout" and bench.pid is None and _gone(first)
        assert bench.measure(_config(BEST)).gbps == 2800.0 and bench.restarts == 1


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_bad_trial_timeout_is_one_error_line(value, db_url):
    from typer.testing import CliRunner

    from autotune.cli import app

    r = CliRunner().invoke(app, ["search", "--size", "64", "--trial-timeout", value, "--db", db_url])
    assert r.exit_code == 2, r.output
    assert "--trial-timeout" in r.output and "Traceback" not in r.output


@repeat
def test_ctrl_c_during_a_hung_kernel_stops_the_search_and_its_child(tmp_path, run):
    db = f"sqlite:///{tmp_path / 'hung.db'}"
    proc, marks = start_cli(tmp_path, "--sampler", "grid", "--trials", "100", "--trial-timeout", "600", "--db", db,
                            env={"AUTOTUNE_FAKE_FAULTS": f"{BEST}|hang"})
    wait_for(proc, marks, "fault-hang")  # the kernel is hung (the 600 s limit is far away)
    hung = int((marks / "fault-hang").read_text())
    output = signal_loaded(proc, signal.SIGINT, timeout=60)
    assert proc.returncode == 130, output
    assert "Traceback" not in output and _gone(hung)
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        assert conn.execute("select status from autotune_searches").fetchall() == [("interrupted",)]
        assert conn.execute("select count(*) from autotune_trials where config_key = ?", (BEST,)).fetchone() == (0,)


def test_a_crash_on_one_gpu_of_several_fails_that_trial_and_every_worker_finishes(shared_db, faults):
    from test_concurrency import rows
    from workers import run_cli

    faults({BEST: "sticky", EXITS: "exit"})
    # enough trials for the grid to be exhausted: every planted config is measured by one GPU or both
    done = run_cli(shared_db, "--device", "0,1", "--trials", "200", "--seed", "1", "--sampler", "grid")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert rows(shared_db, "select status from autotune_searches") == [("finished",), ("finished",)]
    crashed = dict(rows(shared_db, "select config_key, status from autotune_trials where config_key in (:a, :b)",
                        a=BEST, b=EXITS))
    assert crashed == {BEST: "crash", EXITS: "crash"}
    best = rows(shared_db, "select t.config_key from autotune_best b join autotune_trials t on t.id = b.trial_id")
    assert len(best) == 1 and best[0][0] not in (BEST, EXITS)
