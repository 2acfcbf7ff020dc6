"""benchmarks/certify_regret.py without a GPU: its pure parts (problem specs, the search's JSON,
regret and flip arithmetic, the report) on synthetic data, a call whose cap leaves no time (the
report is still written), and one problem end to end: the CLI on fake GPUs (tests/workers.py,
the landscape of fakes.FakeAnyBench) and the oracle on the fake benchmark."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).parent


@pytest.fixture
def bench(monkeypatch, device_info):
    from autotune.measure import benchmark, device

    from fakes import FakeAnyBench

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        yield FakeAnyBench(device_info, problem)

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    monkeypatch.setenv("AUTOTUNE", f"{sys.executable} {TESTS / 'workers.py'} cli 0")
    monkeypatch.setenv("AUTOTUNE_FAKE_BENCH", "any")
    spec = importlib.util.spec_from_file_location("certify_regret", ROOT / "benchmarks/certify_regret.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(mode, index, winner, ci, top=None, wall=10.0, measured=50):
    return {"mode": mode, "index": index, "wall_s": wall, "exit": 0, "complete": True, "measured": measured,
            "winner": winner, "ms": None, "ci_low": ci[0], "ci_high": ci[1], "tied": False,
            "top": top or [winner], "samples": 30}


def test_problem_specs(bench):
    p = bench.parse_problem("r=examples/reduction/reduce.toml:n=16777216:float32")
    assert p == {"name": "r", "kernel": str(ROOT / "examples/reduction/reduce.toml"), "dims": {"n": 16777216},
                 "dtype": "float32"}
    assert bench.parse_problem(bench.DEFAULT_PROBLEMS[0])["dims"] == {"rows": 8192, "cols": 8192}
    for bad in ("smem_pad", "s=smem_pad:rows=x:float32", "s=smem_pad:rows=8:", "=smem_pad:rows=8:float32"):
        with pytest.raises(ValueError, match="--problem"):
            bench.parse_problem(bad)
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--problem", "nonsense"])
    assert exit_.value.code == 2


def test_the_search_json_is_read(bench):
    doc = {"measured": 54, "best": {"config": {"A": 1}, "ms": 1.0, "certificate": {
        "tied": True, "winner": {"config": {"A": 1}, "pooled_median_ms": 1.01, "ci_low_ms": 1.0, "ci_high_ms": 1.02}}},
        "top": [{"config": {"A": i}, "samples": s} for i, s in zip(range(1, 13), [20, 40, 60] * 4)]}
    r = bench.parse_run(json.dumps(doc))
    assert r == {"measured": 54, "winner": "A=1", "ms": 1.01, "ci_low": 1.0, "ci_high": 1.02, "tied": True,
                 "top": [f"A={i}" for i in range(1, 11)], "samples": 40}
    assert bench.parse_run("nvcc: a warning\n" + json.dumps(doc) + "\n")["winner"] == "A=1"
    assert bench.parse_run(json.dumps({"measured": 0, "best": None, "top": []}))["winner"] is None
    with pytest.raises(ValueError):
        bench.parse_run("error: no GPU")


def test_regret_flips_and_targets(bench):
    timed = {"A=1": {"ms": 1.0, "ci_low": 0.99, "ci_high": 1.01}, "A=2": {"ms": 1.004, "ci_low": 1.0, "ci_high": 1.01},
             "A=3": {"ms": 1.1, "ci_low": 1.09, "ci_high": 1.11}, "failed": {"A=9": "launch: boom"}}
    runs = [_run("adaptive", 0, "A=1", (0.99, 1.01), wall=60.0), _run("adaptive", 1, "A=2", (1.0, 1.02)),
            _run("adaptive", 2, "A=1", (0.99, 1.01)), _run("fixed", 0, "A=3", (None, None), wall=20.0),
            _run("fixed", 1, "A=1", (0.99, 1.0), wall=20.0),
            {**_run("adaptive", 3, None, (None, None)), "complete": False, "exit": 130}]
    an = bench.analyse(runs, timed)
    a, f = an["modes"]["adaptive"], an["modes"]["fixed"]
    assert an["oracle_best"] == "A=1"
    assert a["runs"] == 3 and a["winners"] == ["A=1", "A=2"]
    assert a["regrets"] == pytest.approx([0.0, 0.004, 0.0]) and a["max_regret"] == pytest.approx(0.004)
    assert a["s_per_config"] == pytest.approx(10 / 50)  # the median: run 0's cubin builds do not count
    assert [(fl["runs"], fl["ci_overlap"], fl["oracle_overlap"]) for fl in a["flips"]] == [((0, 1), True, True),
                                                                                         ((1, 2), True, True)]
    assert f["max_regret"] == pytest.approx(0.1)
    assert [(fl["ci_overlap"], fl["oracle_overlap"]) for fl in f["flips"]] == [(None, False)]
    assert an["targets"] == {"regret": True, "flip": True, "time_per_config": True,
                              "time_ratio": pytest.approx(0.5)}
    # a flip whose certificates' CIs are apart misses the target; unknown CIs fall back to the oracle's
    runs[1]["ci_low"], runs[1]["ci_high"] = 1.03, 1.04
    assert bench.analyse(runs, timed)["targets"]["flip"] is False
    assert bench.overlap((1, 2), (2, 3)) and not bench.overlap((1, 2), (2.1, 3)) and bench.overlap((1, None), (1, 2)) is None
    nothing = bench.analyse([], None)
    assert nothing["targets"] == {"regret": None, "flip": None, "time_per_config": None,
                                   "time_ratio": None}


def test_the_plan_interleaves_problems(bench):
    assert bench.plan([{}, {}], 3, 1) == [(0, "adaptive", 0), (1, "adaptive", 0), (0, "adaptive", 1),
                                          (1, "adaptive", 1), (0, "fixed", 0), (1, "fixed", 0),
                                          (0, "adaptive", 2), (1, "adaptive", 2)]


def test_the_report_holds_the_tables(bench, tmp_path):
    import argparse

    timed = {"A=1": {"ms": 1.0, "ci_low": 0.99, "ci_high": 1.01}, "A=2": {"ms": 1.01, "ci_low": 1.0, "ci_high": 1.02}}
    runs = [_run("adaptive", 0, "A=1", (0.99, 1.01)), _run("adaptive", 1, "A=2", (1.0, 1.02)),
            _run("fixed", 0, "A=1", (None, None), wall=20.0)]
    problem = bench.parse_problem(bench.DEFAULT_PROBLEMS[0])
    results = [{"problem": problem, "runs": runs, "oracle": timed, "oracle_s": 3.0,
                "analysis": bench.analyse(runs, timed)},
               {"problem": bench.parse_problem(bench.DEFAULT_PROBLEMS[1]), "runs": [], "oracle": None,
                "analysis": bench.analyse([], None)}]
    options = argparse.Namespace(device=0, seed=0, reruns=2, fixed_reruns=1, oracle_rounds=20, out=tmp_path)
    path = bench.report(results, options, "NVIDIA H100 80GB HBM3", "total 100 s of a 140 s cap; complete")
    assert path.name.endswith("_NVIDIA_H100_80GB_HBM3_certify_regret.txt")
    text = path.read_text()
    assert "## smem_pad: smem_pad 8192x8192 float32" in text and "## reduction: reduce.toml 16777216 float32" in text
    assert "adaptive: 2 complete runs, median 0.200 s/config; 2 distinct winner(s); regret mean 0.50%, max 1.00%" in text
    assert "flip runs 0/1: A=1 vs A=2; CIs overlap: yes (certificates), yes (oracle)" in text
    assert "target: selection regret <= 0.50% (adaptive, max): NOT met" in text
    assert "target: winners differ only within each other's CI (adaptive): met" in text
    assert "target: time per config no more than fixed sampling: met (adaptive/fixed 0.50)" in text
    assert "oracle: not measured" in text and "target: selection regret <= 0.50% (adaptive, max): not measured" in text
    assert json.loads(path.with_suffix(".json").read_text())[0]["problem"]["name"] == "smem_pad"


def test_a_spent_cap_still_writes_the_report(bench, tmp_path):
    bench.main(["--max-seconds", "1", "--out", str(tmp_path)])
    (path,) = tmp_path.glob("*_certify_regret.txt")
    text = path.read_text()
    assert "21 searches not started (cap)" in text and text.count("oracle: not measured") == 3


def test_one_problem_end_to_end_on_fake_gpus(bench, tmp_path):
    bench.main(["--problem", "reduction=examples/reduction/reduce.toml:n=16777216:float32", "--reruns", "2",
                "--fixed-reruns", "1", "--oracle-rounds", "3", "--out", str(tmp_path), "--max-seconds", "300"])
    (path,) = tmp_path.glob("*_certify_regret.txt")
    text = path.read_text()
    (result,) = json.loads(path.with_suffix(".json").read_text())
    assert [(r["mode"], r["exit"], r["complete"]) for r in result["runs"]] == [
        ("adaptive", 0, True), ("adaptive", 0, True), ("fixed", 0, True)], text
    assert len({r["winner"] for r in result["runs"]}) == 1 and all(r["measured"] == 48 for r in result["runs"])
    assert result["oracle"][result["runs"][0]["winner"]]["ms"] > 0
    assert result["analysis"]["oracle_best"] == result["runs"][0]["winner"]
    assert result["analysis"]["modes"]["adaptive"]["regrets"] == [0.0, 0.0]
    assert "target: selection regret <= 0.50% (adaptive, max): met" in text
    assert "target: winners differ only within each other's CI (adaptive): met" in text
    assert "NOT finished" not in text and "not started" not in text
    assert sorted(p.name for p in (tmp_path / "certify_dbs").glob("*.db")) == [
        "reduction_adaptive_0.db", "reduction_adaptive_1.db", "reduction_fixed_0.db"]
