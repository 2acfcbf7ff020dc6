"""benchmarks/app_tuning.py's logic without a GPU: its phases run against the fake application
(tests/fake_app.py) and the CLI on fake GPUs (tests/workers.py, the landscape of
fakes.FakeAnyBench), the re-timing of tuned against long-search configs on the fake benchmark;
a call that reaches its time limit stops its tuning with SIGINT (exit 3) and the next call
resumes it; the report holds the measured tables."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).parent


@pytest.fixture
def bench_module(monkeypatch, device_info):
    from autotune.measure import benchmark, device
    from autotune.runtime import lookup

    from fakes import FakeAnyBench

    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        yield FakeAnyBench(device_info, problem)

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    monkeypatch.setattr(lookup, "query_device", lambda ordinal: device_info)
    monkeypatch.setattr(lookup, "_devices", {})  # the fake GPU's info must not outlive this test
    monkeypatch.setenv("AUTOTUNE", f"{sys.executable} {TESTS / 'workers.py'} cli 0")
    monkeypatch.setenv("AUTOTUNE_FAKE_BENCH", "any")
    spec = importlib.util.spec_from_file_location("app_tuning", ROOT / "benchmarks/app_tuning.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_records_tunes_resumes_and_reports(bench_module, monkeypatch, tmp_path):
    import signal
    import subprocess
    import threading
    import time

    args = ["--budget", "40s", "--long-cap", "2", "--steps", "1", "--state", str(tmp_path / "state"), "--out",
            str(tmp_path / "out"), "--app", f"{sys.executable} {TESTS / 'fake_app.py'}", "--margin", "0",
            "--call-limit", "600"]
    marks = tmp_path / "marks"
    marks.mkdir()
    # the first call: the tuning's 4th measurement is held; meanwhile the call's limit comes (acted out: the
    # script's SIGINT to the tuning, as its deadline sends it), and the call ends asking to be run again
    monkeypatch.setenv("AUTOTUNE_FAKE_MARKS", str(marks))
    monkeypatch.setenv("AUTOTUNE_FAKE_HOLD", "measure:4")
    started = []

    class Popen(subprocess.Popen):
        def __init__(self, cmd, *a, **kw):
            super().__init__(cmd, *a, **kw)
            started.append((cmd, self))

    def limit() -> None:
        while not (marks / "measure-0-4").exists():
            time.sleep(0.05)
        (proc,) = [p for cmd, p in started if "tune" in cmd and p.poll() is None]
        proc.send_signal(signal.SIGINT)

    monkeypatch.setattr(bench_module.subprocess, "Popen", Popen)
    watcher = threading.Thread(target=limit, daemon=True)
    watcher.start()
    with pytest.raises(SystemExit) as first:
        bench_module.main(args)
    assert first.value.code == bench_module.EXIT_AGAIN
    watcher.join(10)
    monkeypatch.delenv("AUTOTUNE_FAKE_HOLD")
    state = bench_module.State(tmp_path / "state" / "one_gpu")
    assert state.data["record"]["done"] and not state.data["tune"].get("done")
    assert state.data["tune"]["parts"][0]["exit"] == 130  # SIGINT: what was measured is kept
    bench_module.main(args)
    state = bench_module.State(tmp_path / "state" / "one_gpu")
    assert state.data["complete"] and state.data["tune"]["done"] and len(state.data["tune"]["parts"]) == 2
    outcome = state.data["tune"]["outcome"]
    assert outcome["status"] == "finished" and outcome["wall_s"] >= state.data["tune"]["parts"][0]["wall_s"] * 0.9
    assert {r["label"] for r in outcome["rows"]} == {"histogram256 100000 uint8", "histogram256 1000 uint8",
                                                     "smem_vec 100x64 float32"}
    long_rows = state.data["long"]["rows"]
    for label, own in long_rows.items():  # the long search's best is never slower than the tuned config
        assert own["pct_of_best"] is not None and own["pct_of_best"] <= 100.0 + 1e-9, (label, own)
    (report,) = (tmp_path / "out").glob("*_app_tuning.txt")
    text = report.read_text()
    assert "complete" in text and "NOT complete" not in text
    assert "workload GPU time over its recorded calls: default configs" in text
    assert "tuned config's % of its own best from a longer search, weighted by tuned GPU time" in text
    assert "slower than their default by more than 1 %: none" in text
    assert "; budget 40 s, spent " in text and "s past it (target: spent unless every space was measured whole" in text
    assert (tmp_path / "out" / "app_plan_before.png").exists() and (tmp_path / "out" / "app_plan_after.png").exists()
    assert (tmp_path / "out" / "state" / "app.db").exists()
