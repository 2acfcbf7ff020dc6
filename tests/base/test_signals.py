"""SIGINT and SIGTERM at every moment of a search: inside a measurement (``test_concurrency``,
``test_workers``), while the store retries a locked database, during the re-timing and
during the GPU workers' start-up; SIGTERM like Ctrl-C but exit 143. The subprocess tests
run on a machine loaded by the test itself from the signal to the exit and act on observable
state (``tests/signals.py``)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from autotune.store.opening import open_results

from autotune.errors import StoreError
from autotune.base import signals as stop
from autotune.store.key import tuning_key

from signals import cpu_load, finish, release, repeat, signal_loaded, start_cli, wait_for
from test_concurrency import intact, rows
from workers import DEVICE

ROOT = Path(__file__).resolve().parents[2]


def _interrupt_self() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def _until_the_handler_runs() -> None:
    """Give the handler a bytecode boundary to run at (it ends this by raising)."""
    for _ in range(200):
        time.sleep(0.05)


def test_handlers_override_an_inherited_ignore_and_are_restored():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt):
            with stop.handling():
                assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
                _interrupt_self()
                _until_the_handler_runs()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert stop.exit_code() == 130
    finally:
        signal.signal(signal.SIGINT, before)


def test_deferred_signals_wait_for_a_safe_point_and_are_never_dropped():
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with stop.deferred():
            _interrupt_self()  # as if during a database write: recorded, not raised
            reached.append("write ended")
            with stop.shielded():
                stop.check()  # a shielded block (the final status write) is never cut
                reached.append("shielded")
            stop.check()
            reached.append("never")
    assert reached == ["write ended", "shielded"]

    with pytest.raises(KeyboardInterrupt):
        with stop.deferred():
            with stop.interruptible():  # a measurement: cut at once
                _interrupt_self()
                _until_the_handler_runs()
                reached.append("measured")
    assert "measured" not in reached

    with pytest.raises(KeyboardInterrupt):  # nothing checked: leaving the block raises
        with stop.deferred():
            _interrupt_self()
            reached.append("left")
    assert reached[-1] == "left"


def test_a_signal_in_a_retry_backoff_stops_at_once_and_writes_nothing(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    store = open_results(url)
    key = tuning_key("smem_pad", DEVICE, (256, 256), "float32")
    holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write lock
    backoffs = []
    real = stop.sleep

    def sleep(seconds):
        backoffs.append(seconds)
        if len(backoffs) == 2:
            _interrupt_self()  # SIGINT while the store waits for the lock
        real(seconds)

    monkeypatch.setattr(stop, "sleep", sleep)
    with pytest.raises(KeyboardInterrupt):
        with stop.deferred():
            store.start_search(key, study_name="s", sampler="grid", seed=None, memcpy_gbps=None)
    assert len(backoffs) == 2  # not a third attempt: stopped in the second backoff
    holder.execute("ROLLBACK")
    holder.close()
    assert rows(url, "select count(*) from autotune_searches") == [(0,)]


def test_a_lock_held_past_the_retries_is_one_store_error_saying_how_long(tmp_path, monkeypatch):
    from autotune.store import locking

    url = f"sqlite:///{tmp_path / 'locked.db'}"
    store = open_results(url)
    monkeypatch.setattr(locking, "LOCK_WAIT_S", 0.5)
    holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match=r"database is locked \(still refused after \d+ attempts in \d+ s\)"):
            store.find_best()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@repeat
def test_a_signal_while_the_store_retries_a_locked_database_stops_the_search(tmp_path, run):
    db_path = tmp_path / "locked.db"
    db = f"sqlite:///{db_path}"
    proc, marks = start_cli(tmp_path, "--sampler", "grid", "--db", db, hold="measure:3")
    wait_for(proc, marks, "measure-0-3")
    holder = sqlite3.connect(db_path, isolation_level=None, timeout=60)
    holder.execute("BEGIN IMMEDIATE")  # the third trial's result cannot be stored now
    with contextlib.ExitStack() as loaded:
        try:
            release(marks)
            wait_for(proc, marks, "retrying")
            loaded.enter_context(cpu_load())  # the stop on a loaded machine, the signal to the exit (tests/signals.py)
            proc.send_signal(signal.SIGINT)
            wait_for(proc, marks, "retry-interrupted")  # acted on while the lock is still held
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        output = finish(proc)
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "best so far: " in output
    assert rows(db, "select status from autotune_searches") == [("interrupted",)]
    assert len(rows(db, "select id from autotune_trials")) == 2  # the third was measured, not stored
    assert rows(db, "select count(*) from trials where state = 'RUNNING'") == [(0,)]
    assert intact(db)


@repeat
def test_a_signal_during_the_re_timing_stops_before_a_winner_is_stored(tmp_path, run):
    db = f"sqlite:///{tmp_path / 'retime.db'}"
    proc, marks = start_cli(tmp_path, "--sampler", "grid", "--trials", "3", "--db", db, hold="retime")
    wait_for(proc, marks, "retime")
    output = signal_loaded(proc, signal.SIGINT)
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "best so far: " in output and "single measurement" in output
    assert rows(db, "select status from autotune_searches") == [("interrupted",)]
    assert len(rows(db, "select id from autotune_trials where status = 'ok'")) == 3
    assert rows(db, "select rounds, pooled_median_ms from autotune_best") == [(None, None)]


@repeat
def test_sigterm_stops_a_search_like_ctrl_c_and_exits_143(tmp_path, run):
    db = f"sqlite:///{tmp_path / 'term.db'}"
    proc, marks = start_cli(tmp_path, "--sampler", "grid", "--db", db, hold="measure:3")
    wait_for(proc, marks, "measure-0-3")
    output = signal_loaded(proc, signal.SIGTERM)
    assert proc.returncode == 143, output
    assert "Traceback" not in output and "interrupted (SIGTERM): trials so far are stored" in output
    assert rows(db, "select status from autotune_searches") == [("interrupted",)]
    assert len(rows(db, "select id from autotune_trials where status = 'ok'")) == 2
    assert rows(db, "select count(*) from trials where state = 'RUNNING'") == [(0,)]


@repeat
def test_a_signal_during_the_workers_start_up_stops_every_worker(tmp_path, run):
    db = f"sqlite:///{tmp_path / 'startup.db'}"
    proc, marks = start_cli(tmp_path, "--device", "0,1", "--sampler", "grid", "--trials", "20", "--db", db,
                            hold="open", gpus=2, new_session=True)
    wait_for(proc, marks, "open-0", "open-1")  # both workers inside their GPU's start-up
    # passed on by the parent; each worker's wait for its measuring process (held opening the
    # GPU, never released) is cut at once and that process killed: a lost signal hangs here
    output = signal_loaded(proc, signal.SIGINT)
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "interrupted: trials so far are stored" in output
    assert rows(db, "select count(*) from autotune_searches") == [(0,)]  # no worker began its search
    assert not any(p.name.startswith("measure-") for p in marks.iterdir())


@repeat
def test_sigterm_stops_every_worker_and_exits_143(tmp_path, run):
    db = f"sqlite:///{tmp_path / 'term.db'}"
    proc, marks = start_cli(tmp_path, "--device", "0,1", "--sampler", "grid", "--trials", "200", "--db", db,
                            hold="measure:3", gpus=2, new_session=True)
    wait_for(proc, marks, "measure-0-3", "measure-1-3")
    output = signal_loaded(proc, signal.SIGTERM)
    assert proc.returncode == 143, output
    assert "Traceback" not in output and "interrupted (SIGTERM)" in output
    assert rows(db, "select gpu_ordinal, status from autotune_searches order by gpu_ordinal") == [
        (0, "interrupted"), (1, "interrupted")], output
    assert rows(db, "select count(*) from trials where state = 'RUNNING'") == [(0,)]


def test_a_process_whose_parent_is_gone_already_ends_at_die_with_parent():
    """A GPU worker or measuring child asks to die with its parent; one re-parented before it
    asked (its parent killed meanwhile) ends at once instead of going on as an orphan."""
    import subprocess
    import sys

    code = "from autotune.base.signals import die_with_parent; import os; die_with_parent(os.getppid()); print('on')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "on\n"
    gone = subprocess.run([sys.executable, "-c", code.replace("os.getppid()", "-7")], capture_output=True, text=True)
    assert (gone.returncode, gone.stdout) == (1, "")


def test_on_sigterm_runs_its_action_then_the_previous_handler_and_is_taken_back():
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(("previous", signum)))
    try:
        theirs = signal.getsignal(signal.SIGTERM)
        undo = stop.on_sigterm(lambda: seen.append("action"))
        assert signal.getsignal(signal.SIGTERM) is not theirs
        signal.raise_signal(signal.SIGTERM)
        assert seen == ["action", ("previous", signal.SIGTERM)]
        undo()
        assert signal.getsignal(signal.SIGTERM) is theirs
        undo()  # twice: nothing more
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_on_sigterm_leaves_a_handler_installed_after_it_in_place():
    previous = signal.getsignal(signal.SIGTERM)
    try:
        undo = stop.on_sigterm(lambda: None)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # someone else's, installed after
        undo()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_on_sigterm_keeps_an_ignored_sigterm_ignored():
    seen = []
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        undo = stop.on_sigterm(lambda: seen.append("action"))
        signal.raise_signal(signal.SIGTERM)  # the process lives on: SIGTERM was ignored
        assert seen == ["action"]
        undo()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_on_sigterm_ends_the_process_by_sigterm_where_that_was_the_default(tmp_path):
    import subprocess
    import sys

    mark = tmp_path / "action"
    code = ("import os, pathlib, signal\n"
            "from autotune.base import signals\n"
            "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
            f"signals.on_sigterm(lambda: pathlib.Path({str(mark)!r}).touch())\n"
            "signal.raise_signal(signal.SIGTERM)\n"
            "raise SystemExit('still alive after SIGTERM')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert mark.exists()


def test_on_sigterm_outside_the_main_thread_installs_nothing():
    import threading

    before = signal.getsignal(signal.SIGTERM)
    undos = []
    t = threading.Thread(target=lambda: undos.append(stop.on_sigterm(lambda: None)))
    t.start()
    t.join()
    assert signal.getsignal(signal.SIGTERM) is before
    undos[0]()
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_that_comes_as_an_interruptible_block_is_entered_cuts_it(monkeypatch):
    """A signal that comes just after the entry's check, before the block counts as
    interruptible, was only recorded: the block then waited (a worker's ``signal.pause()``
    forever, until its pool killed it: test_gpu_pool's signal test failed so under load)."""
    real = stop.check

    def check_then_signal():
        real()
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs before the next line

    monkeypatch.setattr(stop, "check", check_then_signal)
    entered = []
    with pytest.raises(KeyboardInterrupt):
        with stop.deferred():
            with stop.interruptible():
                entered.append(True)
    assert entered == []
