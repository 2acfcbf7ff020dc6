"""The benchmarks' widened spaces and flag kernel files (benchmarks/spaces, benchmarks/kernels)
load, hold the valid configs their comments state (issue 35's new recorded tables need 500+),
and benchmarks/archive/flags_vs_macros.py compares a table's best macro-only config with its best."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.space import load_space
from autotune.search.proposals import check_grid

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


@pytest.mark.parametrize("kernel, space, count", [
    ("matmul_reg", "matmul_reg_1024.toml", 688),
    ("examples/histogram/histogram.toml", "histogram_768.toml", 768),
    ("benchmarks/kernels/softmax_flags.toml", None, 624),
    ("benchmarks/kernels/matmul_warp_flags.toml", None, 30),
    ("benchmarks/kernels/smem_vec_flags.toml", None, 12),
])
def test_the_recorded_spaces_hold_their_configs(kernel, space, count):
    k = resolve_kernel(ROOT / kernel if kernel.endswith(".toml") else kernel)
    s = load_space(k, BENCH / "spaces" / space) if space else k.space()
    assert check_grid(s) == count


def test_the_flag_kernels_tune_nvcc_flags_beside_the_macros():
    k = resolve_kernel(BENCH / "kernels/softmax_flags.toml")
    assert {"NVCC_MAXRREGCOUNT", "NVCC_FAST_MATH"} <= set(k.default_config().as_dict())
    assert k.source == (ROOT / "examples/softmax/softmax.cu").resolve()


def _flags_script():
    spec = importlib.util.spec_from_file_location("flags_vs_macros", BENCH / "archive" / "flags_vs_macros.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("flags_vs_macros", module)
    spec.loader.exec_module(module)
    return module


def test_flags_vs_macros_names_the_best_of_each_and_the_gain():
    script = _flags_script()
    table = {"B=1,NVCC_FAST_MATH=0,NVCC_MAXRREGCOUNT=0": 0.010, "B=2,NVCC_FAST_MATH=0,NVCC_MAXRREGCOUNT=0": 0.012,
             "B=1,NVCC_FAST_MATH=1,NVCC_MAXRREGCOUNT=0": 0.008, "B=2,NVCC_FAST_MATH=1,NVCC_MAXRREGCOUNT=64": None}
    text = "\n".join(script.compare(table))
    assert "configs measured: 3 (1 failed), 2 with nvcc's own flags" in text
    assert "best with nvcc's own flags (macros only): B=1,NVCC_FAST_MATH=0,NVCC_MAXRREGCOUNT=0 at 10.00 µs" in text
    assert "20.0 % less time (1.250x)" in text
    assert "| NVCC_FAST_MATH=1, NVCC_MAXRREGCOUNT=0 | 8.00 | -20.0 % |" in text


def test_flags_vs_macros_says_when_no_flag_helps():
    script = _flags_script()
    text = "\n".join(script.compare({"B=1,NVCC_PTXAS_O=3": 0.010, "B=1,NVCC_PTXAS_O=1": 0.012}))
    assert "no flag setting beats the best macro-only config" in text


def test_search_replay_compare_counts_level_cells_by_target_2s_rule(tmp_path):
    spec = importlib.util.spec_from_file_location("search_replay_compare", BENCH / "archive" / "search_replay_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    head = "table,tool,strategy,batch,default_first,budget,P,P_se\n"
    (tmp_path / "ours.csv").write_text(head + "t,autotune,tpe,16,yes,20,0.50,0.10\n"
                                              "t,autotune,tpe,16,yes,50,0.20,0.00\n")
    (tmp_path / "kt.csv").write_text(head + "t,kernel_tuner,mls,1,yes,20,0.60,0.00\n"
                                            "t,kernel_tuner,mls,16,yes,20,0.60,0.00\n"
                                            "t,kernel_tuner,ga,16,yes,50,0.90,0.10\n"
                                            "t,kernel_tuner,mls,16,yes,50,0.30,0.00\n")
    ours = module.cells(tmp_path / "ours.csv", lambda r: r["tool"] == "autotune")
    kt = module.cells(tmp_path / "kt.csv", lambda r: r["tool"] == "kernel_tuner")
    text = "\n".join(module.compare(ours, kt, "tpe"))
    assert "level with Kernel Tuner's best strategy (target 2's rule) in 1 of 2 cells" in text  # 0.5 >= 0.6 - 0.1
    assert "| t | 16 | yes | 50 | 0.20 ± 0.00 | ga 0.90 ± 0.10 |" in text


def test_search_replay_ceiling_matches_every_first_batch_enumerated():
    """The ceiling's curve (benchmarks/search_replay_ceiling.py) against the mean over every
    ordering of a 5-config table: the default first, then a random batch of 2, then the optimum."""
    import itertools

    spec = importlib.util.spec_from_file_location("search_replay_ceiling", BENCH / "search_replay_ceiling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = {"a": 3.0, "b": 1.0, "c": None, "d": 2.0, "e": 5.0}  # "e" the default, "c" failed (worst: 5.0)
    curves = []
    for order in itertools.permutations("abcd"):
        best, curve = 5.0, [5.0]
        for key in order[:2]:
            best = min(best, table[key] if table[key] is not None else 5.0)
            curve.append(best)
        curves.append(curve + [1.0] * 2)
    expected = [sum(c[i] for c in curves) / len(curves) for i in range(5)]
    assert list(module.ceiling_curve(table, "e", 2, 5)) == pytest.approx(expected)
    no_default = module.ceiling_curve(table, None, 2, 5)
    assert list(no_default[2:]) == [1.0] * 3 and no_default[0] == pytest.approx((3 + 1 + 5 + 2 + 5) / 5)
    assert module.ceiling(table, None, 1, 1) == pytest.approx(0.0)  # one random config is random search


def _search_replay():
    spec = importlib.util.spec_from_file_location("search_replay", BENCH / "search_replay.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_search_replay_costs_mode_reports_seconds_from_a_costs_file(tmp_path):
    """benchmarks/search_replay.py --costs (issue 47, target 5) on a recorded table with a
    synthetic costs file beside it: a row per strategy and way, the ratios, the caveat."""
    import csv
    import subprocess

    name = "softmax_rows_flags_4096x1024_float32"
    [table] = sorted((BENCH / "results").glob(f"*_table_{name}.csv"))[:1]
    stem = "2026-11-29_TEST_GPU_table_" + name
    (tmp_path / f"{stem}.csv").write_text(table.read_text())
    rows = list(csv.reader(table.read_text().splitlines()))[1:]
    with open(tmp_path / f"{stem}_costs.csv", "w", newline="") as f:
        f.write("# 4 compile workers; synthetic\n")
        w = csv.writer(f)
        w.writerow(["config", "nvcc_cpu_s", "verify_ms", "time_ms", "median_ms"])
        w.writerows([key, 1.5, 1.0, 2.0, ms] for key, ms in rows)
    run = subprocess.run([sys.executable, str(BENCH / "search_replay.py"), "--costs", "--results", str(tmp_path),
                          "--out", str(tmp_path), "--seeds", "2", "--kt-seeds", "0", "--cap", "12", "--workers", "1",
                          "--kt"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    [out] = tmp_path.glob("*_cpu_search_replay_costs_TEST_GPU.csv")
    got = {(r["tool"], r["strategy"], r["way"]): r for r in csv.DictReader(out.open())}
    assert set(got) == {("autotune", "tpe_local", "loop"), ("autotune", "tpe_local", "serial"),
                        ("autotune", "hillclimb", "serial")}
    assert all(r["seeds"] == "2" and r["costs_device"] == "TEST_GPU" for r in got.values())
    serial = float(got[("autotune", "hillclimb", "serial")]["s_at_end_median"])
    assert serial == pytest.approx(12 * (1.5 + 3e-3 + 5e-3), abs=0.05)  # 12 configs, one at a time
    assert float(got[("autotune", "tpe_local", "loop")]["s_at_end_median"]) < serial / 2  # 4 workers at once
    md = out.with_suffix(".md").read_text()
    assert "not the search run on a GPU" in md and "/ the hill climber" in md


def test_search_replay_costs_mode_without_a_costs_file_says_so(tmp_path):
    import subprocess

    run = subprocess.run([sys.executable, str(BENCH / "search_replay.py"), "--costs", "--results", str(tmp_path),
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and run.stderr.startswith("error: no table under") and "Traceback" not in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_search_replay_quartiles_and_ratios_keep_runs_not_within_the_cap():
    module = _search_replay()
    inf = float("inf")
    assert module.quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (3.0, 2.0, 4.0)
    assert module.quartiles([1.0, 2.0, inf, inf]) == (inf, 1.75, inf)
    assert module._ratio(2.0, 8.0, 10.0, 4.0) == "0.25x"
    assert module._ratio(2.0, inf, 10.0, 4.0).startswith("< 0.20x")  # theirs: more than their 10 s at the cap
    assert module._ratio(inf, 8.0, 10.0, 4.0).startswith("> 0.50x")  # ours: more than our 4 s at the cap
    assert module._ratio(inf, inf, 10.0, 4.0).startswith("-")
