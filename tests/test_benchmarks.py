"""benchmarks/: the maintained drivers and runners (benchmarks/README.md's table) parse, nothing
else lies at the folder's top, and every benchmarks/ path the docs, the README and the package
name exists (the archived diagnostics are named under benchmarks/archive/)."""

from __future__ import annotations

import ast
import csv
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
MAINTAINED = {
    "app_tuning.py", "certify_regret.py", "dispatch_regret.py", "energy_front.py", "large_space_search.py",
    "launch_overhead.py", "lookup_latency.py", "search_replay.py", "search_replay_ceiling.py",
    "transpose_vs_peers.py", "unaligned_transpose.py", "examples_launch.py", "warm_l2_transpose.py",
    "verify_cost.py", "main_job_timeline.py", "search_wall.py",
}
RUNNERS = {
    "app_tuning.sh", "certify_regret.sh", "dispatch_regret.sh", "energy_front.sh", "large_space_search.sh",
    "launch_overhead.sh", "search_replay.sh", "transpose_vs_peers.sh", "unaligned_transpose.sh", "record_tables.sh",
    "transpose_issue24.sh", "search_smem_pad.sh", "search_throughput.sh", "matmul_4096.sh", "examples_gpu.sh",
    "gpu_tests.sh", "gpu_info.sh", "main_job.sh", "search_floor.sh", "nvcc_cpu.sh",
}
FOLDERS = {"archive", "results", "kernels", "spaces"}


def test_the_folder_holds_the_maintained_scripts_only():
    found = {p.name for p in BENCH.iterdir() if not p.name.startswith(".") and p.name != "__pycache__"}
    assert found == MAINTAINED | RUNNERS | FOLDERS | {"README.md"}
    readme = (BENCH / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in MAINTAINED | RUNNERS)


@pytest.mark.parametrize("name", sorted(MAINTAINED))
def test_a_maintained_driver_parses_and_reads_no_private_name_of_the_package(name):
    """(The archived recording_samples.py read a recording's private fields: such a script breaks
    silently when they change.)"""
    tree = ast.parse((BENCH / name).read_text(), name)
    private = [f"{name}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               and (n.module or "").startswith("autotune") and any(a.name.startswith("_") for a in n.names)]
    assert private == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_a_runner_parses(name):
    subprocess.run(["bash", "-n", str(BENCH / name)], check=True)


def test_every_benchmarks_path_the_docs_name_exists():
    texts = [ROOT / "README.md", BENCH / "README.md", BENCH / "archive" / "README.md",
             *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "autotune").rglob("*.py"))]
    missing = []
    for path in texts:
        for ref in re.findall(r"benchmarks/[A-Za-z0-9_./-]*[A-Za-z0-9_]", path.read_text()):
            if "..." not in ref and not (ROOT / ref).exists() and not any(ROOT.glob(ref + "*")):
                missing.append(f"{path.relative_to(ROOT)}: {ref}")
    assert missing == []


def _search_wall():
    import importlib.util

    spec = importlib.util.spec_from_file_location("search_wall", BENCH / "search_wall.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_search_wall_judges_every_tool_by_the_table_and_counts_a_run_that_never_gets_there_as_censored():
    wall = _search_wall()
    table = {"A=1": 2.0, "A=2": 1.0, "A=3": None, "A=4": 1.04}
    # a failed config and one outside the table (Kernel Tuner's invalid ones) never count
    evals = [("A=3", 0.5), ("A=9", 0.7), ("A=4", 1.5), ("A=2", 3.0)]
    assert wall.reach(evals, table, 0.05) == (1.5, 3)
    assert wall.reach(evals, table, 0.01) == (3.0, 4)
    assert wall.reach(evals[:3], table, 0.01) == (math.inf, math.inf)
    assert wall.quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (3.0, 2.0, 4.0)
    assert wall.quartiles([1.0, 2.0, math.inf, math.inf, math.inf])[0] == math.inf


def test_search_wall_merges_the_csvs_of_several_calls_into_one_report(tmp_path):
    wall = _search_wall()
    row = {"table": "t", "tool": "autotune", "strategy": "tpe_local", "seed": 0, "wall_s": 9.5, "configs": 40,
           "error": "", "s_to_1%": 4.0, "configs_to_1%": 30, "s_to_5%": 2.0, "configs_to_5%": 10}
    first, second = tmp_path / "2026-11-29_GPU_search_wall.csv", tmp_path / "b.csv"
    for path, rows in ((first, [row, {**row, "seed": 1, "s_to_1%": 6.0}]),
                       (second, [{**row, "tool": "kernel_tuner", "s_to_1%": math.inf, "configs_to_1%": math.inf},
                                 {**row, "tool": "kernel_tuner", "seed": 1, "error": "no result"}])):
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, list(row))
            w.writeheader()
            w.writerows(rows)
    wall.merge([str(first), str(second)], tmp_path / "out", drop_errors=True)
    report = (tmp_path / "out" / "2026-11-29_GPU_search_wall.md").read_text()
    assert "| t | autotune | tpe_local | 2 | 5.0 [4.5, 5.5] |" in report
    assert "| t | kernel_tuner | tpe_local | 1 | >end [>end, >end] | >end |" in report
    with open(tmp_path / "out" / "2026-11-29_GPU_search_wall.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 3


def test_search_wall_runs_the_seeds_from_the_first_one_asked(monkeypatch):
    import argparse
    from collections import namedtuple

    import autotune.interchange.table as table_module

    wall = _search_wall()
    seeds = []

    def run_ours(spec, seed, log):
        seeds.append(seed)
        return [("A=2", 1.0)], 2.0

    monkeypatch.setattr(wall, "run_ours", run_ours)
    monkeypatch.setattr(wall, "kt_problem", lambda spec, table: None)
    monkeypatch.setattr(table_module, "read_table", lambda path: {"A=1": 2.0, "A=2": 1.0})
    spec = namedtuple("Spec", "name kernel_name")("t", "k")
    a = argparse.Namespace(no_ours=False, kt=[], seeds=2, first_seed=3, kt_cap=1.0)
    rows = wall.run_all({spec: ("t.csv", None, None)}, a, None)
    assert seeds == [3, 4]
    assert [r["seed"] for r in rows] == [3, 4]
    assert rows[0]["s_to_1%"] == 1.0
