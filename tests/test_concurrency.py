"""Several processes search into one database at once; one is killed mid-search.

Each test runs on a SQLite file and, where a server is configured, on a PostgreSQL database
of its own (``postgres`` marker; see conftest)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autotune.store.opening import open_results
import sqlalchemy as sa

from autotune.kernel.catalog import get_kernel
from autotune.store import study_storage
from autotune.store.key import tuning_key
from autotune.search.options import SearchOptions
from autotune.search.tuner import search

from fakes import FakeTimer
from signals import finish, release, repeat, signal_loaded, start_cli, wait_for
from workers import DEVICE

WORKER = str(Path(__file__).parent / "workers.py")


def start(db, out, kernel="smem_pad", rows=256, dtype="float32", sampler="random", n=12, seed=0,
          resume=True, delay=0.0):
    args = [sys.executable, WORKER, db, kernel, str(rows), dtype, sampler, str(n), str(seed),
            "1" if resume else "0", str(delay), str(out)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def rows(db, sql, **params):
    """The rows of ``sql`` (named ``:params``) read from the database at URL ``db``."""
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return [tuple(r) for r in connection.execute(sa.text(sql), params)]
    finally:
        engine.dispose()


def intact(db) -> bool:
    """SQLite's integrity check passes (PostgreSQL: the server guards integrity itself)."""
    return not db.startswith("sqlite") or rows(db, "pragma integrity_check") == [("ok",)]


def reported(out: Path, measured: bool = True) -> list[dict]:
    """The trials a worker reported in ``out``; ``measured``: only those it measured and stored
    (not a config another worker on the study measured first, nor a constraint breaker)."""
    trials = json.loads(out.read_text())
    return [t for t in trials if not measured or t["status"] not in ("duplicate", "constraint")]


def wait_for_trials(db, n, timeout=120.0) -> None:
    """Poll until ``n`` trials are stored (the database may exist before its tables do)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            if len(rows(db, "select id from autotune_trials")) >= n:
                return
        except sa.exc.DBAPIError:
            continue
    raise AssertionError(f"fewer than {n} trials stored after {timeout} s")


def test_eight_processes_lose_and_duplicate_nothing(tmp_path, shared_db):
    db = shared_db
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
        assert "database is locked" not in output and "Traceback" not in output
    reported_ = [t for _, out in procs for t in reported(out)]
    assert len(reported_) >= 8 * 5
    stored = rows(db, "select search_id, number, config_key, status from autotune_trials")
    assert sorted(stored) == sorted((t["search_id"], t["number"], t["config"], t["status"]) for t in reported_)
    assert len(set((s, n) for s, n, _, _ in stored)) == len(stored)  # nobody's trial twice
    assert intact(db)
    # the two processes of one study drew distinct Optuna trial numbers from the same study
    shared = [t for _, out in procs[:2] for t in reported(out, measured=False)]
    assert len({t["number"] for t in shared}) == len(shared)
    assert len(rows(db, "select id from autotune_searches where status = 'finished'")) == 8


def test_sigkill_mid_search_loses_at_most_the_trial_in_flight(tmp_path, monkeypatch, shared_db):
    db = shared_db
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("AUTOTUNE_FAKE_MARKS", str(marks))
    monkeypatch.setenv("AUTOTUNE_FAKE_HOLD", "measure:4")
    proc = start(db, tmp_path / "killed.json", sampler="grid", n=200, resume=False, delay=0.3)
    # killed inside its fourth measurement (killed as soon as a third trial was stored, it
    # could die between storing that trial and telling Optuna, which then counts it unmeasured)
    wait_for(proc, marks, "measure-0-4")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert intact(db)
    stored = rows(db, "select number, config_key from autotune_trials order by number")
    measured = [(t["number"], t["config"]) for t in reported(tmp_path / "killed.json")]
    # every finished trial is there; the kill may fall between storing a trial and reporting it
    assert stored[:len(measured)] == measured and len(stored) - len(measured) <= 1
    finished = {c for _, c in stored}
    assert rows(db, "select status from autotune_searches") == [("running",)]
    running = rows(db, "select number from trials where state = 'RUNNING'")
    assert len(running) <= 1  # the trial in flight, nothing else

    # --resume: the dead trial is failed by heartbeat, finished configs are not measured again
    monkeypatch.setattr(study_storage, "GRACE_S", 1)
    time.sleep(1.5)
    key = tuning_key("smem_pad", DEVICE, (256, 256), "float32")
    space = get_kernel("smem_pad").space()
    timer = FakeTimer()
    result = search(key, space, timer, open_results(db), SearchOptions(trials=200, strategy="grid", resume=True))
    assert result.stopped == "exhausted"
    assert not {c.key for c in timer.calls} & finished
    assert {c.key for c in timer.calls} | finished == {c.key for c in space.configs()}
    assert rows(db, "select count(*) from trials where state = 'RUNNING'") == [(0,)]
    if running:
        assert rows(db, "select state from trials where number = :n", n=running[0][0]) == [("FAIL",)]


@repeat
@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_ctrl_c_stops_cleanly_prints_the_best_so_far_and_exits_130(tmp_path, inherited, run):
    """SIGINT inside the third measurement, the machine loaded from the signal to the exit; also with SIGINT inherited
    ignored (a background job of a non-interactive shell): the search measured all 54
    configs and exited 0 then, in a CI run."""
    db = f"sqlite:///{tmp_path / 'interrupted.db'}"
    proc, marks = start_cli(tmp_path, "--sampler", "grid", "--db", db, hold="measure:3", inherited=inherited)
    wait_for(proc, marks, "measure-0-3")
    output = signal_loaded(proc, signal.SIGINT)
    assert proc.returncode == 130, output
    assert "Traceback" not in output
    assert "best so far: " in output and "interrupted: trials so far are stored" in output
    assert rows(db, "select status from autotune_searches") == [("interrupted",)]
    assert intact(db)
    assert len(rows(db, "select id from autotune_trials where status = 'ok'")) == 2
    interrupted = rows(db, "select t.state from trials t join trial_user_attributes a on a.trial_id = t.trial_id "
                           "where a.key = 'status' and a.value_json = '\"interrupted\"'")
    # the trial in flight, and the next config's if the search had claimed it meanwhile (sent ahead)
    assert interrupted in ([("FAIL",)], [("FAIL",), ("FAIL",)])
    assert rows(db, "select count(*) from trials where state = 'RUNNING'") == [(0,)]
    assert not (marks / "measure-0-4").exists()  # nothing measured after the signal


def test_a_killed_worker_trial_is_failed_by_heartbeat_while_another_goes_on(tmp_path, monkeypatch, shared_db):
    db = shared_db
    monkeypatch.setenv("AUTOTUNE_TEST_GRACE_S", "2")  # workers: heartbeat 1 s, dead after 2 s
    doomed = start(db, tmp_path / "doomed.json", sampler="grid", n=200, resume=False, delay=0.4)
    wait_for_trials(db, 1)
    survivor = start(db, tmp_path / "survivor.json", sampler="grid", n=25, resume=True, delay=0.4)
    wait_for_trials(db, 4)
    deadline = time.monotonic() + 60
    while True:  # the doomed worker frozen while its trials in flight are read, then killed: none ends between
        assert time.monotonic() < deadline, "the two workers never had a trial in flight at once"
        os.kill(doomed.pid, signal.SIGSTOP)  # (read before the kill, a trial it ended meanwhile was COMPLETE)
        if len(running := rows(db, "select number from trials where state = 'RUNNING'")) >= 2:
            break
        os.kill(doomed.pid, signal.SIGCONT)
        time.sleep(0.05)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=30)
    output, _ = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, output

    states = {n: s for n, s in rows(db, "select number, state from trials")}
    assert "RUNNING" not in states.values()
    # the survivor's trial in flight may have been a config the doomed worker measured first
    # (told as a duplicate, not measured): every trial of the survivor counts as survived
    survived = {t["number"] for t in reported(tmp_path / "survivor.json", measured=False)}
    dead = [n for (n,) in running if n not in survived]
    # the killed worker's trial in flight, and the next config it had claimed meanwhile where it
    # had one (a search sends ahead: SIGKILL leaves both to the heartbeat), each failed
    assert 1 <= len(dead) <= 2 and all(states[n] == "FAIL" for n in dead), (dead, states)
    assert rows(db, "select status from autotune_searches order by id") == [("running",), ("finished",)]
    assert intact(db)


@pytest.mark.postgres
def test_three_hosts_join_one_study_measure_no_config_twice_lose_no_trial_and_agree_on_one_best(tmp_path, pg_url):
    """Issue 37: three ``autotune search --resume --db postgresql://...`` processes, each with a
    cubin cache of its own (as on three hosts), search one study at once. Each is held inside
    its third measurement; then one is killed (SIGKILL, its measuring child too). The two
    others go on, fail its trial in flight by heartbeat, and both stop before their re-timing
    until both have measured all they will, so each re-times the whole study."""
    db, procs, marks = pg_url, {}, {}
    for name, seed in (("a", 1), ("b", 2), ("killed", 3)):
        env = {"AUTOTUNE_CACHE_DIR": str(tmp_path / name / "cubins"), "AUTOTUNE_TEST_GRACE_S": "1"}
        procs[name], marks[name] = start_cli(
            tmp_path / name, "--strategy", "random", "--seed", str(seed), "--trials", "25", "--resume", "--db", db,
            hold="measure:3,retime", new_session=True, env=env, delay="0.2")  # heartbeat 1 s, dead after 1 s
    for name in procs:
        wait_for(procs[name], marks[name], "measure-0-3")
    os.killpg(procs["killed"].pid, signal.SIGKILL)  # the CLI and its measuring child
    procs["killed"].wait(timeout=30)
    for name in ("a", "b"):  # their later measurements take >= 4 s: the killed trial's heartbeat stops for good
        release(marks[name], "measure")
    for name in ("a", "b"):
        wait_for(procs[name], marks[name], "retime")
    for name in ("a", "b"):
        release(marks[name], "retime")
    output = {name: finish(procs[name]) for name in ("a", "b")}
    for name, text in output.items():
        assert procs[name].returncode == 0, text
        assert "Traceback" not in text

    # one study; no config measured twice, by any process
    assert len(rows(db, "select study_id from studies")) == 1
    measured = rows(db, "select config_key from autotune_trials")
    assert len(measured) == len({c for (c,) in measured}), sorted(measured)
    # no trial lost: the killed process's two trials stored, its third failed by the others' heartbeat
    # check (no RUNNING trial left, and no row of it); the two others measured their budget or the rest
    killed = rows(db, "select count(t.id) from autotune_searches s left join autotune_trials t "
                      "on t.search_id = s.id where s.status = 'running' group by s.id")
    assert killed == [(2,)]  # its search row never finished
    assert rows(db, "select count(*) from trials where state = 'RUNNING'") == [(0,)]
    lost = rows(db, "select count(*) from trials t where t.state = 'FAIL' and not exists (select 1 from "
                    "trial_user_attributes a where a.trial_id = t.trial_id and a.key = 'status')")
    assert lost in ([(1,)], [(2,)])  # its trial in flight, and the next one if it had claimed it meanwhile
    finished = rows(db, "select count(t.id) from autotune_searches s join autotune_trials t on t.search_id = s.id "
                        "where s.status = 'finished' group by s.id")
    assert len(finished) == 2 and (sum(n for (n,) in finished) == 50 or len(measured) >= 53), finished
    # one stored best, the one both printed: each re-timed the whole study
    best = rows(db, "select t.config_key from autotune_best b join autotune_trials t on t.id = b.trial_id")
    assert len(best) == 1
    assert all(f"best: {best[0][0]} " in text for text in output.values()), output
    fastest = rows(db, "select config_key from autotune_trials where status = 'ok' order by median_ms limit 1")
    assert best == fastest
