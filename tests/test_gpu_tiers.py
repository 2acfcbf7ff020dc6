"""The GPU tests in two tiers (docs/architecture.md, "GPU tests in two tiers"): each test of
tests/gpu/ carries exactly one of the markers ``gpu`` (the fast tier, one developer's call) and
``gpu_slow`` (the slower tier, before a release), both registered, and the fast tier holds a
test of every backend path."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "tests" / "gpu"
TIERS = ("gpu", "gpu_slow")
FAST_PATHS = {  # backend path -> a file of the fast tier that runs it
    "build, verify, time (a search end to end)": "test_gpu_search.py",
    "time (the bench's figures)": "test_gpu_bench.py",
    "verify (a planted wrong kernel)": "test_gpu_planted.py",
    "isolation (a crashing config in the measuring child)": "test_gpu_isolation.py",
    "launcher": "test_gpu_launcher.py",
    "transpose": "test_gpu_transpose_views.py",
    "bundle, recording, workload": "test_gpu_workload.py",
    "the Python paths (tune_kernel, launcher tune=quick)": "test_gpu_python_paths.py",
}


def _marks(decorators) -> set[str]:
    found = set()
    for d in decorators:
        text = ast.unparse(d)
        found |= {tier for tier in TIERS if text in (f"pytest.mark.{tier}", f"[pytest.mark.{tier}]")}
    return found


def tiers() -> dict[str, set[str]]:
    """``file::test`` -> the tier markers it carries (its module's ``pytestmark`` and its own)."""
    out = {}
    for path in sorted(GPU.glob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        module = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
                module = _marks([node.value])
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                out[f"{path.name}::{node.name}"] = module | _marks(node.decorator_list)
    return out


def test_every_gpu_test_is_in_exactly_one_tier():
    assert {name: marks for name, marks in tiers().items() if len(marks) != 1} == {}


def test_the_fast_tier_runs_every_backend_path():
    found = tiers()
    fast = {name.split("::")[0] for name, marks in found.items() if marks == {"gpu"}}
    assert {path: f for path, f in FAST_PATHS.items() if f not in fast} == {}


def test_both_tiers_are_registered_markers():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert {m.split(":")[0] for m in markers} >= set(TIERS)
