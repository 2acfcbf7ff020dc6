"""Kernels that break their CUDA context (an illegal address, a trap) or never return (an
infinite loop) fail their own trial as ``crash`` or ``timeout``, and the search goes on in a
fresh context: measurement isolation (autotune/measure/isolation.py; tests/gpu/faulty.cu, a
user's kernel file written here)."""

from pathlib import Path

import pytest

from autotune.store.opening import open_results

import autotune
from autotune.errors import TrialFailed
from autotune.kernel.problem import Problem
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.loader import load_kernel
from autotune.measure.benchmark import open_benchmark
from autotune.measure.isolation import open_isolated
from autotune.measure.sticky import STICKY
from autotune.measure.measure_options import MeasureOptions

from kernel_files import write_kernel

pytestmark = pytest.mark.gpu

TRIAL_TIMEOUT_S = 20.0  # compile, verify and time of a 1M-element copy take well under a second
FAULTY = {
    "name": "faulty", "summary": "a copy with planted faults that break the context or hang",
    "source": str(Path(__file__).resolve().parent / "faulty.cu"), "function": "faulty",
    "problem": {"dims": ["n"], "dtypes": ["float32"]},
    "args": [{"name": "out", "array": ["n"], "role": "out"},
             {"name": "src", "array": ["n"], "role": "in"},
             {"name": "n", "scalar": "int32", "value": "n"}],
    "launch": {"block": ["BLOCK", 1, 1], "grid": ["cdiv(n, BLOCK)", 1, 1]},
    "space": {"params": {"BLOCK": [256], "BUG": [0, 1, 2, 3]}, "default": {"BLOCK": 256, "BUG": 0}},
    "check": {"reference": "autotune.kernel.references:copy", "compare": "exact"},
    "objective": {"bytes": "2 * n * itemsize", "bound": "memcpy"},
}
STATUS = {0: "ok", 1: "crash", 2: "crash", 3: "timeout"}
REASON = {1: ("illegal_address:",),  # a trap is reported by the driver as one of several sticky errors
          2: tuple(f"{name}:" for name, _ in STICKY) + ("cuda_error:",), 3: ("no result in",)}
N = 1 << 20


def bug(k, n):
    return Config.of(k.name, {**k.defaults, "BUG": n})


def test_each_fault_fails_its_trial_and_the_next_config_runs_in_a_fresh_context(tmp_path):
    k = load_kernel(write_kernel(tmp_path / "faulty.toml", FAULTY))
    with open_isolated(open_benchmark, 0, Problem.of(k, {"n": N}, get_dtype("float32")),
                       MeasureOptions(trial_timeout=TRIAL_TIMEOUT_S, repeats=20, seed=0, ci=0)) as bench:
        assert bench.measure(bug(k, 0)).gbps > 0
        for n in (1, 2, 3):
            before = bench.pid
            with pytest.raises(TrialFailed) as info:
                bench.measure(bug(k, n))
            assert info.value.status == STATUS[n], (n, info.value.status, info.value.reason)
            assert info.value.reason.startswith(REASON[n]), (n, info.value.reason)
            assert bench.pid is None  # the broken process was killed
            assert bench.measure(bug(k, 0)).gbps > 0 and bench.pid != before  # a fresh context works
        assert bench.restarts == 3


def test_a_grid_search_stores_ok_crash_crash_timeout_and_the_best_is_the_correct_one(tmp_path):
    path = write_kernel(tmp_path / "faulty.toml", FAULTY)
    db = f"sqlite:///{tmp_path / 'faulty.db'}"
    result = autotune.tune(str(path), {"n": N}, "float32", trials=10, sampler="grid", repeats=20, top_k=2,
                           rounds=2, db=db, trial_timeout=TRIAL_TIMEOUT_S)
    assert result.stopped == "exhausted"
    by_bug = {o.config["BUG"]: o for o in result.outcomes if o.status not in ("duplicate", "constraint")}
    assert {n: o.status for n, o in by_bug.items()} == STATUS, {n: (o.status, o.reason) for n, o in by_bug.items()}
    for n, prefixes in REASON.items():
        assert by_bug[n].reason.startswith(prefixes), (n, by_bug[n].reason)
    assert result.best[0]["BUG"] == 0 and set(result.measured) == {bug(load_kernel(path), 0)}
    assert result.decision.winner.config["BUG"] == 0
    stored = {t.config["BUG"]: (t.status, t.reason) for t in open_results(db).key_trials(result.key)}
    assert {n: s for n, (s, _) in stored.items()} == STATUS, stored
    assert stored[1][1] == by_bug[1].reason and stored[3][1] == by_bug[3].reason
