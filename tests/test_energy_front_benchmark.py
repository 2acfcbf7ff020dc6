"""benchmarks/energy_front.py without a GPU: its problem specs, and one call end to end with
the CLI run in this process on a fake GPU with a planted energy landscape (the search, the
front read back from the stored trials, the report naming the time- and energy-optimal
configs), and a GPU without the energy counter (its one error line in the report)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def module():
    spec = importlib.util.spec_from_file_location("energy_front", ROOT / "benchmarks/energy_front.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


@pytest.fixture
def in_process(monkeypatch, module, device_info):
    """The benchmark's ``autotune search`` run by the CLI in this process, on the fake energy
    landscape of tests/test_pareto.py; ``note``: set to make the GPU lack the energy counter."""
    from autotune.cli import app
    from autotune.measure import benchmark, device

    from test_pareto import EnergyTimer, FakeBench

    state = {"note": None, "commands": []}

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        bench = FakeBench(device_info, EnergyTimer())
        bench.energy_note = state["note"]
        yield bench

    def run(cmd):
        args = cmd[cmd.index("search"):]
        state["commands"].append(args)
        result = CliRunner().invoke(app, args)
        if result.exit_code not in (0, 2):  # an exception the real process would print: its traceback
            import traceback

            return subprocess.CompletedProcess(cmd, result.exit_code, result.output,
                                               "".join(traceback.format_exception(result.exception)))
        return subprocess.CompletedProcess(cmd, result.exit_code, result.output, "")

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    monkeypatch.setattr(module, "execute", run)
    return state


def test_problem_specs(module):
    assert module.parse_problem(module.DEFAULT_PROBLEMS[0]) == {
        "name": "smem_pad", "kernel": "smem_pad", "dims": {"rows": 8192, "cols": 8192}, "dtype": "float32"}
    assert module.parse_problem(module.DEFAULT_PROBLEMS[1])["dims"] == {"m": 2048, "n": 2048, "k": 2048}
    p = module.parse_problem("r=examples/reduction/reduce.toml:n=16777216:float32")
    assert p["kernel"] == str(ROOT / "examples/reduction/reduce.toml")
    for bad in ("smem_pad", "s=smem_pad:rows=x:float32", "=smem_pad:rows=8:float32"):
        with pytest.raises(ValueError, match="--problem"):
            module.parse_problem(bad)


def test_one_call_writes_each_front_with_the_optimal_configs_named(module, in_process, tmp_path):
    path = module.main(["--problem", "a=smem_pad:rows=256,cols=256:float32", "--problem",
                        "b=smem_pad:rows=512,cols=256:float32", "--trials", "10", "--population", "4",
                        "--out", str(tmp_path)])
    assert path.parent == tmp_path and path.name.endswith("_NVIDIA_H100_80GB_HBM3_energy_front.txt")
    text = path.read_text()
    assert "# time-energy Pareto fronts (issue 40)" in text and "NVIDIA H100 80GB HBM3" in text
    assert "## a: smem_pad 256x256 float32" in text and "## b: smem_pad 512x256 float32" in text
    assert text.count("<- time-optimal") == 2 and text.count("<- energy-optimal") == 2
    doc = json.loads(path.with_suffix(".json").read_text())
    assert doc["device"] == "NVIDIA H100 80GB HBM3" and len(doc["results"]) == 2
    for r in doc["results"]:
        assert r["objective"] == "time,energy" and r["front"]
        assert r["time_optimal"] == min(r["front"], key=lambda m: m["ms"])
        assert r["energy_optimal"]["j_per_launch"] == min(m["j_per_launch"] for m in r["front"])
    args = in_process["commands"][0]
    assert args[args.index("--objective") + 1] == "time,energy" and args[args.index("--trials") + 1] == "10"
    assert float(args[args.index("--timeout") + 1]) >= 1


def test_a_gpu_without_the_energy_counter_is_reported_in_one_line(module, in_process, tmp_path):
    in_process["note"] = "energy is unavailable: Tesla T4 has no total-energy counter"
    path = module.main(["--problem", "a=smem_pad:rows=256,cols=256:float32", "--trials", "4", "--out",
                        str(tmp_path)])
    text = path.read_text()
    assert "no front: exit 2" in text
    assert "error: objective time,energy needs the energy per launch, and energy is unavailable: Tesla T4" in text
