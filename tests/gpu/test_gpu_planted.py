"""Kernels that write wrong values, leave elements unwritten or write out of bounds are
caught by verification, whether checked against NumPy or against a reference kernel, are
failed trials with the reason, and never become best (tests/gpu/planted.cu, a user's kernel
file written here)."""

from pathlib import Path

import pytest

import autotune
from autotune.errors import TrialFailed
from autotune.kernel.problem import Problem
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.loader import load_kernel
from autotune.measure.benchmark import open_benchmark
from autotune.measure.measure_options import MeasureOptions

from kernel_files import write_kernel

pytestmark = pytest.mark.gpu

PLANTED = {
    "name": "planted", "summary": "a transpose with planted bugs",
    "source": str(Path(__file__).resolve().parent / "planted.cu"), "function": "planted",
    "problem": {"dims": ["rows", "cols"], "dtypes": ["float32"]},
    "args": [{"name": "out", "array": ["cols", "rows"], "role": "out"},
             {"name": "src", "array": ["rows", "cols"], "role": "in"},
             {"name": "rows", "scalar": "int32", "value": "rows"},
             {"name": "cols", "scalar": "int32", "value": "cols"}],
    "launch": {"block": ["TILE_DIM", "BLOCK_ROWS", 1], "grid": ["cdiv(rows, TILE_DIM) * cdiv(cols, TILE_DIM)", 1, 1]},
    "macros": {"UNROLL": 1, "DIAGONAL": 0, "COLUMNWISE": 0},
    "space": {"params": {"TILE_DIM": [32], "BLOCK_ROWS": [8], "BUG": [0, 1, 2, 3]},
              "default": {"TILE_DIM": 32, "BLOCK_ROWS": 8, "BUG": 0}},
    "check": {"reference": "autotune.kernel.references:transpose", "compare": "exact"},
    "objective": {"bytes": "2 * rows * cols * itemsize", "bound": "memcpy"},
}
AGAINST_A_KERNEL = {**PLANTED, "name": "planted_vs_kernel",
                    "check": {"reference_kernel": "planted_reference", "compare": "exact",
                              "launch": {"block": [256], "grid": ["cdiv(rows * cols, 256)"]}}}
REASONS = {1: "elements of out differ from the reference",
           2: "1000 of 3001000 elements of out differ from the reference",
           3: "wrote 4 guard bytes after out"}


def bug(k, n):
    return Config.of(k.name, {**k.defaults, "BUG": n})


@pytest.mark.parametrize("doc", [PLANTED, AGAINST_A_KERNEL], ids=["numpy", "reference_kernel"])
def test_each_planted_bug_is_a_wrong_result(tmp_path, doc):
    k = load_kernel(write_kernel(tmp_path / "planted.toml", doc))
    with open_benchmark(0, Problem.of(k, {"rows": 1000, "cols": 3001}, get_dtype("float32")),
                        MeasureOptions(repeats=20, seed=0, ci=0)) as bench:
        assert bench.measure(bug(k, 0)).gbps > 0
        for n, reason in REASONS.items():
            with pytest.raises(TrialFailed) as info:
                bench.measure(bug(k, n))
            assert info.value.status == "wrong_result" and reason in info.value.reason, (n, info.value.reason)


def test_planted_bugs_are_failed_trials_and_never_best(tmp_path):
    path = write_kernel(tmp_path / "planted.toml", PLANTED)
    db = f"sqlite:///{tmp_path / 'planted.db'}"
    result = autotune.tune(str(path), (1000, 3001), "float32", trials=10, sampler="grid", repeats=20, top_k=2,
                           rounds=2, db=db)
    by_bug = {o.config["BUG"]: o for o in result.outcomes if o.status not in ("duplicate", "constraint")}
    assert by_bug[0].status == "ok" and by_bug[0].measurement.gbps > 0
    for n, reason in REASONS.items():
        assert by_bug[n].status == "wrong_result" and reason in by_bug[n].reason, (n, by_bug[n].reason)
    assert result.best[0]["BUG"] == 0 and set(result.measured) == {bug(load_kernel(path), 0)}
    assert result.decision is None or result.decision.winner.config["BUG"] == 0
