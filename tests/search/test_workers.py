"""``autotune search --device 0,1``: fake GPUs as worker processes, all in one study.

The CLI runs in a subprocess (``tests/workers.py cli``) with fake GPUs: ``$AUTOTUNE_FAKE_GPUS``
names their models, the fake timer measures; each GPU's worker is a real spawned process.
"""

from __future__ import annotations

import signal

import pytest
from typer.testing import CliRunner

from autotune.measure import device
from autotune.search import workers as multi_gpu
from autotune.cli import app
from autotune.errors import InvalidInputError

from signals import finish, release, repeat, signal_loaded, start_cli, wait_for
from test_concurrency import rows
from workers import DEVICE, run_cli

H100 = DEVICE.name


def test_two_gpus_fill_one_study_and_store_one_best(shared_db, tmp_path):
    """Each GPU is held inside its second measurement until both are: then they share the rest
    of the budget, each taking the next config as it is free."""
    proc, marks = start_cli(tmp_path, "--device", "0,1", "--trials", "30", "--seed", "1", "--sampler", "random",
                            "--db", shared_db, hold="measure:2", gpus=2, delay="0")
    wait_for(proc, marks, "measure-0-2", "measure-1-2")
    release(marks)
    output = finish(proc)
    assert proc.returncode == 0, output
    assert "Traceback" not in output
    # one study; one search row per GPU, each naming its GPU; trials from both
    assert len(rows(shared_db, "select study_id from studies")) == 1
    searches = rows(shared_db, "select gpu_ordinal, gpu_uuid, status from autotune_searches order by gpu_ordinal")
    assert searches == [(0, "GPU-fake-0", "finished"), (1, "GPU-fake-1", "finished")]
    per_gpu = dict(rows(shared_db, "select s.gpu_uuid, count(*) from autotune_trials t join autotune_searches s "
                                   "on s.id = t.search_id group by s.gpu_uuid"))
    # the budget of 30 configs measured was shared, all in the one study, each GPU measuring
    # the next config as it was free (2 each by the release); at one speed: 15 + 15
    assert sum(per_gpu.values()) == 30 and min(per_gpu.values()) >= 2, per_gpu
    assert len(rows(shared_db, "select trial_id from trials")) >= 30
    assert "trials split 15+15" in output
    assert "GPU 0 NVIDIA H100 80GB HBM3 GPU-fake-0:" in output and "GPU 1 NVIDIA H100 80GB HBM3 GPU-fake-1:" in output
    # re-timed once, and the best is stored like a single-GPU search's: pooled figures, tie group
    assert "re-timing the top 5 configs of the study on GPU 0 only" in output
    best = rows(shared_db, "select b.rounds, b.pooled_median_ms, t.config_key from autotune_best b "
                           "join autotune_trials t on t.id = b.trial_id")
    assert len(best) == 1 and best[0][0] == 5 and best[0][1] is not None
    assert f"best: {best[0][2]}" in output
    assert len(rows(shared_db, "select id from autotune_devices")) == 1


def test_the_faster_gpu_measures_more_of_the_shared_budget_and_both_end_together(db_url, tmp_path):
    """GPU 1 takes 0.5 s more per config than GPU 0: with the budget shared (not split 10 + 10
    up front), GPU 0 measures more and neither waits for the other at the end."""
    proc, marks = start_cli(tmp_path, "--device", "0,1", "--trials", "20", "--seed", "1", "--sampler", "random",
                            "--db", db_url, hold="measure:2", gpus=2, delay="0,0.5")
    wait_for(proc, marks, "measure-0-2", "measure-1-2")
    release(marks)
    output = finish(proc)
    assert proc.returncode == 0, output
    per_gpu = dict(rows(db_url, "select s.gpu_ordinal, count(*) from autotune_trials t join autotune_searches s "
                                "on s.id = t.search_id group by s.gpu_ordinal"))
    assert sum(per_gpu.values()) == 20 and per_gpu[0] > per_gpu[1] >= 2, per_gpu
    assert "trials split 10+10 (a GPU that measures faster takes more)" in output


@pytest.mark.parametrize("sampler", ["grid", "tpe"])
def test_two_gpus_walking_the_whole_space_measure_each_config_once(shared_db, sampler):
    """A grid, or a search whose trials cover the space (measured as a grid), on two GPUs: each
    worker walks its share of the space's order first, then the other's from its far end,
    queueing no config another worker has in flight. Two GPUs walking one order measured 43
    of smem_pad's 54 configs twice; TPE on two GPUs took 191 Optuna trials for 57 measurements.
    The one instant where both could still queue one config is where their walks meet."""
    done = run_cli(shared_db, "--device", "0,1", "--trials", "100", "--seed", "1", "--sampler", sampler,
                   delay="0.05", env={"AUTOTUNE_COMPILE_WORKERS": "0"})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert ("each GPU its share of it first" in output) == (sampler == "tpe")
    measured = rows(shared_db, "select t.config_key, s.gpu_ordinal from autotune_trials t "
                               "join autotune_searches s on s.id = t.search_id")
    configs = {c for c, _ in measured}
    assert len(configs) == 54 and len(measured) <= 55, sorted(c for c, _ in measured)
    per_gpu = [sum(g == o for _, g in measured) for o in (0, 1)]
    # both GPUs measured: how many each takes depends on when its process started (a worker
    # started late on a loaded host finds more of its share taken from the far end: 35+19 seen)
    assert min(per_gpu) >= 1, per_gpu
    assert rows(shared_db, "select distinct sampler from autotune_searches") == [("grid",)]


def test_gpus_of_two_models_are_refused_naming_them(tmp_path):
    db = f"sqlite:///{tmp_path / 'mixed.db'}"
    done = run_cli(db, "--device", "all", gpus=(H100, "NVIDIA A100-SXM4-80GB"))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "--device mixes GPU models" in lines[0]
    assert f"0: {H100}" in lines[0] and "1: NVIDIA A100-SXM4-80GB" in lines[0]
    assert not (tmp_path / "mixed.db").exists()


@repeat
@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_ctrl_c_stops_every_worker_and_leaves_a_consistent_database(tmp_path, inherited, run):
    """SIGINT to the parent alone (a session of its own: it must pass it on) while each GPU's
    worker is inside its third measurement, the machine loaded from the signal to the exit."""
    db = f"sqlite:///{tmp_path / 'interrupted.db'}"
    proc, marks = start_cli(tmp_path, "--device", "0,1", "--sampler", "grid", "--trials", "200", "--db", db,
                            hold="measure:3", gpus=2, inherited=inherited, new_session=True)
    wait_for(proc, marks, "measure-0-3", "measure-1-3")
    output = signal_loaded(proc, signal.SIGINT)
    assert proc.returncode == 130, output
    assert "Traceback" not in output
    assert "best so far: " in output and "interrupted: trials so far are stored" in output
    assert rows(db, "select gpu_ordinal, status from autotune_searches order by gpu_ordinal") == [
        (0, "interrupted"), (1, "interrupted")], output
    assert rows(db, "pragma integrity_check") == [("ok",)]
    assert rows(db, "select count(*) from trials where state = 'RUNNING'") == [(0,)]
    per_gpu = rows(db, "select s.gpu_ordinal, count(*), count(distinct t.config_key) from autotune_trials t "
                       "join autotune_searches s on s.id = t.search_id where t.status = 'ok' group by s.gpu_ordinal")
    assert per_gpu == [(0, 2, 2), (1, 2, 2)]  # two measured each before the signal; none after
    assert not {"measure-0-4", "measure-1-4"} & {p.name for p in marks.iterdir()}


@pytest.mark.parametrize(("spec", "count", "message"), [
    ("0,0", 2, "--device '0,0' names a GPU twice"),
    ("-1", 2, "--device -1 is not allowed"),
    ("0,-1", 2, "--device -1 is not allowed"),
    ("x", 2, "--device 'x' is not allowed; give an ordinal 0, 1, ..., a list such as 0,1, or all"),
    ("", 2, "--device '' is not allowed"),
    ("0,", 2, "--device '0,' is not allowed"),
    ("0,2", 2, "--device 2 is out of range; allowed: 0..1"),
    ("all", 0, "--device all: no CUDA device is present"),
])
def test_bad_device_lists_are_one_line_errors(spec, count, message, monkeypatch, tmp_path):
    monkeypatch.setattr(device, "device_count", lambda: count)
    db = tmp_path / "never.db"
    result = CliRunner().invoke(app, ["search", "--size", "64", "--device", spec, "--db", f"sqlite:///{db}"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output and not db.exists()


def test_each_gpu_of_a_host_gets_its_share_of_the_cores_and_of_the_batch(monkeypatch):
    """Two workers with pools of the CPU count each ran twice as many nvcc as cores (issue 37);
    k workers proposing batch/k at a time keep as many proposals in flight as one GPU."""
    from autotune.search.options import SearchOptions

    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "32")
    options, compilers = multi_gpu.per_gpu(SearchOptions(), 2)
    assert (options.batch, compilers) == (16, 16)
    assert multi_gpu.per_gpu(SearchOptions(batch=12), 4)[0].batch == 3
    assert multi_gpu.per_gpu(SearchOptions(batch=1), 2)[0].batch == 1  # at least one
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "0")  # off stays off
    assert multi_gpu.per_gpu(SearchOptions(), 2) == (SearchOptions(batch=1), 0)


def test_parse_devices_and_trial_shares():
    assert multi_gpu.parse_devices("1") == [1]  # a single ordinal needs no driver
    assert multi_gpu.parse_devices(" 2, 0 ", count=lambda: 3) == [2, 0]
    assert multi_gpu.parse_devices("all", count=lambda: 3) == [0, 1, 2]
    with pytest.raises(InvalidInputError):
        multi_gpu.parse_devices("1,1", count=lambda: 3)
    assert multi_gpu.split_trials(7, 3) == [3, 2, 2] and sum(multi_gpu.split_trials(100, 8)) == 100
