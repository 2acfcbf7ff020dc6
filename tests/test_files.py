"""autotune.base.files: the one reader of users' files and the one writer of the files autotune
gives back. Each refusal is one InvalidInputError line naming the file, and nothing is written."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from autotune.base import files
from autotune.base.files import check_writable, read_text, write_atomically
from autotune.errors import InvalidInputError


def _listing(folder):
    return sorted((p.name, p.read_bytes() if p.is_file() else None) for p in folder.iterdir())


def test_base_package_is_the_ground_floor_line():
    import autotune.base

    text = open(autotune.base.__file__).read()
    assert text == '"""Ground floor: process-wide pieces every other floor may use (files, signals, caches)."""\n'


def test_reads_utf8_text(tmp_path):
    (tmp_path / "k.toml").write_text("name = 'é'\n", encoding="utf-8")
    assert read_text(tmp_path / "k.toml", "kernel file") == "name = 'é'\n"


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: None, "cannot read kernel file {p}: no such file"),
    (lambda p: p.mkdir(), "cannot read kernel file {p}: a folder; give a regular file"),
    (lambda p: p.write_bytes(b"name = '\xff\xfe'\n"), "cannot read kernel file {p}: not UTF-8 text (byte 8)"),
    (lambda p: os.mkfifo(p), "cannot read kernel file {p}: a FIFO; give a regular file"),
])
def test_refusals_are_one_line_naming_the_file(tmp_path, make, message):
    path = tmp_path / "k.toml"
    make(path)
    with pytest.raises(InvalidInputError) as info:
        read_text(path, "kernel file")
    text = str(info.value)
    assert "\n" not in text and text.startswith(message.format(p=path)), text


def test_a_device_node_is_refused_not_read_forever():
    with pytest.raises(InvalidInputError, match="cannot read source /dev/zero: a character device"):
        read_text("/dev/zero", "source")


def test_a_file_over_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_READ_BYTES", 10)
    (tmp_path / "big.cu").write_text("x" * 11)
    with pytest.raises(InvalidInputError, match="11 bytes; allowed: at most 10 bytes"):
        read_text(tmp_path / "big.cu", "source")


def test_writes_whole_and_replaces_a_regular_file(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    assert write_atomically(target, "new", "--out") == target
    assert target.read_text() == "new"
    write_atomically(target, b"\x00bytes", "plot")
    assert target.read_bytes() == b"\x00bytes"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null"])
def test_a_device_node_is_refused_and_stays_a_device(device):
    before = os.stat(device)
    with pytest.raises(InvalidInputError) as info:
        write_atomically(device, "{}", "--out")
    assert str(info.value) == (f"cannot write {device} (--out): it is a character device; give the path of a "
                               "regular file (it is replaced whole) or of a new one")
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


@pytest.mark.parametrize("kind", ["folder", "fifo", "missing folder"])
def test_other_targets_that_are_not_regular_files_are_refused(tmp_path, kind):
    target = tmp_path / "out.json"
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target = tmp_path / "nowhere" / "out.json"
    before = _listing(tmp_path)
    with pytest.raises(InvalidInputError, match=r"cannot write .*out\.json \(--out\): "
                                                r"(it is a folder|it is a FIFO|the folder .* does not exist)"):
        check_writable(target, "--out")
    with pytest.raises(InvalidInputError):
        write_atomically(target, "{}", "--out")
    assert _listing(tmp_path) == before


def test_a_full_disk_is_reported_and_the_old_file_kept(tmp_path, monkeypatch):
    target = tmp_path / "tuned.h"
    target.write_text("old header")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(InvalidInputError, match=r"cannot write .*tuned\.h \(--header\): No space left on device"):
        write_atomically(target, "new header", "--header")
    assert target.read_text() == "old header"
    assert [p.name for p in tmp_path.iterdir()] == ["tuned.h"]
