import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.store.opening import open_results
from typer.testing import CliRunner

from autotune.kernel.catalog import get_kernel
from autotune.measure import benchmark, device
from autotune.cli import app
from autotune.search.options import SearchOptions

from fakes import OPTIMUM, FakeMatmulBench, FakeTimer, fake_retime

runner = CliRunner()


class FakeBench:
    def __init__(self, device, timer):
        self.device, self.measure, self.memcpy_gbps = device, timer, timer.memcpy_gbps
        self.copy_gbps, self.l2_mode, self.retime = 2900.0, "single", fake_retime()


@pytest.fixture
def fake_gpu(monkeypatch, device_info):
    """Replace the GPU benchmark by the fake timer; records the shapes it was opened for."""
    opened = []

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        d, dtype = problem.values, problem.dtype
        opened.append((ordinal, *d.values(), dtype.name, measure))
        yield (FakeMatmulBench(device_info, d["m"], d["n"], d["k"], dtype, problem.kernel) if "k" in d
               else FakeBench(device_info, FakeTimer()))

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)  # bench asks before the database
    return opened


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def test_search_then_best_and_list(fake_gpu, db_url):
    r = run("search", "--kernel", "smem_pad", "--size", 1024, "--sampler", "grid", "--db", db_url)
    assert r.exit_code == 0, r.output
    best_key = ",".join(f"{k}={v}" for k, v in sorted(OPTIMUM.items()))
    assert "stopped: exhausted" in r.output and "54 ok" in r.output
    assert "where the time went: compile 43.2 s, load 0.1 s, verify 2.7 s, time 5.4 s, store" in r.output
    assert f"best: {best_key}" in r.output and "memcpy: 3000 GB/s" in r.output
    assert fake_gpu == [(0, 1024, 1024, "float32", SearchOptions().benchmark_options())]

    r = run("best", "--size", 1024, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert best_key in r.output and "2800" in r.output and "93.3" in r.output

    r = run("list", "--db", db_url)
    assert r.exit_code == 0 and best_key in r.output and "1024x1024" in r.output


def test_the_same_search_run_again_shows_the_tuned_best(fake_gpu, db_url):
    """Issue 49 item 2: the README's search run a second time is not an error: it says the
    problem is tuned, prints its stored best (as ``best`` does) and measures no config;
    ``--resume`` measures more."""
    assert run("search", "--size", 256, "--trials", 3, "--sampler", "grid", "--db", db_url).exit_code == 0
    stored = run("best", "--kernel", "smem_pad", "--size", 256, "--format", "json", "--db", db_url).output
    trials = lambda: len(json.loads(run("trials", "--size", 256, "--format", "json", "--db", db_url).stdout)["records"])
    measured = trials()
    r = run("search", "--size", 256, "--trials", 3, "--sampler", "grid", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "\nsmem_pad 256x256 float32 on NVIDIA H100 80GB HBM3 is tuned already; its stored best" in r.output
    assert "0/3" not in r.output, r.output  # no progress bar of configs it will not measure
    config = json.loads(stored)["records"][0]["config"]  # an object {macro: value}
    assert "pass --resume to measure more" in r.output and ",".join(f"{k}={v}" for k, v in config.items()) in r.output
    assert trials() == measured  # no config measured
    r = run("search", "--size", 256, "--trials", 3, "--sampler", "grid", "--format", "json", "--db", db_url)
    assert r.exit_code == 0 and json.loads(r.stdout) == json.loads(stored) and "tuned already" in r.stderr
    assert run("search", "--size", 256, "--trials", 3, "--sampler", "grid", "--resume", "--db", db_url).exit_code == 0


def test_rectangles_and_dtypes_reach_the_benchmark(fake_gpu, db_url):
    r = run("search", "--rows", 100, "--cols", 300, "--dtype", "float64", "--trials", 2, "--sampler", "grid", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert fake_gpu[0][1:4] == (100, 300, "float64")
    assert run("best", "--rows", 100, "--cols", 300, "--dtype", "float64", "--db", db_url).exit_code == 0
    assert run("best", "--rows", 300, "--cols", 100, "--dtype", "float64", "--db", db_url).exit_code == 2


def test_best_when_nothing_is_tuned(db_url):
    r = run("best", "--size", 2048, "--db", db_url)
    assert r.exit_code == 2
    assert "nothing is tuned for any kernel 2048x2048 or 2048x2048x2048 float32" in r.output
    assert "autotune search --kernel KERNEL --rows 2048 --cols 2048 --dtype float32" in r.output
    r = run("best", "--kernel", "smem_pad", "--dims", "rows=2048,cols=1024", "--db", db_url)
    assert r.exit_code == 2 and "nothing is tuned for smem_pad 2048x1024 float32" in r.output
    r = run("best", "--dims", "n=77", "--db", db_url)
    assert r.exit_code == 2 and "nothing is tuned for any kernel 77 float32; run: autotune search --kernel KERNEL --n 77" \
        in r.output


def test_best_by_device_name(fake_gpu, db_url):
    run("search", "--size", 64, "--trials", 2, "--sampler", "grid", "--db", db_url)
    r = run("best", "--size", 64, "--device", "h100", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert run("best", "--size", 64, "--device", "A100", "--db", db_url).exit_code == 2


def test_stale_results_are_skipped_and_marked(fake_gpu, db_url, monkeypatch):
    from autotune.store.models import Kernel

    run("search", "--size", 64, "--trials", 2, "--sampler", "grid", "--db", db_url)
    with open_results(db_url).session() as session:  # tuned with a kernel source that has changed since
        session.query(Kernel).update({Kernel.source_hash: "0" * 64})
    r = run("best", "--size", 64, "--db", db_url)
    assert r.exit_code == 2 and ("error: nothing current is tuned for any kernel 64x64 or 64x64x64 float32: left out "
                                 "1 stale result (1 kernel source changed); --include-stale shows them") in r.output
    r = run("best", "--size", 64, "--include-stale", "--db", db_url)
    assert r.exit_code == 0 and "yes (kernel source changed)" in r.output and "left out" not in r.output
    r = run("list", "--db", db_url)
    assert r.exit_code == 0 and "yes (kernel source changed)" in r.output


def test_malformed_space_file(tmp_path, fake_gpu, db_url):
    space = tmp_path / "space.toml"
    space.write_text('kernel = "smem_pad"\n[params]\nTILE_DIM = [32]\nBLOCK_ROWS = [8]\nIPAD = [1]\nDIAGONAL = [0]\nWARPS = [2]\n')
    r = run("search", "--size", 64, "--space", space, "--db", db_url)
    assert r.exit_code == 2 and "unknown macro 'WARPS'" in r.output


def test_edited_space_file_is_used(tmp_path, fake_gpu, db_url):
    space = tmp_path / "space.toml"
    space.write_text('kernel = "smem_pad"\n[params]\nTILE_DIM = [32]\nBLOCK_ROWS = [8, 4]\nIPAD = [1]\nDIAGONAL = [0]\n')
    r = run("search", "--size", 64, "--space", space, "--db", db_url)
    assert r.exit_code == 0 and "2 valid configs" in r.output and "stopped: exhausted" in r.output


def test_db_upgrade_and_current(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert run("db", "current", "--db", url).output.strip().startswith("no database at")
    assert not (tmp_path / "new.db").exists()  # read only: a missing file is not created
    r = run("db", "upgrade", "--db", url)
    from autotune.store.schema import head_revision

    assert r.exit_code == 0 and f"schema revision {head_revision()}" in r.output
    assert run("db", "current", "--db", url).output.strip() == head_revision()


def test_db_upgrade_backs_up_an_older_database_first_and_says_where(tmp_path):
    import sqlite3

    db = tmp_path / "old.db"
    url = f"sqlite:///{db}"
    old = open_results(url, "unmigrated")
    old.upgrade("0004")
    old.close()
    con = sqlite3.connect(db)
    con.execute("insert into autotune_devices (name, compute_capability, sm_count, total_memory, driver_version, "
                "cuda_version) values ('NVIDIA H100 80GB HBM3', '9.0', 132, 85000000000, '13.0', '13.0')")
    con.commit()
    con.close()
    r = run("db", "upgrade", "--db", url)
    assert r.exit_code == 0, r.output
    (backup,) = [p for p in tmp_path.iterdir() if ".bak-" in p.name]
    assert backup.name.startswith("old.db.bak-0004-") and f"backed up the database to {backup} before" in r.output
    copy = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    try:
        assert copy.execute("select version_num from autotune_alembic_version").fetchall() == [("0004",)]
        assert copy.execute("select name from autotune_devices").fetchall() == [("NVIDIA H100 80GB HBM3",)]
    finally:
        copy.close()
    r = run("db", "upgrade", "--db", url)  # at the newest revision: nothing to migrate, no second backup
    assert r.exit_code == 0 and "backed up" not in r.output
    assert len([p for p in tmp_path.iterdir() if ".bak-" in p.name]) == 1


def test_autotune_db_env_var(fake_gpu, tmp_path):
    url = f"sqlite:///{tmp_path / 'env.db'}"
    r = runner.invoke(app, ["search", "--size", 32, "--trials", 2, "--sampler", "grid"], env={"AUTOTUNE_DB": url})
    assert r.exit_code == 0, r.output
    assert open_results(url).find_best(dims={"rows": 32, "cols": 32})


def test_python_dash_m():
    out = subprocess.run([sys.executable, "-m", "autotune", "kernels", "--wide"], capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent)
    assert out.returncode == 0 and "smem_pad" in out.stdout and "kernels/smem_pad.toml" in out.stdout


def test_importing_the_cli_imports_no_database_library():
    """SQLAlchemy, Alembic and Optuna come when a command opens the store: a search imports them
    while its measuring child starts (about 0.8 s of a 2 s CLI import on the GPU machine)."""
    code = ("import sys, autotune.cli; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'alembic', 'optuna'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent)
    assert out.stdout.strip() == "[]"


def test_tpe_whose_trials_cover_the_space_measures_it_in_order_without_repeats(fake_gpu, db_url):
    """The README main job's case: TPE, 100 trials, smem_pad's 54 configs, no timeout."""
    r = run("search", "--kernel", "smem_pad", "--size", 1024, "--trials", 100, "--seed", 0, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "stopped: exhausted; this run measured 54 configs: 54 ok" in r.output and "duplicate" not in r.output
    assert "every valid config measured in the space's order" in r.output
    from sqlalchemy import select

    from autotune.store.models import Search

    with open_results(db_url).session() as session:
        assert session.scalars(select(Search.sampler)).all() == ["grid"]  # what proposed the configs, as stored
    r = run("search", "--kernel", "smem", "--size", 256, "--trials", 100, "--timeout", 600, "--seed", 0, "--db", db_url)
    assert r.exit_code == 0 and "the space's order" not in r.output  # a timeout may cut it: the sampler orders it


def test_sweep_measures_the_whole_grid_and_stores_it_like_search_trials(fake_gpu, db_url):

    n = len(get_kernel("smem").space().configs())
    r = run("sweep", "--kernel", "smem", "--size", 256, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert f"{n} ok" in r.output and f"top {n} configs of the study" in r.output
    store = open_results(db_url)
    [best] = store.find_best(kernel="smem", dims="rows=256,cols=256")
    trials = [t for s in {best.search_id} for t in store.trials(s)]
    assert len(trials) == n and {t.status for t in trials} == {"ok"}
    # a second sweep measures nothing new: every config is in the study already
    r = run("sweep", "--kernel", "smem", "--size", 256, "--db", db_url)
    assert r.exit_code == 0 and "stopped: exhausted" in r.output


USER_STRATEGY = """
from autotune.search.strategies import StrategyOption, Traits, register
from autotune.search.strategies.simple import Random

made = []


def every_other(space, seed, history, stride=1):
    made.append(stride)
    return Random(space, seed, history)


register("every_other", every_other, Traits(options=(StrategyOption("stride", 1, low=1, high=4),)), replace=True)
"""


def test_search_runs_a_users_registered_strategy_with_its_options(fake_gpu, db_url, tmp_path, monkeypatch):
    """Issue 38: ``register`` in a module that AUTOTUNE_STRATEGIES names; --strategy NAME and
    --strategy-option KEY=VALUE select it and set its options, stored with the study."""
    import optuna

    from autotune.search.strategies import registry

    (tmp_path / "cli_user_strategy.py").write_text(USER_STRATEGY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AUTOTUNE_STRATEGIES", "cli_user_strategy")
    try:
        r = run("search", "--size", 256, "--trials", 3, "--strategy", "every_other", "--strategy-option", "stride=2",
                "--db", db_url)
        assert r.exit_code == 0, r.output
        assert "strategy every_other" in r.output and "3 ok" in r.output
        assert sys.modules["cli_user_strategy"].made == [2]
        store = open_results(db_url)
        [study] = optuna.get_all_study_summaries(store.optuna_storage())
        assert study.user_attrs["strategy"] == "every_other" and study.user_attrs["strategy_options"] == {"stride": 2}
        r = run("search", "--size", 256, "--strategy", "every_other", "--strategy-option", "stride=5", "--db", db_url)
        assert r.exit_code == 2 and "error: --strategy-option 'stride=5' is not allowed; option stride of strategy " \
                                   "every_other takes an integer 1..4" in r.output
    finally:
        registry._FACTORIES.pop("every_other", None)
        registry._TRAITS.pop("every_other", None)
        sys.modules.pop("cli_user_strategy", None)


def test_bench_runs_are_stored(db_url, device_info):
    from sqlalchemy import select

    from autotune.report.bench import BenchLine
    from autotune.store.models import BenchRow, BenchRun

    lines = [BenchLine("cudaMemcpy device-to-device", "memcpy", 0.01, 2900.0, 100.0),
             BenchLine("smem_pad", "kernel", 0.011, 2700.0, 93.1, "BLOCK_ROWS=8,DIAGONAL=0,IPAD=1,TILE_DIM=32",
                       "default", 30, 8448, 1.0),
             BenchLine("naive_row", "kernel", None, None, config_key="X", source="default", note="wrong_result: x"),
             BenchLine("numpy.ascontiguousarray(a.T) on the CPU", "cpu", 5.0, 26.0, 0.9),
             BenchLine("host-to-device (pageable)", "transfer", 0.5, 12.0)]
    store = open_results(db_url)
    run_id = store.save_bench_run(device_info, {"rows": 64, "cols": 128}, "float64", "13.0.88", 2900.0, "rotating",
                                  lines)
    with store.session() as s:
        run = s.get(BenchRun, run_id)
        assert (run.dims, run.dtype, run.l2_mode, run.device.name) == ("rows=64,cols=128", "float64", "rotating",
                                                                       device_info.name)
        stored = s.scalars(select(BenchRow).where(BenchRow.run_id == run_id).order_by(BenchRow.position)).all()
        assert [(r.name, r.kind, r.gbps, r.note) for r in stored] == [(l.name, l.kind, l.gbps, l.note) for l in lines]


def test_a_long_line_stays_one_line_off_a_terminal():
    """A header naming a long path (a clone deep in a CI machine's tree) is printed whole,
    not broken at the console's width, so logs and tests can find its phrases."""
    words = " ".join(f"word{i}" for i in range(80))  # ~540 characters, over the 220 columns
    code = f"from autotune.cli._common import out, err; out.print({words!r}); err.print({words!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == words + "\n"
    assert done.stderr == words + "\n"


def test_search_and_best_show_the_certified_timing_and_the_winner_against_the_runner_up(fake_gpu, db_url):
    import json

    r = run("search", "--kernel", "smem_pad", "--size", 256, "--trials", 8, "--sampler", "grid", "--top-k", 3,
            "--rounds", 4, "--ci", 0.005, "--min-samples", 30, "--max-samples", 300, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "samples: until the median's 95% CI is within ±0.5% or ±0.5 µs (30..300 per config)" in r.output
    assert "objective: time" in r.output and "vs fastest, paired" in r.output
    assert fake_gpu[0][4].precision.min_samples == 30 and fake_gpu[0][4].energy is False
    assert "runner-up " in r.output and "paired over 4 rounds" in r.output

    r = run("best", "--size", 256, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "runner-up " in r.output and "paired over 4 rounds" in r.output
    assert "tied" in r.output

    r = run("best", "--size", 256, "--db", db_url, "--format", "json")
    doc = json.loads(r.output)
    cert = doc["records"][0]["certificate"]
    assert cert["level"] == 0.95 and cert["runner_up"]["rounds"] == 4 and "ratio_low" in cert["runner_up"]


def test_on_a_gpu_without_the_energy_counter_one_line_says_why(fake_gpu, db_url, monkeypatch):
    note = "energy is unavailable: Tesla T4 has no total-energy counter (nvmlDeviceGetTotalEnergyConsumption: Not Supported)"
    monkeypatch.setattr(FakeBench, "energy_note", note, raising=False)
    r = run("search", "--size", 256, "--trials", 2, "--sampler", "grid", "--objective", "energy", "--db", db_url)
    assert r.exit_code == 2
    errors = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: objective energy needs the energy per launch, and {note}"]

    r = run("search", "--size", 256, "--trials", 2, "--sampler", "grid", "--energy", "--db", db_url)
    assert r.exit_code == 0, r.output
    assert f"warning: {note}" in r.output
