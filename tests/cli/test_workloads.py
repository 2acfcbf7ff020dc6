"""``autotune workloads``, ``plan``, ``tune`` and the record name's bad input, through the CLI
without a GPU (a workload recorded through the fake launcher; the fake GPU benchmark of any
kernel; two fake GPUs through tests/workers.py for ``--device all``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotune.cli import app

from workload_fixtures import fake_gpu, record_app

runner = CliRunner()
WORKERS = Path(__file__).resolve().parents[1] / "workers.py"


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def test_workloads_lists_what_was_recorded(monkeypatch, device_info, db_url):
    r = run("workloads", "--db", db_url)
    assert r.exit_code == 2 and r.output.startswith("error: no workload is recorded yet; record one:")
    record_app(monkeypatch, device_info, db_url)
    record_app(monkeypatch, device_info, db_url, name="other", calls=(1, 0, 0))
    r = run("workloads", "--db", db_url, "--format", "json")
    assert r.exit_code == 0, r.output
    found = {w["name"]: w for w in json.loads(r.output)["records"]}
    assert (found["app"]["problems"], found["app"]["calls"], found["app"]["runs"]) == (3, 45, 1)
    assert (found["other"]["problems"], found["other"]["calls"]) == (1, 1)
    assert found["app"]["devices"] == ["NVIDIA H100 80GB HBM3"] and found["app"]["gpu_ms"] > 0
    r = run("workloads", "--db", db_url)
    assert "2 workloads" in r.output and "app" in r.output


def test_plan_shows_each_problem_and_plots_its_share(monkeypatch, device_info, db_url, tmp_path):
    record_app(monkeypatch, device_info, db_url)
    r = run("plan", "app", "--budget", "2m", "--db", db_url, "--plot", tmp_path / "app.png")
    assert r.exit_code == 0, r.output
    assert "workload app on NVIDIA H100 80GB HBM3: 3 problems" in r.output and "budget 2m00s of GPU time" in r.output
    for text in ("histogram256 100000 uint8", "smem_vec 100x64 float32", "default", "tpe"):
        assert text in r.output
    assert (tmp_path / "app.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run("plan", "app", "--budget", "2m", "--db", db_url, "--format", "json")
    doc = json.loads(r.output)
    assert doc["budget_s"] == 120 and [row["problem"] for row in doc["records"]][0] == "histogram256 100000 uint8"
    assert sum(row["budget_s"] for row in doc["records"]) == pytest.approx(120)


def test_tune_prints_the_measured_workload_before_and_after(monkeypatch, device_info, db_url, tmp_path):
    record_app(monkeypatch, device_info, db_url)
    fake_gpu(monkeypatch, device_info)
    r = run("tune", "app", "--budget", "1m", "--max-trials", 4, "--seed", 0, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "tuning workload app: 3 problems, 3 worth a search; budget 1m00s of GPU time on 1 GPU" in r.output
    assert "GPU 0: histogram256 100000 uint8: search" in r.output
    assert "GPU 0: histogram256 100000 uint8: tuned (4 trials" in r.output
    assert "workload GPU time over its recorded calls, measured: default configs" in r.output
    assert "tuned 3, measured only 0, failed 0 of 3 problems" in r.output
    r = run("tune", "app", "--budget", "1m", "--db", db_url, "--format", "json")  # again: tuned already
    doc = json.loads(r.output)
    assert doc["status"] == "finished" and {row["status"] for row in doc["records"]} == {"skipped"}
    assert doc["gpu_ms_tuned"] < doc["gpu_ms_default"]
    r = run("plan", "app", "--db", db_url, "--plot", tmp_path / "after.png")
    assert r.exit_code == 0 and "exact" in r.output and "tuned already" in r.output


def test_tune_refuses_a_tuning_running_in_a_live_process_in_one_line(monkeypatch, device_info, db_url):
    from autotune.store.leases import Heartbeat, Owner
    from autotune.store.opening import open_results
    from autotune.kernel.problem import ProblemKey
    from autotune.store.workload_records import ProblemResult
    from autotune.store.workloads import latest_tuning, open_tuning

    record_app(monkeypatch, device_info, db_url, calls=(3, 0, 0))
    fake_gpu(monkeypatch, device_info)
    store = open_results(db_url)
    owner = Owner.mine()
    problem = ProblemResult(ProblemKey("histogram256", "s", "p", (("n", 100000),), "uint8"))
    tuning, _ = open_tuning(store, "app", device_info, 60.0, 1, [problem], owner=owner)
    beating = Heartbeat(owner.token, lambda: True, every_s=3600).start()  # a live tuning (this process's)
    try:
        r = run("tune", "app", "--budget", "1m", "--db", db_url)
    finally:
        beating.stop()
    assert r.exit_code == 2 and r.output.startswith("error: workload 'app' is being tuned on NVIDIA H100"), r.output
    assert len(r.output.strip().splitlines()) == 1 and "run this command again to resume it" in r.output
    assert latest_tuning(store, "app").status == "running"  # untouched
    store.close()


@pytest.mark.parametrize("args, message", [
    (["plan", ""], "error: workload '' is empty"),
    (["plan", "x" * 101], "error: workload 'xxxxxxxxxxxxxxxxxxxx'... is 101 characters long"),
    (["plan", "a\tb"], "error: workload 'a\\tb' holds characters that are not printable"),
    (["tune", "\x1b[31mred"], "holds characters that are not printable"),
    (["plan", "missing"], "error: workload 'missing' does not exist;"),
    (["tune", "missing"], "error: workload 'missing' does not exist;"),
    (["plan", "app", "--budget", "soon"], "error: budget 'soon' is not allowed; give a duration such as 600"),
    (["tune", "app", "--max-trials", "0"], "error: --max-trials 0 is not allowed; give 1 or more"),
    (["tune", "app", "--device", "0,0"], "error: --device '0,0' names a GPU twice"),
])
def test_bad_input_is_one_error_line_exit_2_and_nothing_written(tmp_path, args, message):
    db = tmp_path / "never.db"
    r = run(*args, "--db", f"sqlite:///{db}")
    assert r.exit_code == 2 and message in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not db.exists()


@pytest.mark.parametrize("command", [["plan", "app"], ["bundle", "no-such-bundle"]])
def test_a_bad_device_ordinal_is_named_before_any_backend_or_file(monkeypatch, tmp_path, command):
    import autotune.measure.device

    def asked():
        raise AssertionError("the CUDA backend was asked before the ordinal was checked")

    monkeypatch.setattr(autotune.measure.device, "cuda_driver", asked)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "never.db"
    r = run(*command, "--device", "-1", *(["--db", f"sqlite:///{db}"] if command[0] == "plan" else []))
    assert r.exit_code == 2, r.output
    assert r.output.strip() == "error: --device -1 is not allowed; give a CUDA ordinal 0, 1, ..."
    assert not db.exists() and list(tmp_path.iterdir()) == [], "nothing is written"


def test_tune_on_two_gpus_hands_problems_to_both(monkeypatch, device_info, db_url, tmp_path):
    record_app(monkeypatch, device_info, db_url, calls=(30, 0, 5))  # two problems: one per GPU
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "AUTOTUNE_FAKE_GPUS": f"{device_info.name},{device_info.name}", "AUTOTUNE_FAKE_BENCH": "any",
           "AUTOTUNE_FAKE_MARKS": str(marks), "AUTOTUNE_DB": db_url}
    done = subprocess.run([sys.executable, str(WORKERS), "cli", "0", "tune", "app", "--budget", "1m", "--device",
                           "all", "--max-trials", "3", "--seed", "0", "--db", db_url, "--format", "json"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["gpus"] == 2 and doc["status"] == "finished"
    assert {row["status"] for row in doc["records"]} == {"tuned"}
    assert {row["gpu"] for row in doc["records"]} == {0, 1}  # different problems on different GPUs
    opened = sorted(p.name for p in marks.iterdir() if p.name.startswith("problem-"))
    assert len(opened) == 2 and {name.split("-")[1] for name in opened} == {"0", "1"}


def _hostile_bundle(folder: Path, device_info) -> None:
    """A bundle whose strings hold terminal escapes (a title change, a bell, cursor moves, a colour)."""
    from autotune.kernel.catalog import get_kernel

    k = get_kernel("smem_vec")
    doc = {"format": "autotune-bundle", "version": 1, "workload": "app\x1b[2J", "created": "\x1b]0;pwned\x07 2026",
           "device": {"name": f"{device_info.name}\x1b[31m", "compute_capability": "9.0", "sm_count": 132,
                      "total_memory": 85_000_000_000, "driver_version": "13.0\x1b[1A", "cuda_version": "13.0"},
           "toolchain": {"nvcc_version": "13.0\x1b[1A\r", "compile_flags": "-O3"},
           "entries": [{"kernel": "smem_vec", "kernel_ref": "smem_vec", "source_hash": k.source_hash,
                        "spec_hash": k.spec_hash, "dims": {"rows": 100, "cols": 64}, "dtype": "float32",
                        "config": k.default_config().as_dict(), "rung": "exact"}]}
    folder.mkdir()
    (folder / "bundle.json").write_text(json.dumps(doc))


def test_autotune_bundle_shows_a_bundles_strings_inert(tmp_path, monkeypatch, device_info):
    from autotune.measure import device

    folder = tmp_path / "deploy"
    _hostile_bundle(folder, device_info)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    r = run("bundle", folder)  # another "GPU model" (its name holds an escape): refused, the line inert
    assert r.exit_code == 2 and r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output
    assert "\\x1b[31m" in r.output and "\x1b" not in r.output
    r = run("bundle", folder, "--allow-same-arch")
    assert r.exit_code == 0, r.output
    assert not any(c in r.output for c in "\x1b\x07\r"), repr(r.output)
    for shown in ("x1b[2J", "\\x1b]0;pwned\\x07 2026", "13.0\\x1b[1A\\r"):  # the workload is shown as a repr
        assert shown in r.output, (shown, r.output)


@pytest.mark.parametrize("device", ["all", "0", "0,1"])
def test_tune_says_a_workload_typo_before_a_missing_driver(device, monkeypatch, db_url):
    """Issue 49 item 7: ``tune app --device all`` without a GPU reported the missing driver
    (``all`` counts the GPUs) before the workload that does not exist."""
    from autotune.errors import no_driver
    from autotune.measure import device as devices

    def no_gpu(*_):
        raise no_driver("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(devices, "device_count", no_gpu)
    monkeypatch.setattr(devices, "query_device", no_gpu)
    r = run("tune", "app", "--budget", "10s", "--device", device, "--db", db_url)
    assert r.exit_code == 2 and r.output.startswith("error: workload 'app' does not exist"), r.output


def _bundle_of(folder: Path, device_info, kernel, kernel_ref: str, source_hash: str | None = None) -> None:
    """A bundle of one problem of ``kernel`` (exported from ``kernel_ref``, ``source_hash`` its
    kernel's then) for ``device_info`` and this machine's nvcc, as ``autotune export`` writes it."""
    from autotune.measure.toolchain import Toolchain

    tc = Toolchain.of(device_info.arch)
    d = device_info
    doc = {"format": "autotune-bundle", "version": 1, "workload": "app", "created": "2026-11-28 12:00 UTC",
           "device": {"name": d.name, "compute_capability": d.compute_capability, "sm_count": d.sm_count,
                      "total_memory": d.total_memory, "driver_version": d.driver_version,
                      "cuda_version": d.cuda_version},
           "toolchain": {"nvcc_version": tc.nvcc_version, "compile_flags": tc.compile_flags},
           "entries": [{"kernel": kernel.name, "kernel_ref": kernel_ref, "source_hash": source_hash or kernel.source_hash,
                        "spec_hash": kernel.spec_hash, "dims": {"rows": 100, "cols": 64}, "dtype": "float32",
                        "config": kernel.default_config().as_dict(), "rung": "default"}]}
    folder.mkdir()
    (folder / "bundle.json").write_text(json.dumps(doc))


def test_autotune_bundle_checks_the_kernel_file_an_entry_was_exported_from(tmp_path, monkeypatch, device_info):
    """Issue 50: ``autotune bundle`` took the catalog's kernel of an entry's name before the kernel
    file the entry was exported from; it resolves it by the rule the plan and the export use
    (``ProblemKey.resolve``: the kernel file first), so it checks the kernel a launch uses."""
    import dataclasses

    from autotune.kernel import catalog
    from autotune.measure import device
    from kernel_files import copy_catalog_kernel

    KERNELS = catalog.KERNELS
    path = copy_catalog_kernel(tmp_path / "kernels", "smem_vec", "app_vec")
    mine = catalog.resolve_kernel(str(path))
    _bundle_of(tmp_path / "deploy", device_info, mine, str(path))
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    # a catalog of a later autotune that holds another kernel of that name
    later = {**catalog.KERNELS, "app_vec": dataclasses.replace(catalog.KERNELS["smem_pad"], name="app_vec")}
    monkeypatch.setattr(catalog, "KERNELS", later)
    r = run("bundle", tmp_path / "deploy")  # the file's kernel is checked: it cannot load beside that catalog
    assert r.exit_code == 2 and r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output
    assert f"{path}: name: 'app_vec' is a catalog kernel's name" in r.output, r.output
    assert "another source" not in r.output  # not the catalog's kernel compared with the file's hashes
    monkeypatch.setattr(catalog, "KERNELS", KERNELS)  # today's catalog: the file's kernel checked, and unchanged
    r = run("bundle", tmp_path / "deploy")
    assert r.exit_code == 0 and f"usable on {device_info.name}" in r.output and "not checked" not in r.output, r.output


def test_a_kernel_changed_since_it_was_recorded_is_flagged_by_plan_export_and_bundle(tmp_path, monkeypatch, db_url,
                                                                                      device_info):
    """One rule for all three: the plan flags it (and tunes today's kernel), the export and
    ``autotune bundle`` refuse it, each naming both source hashes."""
    from autotune.kernel.catalog import get_kernel
    from autotune.kernel.problem import ProblemKey
    from autotune.measure import device
    from autotune.store.opening import open_results
    from autotune.store.workload_records import CallCount
    from autotune.store.workloads import workload_problems, write_batch
    from autotune.workload.plan import _resolve

    k, then = get_kernel("smem_vec"), "ab" * 32
    store = open_results(db_url)
    write_batch(store, "app", "run", 1, [CallCount(device_info, ProblemKey(k.name, then, k.spec_hash, (
        ("rows", 100), ("cols", 64)), "float32", k.name), calls=10, sampled=2, sampled_ms=0.5)])
    [recorded] = workload_problems(store, "app")
    store.close()
    problem, note = _resolve(recorded)
    assert problem is not None and note == "its kernel changed since it was recorded: the current one is tuned"
    r = run("export", "app", "--bundle", tmp_path / "exported", "--db", db_url)
    assert r.exit_code == 2 and "its kernel changed since it was recorded" in r.output, r.output
    assert f"source {then[:12]} recorded, {k.source_hash[:12]} now" in r.output
    _bundle_of(tmp_path / "deploy", device_info, k, k.name, source_hash=then)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)
    r = run("bundle", tmp_path / "deploy")
    assert r.exit_code == 2 and r.output.startswith("error: ") and "another source of kernel smem_vec" in r.output
    assert f"({then[:12]} there, {k.source_hash[:12]} here)" in r.output, r.output
