"""Deployment bundles (autotune/report/bundle.py writes, autotune/runtime/bundle.py reads)
without a GPU: a tuned workload exported, read by ``autotune.launcher(..., bundle=)`` and
``AUTOTUNE_BUNDLE`` without a database, refused (one line naming the file and what differs)
for another GPU model, driver, compute capability or kernel source unless the same_arch rung
is allowed, bad bundles refused, and 8 processes agreeing on every config from the database
and from the bundle, with what ``autotune best`` shows."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import autotune
from autotune.cli import app
from autotune.runtime.bundle import BundleError, read_bundle

from fake_gpu_arrays import Tensor, install
from workload_fixtures import HISTOGRAM, copy_database, h100, tune_app

runner = CliRunner()
CHILD = Path(__file__).resolve().parents[1] / "bundle_child.py"


@pytest.fixture(scope="module")
def tuned_once(tmp_path_factory):
    """The test workload recorded and tuned once for the module (fake GPU): the database file
    and the results by problem."""
    folder = tmp_path_factory.mktemp("tuned")
    outcome = tune_app(folder, h100())
    return folder / "tuned.db", {r.label: r for r in outcome.tuning.results}


@pytest.fixture
def tuned(tuned_once, db_url):
    """A copy of the tuned database at ``db_url``; the results by problem."""
    source, results = tuned_once
    copy_database(source, db_url)
    return results


def export(db_url, folder, *extra):
    result = runner.invoke(app, ["export", "app", "--bundle", str(folder), "--db", db_url, *extra])
    assert "Traceback" not in result.output, result.output
    return result


def test_a_bundle_holds_every_problem_with_its_provenance_and_a_header_per_kernel(tuned, db_url, tmp_path,
                                                                                   device_info):
    folder = tmp_path / "deploy"
    r = export(db_url, folder)
    assert r.exit_code == 0, r.output
    assert f"wrote bundle {folder}: 3 problems of workload app for NVIDIA H100 80GB HBM3 (3 exact), 2 headers" \
        in r.output
    assert sorted(p.name for p in folder.iterdir()) == ["bundle.json", "histogram256.h", "smem_vec.h"]
    doc = json.loads((folder / "bundle.json").read_text())
    assert (doc["format"], doc["version"], doc["workload"]) == ("autotune-bundle", 1, "app")
    assert doc["device"] == {"name": device_info.name, "compute_capability": "9.0", "sm_count": 132,
                             "total_memory": 85_000_000_000, "driver_version": "13.0", "cuda_version": "13.0"}
    assert doc["toolchain"]["nvcc_version"] and "-arch=sm_90" in doc["toolchain"]["compile_flags"]
    entries = {f"{e['kernel']} {'x'.join(str(v) for v in e['dims'].values())} {e['dtype']}": e
               for e in doc["entries"]}
    for label, result in tuned.items():
        e = entries[label]
        assert ",".join(f"{k}={v}" for k, v in sorted(e["config"].items())) == result.config_key
        assert e["rung"] == "exact" and e["tuned_ms"] == result.tuned_ms and e["default_ms"] == result.default_ms
        assert len(e["source_hash"]) == 64 and len(e["spec_hash"]) == 64
    header = (folder / "histogram256.h").read_text()
    assert "autotune_histogram256_select" in header and "workload 'app'" in header
    # exported again over itself: replaced, still a bundle
    assert export(db_url, folder).exit_code == 0 and read_bundle(folder).workload == "app"


def test_the_launcher_reads_the_bundle_without_a_database(tuned, db_url, tmp_path, monkeypatch, device_info):
    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    monkeypatch.setenv("AUTOTUNE_DB", f"sqlite:///{tmp_path / 'none.db'}")
    fake = install(monkeypatch, autotune.load_kernel(HISTOGRAM), device_info)
    f = autotune.launcher(HISTOGRAM, bundle=folder)
    bins = Tensor((256,), "uint32")
    f(bins, Tensor((100000,), "uint8"))
    chosen = f.prepared(bins, Tensor((100000,), "uint8")).launcher.chosen
    assert (chosen.config.key, chosen.rung) == (tuned["histogram256 100000 uint8"].config_key, "exact")
    assert chosen.note.startswith(f"from bundle {folder / 'bundle.json'}, workload 'app': exact on NVIDIA H100")
    other = f.prepared(bins, Tensor((777,), "uint8")).launcher.chosen  # not in the bundle: its dispatch
    assert other.rung == "dispatch" and other.note.startswith(f"from bundle {folder / 'bundle.json'}, workload "
                                                              "'app': dispatch of 2 tuned shapes on NVIDIA H100")
    file = folder / "bundle.json"  # a bundle without dispatches (written before them): the default
    file.write_text(json.dumps({k: v for k, v in json.loads(file.read_text()).items() if k != "dispatches"}))
    autotune.clear_cache()
    f = autotune.launcher(HISTOGRAM, bundle=folder)
    other = f.prepared(bins, Tensor((777,), "uint8")).launcher.chosen
    assert other.rung == "default" and other.note == (f"histogram256 777 uint8 is not in bundle "
                                                      f"{folder / 'bundle.json'}; using the kernel's default")
    assert len(fake.launches) == 1 and not (tmp_path / "none.db").exists()
    monkeypatch.setenv("AUTOTUNE_BUNDLE", str(folder))  # the environment: every launcher and compiled
    g = autotune.compiled("smem_vec", (100, 64), "float32")
    assert g.chosen.config.key == tuned["smem_vec 100x64 float32"].config_key and g.chosen.rung == "exact"


@pytest.mark.parametrize("change, differs", [
    ({"name": "NVIDIA H200", "total_memory": 150_000_000_000}, "GPU model (NVIDIA H100 80GB HBM3, 132 SMs there; "
                                                               "NVIDIA H200, 132 SMs here)"),
    ({"driver_version": "12.8"}, "driver (CUDA 13.0/13.0 there, 12.8/13.0 here)"),
])
def test_a_bundle_of_another_gpu_or_driver_is_refused_or_used_at_same_arch_if_allowed(
        tuned, db_url, tmp_path, monkeypatch, device_info, change, differs):
    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    here = dataclasses.replace(device_info, **change)
    install(monkeypatch, autotune.load_kernel(HISTOGRAM), here)
    monkeypatch.setenv("AUTOTUNE_SAME_ARCH_GUARD", "off")  # the rung the bundle answers, untimed (test_guard.py)
    arrays = (Tensor((256,), "uint32"), Tensor((100000,), "uint8"))
    with pytest.raises(BundleError) as info:
        autotune.launcher(HISTOGRAM, bundle=folder)(*arrays)
    assert str(info.value) == (f"bundle {folder / 'bundle.json'} was made for another {differs}; export one on this "
                               "machine, or allow it at the same_arch rung (allow_same_arch=True, "
                               "AUTOTUNE_BUNDLE_ALLOW=same_arch)")
    chosen = autotune.launcher(HISTOGRAM, bundle=folder, allow_same_arch=True).prepared(*arrays).launcher.chosen
    assert chosen.rung == "same_arch" and chosen.config.key == tuned["histogram256 100000 uint8"].config_key
    assert f"(allowed: {differs} differ)" in chosen.note
    monkeypatch.setenv("AUTOTUNE_BUNDLE_ALLOW", "same_arch")
    autotune.clear_cache()
    assert autotune.launcher(HISTOGRAM, bundle=folder).prepared(*arrays).launcher.chosen.rung == "same_arch"


def test_a_bundle_of_another_arch_or_kernel_source_is_refused_even_if_allowed(tuned, db_url, tmp_path, monkeypatch,
                                                                                device_info):
    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    install(monkeypatch, autotune.load_kernel(HISTOGRAM),
            dataclasses.replace(device_info, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0", sm_count=108))
    with pytest.raises(BundleError, match=r"was made for NVIDIA H100 80GB HBM3 \(compute capability 9.0\); this GPU "
                                          r"is NVIDIA A100-SXM4-80GB \(compute capability 8.0\): its configs cannot"):
        autotune.launcher(HISTOGRAM, bundle=folder, allow_same_arch=True)(Tensor((256,), "uint32"),
                                                                           Tensor((1000,), "uint8"))
    doc = json.loads((folder / "bundle.json").read_text())
    for e in doc["entries"]:
        if e["kernel"] == "smem_vec":
            e["source_hash"] = "ab" * 32
    (folder / "bundle.json").write_text(json.dumps(doc))
    with pytest.raises(BundleError, match=f"bundle {folder / 'bundle.json'} was made for another source of kernel "
                                          r"smem_vec \(abababababab there, [0-9a-f]{12} here\); export the bundle "
                                          "again"):
        autotune.launcher("smem_vec", bundle=folder, allow_same_arch=True)


@pytest.mark.parametrize("mangle, message", [
    (lambda text: text[: len(text) // 2], "is not valid JSON (truncated or corrupt:"),
    (lambda text: "\x00\x01garbage", "is not valid JSON"),
    (lambda text: json.dumps({"hello": 1}), 'is not an autotune bundle (no "format": "autotune-bundle")'),
    (lambda text: text.replace('"version": 1', '"version": 2'), "is of bundle format version 2; this autotune reads "
                                                                "version 1"),
    (lambda text: text.replace('"device"', '"devise"'), "is malformed (missing field 'device')"),
    (lambda text: text.replace('"dims": {', '"dims": {"zz": -1, ', 1), "entry 1 is malformed"),
    (lambda text: re.sub(r'"median_ms": [^,\n]+', '"median_ms": NaN', text, count=1),
     "is not valid JSON (it holds NaN, which JSON does not allow: every number must be finite)"),
    (lambda text: re.sub(r'"tuned_ms": [^,\n]+', '"tuned_ms": -Infinity', text, count=1),
     "is not valid JSON (it holds -Infinity"),
    (lambda text: re.sub(r'"default_ms": [^,\n]+', '"default_ms": 1e999', text, count=1),
     "is not valid JSON (it holds 1e999"),
])
def test_a_bad_bundle_is_one_error_naming_the_file(tuned, db_url, tmp_path, mangle, message):
    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    file = folder / "bundle.json"
    file.write_text(mangle(file.read_text()))
    autotune.clear_cache()
    with pytest.raises(BundleError) as info:
        autotune.launcher(HISTOGRAM, bundle=folder)
    assert str(info.value).startswith(f"bundle {file}: {message}") and "\n" not in str(info.value)


@pytest.mark.parametrize("change, fault", [
    ({"BLOCK_SIZE": 7}, "config BLOCK_SIZE=7,COPIES=4,MAX_BLOCKS=1056 is not in histogram256's space (BLOCK_SIZE=7 "
                        "is not one of [128, 256, 512, 1024])"),
    ({"BLOCK_SIZE": 0}, "BLOCK_SIZE=0 is not one of [128, 256, 512, 1024]"),
    ({"COPIES": None}, "sets macros ['BLOCK_SIZE', 'MAX_BLOCKS']; histogram256 takes"),
    ({"WARPS": 4}, "sets macros ['BLOCK_SIZE', 'COPIES', 'MAX_BLOCKS', 'WARPS']"),
])
def test_an_entry_whose_config_the_kernel_cannot_launch_is_refused_naming_it(tuned, db_url, tmp_path, monkeypatch,
                                                                              device_info, change, fault):
    from autotune.measure import device

    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    file = folder / "bundle.json"
    doc = json.loads(file.read_text())
    for e in doc["entries"]:
        if e["kernel"] == "histogram256" and e["dims"] == {"n": 1000}:
            e["config"] = {"BLOCK_SIZE": 256, "COPIES": 4, "MAX_BLOCKS": 1056, **change}
            e["config"] = {k: v for k, v in e["config"].items() if v is not None}
    file.write_text(json.dumps(doc))
    autotune.clear_cache()
    fake = install(monkeypatch, autotune.load_kernel(HISTOGRAM), device_info)
    with pytest.raises(BundleError) as info:  # the other entry of the kernel is launched: the bundle is checked whole
        autotune.launcher(HISTOGRAM, bundle=folder)(Tensor((256,), "uint32"), Tensor((100000,), "uint8"))
    assert str(info.value).startswith(f"bundle {file}: entry histogram256 1000 uint8 cannot be used: ")
    assert fault in str(info.value) and "\n" not in str(info.value) and fake.launches == []
    monkeypatch.setattr(device, "query_device", lambda ordinal: dataclasses.replace(device_info, ordinal=ordinal))
    r = runner.invoke(app, ["bundle", str(folder)])
    assert r.exit_code == 2 and r.output.startswith(f"error: bundle {file}: entry histogram256 1000 uint8 cannot be "
                                                    "used") and len(r.output.strip().splitlines()) == 1, r.output


def test_a_missing_bundle_is_one_error(tmp_path):
    with pytest.raises(BundleError, match=f"bundle {tmp_path / 'nowhere' / 'bundle.json'}: No such file or directory; "
                                          "give the folder"):
        autotune.launcher(HISTOGRAM, bundle=tmp_path / "nowhere")


def test_export_bad_input_is_one_error_and_writes_nothing(tuned, db_url, tmp_path):
    cases = [(["export", "nope", "--bundle", str(tmp_path / "a")], "error: workload 'nope' does not exist; "
                                                                    "recorded: app"),
             (["export", "", "--bundle", str(tmp_path / "a")], "error: workload '' is empty"),
             (["export", "app"], "error: a bundle needs the workload and the folder"),
             (["export", "--bundle", str(tmp_path / "a")], "error: a bundle needs the workload and the folder"),
             (["export", "app", "--bundle", str(tmp_path / "a"), "--kernel", "smem_vec"],
              "error: --bundle takes NAME, --device and --db only")]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    cases.append((["export", "app", "--bundle", str(tmp_path / "other")],
                  f"error: cannot write bundle {tmp_path / 'other'}: the folder holds other files (notes.txt)"))
    (tmp_path / "file").write_text("x")
    cases.append((["export", "app", "--bundle", str(tmp_path / "file")], "error: cannot write bundle"))
    for args, message in cases:
        r = runner.invoke(app, [*args, "--db", db_url])
        assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, (args, r.output)
    assert not (tmp_path / "a").exists() and os.listdir(tmp_path / "other") == ["notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def _best_shown(db_url, kernel, dims, dtype) -> str:
    r = runner.invoke(app, ["best", "--kernel", str(kernel), "--dims", dims, "--dtype", dtype, "--format", "json",
                            "--db", db_url])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)["records"]
    return ",".join(f"{k}={v}" for k, v in row["config"].items())  # JSON: an object; the bundle's key


def test_eight_processes_pick_the_same_config_as_autotune_best_from_the_database_and_the_bundle(
        tuned, db_url, tmp_path):
    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    procs = [subprocess.Popen([sys.executable, str(CHILD), db_url, str(folder), str(tmp_path / f"picked{i}.json")],
                              env={k: v for k, v in os.environ.items() if k != "AUTOTUNE_BUNDLE"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read()
    picked = [json.loads((tmp_path / f"picked{i}.json").read_text()) for i in range(8)]
    best = {"histogram256 100000 uint8": _best_shown(db_url, HISTOGRAM, "n=100000", "uint8"),
            "histogram256 1000 uint8": _best_shown(db_url, HISTOGRAM, "n=1000", "uint8"),
            "smem_vec 100x64 float32": _best_shown(db_url, "smem_vec", "rows=100,cols=64", "float32")}
    want = {label: [config, "exact"] for label, config in best.items()}
    assert all(p == {"db": want, "bundle": want} for p in picked), picked
    assert {label: r.config_key for label, r in tuned.items()} == best


def test_autotune_bundle_shows_and_checks_a_bundle_against_this_machine(tuned, db_url, tmp_path, monkeypatch,
                                                                         device_info):
    from autotune.measure import device

    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    monkeypatch.setattr(device, "query_device", lambda ordinal: dataclasses.replace(device_info, ordinal=ordinal))
    r = runner.invoke(app, ["bundle", str(folder)])
    assert r.exit_code == 0, r.output
    assert f"bundle {folder / 'bundle.json'}: workload 'app', 3 problems, made" in r.output
    assert "usable on NVIDIA H100 80GB HBM3 (GPU 0)" in r.output and "histogram256" in r.output
    doc = json.loads(runner.invoke(app, ["bundle", str(folder), "--format", "json"]).output)
    assert {e["rung"] for e in doc["records"]} == {"exact"} and doc["workload"] == "app"
    other = dataclasses.replace(device_info, name="NVIDIA H200", total_memory=150_000_000_000)
    monkeypatch.setattr(device, "query_device", lambda ordinal: other)
    r = runner.invoke(app, ["bundle", str(folder)])
    assert r.exit_code == 2 and r.output.startswith(f"error: bundle {folder / 'bundle.json'} was made for another "
                                                    "GPU model") and len(r.output.strip().splitlines()) == 1
    r = runner.invoke(app, ["bundle", str(folder), "--allow-same-arch"])
    assert r.exit_code == 0 and "usable on NVIDIA H200 (GPU 0) at the same_arch rung: GPU model" in r.output
    file = folder / "bundle.json"
    file.write_text(file.read_text()[:100])
    r = runner.invoke(app, ["bundle", str(folder)])
    assert r.exit_code == 2 and r.output.startswith(f"error: bundle {file}: is not valid JSON (truncated or corrupt")
    r = runner.invoke(app, ["bundle", str(tmp_path / "nowhere")])
    assert r.exit_code == 2 and "error: bundle" in r.output and "No such file or directory" in r.output


def test_the_bundle_carries_each_winner_certificate_and_reads_back_with_or_without_it(tuned, db_url, tmp_path):
    from autotune.store.opening import open_results

    folder = tmp_path / "deploy"
    assert export(db_url, folder).exit_code == 0
    doc = json.loads((folder / "bundle.json").read_text())
    assert doc["version"] == 1  # an optional field: the version stays, older readers ignore it
    bests = {(b.kernel, tuple(v for _, v in b.dims), b.dtype): b for b in open_results(db_url, "read").find_best()}
    certified = 0
    for e in doc["entries"]:
        b = bests[(e["kernel"], tuple(e["dims"].values()), e["dtype"])]
        if b.certificate is None:
            assert "certificate" not in e
            continue
        certified += 1
        cert = e["certificate"]
        assert cert["winner"] == b.certificate["winner"] and cert["runner_up"] == b.certificate["runner_up"]
        assert cert["tied"] is b.certificate["tied"] and cert["samples"] == b.samples
        assert cert["winner"]["config"] == ",".join(f"{k}={v}" for k, v in sorted(e["config"].items()))
    assert certified == len(doc["entries"])  # every problem of the workload was tuned and re-timed
    read = read_bundle(folder)
    for e in doc["entries"]:
        entry = next(x for x in read.entries.values() if x.kernel == e["kernel"] and x.dtype == e["dtype"]
                     and dict(x.dims) == e["dims"])
        assert entry.certificate == e["certificate"]
    # a bundle written before the certificate (none in its entries) reads as before
    old = tmp_path / "old"
    old.mkdir()
    for e in doc["entries"]:
        e.pop("certificate", None)
    (old / "bundle.json").write_text(json.dumps(doc))
    assert all(x.certificate is None for x in read_bundle(old).entries.values())
    # a malformed certificate is one error naming the file and the entry
    doc["entries"][0]["certificate"] = "tied"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bundle.json").write_text(json.dumps(doc))
    with pytest.raises(BundleError, match=r"entry 1 is malformed \(certificate must be an object with winner and tied\)"):
        read_bundle(bad)
