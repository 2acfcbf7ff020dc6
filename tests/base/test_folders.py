"""A folder autotune writes for a user, replaced whole (autotune/base/folders.py): which folders
are autotune's to write, the user's files in them kept byte for byte (the same inodes), written
whole or not at all, the umask and a folder's mode kept. A folder ``thing`` marked by
``thing.json``, which lists autotune's files, stands for a bundle here (a bundle through the
command: tests/report/test_bundle_export.py)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from autotune.base import folders
from autotune.base.folders import Folder, check_folder, refused, replace_folder
from autotune.errors import InvalidInputError

from folder_state import snapshot, staging_left

MARKER = "thing.json"


def owned(directory: Path) -> set[str]:
    """The marker and the files it lists; a marker not ours is refused, as a bundle's is."""
    doc = json.loads((directory / MARKER).read_text())
    if not isinstance(doc, dict) or doc.get("format") != "thing":
        raise refused(directory, "thing", f"its {MARKER} is not one autotune wrote")
    return {MARKER, *doc["files"]}


def files(*names: str) -> dict[str, str]:
    return {MARKER: json.dumps({"format": "thing", "files": list(names)}), **{n: f"// {n}\n" for n in names}}


def write(target: Path, *names: str) -> Folder:
    folder = check_folder(target, "thing", MARKER, owned)
    replace_folder(target, files(*names), folder, "thing")
    return folder


def test_a_new_folder_and_its_missing_parents_are_made(tmp_path):
    target = tmp_path / "deploy" / "v1" / "app"
    folder = check_folder(target, "thing", MARKER, owned)
    assert folder == Folder(None, missing=(tmp_path / "deploy", tmp_path / "deploy" / "v1"))
    assert not (tmp_path / "deploy").exists()  # judged, nothing made
    replace_folder(target, files("a.h"), folder, "thing")
    assert sorted(p.name for p in target.iterdir()) == ["a.h", MARKER] and staging_left(target.parent) == []
    assert (target / "a.h").read_text() == "// a.h\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_folder(empty, "thing", MARKER, owned) == Folder(frozenset())


def test_writing_again_replaces_ours_and_keeps_the_users_files_themselves(tmp_path):
    target = tmp_path / "deploy"
    write(target, "a.h", "b.h")
    (target / "README.md").write_text("how we deploy\n")
    os.symlink("README.md", target / "link.md")
    kept = ((target / "README.md").stat().st_ino, (target / "README.md").read_bytes())
    folder = write(target, "a.h")  # b.h was ours and goes
    assert folder.ours == {MARKER, "a.h", "b.h"} and folder.theirs == {"README.md", "link.md"}
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "a.h", "link.md", MARKER]
    assert ((target / "README.md").stat().st_ino, (target / "README.md").read_bytes()) == kept  # the file itself
    assert os.readlink(target / "link.md") == "README.md"  # a link stays the link it was
    assert staging_left(tmp_path) == []


@pytest.mark.parametrize("setup, why", [
    (lambda t: t.write_text("x"), "it is a file; give a new folder or a thing's"),
    (lambda t: os.symlink(t.parent, t), "it is a symbolic link"),
    (lambda t: (t.mkdir(), (t / "notes.txt").write_text("mine")), "the folder holds other files (notes.txt)"),
    (lambda t: (t.mkdir(), (t / MARKER).write_text('{"format": "other"}')), f"its {MARKER} is not one autotune wrote"),
    (lambda t: (write(t, "a.h"), (t / "sub").mkdir()), "it holds sub, which is not a file autotune wrote and cannot "
                                                       "be carried over into the new thing"),
])
def test_a_folder_that_is_not_ours_is_refused_and_left_as_it_was(tmp_path, setup, why):
    target = tmp_path / "target"
    setup(target)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(InvalidInputError) as caught:
        check_folder(target, "thing", MARKER, owned)
    assert str(caught.value).startswith(f"cannot write thing {target}: {why}")
    assert sorted(os.listdir(tmp_path)) == before


def test_a_path_under_a_file_is_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InvalidInputError, match=r"cannot write thing .*afile/app: .*afile is not a folder"):
        check_folder(tmp_path / "afile" / "app", "thing", MARKER, owned)
    assert (tmp_path / "afile").read_text() == "x"


def test_a_file_of_the_users_where_ours_would_go_is_refused_and_nothing_changes(tmp_path):
    target = tmp_path / "deploy"
    write(target, "a.h")
    (target / "b.h").write_text("// the user's own\n")
    before = snapshot(target)
    with pytest.raises(InvalidInputError, match="it holds b.h, which autotune did not write and the thing would "
                                                "replace; move it out, or give another folder"):
        write(target, "a.h", "b.h")
    assert snapshot(target) == before and staging_left(tmp_path) == []


def test_a_full_disk_or_a_failed_swap_changes_nothing_and_leaves_no_folder_behind(tmp_path, monkeypatch):
    target = tmp_path / "deploy"
    write(target, "a.h", "b.h")
    (target / "README.md").write_text("mine\n")
    before = snapshot(target)
    real, calls = folders.write_atomically, []

    def second_fails(path, data, what="output"):
        calls.append(path)
        if len(calls) == 2:
            raise InvalidInputError(f"cannot write {path} ({what}): No space left on device")
        return real(path, data, what)

    monkeypatch.setattr(folders, "write_atomically", second_fails)
    with pytest.raises(InvalidInputError) as caught:
        write(target, "a.h")
    assert str(caught.value) == f"cannot write thing {target}: a.h: No space left on device"
    assert snapshot(target) == before and staging_left(tmp_path) == []
    monkeypatch.setattr(folders, "write_atomically", real)

    def swap_fails(staging, to):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(folders, "_swap", swap_fails)
    with pytest.raises(InvalidInputError, match=f"cannot write thing {target}: Input/output error"):
        write(target, "a.h")
    assert snapshot(target) == before and staging_left(tmp_path) == []
    with pytest.raises(InvalidInputError, match="Input/output error"):
        write(tmp_path / "new" / "app", "a.h")
    assert not (tmp_path / "new").exists()  # the parent it made is gone again


def test_without_renameat2_two_renames_still_swap_whole(tmp_path, monkeypatch):
    target = tmp_path / "deploy"
    write(target, "a.h", "b.h")
    (target / "README.md").write_text("mine\n")
    monkeypatch.setattr(folders, "_exchange", lambda a, b: False)  # not offered here: two renames
    write(target, "a.h")
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "a.h", MARKER] and staging_left(tmp_path) == []


def test_where_the_second_rename_fails_the_old_folder_is_put_back(tmp_path, monkeypatch):
    target = tmp_path / "deploy"
    write(target, "a.h", "b.h")
    before = snapshot(target)
    monkeypatch.setattr(folders, "_exchange", lambda a, b: False)
    real = os.rename

    def rename(a, b):
        if Path(b) == target and Path(a).name.endswith(".tmp"):  # the new folder renamed in
            raise OSError(28, "No space left on device")
        return real(a, b)

    monkeypatch.setattr(folders.os, "rename", rename)
    with pytest.raises(InvalidInputError, match="No space left on device"):
        write(target, "a.h")
    assert snapshot(target) == before and staging_left(tmp_path) == []


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_new_folders_and_files_follow_the_umask_and_a_folder_written_again_keeps_its_mode(tmp_path, umask):
    old = os.umask(umask)
    try:
        write(tmp_path / "deploy" / "app", "a.h")
    finally:
        os.umask(old)
    for folder in (tmp_path / "deploy", tmp_path / "deploy" / "app"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask, folder
    assert {stat.S_IMODE(f.stat().st_mode) for f in (tmp_path / "deploy" / "app").iterdir()} == {0o666 & ~umask}
    (tmp_path / "deploy" / "app").chmod(0o750)
    write(tmp_path / "deploy" / "app", "a.h")
    assert stat.S_IMODE((tmp_path / "deploy" / "app").stat().st_mode) == 0o750
