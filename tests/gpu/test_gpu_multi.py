"""Two real GPUs of one model (skipped with fewer): a short search fills one study, and a
workload's tuning runs its problems on both (the per-GPU workers of autotune.measure.gpu_pool)."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotune.cli import app

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def _two_gpus_of_one_model():
    from autotune.measure.device import device_count, query_device

    n = device_count()
    if n < 2:
        pytest.skip(f"needs 2 GPUs; {n} present")
    a, b = query_device(0), query_device(1)
    if (a.name, a.compute_capability, a.total_memory) != (b.name, b.compute_capability, b.total_memory):
        pytest.skip(f"GPUs 0 and 1 are different models ({a.name}, {b.name})")


def test_two_gpus_search_one_study(tmp_path):
    _two_gpus_of_one_model()
    path = tmp_path / "gpu.db"
    r = CliRunner().invoke(app, ["search", "--kernel", "smem_pad", "--device", "0,1", "--size", "2048",
                                 "--trials", "24", "--sampler", "grid", "--db", f"sqlite:///{path}"])
    assert r.exit_code == 0, r.output
    assert "best: " in r.output and "re-timing the top 5 configs of the study on GPU 0 only" in r.output
    con = sqlite3.connect(path)
    assert con.execute("select count(*) from studies").fetchone() == (1,)
    per_gpu = con.execute("select s.gpu_ordinal, s.gpu_uuid, count(*) from autotune_trials t join autotune_searches"
                          " s on s.id = t.search_id group by s.gpu_ordinal, s.gpu_uuid order by 1").fetchall()
    assert [o for o, _, _ in per_gpu] == [0, 1] and per_gpu[0][1] != per_gpu[1][1]
    assert sum(n for _, _, n in per_gpu) == 24  # the budget, shared as they went
    configs = con.execute("select config_key from autotune_trials").fetchall()
    assert len(configs) == len(set(configs))  # no config measured twice
    assert con.execute("select count(*) from autotune_best where rounds = 5").fetchone() == (1,)


def test_two_gpus_tune_a_workload_s_problems_each_taking_the_next(tmp_path):
    _two_gpus_of_one_model()
    pytest.importorskip("torch")
    env = {**os.environ, "AUTOTUNE_DB": f"sqlite:///{tmp_path / 'app.db'}"}

    def run(*args):
        done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    run("examples/app/app.py", "--steps", "1", "--record", "app")
    doc = json.loads(run("-m", "autotune", "tune", "app", "--budget", "1m", "--max-trials", "3", "--seed", "0",
                         "--device", "0,1", "--format", "json"))
    assert doc["status"] == "finished" and doc["gpus"] == 2, doc
    assert {r["status"] for r in doc["records"]} <= {"tuned", "skipped"}, doc["records"]
    assert {r["gpu"] for r in doc["records"]} == {0, 1}, doc["records"]  # each GPU was handed a problem at once
