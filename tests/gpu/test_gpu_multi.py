"""A short search over two real GPUs of one model fills one study (skipped with fewer GPUs)."""

import sqlite3

import pytest
from typer.testing import CliRunner

from autotune.cli import app

pytestmark = pytest.mark.gpu


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
