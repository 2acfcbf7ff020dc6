"""Several processes search into one SQLite file at once; one is killed mid-search."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from autotune import store as store_module
from autotune.key import tuning_key
from autotune.space import load_space
from autotune.store import Store
from autotune.tuner import search

from fakes import FakeTimer
from workers import DEVICE

WORKER = str(Path(__file__).parent / "workers.py")


def start(db, out, kernel="smem_pad", rows=256, dtype="float32", sampler="random", n=12, seed=0,
          resume=True, delay=0.0):
    args = [sys.executable, WORKER, db, kernel, str(rows), dtype, sampler, str(n), str(seed),
            "1" if resume else "0", str(delay), str(out)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def rows(db_file, sql, *params):
    con = sqlite3.connect(db_file)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def wait_for_trials(db_file, n, timeout=120.0) -> None:
    """Poll until ``n`` trials are stored (the file may exist before its tables do)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            if db_file.exists() and len(rows(db_file, "select id from autotune_trials")) >= n:
                return
        except sqlite3.OperationalError:
            continue
    raise AssertionError(f"fewer than {n} trials stored after {timeout} s")


def test_eight_processes_lose_and_duplicate_nothing(tmp_path):
    db_file = tmp_path / "shared.db"
    db = f"sqlite:///{db_file}"
    plans = [  # (kernel, rows, dtype, seed): the first two share one study
        ("smem_pad", 256, "float32", 1), ("smem_pad", 256, "float32", 2), ("smem_pad", 512, "float32", 3),
        ("smem", 256, "float32", 4), ("smem", 512, "float64", 5), ("smem_pad", 256, "float64", 6),
        ("smem_pad", 128, "int8", 7), ("smem", 128, "float16", 8),
    ]
    procs = [(start(db, tmp_path / f"w{i}.json", kernel=k, rows=r, dtype=d, seed=s), tmp_path / f"w{i}.json")
             for i, (k, r, d, s) in enumerate(plans)]
    for proc, _ in procs:
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, output
        assert "database is locked" not in output
    reported = [t for _, out in procs for t in json.loads(out.read_text())]
    assert len(reported) >= 8 * 5
    stored = rows(db_file, "select search_id, number, config_key, status from autotune_trials")
    assert sorted(stored) == sorted((t["search_id"], t["number"], t["config"], t["status"]) for t in reported)
    assert len(set((s, n) for s, n, _, _ in stored)) == len(stored)  # nobody's trial twice
    assert rows(db_file, "pragma integrity_check") == [("ok",)]
    # the two processes of one study drew distinct Optuna trial numbers from the same study
    shared = [t for _, out in procs[:2] for t in json.loads(out.read_text())]
    assert len({t["number"] for t in shared}) == len(shared)
    assert len(rows(db_file, "select id from autotune_searches where status = 'finished'")) == 8


def test_sigkill_mid_search_loses_at_most_the_trial_in_flight(tmp_path, monkeypatch):
    db_file = tmp_path / "killed.db"
    db = f"sqlite:///{db_file}"
    proc = start(db, tmp_path / "killed.json", sampler="grid", n=200, resume=False, delay=0.3)
    wait_for_trials(db_file, 3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert rows(db_file, "pragma integrity_check") == [("ok",)]
    reported = json.loads((tmp_path / "killed.json").read_text())
    stored = rows(db_file, "select number, config_key from autotune_trials order by number")
    assert stored == [(t["number"], t["config"]) for t in reported]  # every finished trial is there
    assert rows(db_file, "select status from autotune_searches") == [("running",)]
    running = rows(db_file, "select number from trials where state = 'RUNNING'")
    assert len(running) <= 1  # the trial in flight, nothing else

    # --resume: the dead trial is failed by heartbeat, finished configs are not measured again
    monkeypatch.setattr(store_module, "GRACE_S", 1)
    time.sleep(1.5)
    key = tuning_key("smem_pad", DEVICE, 256, 256, "float32")
    space = load_space("smem_pad")
    timer = FakeTimer()
    result = search(key, space, timer, Store(db), n_trials=200, sampler="grid", resume=True)
    assert result.stopped == "exhausted"
    assert not {c.key for c in timer.calls} & {t["config"] for t in reported}
    assert {c.key for c in timer.calls} | {t["config"] for t in reported} == {c.key for c in space.configs()}
    assert rows(db_file, "select count(*) from trials where state = 'RUNNING'") == [(0,)]
    if running:
        assert rows(db_file, "select state from trials where number = ?", running[0][0]) == [("FAIL",)]


def test_ctrl_c_stops_cleanly_prints_the_best_so_far_and_exits_130(tmp_path):
    db_file = tmp_path / "interrupted.db"
    proc = subprocess.Popen([sys.executable, WORKER, "cli", "0.3", "search", "--size", "64", "--sampler", "grid",
                             "--db", f"sqlite:///{db_file}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    wait_for_trials(db_file, 2)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    assert "Traceback" not in output
    assert "best so far: " in output and "interrupted: trials so far are stored" in output
    assert rows(db_file, "select status from autotune_searches") == [("interrupted",)]
    assert rows(db_file, "pragma integrity_check") == [("ok",)]
    assert len(rows(db_file, "select id from autotune_trials where status = 'ok'")) >= 2
    interrupted = rows(db_file, "select t.state from trials t join trial_user_attributes a on a.trial_id = t.trial_id "
                                "where a.key = 'status' and a.value_json = '\"interrupted\"'")
    assert interrupted in ([], [("FAIL",)])  # the trial in flight, if SIGINT came during one
