"""``autotune export NAME --bundle DIR`` (autotune/report/bundle.py) without a GPU or a tuning:
workloads written straight into the database, so every problem is at the ``default`` rung.

What is checked here is the folder: a folder is a bundle only if its ``bundle.json`` is one
autotune wrote; a user's files are never overwritten or deleted; the bundle is written whole or
not at all; folders and files follow the umask; missing parent folders are made (``mkdir -p``),
after the workload is found; ``--bundle -`` is refused; a kernel changed since it was recorded
is refused, as the plan flags it. Every refusal is checked on the files themselves."""

from __future__ import annotations

import json
import os
import stat

import pytest
from typer.testing import CliRunner

from autotune.cli import app

from folder_state import snapshot, staging_left

runner = CliRunner()

VEC = ("smem_vec", (("rows", 100), ("cols", 64)), "float32")
PAD = ("smem_pad", (("rows", 64), ("cols", 64)), "float32")


def record(db_url, device_info, name: str, problems, *, source_hash: str | None = None) -> None:
    """Workload ``name``: 10 calls of each ``(kernel, dims, dtype)`` of ``problems``, recorded
    with the catalog kernel's hashes (``source_hash``: recorded with that source hash instead)."""
    from autotune.kernel.catalog import get_kernel
    from autotune.kernel.problem import ProblemKey
    from autotune.store.opening import open_results
    from autotune.store.workload_records import CallCount
    from autotune.store.workloads import write_batch

    store = open_results(db_url)
    counts = []
    for kernel, dims, dtype in problems:
        k = get_kernel(kernel)
        stored = ProblemKey(k.name, source_hash or k.source_hash, k.spec_hash, dims, dtype, k.name)
        counts.append(CallCount(device_info, stored, calls=10, sampled=2, sampled_ms=0.5))
    write_batch(store, name, f"run-{name}", 1, counts)
    store.close()


@pytest.fixture
def recorded(db_url, device_info):
    record(db_url, device_info, "app", [VEC])
    record(db_url, device_info, "two", [VEC, PAD])
    return db_url


def export(db_url, folder, name="app"):
    r = runner.invoke(app, ["export", name, "--bundle", str(folder), "--db", db_url])
    assert "Traceback" not in r.output, r.output
    return r


def refused(r, *needles):
    """An export refused with one ``error:`` line holding each of ``needles``, exit 2."""
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert all(n in lines[0] for n in needles), r.output


@pytest.mark.parametrize("theirs", [
    json.dumps({"name": "my-package", "version": "1.0"}),
    json.dumps({"format": "something-else", "entries": []}),
    "not JSON at all {",
    json.dumps(["autotune-bundle"]),
])
def test_a_folder_whose_bundle_json_is_not_ours_is_refused_and_left_byte_for_byte(recorded, tmp_path, theirs):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "bundle.json").write_text(theirs)
    (folder / "util.h").write_text("#define MINE 1\n")
    (folder / "notes.txt").write_text("keep me")
    before = snapshot(folder)
    refused(export(recorded, folder), f"cannot write bundle {folder}", "bundle.json", "not one autotune wrote")
    assert snapshot(folder) == before and staging_left(tmp_path) == []


def test_exporting_again_over_our_bundle_keeps_every_file_that_is_not_ours(recorded, tmp_path):
    folder = tmp_path / "deploy"
    assert export(recorded, folder, "two").exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["bundle.json", "smem_pad.h", "smem_vec.h"]
    (folder / "README.md").write_text("how we deploy\n")
    (folder / "mine.h").write_text("#define MINE 1\n")
    kept = {n: ((folder / n).read_bytes(), (folder / n).stat().st_ino) for n in ("README.md", "mine.h")}
    r = export(recorded, folder, "app")  # one kernel now: smem_pad.h was ours and goes; mine.h never was
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "bundle.json", "mine.h", "smem_vec.h"]
    assert {n: ((folder / n).read_bytes(), (folder / n).stat().st_ino) for n in kept} == kept
    assert json.loads((folder / "bundle.json").read_text())["workload"] == "app"
    assert staging_left(tmp_path) == []


def test_a_file_of_the_users_where_the_bundle_would_write_one_is_refused(recorded, tmp_path):
    folder = tmp_path / "deploy"
    assert export(recorded, folder, "app").exit_code == 0
    (folder / "smem_pad.h").write_text("// the user's own header\n")  # not ours: the last export wrote none
    before = snapshot(folder)
    refused(export(recorded, folder, "two"), f"cannot write bundle {folder}", "it holds smem_pad.h, which autotune "
                                                                             "did not write")
    assert snapshot(folder) == before and staging_left(tmp_path) == []
    (folder / "smem_pad.h").unlink()
    (folder / "sub").mkdir()  # a folder of the user's: not carried over (a hard link takes files only)
    (folder / "sub" / "x.txt").write_text("mine")
    before = snapshot(folder)
    refused(export(recorded, folder, "two"), f"cannot write bundle {folder}", "it holds sub")
    assert snapshot(folder) == before and staging_left(tmp_path) == []


def test_a_bundle_written_before_it_listed_its_files_is_still_ours(recorded, tmp_path):
    folder = tmp_path / "deploy"
    assert export(recorded, folder, "two").exit_code == 0
    doc = json.loads((folder / "bundle.json").read_text())
    doc.pop("files")  # as autotune 0.3.0 before this change wrote it: its headers are its kernels'
    (folder / "bundle.json").write_text(json.dumps(doc))
    (folder / "mine.h").write_text("#define MINE 1\n")
    assert export(recorded, folder, "app").exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["bundle.json", "mine.h", "smem_vec.h"]


def test_a_bundle_is_written_whole_or_not_at_all(recorded, tmp_path, monkeypatch):
    """Through the command (the folder swap itself: tests/base/test_folders.py)."""
    from autotune.base import folders
    from autotune.errors import InvalidInputError

    folder = tmp_path / "deploy"
    assert export(recorded, folder, "two").exit_code == 0
    (folder / "README.md").write_text("mine\n")
    before = snapshot(folder)
    real, calls = folders.write_atomically, []

    def second_fails(path, data, what="output"):  # a full disk at the second file
        calls.append(path)
        if len(calls) == 2:
            raise InvalidInputError(f"cannot write {path} ({what}): No space left on device")
        return real(path, data, what)

    monkeypatch.setattr(folders, "write_atomically", second_fails)
    refused(export(recorded, folder, "app"), f"cannot write bundle {folder}: ", ": No space left on device")
    assert snapshot(folder) == before and staging_left(tmp_path) == []
    monkeypatch.setattr(folders, "write_atomically", real)

    def swap_fails(staging, target):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(folders, "_swap", swap_fails)
    refused(export(recorded, folder, "app"), "Input/output error")
    assert snapshot(folder) == before and staging_left(tmp_path) == []
    new = tmp_path / "new" / "app"
    refused(export(recorded, new, "app"), "Input/output error")
    assert not (tmp_path / "new").exists()  # the parent it made is gone again


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_bundle_folders_and_files_follow_the_umask(recorded, tmp_path, umask):
    old = os.umask(umask)
    try:
        r = export(recorded, tmp_path / "deploy" / "app")
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    for folder in (tmp_path / "deploy", tmp_path / "deploy" / "app"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask, folder
    for file in (tmp_path / "deploy" / "app").iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o666 & ~umask, file


def test_exporting_over_a_bundle_keeps_the_folders_mode(recorded, tmp_path):
    folder = tmp_path / "deploy"
    assert export(recorded, folder).exit_code == 0
    folder.chmod(0o750)
    assert export(recorded, folder).exit_code == 0
    assert stat.S_IMODE(folder.stat().st_mode) == 0o750


@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
def test_a_bundle_to_standard_output_is_refused(recorded, tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    refused(export(recorded, target), f"--bundle {target}", "a bundle is a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_missing_parent_folders_are_made_after_the_workload_is_found(recorded, tmp_path):
    target = tmp_path / "deploy" / "v1" / "app"
    refused(export(recorded, target, "nope"), "workload 'nope' does not exist")
    assert not (tmp_path / "deploy").exists()
    r = export(recorded, target)
    assert r.exit_code == 0 and f"wrote bundle {target}:" in r.output, r.output
    assert (target / "bundle.json").is_file()
    (tmp_path / "afile").write_text("x")
    refused(export(recorded, tmp_path / "afile" / "app"), "afile", "not a folder")
    assert (tmp_path / "afile").read_text() == "x"


def test_a_kernel_changed_since_it_was_recorded_is_refused_as_the_plan_flags_it(db_url, device_info, tmp_path):
    from autotune.kernel.catalog import get_kernel

    record(db_url, device_info, "app", [VEC], source_hash="ab" * 32)
    folder = tmp_path / "deploy"
    refused(export(db_url, folder), "smem_vec 100x64 float32", "its kernel changed since it was recorded",
            f"{'ab' * 6} recorded", get_kernel("smem_vec").source_hash[:12])
    assert not folder.exists() and staging_left(tmp_path) == []
