"""The results store: searches, trials, the best config per key, errors, configuration."""

from __future__ import annotations

import dataclasses
import sys
from datetime import UTC

import pytest

from autotune.store.opening import open_results

from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo
from autotune.errors import StoreError
from autotune.store.key import TuningKey
from stored_results import key_of
from autotune.measure.measurement import Measurement
from autotune.store.repository import BestRecord, Store, TrialRecord, default_url

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")
A100 = DeviceInfo("NVIDIA A100-SXM4-40GB", "8.0", 108, 42_000_000_000, "13.0", "13.0")


def make_key(device: DeviceInfo = H100, rows: int = 4096, cols: int = 4096, **changes) -> TuningKey:
    fields = dict(kernel="smem_pad", source_hash="a" * 64, spec_hash="e" * 64, dims=(("rows", rows), ("cols", cols)),
                  dtype="float32", nvcc_version="13.0.88", compile_flags="-O3 -arch=sm_90")
    fields.update(changes)
    return key_of(device, **fields)


def config(tile: int = 32, rows: int = 8, kernel: str = "smem_pad") -> Config:
    return Config.of(kernel, {"TILE_DIM": tile, "BLOCK_ROWS": rows, "IPAD": 1})


def measured(gbps: float) -> Measurement:
    ms = 2 * 4096 * 4096 * 4 / (gbps * 1e9) * 1e3
    return Measurement(median_ms=ms, min_ms=ms * 0.98, max_ms=ms * 1.05, gbps=gbps,
                       pct_memcpy=gbps / 30, registers=24, shared_bytes=4224, launches=50)


@pytest.fixture
def url(db_url) -> str:
    return db_url  # the store fixture's database (conftest.py)


def start(store: Store, key: TuningKey | None = None, memcpy_gbps: float | None = 3000.0) -> int:
    key = key or make_key()
    return store.start_search(key, study_name=key.study_name, sampler="tpe", seed=0,
                              memcpy_gbps=memcpy_gbps)


def test_import_does_not_load_optuna_or_pycuda():
    import subprocess

    code = "import sys, autotune.store.repository; print('optuna' in sys.modules, 'pycuda' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.stdout.split() == ["False", "False"]


def test_record_ok_trial_round_trips(store):
    search = start(store)
    record = store.record_trial(search, 0, config(), status="ok", measurement=measured(2500.0))
    assert isinstance(record, TrialRecord)
    assert record.config == config() and record.status == "ok" and record.reason is None
    assert record.gbps == 2500.0 and record.registers == 24 and record.launches == 50
    assert record.created_at.tzinfo is not None
    assert store.trials(search) == [record]


def test_best_improves_only_when_faster(store):
    key = make_key()
    search = start(store, key)
    first = store.record_trial(search, 0, config(32, 8), status="ok", measurement=measured(2000.0))
    assert store.best(key).trial_id == first.id
    store.record_trial(search, 1, config(16, 4), status="ok", measurement=measured(1500.0))
    store.record_trial(search, 2, config(32, 4), status="ok", measurement=measured(2000.0))
    assert store.best(key).trial_id == first.id
    faster = store.record_trial(search, 3, config(64, 8), status="ok", measurement=measured(2600.0))
    best = store.best(key)
    assert isinstance(best, BestRecord)
    assert best.trial_id == faster.id and best.config == config(64, 8) and best.gbps == 2600.0
    assert best.search_id == search and best.memcpy_gbps == 3000.0
    assert best.updated_at.tzinfo == UTC


def test_best_is_shared_across_searches_of_one_key(store):
    key = make_key()
    store.record_trial(start(store, key), 0, config(), status="ok", measurement=measured(2000.0))
    second = start(store, key, memcpy_gbps=None)
    slower = store.record_trial(second, 0, config(16), status="ok", measurement=measured(1000.0))
    assert store.best(key).trial_id != slower.id
    faster = store.record_trial(second, 1, config(64), status="ok", measurement=measured(2800.0))
    best = store.best(key)
    assert (best.trial_id, best.search_id, best.memcpy_gbps) == (faster.id, second, None)
    assert len(store.find_best()) == 1


@pytest.mark.parametrize("status", ["compile_error", "resources", "launch_error", "wrong_result"])
def test_failed_trials_never_become_best(store, status):
    key = make_key()
    search = start(store, key)
    record = store.record_trial(search, 0, config(), status=status, reason="ptxas: too many resources")
    assert record.status == status and record.gbps is None and record.median_ms is None
    assert store.best(key) is None
    ok = store.record_trial(search, 1, config(16), status="ok", measurement=measured(100.0))
    store.record_trial(search, 2, config(64), status=status, reason="mismatch at (0, 1)")
    assert store.best(key).trial_id == ok.id


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"status": "ok"}, "needs its measurement"),
        ({"status": "compile_error"}, "needs a reason"),
        ({"status": "wrong_result", "reason": ""}, "needs a reason"),
        ({"status": "resources", "reason": "x", "measurement": measured(1.0)}, "has no measurement"),
        ({"status": "slow", "reason": "x"}, "unknown trial status"),
    ],
)
def test_record_trial_validation(store, kwargs, message):
    search = start(store)
    with pytest.raises(ValueError, match=message):
        store.record_trial(search, 0, config(), **kwargs)
    assert store.trials(search) == []


def test_record_trial_rejects_other_kernel_and_unknown_search(store):
    search = start(store)
    with pytest.raises(ValueError, match="not of the search's kernel"):
        store.record_trial(search, 0, config(kernel="naive"), status="ok", measurement=measured(1.0))
    assert store.trials(search) == []
    with pytest.raises(StoreError, match="no search with id 999"):
        store.record_trial(999, 0, config(), status="ok", measurement=measured(1.0))


@pytest.mark.parametrize(
    "other",
    [
        make_key(dtype="float64"),
        make_key(rows=2048),
        make_key(cols=1024),
        make_key(A100),
        make_key(dataclasses.replace(H100, driver_version="12.8")),
        make_key(dataclasses.replace(H100, sm_count=114)),
        make_key(source_hash="b" * 64),
        make_key(spec_hash="f" * 64),
        make_key(dims=(("cols", 4096), ("rows", 4096))),
        make_key(dims=(("m", 4096), ("n", 4096), ("k", 1))),
        make_key(kernel="naive"),
        make_key(nvcc_version="12.8.93"),
        make_key(compile_flags="-O2 -arch=sm_90"),
    ],
)
def test_best_needs_the_exact_key(store, other):
    key = make_key()
    store.record_trial(start(store, key), 0, config(), status="ok", measurement=measured(2000.0))
    assert store.best(other) is None
    same_but_ordinal = make_key(dataclasses.replace(H100, ordinal=3, max_threads_per_block=512))
    assert store.best(same_but_ordinal).gbps == 2000.0


def test_find_best_filters(store):
    keys = [make_key(), make_key(dtype="float64"), make_key(rows=1024, cols=2048),
            make_key(A100, compile_flags="-O3 -arch=sm_80"), make_key(source_hash="c" * 64),
            make_key(kernel="naive"), make_key(spec_hash="d" * 64)]
    for i, key in enumerate(keys):
        cfg = config(kernel=key.kernel)
        store.record_trial(start(store, key), 0, cfg, status="ok", measurement=measured(1000.0 + i))
    assert len(store.find_best()) == len(keys)
    assert [b.device_name for b in store.find_best(device_name="a100")] == [A100.name]
    assert len(store.find_best(device_name="nvidia")) == len(keys)
    assert store.find_best(device_name="h100_") == []  # LIKE wildcards are literal
    assert {b.dtype for b in store.find_best(dtype="float64")} == {"float64"}
    wide = (("rows", 1024), ("cols", 2048))
    for dims in (wide, dict(wide), "rows=1024,cols=2048"):
        assert [b.dims for b in store.find_best(dims=dims)] == [wide]
    assert store.find_best(dims={"cols": 2048, "rows": 1024}) == []  # the declared order is the key
    assert len(store.find_best(dims={"rows": 4096, "cols": 4096}, device_name="H100")) == 5
    assert [b.kernel for b in store.find_best(kernel="naive")] == ["naive"]
    assert [b.source_hash for b in store.find_best(source_hash="c" * 64)] == ["c" * 64]
    assert [b.spec_hash for b in store.find_best(spec_hash="d" * 64)] == ["d" * 64]
    assert store.find_best(kernel="naive", dtype="float64") == []


def test_find_best_is_sorted(store):
    keys = [make_key(dtype="float64"), make_key(kernel="naive"), make_key(rows=1024),
            make_key(A100), make_key(rows=1024, cols=512), make_key(rows=512, cols=8192)]
    for key in keys:
        cfg = config(kernel=key.kernel)
        store.record_trial(start(store, key), 0, cfg, status="ok", measurement=measured(1000.0))
    order = [(b.device_name, b.kernel, b.shape, b.dtype) for b in store.find_best()]
    assert order == sorted(order)  # by the dims' values, not their text ("rows=512" > "rows=1024")
    assert [b.shape for b in store.find_best(kernel="smem_pad", device_name="H100", dtype="float32")] == [
        (512, 8192), (1024, 512), (1024, 4096)]


def test_trials_in_trial_order_and_per_search(store):
    search, other = start(store), start(store)
    for number in (2, 0, 1):
        store.record_trial(search, number, config(8 * (number + 1)), status="ok",
                           measurement=measured(100.0 + number))
    store.record_trial(other, 0, config(), status="compile_error", reason="error: x")
    assert [t.number for t in store.trials(search)] == [0, 1, 2]
    assert [t.status for t in store.trials(other)] == ["compile_error"]
    assert store.trials(12345) == []


def test_start_reuses_device_and_kernel_rows(store):
    from sqlalchemy import func, select

    from autotune.store.models import Device, Kernel, Search

    start(store), start(store), start(store, make_key(A100))
    with store.session() as session:
        count = lambda model: session.scalar(select(func.count()).select_from(model))  # noqa: E731
        assert (count(Device), count(Kernel), count(Search)) == (2, 1, 3)


def test_finish_search(store):
    from autotune.store.models import Search

    search = start(store)
    store.finish_search(search, "interrupted")
    with store.session() as session:
        row = session.get(Search, search)
        assert row.status == "interrupted" and row.finished_at.tzinfo == UTC
        assert row.finished_at >= row.started_at
    with pytest.raises(ValueError, match="final search status"):
        store.finish_search(search, "running")
    with pytest.raises(StoreError, match="no search"):
        store.finish_search(777, "finished")


def test_reopening_keeps_rows(url):
    key = make_key()
    first = open_results(url)
    search = start(first, key)
    trial = first.record_trial(search, 0, config(), status="ok", measurement=measured(1234.0))
    first.engine.dispose()
    again = open_results(url)
    assert again.best(key).trial_id == trial.id
    assert again.trials(search) == [trial]


def test_missing_directory_is_a_store_error(tmp_path):
    url = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'results.db'}"
    for upgrade in (True, False):  # refused before anything is created, migrated or not
        with pytest.raises(StoreError, match="does not exist: .*no/such/dir; create it"):
            open_results(url, "unmigrated")
    assert not (tmp_path / "no").exists()


def test_not_a_database_is_a_store_error(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are notes, not a database\n" * 100)
    with pytest.raises(StoreError, match="file is not a database"):
        open_results(f"sqlite:///{path}")
    with pytest.raises(StoreError, match="file is not a database") as info:
        open_results(f"sqlite:///{path}", "unmigrated").best(make_key())
    assert "\n" not in str(info.value)


def test_bad_url_is_a_store_error():
    with pytest.raises(StoreError, match="invalid database URL"):
        open_results("nosuchdialect://somewhere", "unmigrated")


def test_session_scope(store):
    from sqlalchemy import text

    from autotune.store.models import Kernel

    with pytest.raises(StoreError, match="no such table") as info:
        with store.session() as session:
            session.execute(text("SELECT * FROM missing_table"))
    assert "\n" not in str(info.value)
    with pytest.raises(KeyError):
        with store.session() as session:
            session.add(Kernel(name="rolled_back", source_hash="0" * 64))
            session.flush()
            raise KeyError("boom")
    with pytest.raises(StoreError, match="UNIQUE constraint failed"):
        with store.session() as session:
            session.add_all([Kernel(name="k", source_hash="1" * 64), Kernel(name="k", source_hash="1" * 64)])
    with store.session() as session:
        session.add(Kernel(name="kept", source_hash="2" * 64))
    with store.session() as session:
        names = set(session.scalars(text("SELECT name FROM autotune_kernels")))
    assert names == {"kept"}


def test_check_constraint_rejects_ok_without_median_ms(store):
    from autotune.store.models import Trial

    search = start(store)
    with pytest.raises(StoreError, match="CHECK constraint failed: ck_autotune_trials__ok_has_median_ms"):
        with store.session() as session:
            session.add(Trial(search_id=search, number=0, config_key="", macros={}, status="ok", gbps=1.0))
    with store.session() as session:  # a kernel without a bytes objective has no GB/s
        session.add(Trial(search_id=search, number=0, config_key="", macros={}, status="ok", median_ms=1.0))


def test_sqlite_pragmas(store):
    with store.engine.connect() as connection:
        pragma = lambda name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()  # noqa: E731
        assert pragma("foreign_keys") == 1
        assert pragma("busy_timeout") == 30000
        assert pragma("journal_mode") == "wal"
        assert pragma("synchronous") == 1  # NORMAL: in WAL mode a commit survives a killed process


def test_optuna_engine_commits_without_fsync_in_wal_mode(store):
    """Optuna's engine too (a trial's bookkeeping is some 15 commits): synchronous=NORMAL, set
    only because the file is in WAL mode (there a SIGKILL loses no committed transaction)."""
    storage = store.optuna_storage()
    with storage.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1


def test_env_var_is_honoured(monkeypatch, tmp_path):
    path = tmp_path / "from_env.db"
    monkeypatch.setenv("AUTOTUNE_DB", f"sqlite:///{path}")
    store = open_results()
    assert store.url == f"sqlite:///{path}" and path.is_file()
    assert open_results(f"sqlite:///{tmp_path / 'explicit.db'}").url.endswith("explicit.db")


def test_default_url_is_in_user_data_dir(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv("AUTOTUNE_DB", raising=False)
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(tmp_path / "data" / "autotune"))
    assert default_url() == f"sqlite:///{tmp_path / 'data' / 'autotune' / 'autotune.db'}"
    assert (tmp_path / "data" / "autotune").is_dir()
    assert open_results().url == default_url()


def test_records_are_frozen(store):
    record = store.record_trial(start(store), 0, config(), status="ok", measurement=measured(10.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.gbps = 1.0  # type: ignore[misc]


def test_concurrent_writers_keep_the_fastest(url):
    from concurrent.futures import ThreadPoolExecutor

    key = make_key()
    open_results(url)
    searches = [start(open_results(url, "unmigrated"), key) for _ in range(4)]

    def run(index: int) -> None:
        writer = open_results(url, "unmigrated")
        for number in range(10):
            gbps = 100.0 + 10 * number + index
            writer.record_trial(searches[index], number, config(8 * (index + 1), number + 1),
                                status="ok", measurement=measured(gbps))

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(run, range(4)))
    store = open_results(url)
    assert sum(len(store.trials(s)) for s in searches) == 40
    assert store.best(key).gbps == 100.0 + 90 + 3


def test_key_trials_span_every_search_of_the_key(store):
    key = make_key()
    first, second, other = start(store, key), start(store, key), start(store, make_key(rows=2048))
    store.record_trial(first, 0, config(8), status="ok", measurement=measured(100.0))
    store.record_trial(second, 1, config(16), status="wrong_result", reason="1 element differs")
    store.record_trial(other, 0, config(32), status="ok", measurement=measured(900.0))
    trials = store.key_trials(key)
    assert [(t.search_id, t.number, t.status) for t in trials] == [(first, 0, "ok"), (second, 1, "wrong_result")]
    assert store.key_trials(make_key(dtype="float64")) == []


def test_a_trial_killed_before_its_first_heartbeat_is_failed_after_the_grace(shared_db, monkeypatch):
    """Optuna's stale-trial check skips RUNNING trials without a heartbeat; the store fails them
    once they are older than the grace period, and leaves younger or heartbeating ones."""
    import datetime

    import optuna
    import sqlalchemy as sa
    from optuna.trial import TrialState

    from autotune.store import study_storage

    store = open_results(shared_db)
    storage = store.optuna_storage()
    study = optuna.create_study(study_name="s", storage=storage)
    sid = storage.get_study_id_from_name("s")
    dead, beating = storage.create_new_trial(sid), storage.create_new_trial(sid)
    storage.record_heartbeat(beating)
    young = storage.create_new_trial(sid)
    # dead and beating started two hours ago (Optuna keeps local time), young now: no waiting on the clock
    with storage.engine.begin() as connection:
        connection.execute(sa.text("update trials set datetime_start = :t where trial_id in (:a, :b)"),
                           {"t": datetime.datetime.now() - datetime.timedelta(hours=2), "a": dead, "b": beating})
    monkeypatch.setattr(study_storage, "GRACE_S", 3600)
    assert store.fail_trials_dead_before_heartbeat(storage, "s") == [dead]
    states = [storage.get_trial(t).state for t in (dead, beating, young)]
    assert states == [TrialState.FAIL, TrialState.RUNNING, TrialState.RUNNING]
    assert len(study.trials) == 3
    assert store.fail_trials_dead_before_heartbeat(storage, "s") == []  # nothing twice


def test_best_is_the_lowest_median_time_also_without_gbps(store):
    """A kernel without a bytes objective has no GB/s: the best is its fastest trial by time."""
    key = make_key(kernel="reduce", dims=(("n", 1 << 20),))
    search = start(store, key)

    def timed(ms: float) -> Measurement:
        return Measurement(median_ms=ms, min_ms=ms, max_ms=ms, gbps=None, pct_memcpy=None, registers=16,
                           shared_bytes=0, launches=50)

    cfg = lambda block: Config.of("reduce", {"BLOCK_SIZE": block})  # noqa: E731
    store.record_trial(search, 0, cfg(128), status="ok", measurement=timed(0.30))
    fastest = store.record_trial(search, 1, cfg(256), status="ok", measurement=timed(0.20))
    store.record_trial(search, 2, cfg(512), status="ok", measurement=timed(0.25))
    best = store.best(key)
    assert best.trial_id == fastest.id and best.gbps is None and best.pooled_gbps is None
    assert (best.dims, best.display, best.dims_key, best.shape) == ((("n", 1 << 20),), "1048576", "n=1048576",
                                                                     (1 << 20,))


def test_bench_runs_are_saved_through_the_store(store):
    from types import SimpleNamespace

    from autotune.store.models import BenchRow, BenchRun

    lines = [{"name": "cudaMemcpy device-to-device", "kind": "memcpy", "median_ms": 0.1, "gbps": 2900.0},
             SimpleNamespace(name="smem_pad", kind="kernel", median_ms=0.11, gbps=2700.0, source="default",
                             config_key="TILE_DIM=32")]
    run_id = store.save_bench_run(H100, {"rows": 64, "cols": 128}, "float64", "13.0.88", 2900.0, "single", lines)
    other = store.save_bench_run(H100, (("m", 8), ("n", 8), ("k", 8)), "float32", "13.0.88", None, "single", [])
    with store.session() as session:
        run = session.get(BenchRun, run_id)
        assert (run.dims, run.dtype, run.memcpy_gbps, run.device.name) == ("rows=64,cols=128", "float64", 2900.0,
                                                                           H100.name)
        rows = [(r.position, r.name, r.kind, r.source, r.gflops) for r in run.lines]
        assert rows == [(0, "cudaMemcpy device-to-device", "memcpy", None, None), (1, "smem_pad", "kernel", "default",
                                                                                   None)]
        assert session.get(BenchRun, other).dims == "m=8,n=8,k=8"
        assert session.query(BenchRow).count() == 2


def test_a_trial_keeps_its_sample_count_ci_energy_and_sm_clock_and_the_best_its_certificate(store):
    from autotune.measure.measurement import Retiming
    from autotune.search.winner import choose
    from autotune.store.records import certificate_lines

    key = make_key()
    sid = start(store, key)
    fast, slow = config(32, 8), config(32, 4)
    m = dataclasses.replace(measured(2800.0), samples=37, ci_low_ms=0.0235, ci_high_ms=0.0241, energy_j=0.0031,
                            sm_mhz=1980)
    stored = store.record_trial(sid, 0, fast, status="ok", measurement=m)
    store.record_trial(sid, 1, slow, status="ok", measurement=measured(2600.0))  # stored before 0009: no CI
    assert (stored.samples, stored.ci_low_ms, stored.ci_high_ms, stored.energy_j, stored.sm_mhz) == \
        (37, 0.0235, 0.0241, 0.0031, 1980)
    trials = {t.config: t for t in store.key_trials(key)}
    assert trials[fast].samples == 37 and trials[fast].energy_j == 0.0031
    assert trials[slow].samples is None and trials[slow].ci_low_ms is None  # 0 samples: unknown

    rounds = (1.00, 1.03, 0.99, 1.01)  # the GPU drifts; the slow config is 4 % slower in every round
    a = Retiming(fast, tuple(0.024 * r for r in rounds), 0.0241, 0.0239, 0.0243)
    b = Retiming(slow, tuple(0.025 * r for r in rounds), 0.0251, 0.0249, 0.0253)
    store.set_winner(key, choose([b, a], lambda c: 256, lambda c: 0), rounds=4)
    best = store.best(key)
    cert = best.certificate
    assert best.config == fast and best.samples == 37 and best.energy_j == 0.0031
    assert cert["tied"] is False and cert["level"] == 0.95
    assert cert["winner"] == {"config": fast.key, "pooled_median_ms": 0.0241, "ci_low_ms": 0.0239,
                              "ci_high_ms": 0.0243, "rounds": 4}
    assert cert["runner_up"]["config"] == slow.key
    assert cert["runner_up"]["ratio"] == pytest.approx(0.025 / 0.024)
    assert cert["runner_up"]["ratio_low"] == pytest.approx(0.025 / 0.024)
    lines = certificate_lines(cert)
    assert lines[0] == f"winner {fast.key}: 24.10 µs (95% CI 23.90 µs .. 24.30 µs)"
    assert lines[1].startswith(f"runner-up {slow.key}: 25.10 µs (95% CI 24.90 µs .. 25.30 µs); +4.17% paired over "
                               "4 rounds (CI +4.17% .. +4.17%)")
    assert lines[2].startswith("not tied")


def test_tied_top_configs_are_said_to_be_tied_and_the_rule_named(store):
    from autotune.measure.measurement import Retiming
    from autotune.search.winner import choose
    from autotune.store.records import certificate_lines

    key = make_key()
    sid = start(store, key)
    big, small = config(32, 8), config(32, 4)
    for i, c in enumerate((big, small)):
        store.record_trial(sid, i, c, status="ok", measurement=measured(2800.0 - i))
    a = Retiming(big, (1.000, 1.002, 0.999, 1.001), 1.0005)
    b = Retiming(small, (1.001, 1.000, 1.001, 1.002), 1.001)  # faster in one round: tied
    d = choose([a, b], lambda c: c["TILE_DIM"] * c["BLOCK_ROWS"], lambda c: 0)
    store.set_winner(key, d, rounds=4)
    best = store.best(key)
    assert best.config == small and best.certificate["tied"]
    assert certificate_lines(best.certificate)[-1] == (
        f"statistically tied: {big.key}, {small.key}; chosen by the rule (fewer threads, then less shared memory)")
