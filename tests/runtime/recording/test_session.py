"""Recording launches (autotune/runtime/recording/: record and Recording, end to end) without a GPU: fake PyTorch tensors and a
fake driver whose CUDA events read a GPU clock that each launch advances
(tests/fake_gpu_arrays.py). Counts per problem, sampled GPU time, the hot path swapped in and
out, batches in the database, bad names, AUTOTUNE_RECORD, and processes interrupted by
SIGINT, SIGTERM and SIGKILL or recording into one database at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import autotune
from autotune.errors import InvalidInputError, StoreError
from autotune.kernel.catalog import KERNELS
from autotune.runtime import recording
from autotune.runtime.compiled import Launcher
from autotune.runtime.transpose.prepared import PreparedTranspose

from fake_gpu_arrays import Tensor, installed

CHILD = Path(__file__).resolve().parents[2] / "recording_child.py"


@pytest.fixture
def fake(monkeypatch, device_info, histogram):
    yield from installed(monkeypatch, histogram, device_info)
    assert recording.active() is None, "a test left a recording active"


def problems(db_url, name):
    from autotune.store.opening import open_store
    from autotune.store.workloads import workload_problems

    store = open_store(db_url)
    try:
        return {p.label: p for p in workload_problems(store, name)}
    finally:
        store.close()


def test_every_launch_is_counted_per_problem_and_one_in_n_is_timed(fake, histogram, db_url):
    f = autotune.launcher(histogram, db=db_url)
    g = autotune.launcher("smem_vec", db=db_url)
    bins = Tensor((256,), "uint32")
    f(bins, Tensor((1000,), "uint8"))  # prepared before the recording: swapped when it starts
    with autotune.record("app", db=db_url, sample_every=4) as r:
        for _ in range(10):
            f(bins, Tensor((1000,), "uint8"))
            f(bins, Tensor((5000,), "uint8"), reset=True)  # the reset path counts too
        for _ in range(3):
            g(Tensor((64, 100)), Tensor((100, 64)))
    assert r.batches >= 1 and r.error is None
    found = problems(db_url, "app")
    assert sorted(found) == ["histogram256 1000 uint8", "histogram256 5000 uint8", "smem_vec 100x64 float32"]
    small, large, vec = found["histogram256 1000 uint8"], found["histogram256 5000 uint8"], found["smem_vec 100x64 float32"]
    assert (small.calls, large.calls, vec.calls) == (10, 10, 3)
    assert (small.sampled, large.sampled, vec.sampled) == (5, 5, 1)  # calls 2, 6, 10 and 4, 8 (powers of two; never the 1st)
    grid = lambda n: (min(-(-n // (4 * 256)), 1056), 1, 1)  # noqa: E731  (the default config's grid)
    assert small.ms_per_call == pytest.approx(fake.launch_ms(grid(1000), (256, 1, 1)), rel=1e-5)
    assert large.ms_per_call == pytest.approx(fake.launch_ms(grid(5000), (256, 1, 1)), rel=1e-5)
    assert small.device.name == "NVIDIA H100 80GB HBM3" and small.kernel_ref == str(histogram.path)
    assert vec.kernel_ref == "smem_vec" and vec.source_hash == KERNELS["smem_vec"].source_hash
    assert len([c for c in fake.launches]) == 1 + 20 + 3


def test_off_the_hot_path_is_the_original_and_on_it_is_swapped_in_and_back(fake, histogram, db_url):
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32"), Tensor((64,), "uint8")
    f(bins, data)
    p = f.prepared(bins, data)
    original_call, original_transpose = Launcher.__call__, PreparedTranspose.__call__
    assert p.go is p.raw_go
    with autotune.record("swap", db=db_url):
        assert p.go is not p.raw_go
        assert Launcher.__call__ is not original_call and PreparedTranspose.__call__ is not original_transpose
        f(bins, Tensor((65,), "uint8"))  # prepared while recording: counted from its first call
        q = f.prepared(bins, Tensor((65,), "uint8"))
        assert q.go is not q.raw_go
    assert p.go is p.raw_go and q.go is q.raw_go
    assert Launcher.__call__ is original_call and PreparedTranspose.__call__ is original_transpose
    f(bins, data)  # not counted: the recording stopped
    assert {label: w.calls for label, w in problems(db_url, "swap").items()} == {"histogram256 65 uint8": 1}


def test_compiled_and_prepared_transposes_are_counted(fake, histogram, db_url):
    fake.kernel = KERNELS["smem_vec"]
    with autotune.record("others", db=db_url, sample_every=2):
        g = autotune.compiled("smem_vec", (100, 300), "float32", db=db_url)
        for _ in range(3):
            g(Tensor((300, 100)), Tensor((100, 300)))
        t = PreparedTranspose(g, 4)
        for _ in range(5):
            t(0x10000, 0x20000, 300, 1, 0, 0)
    found = problems(db_url, "others")
    (label, w), = found.items()
    assert label == "smem_vec 100x300 float32" and w.calls == 3 + 5
    assert w.sampled == 4  # one slot per problem for both (shared between threads): calls 2, 4, 6 and 8
    assert len(fake.launches) == 8



def test_a_stalled_sample_does_not_set_the_time_per_call(fake, histogram, db_url, monkeypatch):
    """The H100 app run of 2026-11-27 read a 11 µs transpose's one sample as 4.5 ms: samples
    come from the powers of two too, and a batch's time is their median."""
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32"), Tensor((1000,), "uint8")
    record, starts = fake.cuEventRecord, []

    def stalled(event, stream):  # the first sample's start event: the GPU then idles 1000 ms
        status = record(event, stream)
        if not starts:
            fake.clock_ms += 1000.0
        starts.append(event)
        return status
    with autotune.record("stall", db=db_url, sample_every=64, flush_s=3600):
        monkeypatch.setattr(fake, "cuEventRecord", stalled)
        for _ in range(10):
            f(bins, data)
    (w,) = problems(db_url, "stall").values()
    assert (w.calls, w.sampled) == (10, 3)  # calls 2, 4 and 8
    grid = (min(-(-1000 // (4 * 256)), 1056), 1, 1)
    assert w.ms_per_call == pytest.approx(fake.launch_ms(grid, (256, 1, 1)), rel=1e-5)  # not (1000 + 3 x) / 3


def test_a_sample_whose_host_side_stalled_is_dropped(fake, histogram, db_url, monkeypatch):
    """Another thread holding the GIL between a sample's events (the flusher writing a batch)
    leaves the GPU idle inside them: such a sample is dropped, the call still counted."""
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32"), Tensor((1000,), "uint8")
    clock = iter(range(0, 10**9, 10_000))  # each reading 10 µs after the last

    def host_ns():
        return next(clock)
    monkeypatch.setattr(recording.events, "_host_ns", host_ns)
    with autotune.record("host", db=db_url, sample_every=64, flush_s=3600):
        f(bins, data)
        f(bins, data)  # sampled: its host side read 10 µs
        monkeypatch.setattr(recording.events, "MAX_HOST_US", 5.0)
        f(bins, data)
        f(bins, data)  # sampled: 10 µs is over the limit now
    (w,) = problems(db_url, "host").values()
    assert (w.calls, w.sampled) == (4, 1)

def test_a_launch_in_a_graph_capture_is_counted_not_timed(fake, histogram, db_url):
    f = autotune.launcher(histogram, db=db_url)
    fake.capturing = True
    with autotune.record("graph", db=db_url, sample_every=1):
        f(Tensor((256,), "uint32"), Tensor((64,), "uint8"))
    (w,) = problems(db_url, "graph").values()
    assert (w.calls, w.sampled, w.ms_per_call) == (1, 0, None)


def test_samples_in_flight_are_capped_and_the_events_destroyed_at_stop(fake, histogram, db_url, monkeypatch):
    monkeypatch.setattr(recording.events, "MAX_IN_FLIGHT", 3)
    monkeypatch.setattr(recording.flusher, "READ_S", 3600.0)  # the flusher reads nothing back: only stop() does
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32"), Tensor((64,), "uint8")
    f(bins, data)
    lib = fake
    with autotune.record("cap", db=db_url, sample_every=1, flush_s=3600) as r:
        for _ in range(10):
            f(bins, data)
        assert len(r.events.pending) == 3  # calls 5 to 10 found the limit (calls 2-4 in flight): counted, not timed
    (w,) = problems(db_url, "cap").values()
    assert (w.calls, w.sampled) == (10, 3)
    assert sorted(lib.destroyed) == sorted(lib.events)  # every event made was destroyed at stop
    assert len(lib.events) == 6


def test_events_are_reused_once_read_back(fake, histogram, db_url):
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32"), Tensor((64,), "uint8")
    f(bins, data)
    with autotune.record("reuse", db=db_url, sample_every=1, flush_s=3600) as r:
        for _ in range(5):
            f(bins, data)
            r.flush()  # reads the completed sample back: its pair is free for the next call
    (w,) = problems(db_url, "reuse").values()
    assert (w.calls, w.sampled) == (5, 4)  # the 1st call is never timed
    assert len(fake.events) == 2


@pytest.mark.parametrize("name, message", [
    ("", "record name '' is empty"), ("   ", "record name '   ' is empty"),
    ("x" * 101, "is 101 characters long; give 1 to 100 printable characters"),
    ("a\nb", "record name 'a\\nb' holds characters that are not printable"),
    (" lead", "spaces at its ends"), (None, "record name None is not allowed"),
])
def test_a_bad_record_name_is_one_error_and_nothing_is_written(tmp_path, name, message):
    db = tmp_path / "never.db"
    with pytest.raises(InvalidInputError) as info:
        autotune.record(name, db=f"sqlite:///{db}")
    assert message in str(info.value) and "\n" not in str(info.value).replace("\\n", "")
    assert not db.exists() and recording.active() is None


@pytest.mark.parametrize("options, message", [({"sample_every": 3}, "sample_every 3 is not allowed"),
                                              ({"flush_s": 0}, "flush_s 0 is not allowed")])
def test_bad_recording_options_are_refused(options, message):
    with pytest.raises(InvalidInputError, match=message):
        autotune.record("x", **options)


@pytest.mark.parametrize("db, error, message", [
    ("", InvalidInputError, "db '' is not allowed; it is empty"),
    (42, InvalidInputError, "db 42 is not allowed; give a SQLAlchemy URL"),
    ("nonsense", StoreError, "invalid database URL 'nonsense'"),
    ("sqlite:///{tmp}/missing/x.db", StoreError, "the folder of database {tmp}/missing/x.db does not exist"),
    ("sqlite:///{tmp}", StoreError, "results database {tmp} is a folder, not a database file"),
])
def test_a_bad_db_is_refused_by_record_itself_before_the_work_runs(tmp_path, db, error, message):
    with pytest.raises(error) as info:  # not when the block ends, after the program's work has run
        autotune.record("x", db=db.format(tmp=tmp_path) if isinstance(db, str) else db)
    assert message.format(tmp=tmp_path) in str(info.value)
    assert recording.active() is None and list(tmp_path.iterdir()) == []


def test_one_recording_at_a_time(fake, db_url):
    with autotune.record("first", db=db_url):
        with pytest.raises(InvalidInputError, match="recording 'second' cannot start: recording 'first' is active"):
            autotune.record("second", db=db_url).start()


def test_autotune_record_starts_at_the_first_cold_launch_and_stops_at_exit(fake, histogram, db_url, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_RECORD", "from env")
    monkeypatch.setenv("AUTOTUNE_DB", db_url)
    recording.environment.forget()
    try:
        f = autotune.launcher(histogram, db=db_url)
        assert recording.active() is None  # nothing until a launch is prepared
        f(Tensor((256,), "uint32"), Tensor((64,), "uint8"))
        f(Tensor((256,), "uint32"), Tensor((64,), "uint8"))
        r = recording.active()
        assert r is not None and r.name == "from env"
        recording.state.at_exit()
        assert recording.active() is None
    finally:
        recording.environment.forget()
    assert problems(db_url, "from env")["histogram256 64 uint8"].calls == 2


def test_a_bad_autotune_record_is_one_error_naming_it(fake, histogram, db_url, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_RECORD", "\x07bell")
    recording.environment.forget()
    try:
        with pytest.raises(InvalidInputError, match=r"AUTOTUNE_RECORD='\\x07bell': record name"):
            autotune.launcher(histogram, db=db_url)(Tensor((256,), "uint32"), Tensor((64,), "uint8"))
    finally:
        recording.environment.forget()


def test_autotune_record_with_a_database_that_cannot_be_opened_says_so_at_the_first_launch(fake, histogram, db_url,
                                                                                             monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOTUNE_RECORD", "app")
    monkeypatch.setenv("AUTOTUNE_DB", f"sqlite:///{tmp_path}/missing/x.db")
    recording.environment.forget()
    try:
        with pytest.raises(StoreError, match=r"AUTOTUNE_RECORD='app': the folder of database .*/missing/x.db does not"):
            autotune.launcher(histogram, db=db_url)(Tensor((256,), "uint32"), Tensor((64,), "uint8"))
    finally:
        recording.environment.forget()
    assert recording.active() is None and not (tmp_path / "missing").exists()


def test_a_batch_that_cannot_be_written_is_sent_again_unchanged(fake, histogram, db_url, monkeypatch):
    from autotune.errors import StoreError
    from autotune.store import workloads

    f = autotune.launcher(histogram, db=db_url)
    real, sent = workloads.write_batch, []

    def flaky(store, name, run, batch, counts):
        sent.append((batch, [(c.dims, c.calls) for c in counts]))
        if len(sent) == 1:
            raise StoreError("results database: disk I/O error")
        return real(store, name, run, batch, counts)

    monkeypatch.setattr(workloads, "write_batch", flaky)
    r = autotune.record("flaky", db=db_url, flush_s=3600)
    with r:
        f(Tensor((256,), "uint32"), Tensor((64,), "uint8"))
        with pytest.raises(StoreError):
            r.flush()
        f(Tensor((256,), "uint32"), Tensor((64,), "uint8"))
    assert sent == [(1, [((("n", 64),), 1)]), (1, [((("n", 64),), 1)]), (2, [((("n", 64),), 1)])]
    assert problems(db_url, "flaky")["histogram256 64 uint8"].calls == 2


def test_write_batch_twice_counts_once(db_url, device_info):
    from autotune.store.opening import open_store
    from autotune.kernel.problem import ProblemKey
    from autotune.store.workload_records import CallCount
    from autotune.store.workloads import write_batch

    k = KERNELS["smem_vec"]
    count = CallCount(device_info, ProblemKey(k.name, k.source_hash, k.spec_hash, (("rows", 5), ("cols", 7)),
                                              "float32", "smem_vec"), 3, 1, 0.5)
    store = open_store(db_url)
    assert write_batch(store, "twice", "run1", 1, [count]) == 1
    assert write_batch(store, "twice", "run1", 1, [count]) == 0
    assert write_batch(store, "twice", "run2", 1, [count]) == 1
    store.close()
    (w,) = problems(db_url, "twice").values()
    assert (w.calls, w.sampled, w.sampled_ms, w.runs) == (6, 2, 1.0, 2)


# --- processes: signals, SIGKILL, two at once ----------------------------------------------------

def child(mode, db_url, name, n, marks, **env):
    return subprocess.Popen([sys.executable, str(CHILD), mode, db_url, name, str(n), str(marks)],
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, proc, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the child ended ({proc.returncode}) before {path.name}: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()  # a child that waits for a signal must not outlive the failed test
            proc.wait(60)
            raise AssertionError(f"no {path.name} after {timeout} s")
        time.sleep(0.02)


def ended(proc, timeout: float = 120) -> tuple[int, str]:
    """``proc``'s exit code and stderr once it ends, its pipes read meanwhile (a child blocked on
    a full pipe never ends); one that has not ended after ``timeout`` s fails the test with its
    threads' stacks (faulthandler, SIGUSR1) and its stderr."""
    try:
        _, err = proc.communicate(timeout=timeout)
        return proc.returncode, err
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        _, err = proc.communicate(timeout=60)
        raise AssertionError(f"the child did not end in {timeout} s; its stderr:\n{err}") from None


def test_ctrl_c_and_sigterm_write_every_call(tmp_path, db_url):
    marks_int, marks_term = tmp_path / "int", tmp_path / "term"
    marks_int.mkdir()
    marks_term.mkdir()
    a = child("with", db_url, "sigint", 300, marks_int)
    b = child("env", db_url, "sigterm", 200, marks_term, AUTOTUNE_RECORD="sigterm", AUTOTUNE_DB=db_url)
    wait_for(marks_int / "launched", a)
    wait_for(marks_term / "launched", b)
    a.send_signal(signal.SIGINT)
    b.send_signal(signal.SIGTERM)
    code, err = ended(a)
    assert code != 0 and "KeyboardInterrupt" in err
    assert ended(b)[0] == -signal.SIGTERM
    assert {label: p.calls for label, p in problems(db_url, "sigint").items()} == \
        {"histogram256 1000 uint8": 300, "smem_vec 100x64 float32": 300}
    assert {label: p.calls for label, p in problems(db_url, "sigterm").items()} == \
        {"histogram256 1000 uint8": 200, "smem_vec 100x64 float32": 200}


def test_sigkill_leaves_whole_batches_only(tmp_path, db_url):
    import sqlite3

    marks = tmp_path / "marks"
    marks.mkdir()
    proc = child("forever", db_url, "killed", 0, marks)
    wait_for(marks / "batches-3", proc)
    proc.kill()
    proc.wait(60)
    con = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    rows = con.execute("select batch, dims, calls from autotune_workload_calls order by batch").fetchall()
    con.close()
    batches = {}
    for batch, dims, calls in rows:
        batches.setdefault(batch, {})[dims] = calls
    assert len(batches) >= 3 and sorted(batches) == list(range(1, len(batches) + 1))  # none missing
    # the loop launches both problems in turn, so over the whole batches their counts differ by
    # at most the one launch the kill cut between them: a batch stored in part (one problem's row
    # without the other's) would lose that batch's calls of one. (A batch may hold one problem
    # only: the flusher can take its counts between the two launches of one turn.)
    assert all(set(counted) <= {"n=1000", "rows=100,cols=64"} and counted for counted in batches.values())
    totals = [sum(b.get(d, 0) for b in batches.values()) for d in ("n=1000", "rows=100,cols=64")]
    assert 0 <= totals[0] - totals[1] <= 1 and totals[1] > 0


def test_two_programs_recording_into_one_database_lose_nothing(tmp_path, db_url):
    procs = [child("plain", db_url, "shared", 400, tmp_path) for _ in range(2)]
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read()
    found = problems(db_url, "shared")
    assert {label: (p.calls, p.runs) for label, p in found.items()} == \
        {"histogram256 1000 uint8": (800, 2), "smem_vec 100x64 float32": (800, 2)}


def test_a_child_forked_inside_a_recorded_block_loses_none_of_the_parents_counts(tmp_path, db_url):
    # the child kept the parent's run id and batch number: its batch 1 (the parent's pending
    # counts and its own) made the parent's batch 1 a duplicate, dropped: 150 of 200 calls kept
    proc = child("fork", db_url, "forked", 100, tmp_path)
    code, err = ended(proc)
    assert code == 0, err
    found = problems(db_url, "forked")
    assert {label: (p.calls, p.runs) for label, p in found.items()} == \
        {"histogram256 1000 uint8": (200, 2), "smem_vec 100x64 float32": (200, 2)}
    import sqlite3

    con = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    rows = con.execute("select run, batch, dims, calls from autotune_workload_calls").fetchall()
    con.close()
    by_run = {}
    for run, batch, dims, calls in rows:
        by_run.setdefault(run, {})[(batch, dims)] = calls
    assert sorted(by_run.values(), key=lambda b: sum(b.values())) == [  # the child's own 50; the parent's 150
        {(1, "n=1000"): 50, (1, "rows=100,cols=64"): 50}, {(1, "n=1000"): 150, (1, "rows=100,cols=64"): 150}]
