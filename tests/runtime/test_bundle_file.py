"""The bundle's JSON format, both ways (autotune/runtime/bundle_file.py): what ``encode`` writes
``decode`` reads back equal, a bundle written by autotune 0.4.0 before the codec
(tests/runtime/bundles/written_by_0.4.0.json, exported from the fake-GPU test workload by the
code of main d6109fd) still reads and is written again byte for byte, and each malformed field
is refused in one line naming the file and the field."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from autotune.dispatch import ShapeTable, build_dispatch
from autotune.kernel.catalog import get_kernel
from autotune.kernel.problem import ProblemKey
from autotune.measure.device import DeviceInfo
from autotune.runtime.bundle_file import (FILE, Bundle, BundleEntry, BundleError, decode, encode, owned_files,
                                          read_bundle)

WRITTEN = Path(__file__).parent / "bundles" / "written_by_0.4.0.json"
DEVICE = DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                    total_memory=85_000_000_000, driver_version="13.0", cuda_version="13.0")


def made() -> Bundle:
    """A bundle built as the export builds one: two entries (one with a certificate), a dispatch."""
    k = get_kernel("smem_pad")
    default = k.default_config()
    configs = [default] + [c for c in k.space().configs() if c != default][:4]
    rnd = random.Random(50)
    tables = [ShapeTable((int(2 ** rnd.uniform(6, 14)), int(2 ** rnd.uniform(6, 14))),
                         {c: rnd.uniform(0.5, 2.0) for c in configs}) for _ in range(6)]
    dispatch = build_dispatch(tables, default, ("rows", "cols"), rules=("tree",))
    cert = {"level": 0.95, "tied": False, "tie_group": [configs[1].key], "winner": {"config": configs[1].key},
            "runner_up": {"config": default.key}, "samples": [0.5, 0.25]}
    a = BundleEntry(ProblemKey("smem_pad", "ab" * 32, "cd" * 32, (("rows", 64), ("cols", 128)), "float32", "smem_pad"),
                    configs[1].as_dict(), "exact", 0.5, 0.75, 0.5, cert, note="tuned for this exact key", calls=30)
    b = BundleEntry(ProblemKey("smem_pad", "ab" * 32, "cd" * 32, (("rows", 8), ("cols", 8)), "float64", "smem_pad"),
                    default.as_dict(), "default", None, None, None, note="nothing tuned", calls=1)
    return Bundle(Path("deploy") / FILE, "app", DEVICE, "13.0.88", "-O3 -arch=sm_90", "2026-11-28 14:20 UTC",
                  {a.ident: a, b.ident: b}, {("smem_pad", "float32"): dispatch}, "0.4.0", ("smem_pad.h",))


def test_a_bundle_encoded_decodes_equal():
    bundle = made()
    back = decode(encode(bundle), bundle.path)
    assert back == bundle
    assert [e.certificate for e in back.entries.values()] == [e.certificate for e in bundle.entries.values()]
    assert [e.kernel_ref for e in back.entries.values()] == ["smem_pad", "smem_pad"]
    assert encode(back) == encode(bundle)


def test_a_figure_that_is_not_finite_is_written_as_null():
    bundle = made()
    (ident, entry), *_ = bundle.entries.items()
    nan = BundleEntry(entry.problem_key, entry.macros, "exact", float("nan"), float("inf"), 0.5)
    text = encode(Bundle(bundle.path, "app", DEVICE, "13", "-O3", "now", {ident: nan}))
    assert '"median_ms": null' in text and '"default_ms": null' in text
    back = decode(text, bundle.path).entries[ident]
    assert (back.median_ms, back.default_ms, back.tuned_ms) == (None, None, 0.5)


def test_a_bundle_written_before_the_codec_reads_and_is_written_again_byte_for_byte():
    text = WRITTEN.read_text()
    bundle = read_bundle(WRITTEN)
    assert (bundle.workload, bundle.device, bundle.autotune) == ("app", DEVICE, "0.4.0")
    assert (bundle.nvcc_version, bundle.compile_flags) == ("13.0.88", "-O3 -arch=sm_90")
    assert bundle.files == ("histogram256.h", "smem_vec.h")
    assert sorted(e.label for e in bundle.entries.values()) == ["histogram256 1000 uint8", "histogram256 100000 uint8",
                                                                "smem_vec 100x64 float32"]
    assert all(e.rung == "exact" and e.certificate and e.calls and e.note for e in bundle.entries.values())
    assert sorted(bundle.dispatches) == [("histogram256", "uint8"), ("smem_vec", "float32")]
    assert encode(bundle) == text
    assert decode(encode(bundle), WRITTEN) == bundle


def test_a_bundle_without_the_optional_fields_reads_with_their_defaults(tmp_path):
    doc = json.loads(WRITTEN.read_text())
    for name in ("files", "dispatches", "autotune", "workload", "created"):
        doc.pop(name)
    for e in doc["entries"]:
        for name in ("certificate", "note", "calls", "kernel_ref", "median_ms", "default_ms", "tuned_ms", "rung"):
            e.pop(name)
    bundle = decode(json.dumps(doc), tmp_path / FILE)
    assert (bundle.files, bundle.dispatches, bundle.autotune, bundle.workload, bundle.created) == (None, {}, "", "", "")
    assert all((e.certificate, e.note, e.calls, e.kernel_ref, e.median_ms, e.rung)
               == (None, "", None, "", None, "exact")
               for e in bundle.entries.values())
    assert len(bundle.entries) == 3



def _set(path: str, value):
    def change(doc):
        *parents, last = path.split(".")
        for p in parents:
            doc = doc[int(p) if p.isdigit() else p]
        doc[int(last) if last.isdigit() else last] = value
    return change


def _drop(path: str):
    def change(doc):
        *parents, last = path.split(".")
        for p in parents:
            doc = doc[int(p) if p.isdigit() else p]
        del doc[last]
    return change


@pytest.mark.parametrize("change, message", [
    (_drop("device"), "is malformed (missing field 'device')"),
    (_set("device", "H100"), "is malformed (device must be an object, not \"H100\")"),
    (_drop("device.name"), "is malformed (missing field 'device.name')"),
    (_set("device.compute_capability", 9.0), "is malformed (device.compute_capability must be a string, not 9.0)"),
    (_set("device.sm_count", "132"), "is malformed (device.sm_count must be an integer, not \"132\")"),
    (_set("device.total_memory", True), "is malformed (device.total_memory must be an integer, not true)"),
    (_set("device.driver_version", 13), "is malformed (device.driver_version must be a string, not 13)"),
    (_drop("device.cuda_version"), "is malformed (missing field 'device.cuda_version')"),
    (_drop("toolchain"), "is malformed (missing field 'toolchain')"),
    (_drop("toolchain.nvcc_version"), "is malformed (missing field 'toolchain.nvcc_version')"),
    (_set("toolchain.compile_flags", ["-O3"]),
     "is malformed (toolchain.compile_flags must be a string, not [\"-O3\"])"),
    (_set("workload", 7), "is malformed (workload must be a string, not 7)"),
    (_set("created", None), "is malformed (created must be a string, not null)"),
    (_set("autotune", 0.4), "is malformed (autotune must be a string, not 0.4)"),
    (_set("files", "smem_vec.h"), "is malformed (files must be a list of file names)"),
    (_set("files", [1]), "is malformed (files must be a list of file names)"),
    (_drop("entries"), "is malformed (missing field 'entries')"),
    (_set("entries", {}), "is malformed (entries must be a list of objects)"),
    (_set("dispatches", {}), "is malformed (dispatches must be a list of objects)"),
    (_set("entries.0", []), "entry 1 is malformed (not an object)"),
    (_drop("entries.1.kernel"), "entry 2 is malformed (missing field 'kernel')"),
    (_set("entries.0.kernel", 5), "entry 1 is malformed (kernel must be a string, not 5)"),
    (_drop("entries.0.source_hash"), "entry 1 is malformed (missing field 'source_hash')"),
    (_set("entries.0.spec_hash", None), "entry 1 is malformed (spec_hash must be a string, not null)"),
    (_set("entries.2.dtype", 32), "entry 3 is malformed (dtype must be a string, not 32)"),
    (_set("entries.0.kernel_ref", 1), "entry 1 is malformed (kernel_ref must be a string, not 1)"),
    (_set("entries.0.note", ["x"]), "entry 1 is malformed (note must be a string, not [\"x\"])"),
    (_drop("entries.0.dims"), "entry 1 is malformed (missing field 'dims')"),
    (_set("entries.0.dims", {}), "entry 1 is malformed (dims must be an object of name: value)"),
    (_set("entries.0.dims", {"n": -1}), "entry 1 is malformed (n=-1 is not allowed"),
    (_drop("entries.0.config"), "entry 1 is malformed (missing field 'config')"),
    (_set("entries.0.config.COPIES", "4"), "entry 1 is malformed (config must be an object of macro: integer)"),
    (_set("entries.0.rung", "best"), "entry 1 is malformed (rung 'best'; allowed: "),
    (_set("entries.0.median_ms", "fast"), "entry 1 is malformed (median_ms must be a number or null, not \"fast\")"),
    (_set("entries.1.default_ms", False), "entry 2 is malformed (default_ms must be a number or null, not false)"),
    (_set("entries.0.tuned_ms", [0.5]), "entry 1 is malformed (tuned_ms must be a number or null, not [0.5])"),
    (_set("entries.0.calls", -1), "entry 1 is malformed (calls must be a count (an integer >= 0) or null, not -1)"),
    (_set("entries.0.calls", 2.5), "entry 1 is malformed (calls must be a count (an integer >= 0) or null, not 2.5)"),
    (_set("entries.0.certificate", "tied"), "entry 1 is malformed (certificate must be an object with winner and "),
    (_drop("entries.0.certificate.winner"), "entry 1 is malformed (certificate must be an object with winner and "),
    (_set("dispatches.0", 3), "dispatch 1 is malformed (not an object)"),
    (_set("dispatches.1.kind", "forest"), "dispatch 2 is malformed (dispatch rule 'forest'; allowed: knn, tree"),
    (_drop("dispatches.0.dtype"), "dispatch 1 is malformed (missing field 'dtype')"),
    (_set("dispatches.0.dtype", 8), "dispatch 1 is malformed (dtype must be a string, not 8)"),
    (_drop("dispatches.0.shapes"), "dispatch 1 is malformed (missing field 'shapes')"),
    (_set("dispatches.0.k", "2"), "dispatch 1 is malformed ('2' is not an integer)"),
])
def test_each_malformed_field_is_refused_naming_the_file_and_the_field(tmp_path, change, message):
    doc = json.loads(WRITTEN.read_text())
    change(doc)
    file = tmp_path / FILE
    file.write_text(json.dumps(doc))
    with pytest.raises(BundleError) as info:
        read_bundle(tmp_path)
    assert str(info.value).startswith(f"bundle {file}: {message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_a_string_of_a_bundle_is_kept_inert():
    doc = json.loads(WRITTEN.read_text())
    doc["device"]["name"] = "H100\x1b[2J"
    doc["entries"][0]["note"] = "ok\a"
    bundle = decode(json.dumps(doc), FILE)
    assert bundle.device.name == "H100\\x1b[2J" and next(iter(bundle.entries.values())).note == "ok\\x07"


def test_owned_files_are_the_bundle_file_and_its_headers():
    text = WRITTEN.read_text()
    assert owned_files(text) == {FILE, "histogram256.h", "smem_vec.h"}
    doc = json.loads(text)
    doc["files"] = ["a.h", "../b.h", "c.txt", 3]  # only plain header names
    assert owned_files(json.dumps(doc)) == {FILE, "a.h"}
    del doc["files"]  # written before bundles listed their files: a header per kernel
    assert owned_files(json.dumps(doc)) == {FILE, "histogram256.h", "smem_vec.h"}
    doc["version"] = 2  # another version, malformed entries: still ours
    doc["entries"] = [{"kernel": "k"}, "junk"]
    assert owned_files(json.dumps(doc)) == {FILE, "k.h"}
    assert owned_files("not JSON {") is None
    assert owned_files(json.dumps({"format": "something-else"})) is None
    assert owned_files(json.dumps(["autotune-bundle"])) is None
