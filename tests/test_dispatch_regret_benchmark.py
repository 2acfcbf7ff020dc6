"""benchmarks/dispatch_regret.py without a GPU (``--fake``: its made-up, shape-dependent landscape):
training shapes, the dense matrix between them, held-out shapes, and the report written beside
the trials with the matrix's cost; ``report`` reads the same files back to the same text."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def script(monkeypatch):
    spec = importlib.util.spec_from_file_location("dispatch_regret_script", ROOT / "benchmarks/dispatch_regret.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def main(*args):
        monkeypatch.setattr(sys, "argv", ["dispatch_regret.py", *map(str, args)])
        return module.main()

    return main


def test_a_fake_run_records_the_matrix_and_writes_its_report(script, tmp_path, capsys):
    out = tmp_path / "out"
    assert script("record", "--kernel", "smem_pad", "--range", "rows=64:16384,cols=64:16384", "--db",
                  f"sqlite:///{tmp_path / 'd.db'}", "--out", out, "--fake", "--train", 4, "--held-out", 3,
                  "--trials", 5) == 0
    [trials] = out.glob("*_dispatch_smem_pad_float32_trials.csv")
    report = trials.with_name(trials.name.replace("_trials.csv", "_report.txt")).read_text()
    plan = json.loads((out / "smem_pad_plan.json").read_text())
    assert len(plan["train"]) == 4 and len(plan["held_out"]) == 3
    assert plan["matrix"]["trials"] > 0 and plan["matrix"]["seconds"] > 0
    assert "dense: 100 % of the dispatch's configs measured at every training shape" in report
    assert f"dense matrix: {plan['matrix']['configs']} winners and runners-up, {plan['matrix']['trials']} trials" in report
    for label in ("dispatch", "nearest_shape", "default", "rule knn", "rule tree", "rule nearest"):
        assert any(line.strip().startswith(f"{label}: median regret") and "of 3" in line for line in report.splitlines())
    capsys.readouterr()
    assert script("report", trials, "--plan", out / "smem_pad_plan.json") == 0
    again = capsys.readouterr().out
    strip = lambda text: [line for line in text.splitlines() if "learned in" not in line]  # noqa: E731
    assert strip(again) == strip(report)


def test_without_the_matrix_the_training_shapes_keep_only_their_searches(script, tmp_path):
    out = tmp_path / "out"
    assert script("record", "--kernel", "smem_pad", "--range", "rows=64:16384,cols=64:16384", "--db",
                  f"sqlite:///{tmp_path / 'd.db'}", "--out", out, "--fake", "--train", 3, "--held-out", 1,
                  "--trials", 4, "--no-matrix") == 0
    [trials] = out.glob("*_report.txt")
    assert "matrix" not in json.loads((out / "smem_pad_plan.json").read_text())
    assert "dense matrix:" not in trials.read_text()
