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


# ---------------------------------------------------------------------------------------------
# Issue 41: every read of a user's file goes through base/files.py. This test reads every module
# under autotune/ with ast and fails on a call of open(), os.open/io.open/Path.open, os.fdopen,
# .read_text() or .read_bytes() anywhere but base/files.py, unless it is one of these, each on a
# file that is not a user's (the enclosing function is named, so a new call there fails too):

ALLOWED_FILE_CALLS = {
    ("autotune/measure/device_compare.py", "compare_cubin", "read_text"):
        "package data: the comparison kernels' .cu shipped inside autotune.measure (importlib.resources)",
    ("autotune/measure/cubin_cache.py", "load", "read_bytes"):
        "autotune's own cubin cache (AUTOTUNE_CACHE_DIR or platformdirs' cache folder), files it wrote",
    ("autotune/measure/cubin_cache.py", "store", "fdopen"):
        "writing autotune's own cubin cache (a temporary file renamed into place)",
    ("autotune/measure/compile.py", "_nvcc", "read_bytes"):
        "nvcc's output, k.cubin, in a temporary folder autotune made for the build",
    ("autotune/store/schema.py", "init_lock", "open"):
        "SQLite's lock file <db>.lock, autotune's own, beside the database",
    ("autotune/store/leases.py", "pid_alive", "open"):
        "the kernel's /proc/<pid>/stat: whether a tuning's process is a zombie",
}
FILE_CALLS = {"open", "fdopen", "read_text", "read_bytes"}


def _file_calls(path):
    """(enclosing function, call name, line) of each call in FILE_CALLS in the module at ``path``,
    except those of names imported from autotune.base.files (the one reader itself)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    ours = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and node.module == "autotune.base.files" for alias in node.names}
    ours |= {alias.asname or "files" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module == "autotune.base" for alias in node.names if alias.name == "files"}
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                f = child.func
                if isinstance(f, ast.Name) and f.id in FILE_CALLS and f.id not in ours:
                    found.append((function, f.id, child.lineno))
                elif isinstance(f, ast.Attribute) and f.attr in FILE_CALLS and not (
                        isinstance(f.value, ast.Name) and f.value.id in ours):
                    found.append((function, f.attr, child.lineno))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_every_read_of_a_users_file_goes_through_the_one_reader():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    seen, unexplained = set(), []
    for path in sorted((root / "autotune").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name == "autotune/base/files.py":
            continue
        for function, call, line in _file_calls(path):
            key = (name, function, call)
            if key in ALLOWED_FILE_CALLS:
                seen.add(key)
            else:
                unexplained.append(f"{name}:{line} {call}() in {function}")
    assert not unexplained, ("read users' files with autotune.base.files.read_text/read_bytes (or add the call, "
                             "with why it reads no user's file, to ALLOWED_FILE_CALLS): " + "; ".join(unexplained))
    assert seen == set(ALLOWED_FILE_CALLS), f"allowed but gone (remove): {set(ALLOWED_FILE_CALLS) - seen}"


def test_the_reader_test_catches_each_kind_of_call(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from pathlib import Path\nimport os\nfrom autotune.base.files import read_text\n"
                      "def f(p):\n    read_text(p)\n    open(p)\n    Path(p).read_text()\n    Path(p).read_bytes()\n"
                      "    os.fdopen(3)\n    Path(p).open()\n    os.open(p, 0)\n")
    assert [(fn, call) for fn, call, _ in _file_calls(module)] == [
        ("f", "open"), ("f", "read_text"), ("f", "read_bytes"), ("f", "fdopen"), ("f", "open"), ("f", "open")]


def test_a_path_holding_a_nul_byte_is_one_line_not_a_value_error(tmp_path):
    """A TOML string may hold "\\u0000": open() and os.stat() raise ValueError on it."""
    with pytest.raises(InvalidInputError, match=r"cannot read source 'a\\x00b.cu': the path holds a NUL byte"):
        read_text("a\0b.cu", "source")
    with pytest.raises(InvalidInputError, match="the path holds a NUL byte"):
        write_atomically(tmp_path / "a\0b.json", "{}", "--out")
    assert list(tmp_path.iterdir()) == []


def test_lock_file_orders_two_holders_and_runs_unlocked_where_it_cannot_be_made(tmp_path):
    """The one flock helper of the cubin cache's builds and the first-sight tuning: a second
    holder enters only after the first left; a lock file that cannot be made costs the lock only."""
    import threading

    from autotune.base.files import lock_file

    path, order = tmp_path / "new" / "x.lock", []
    inside, release = threading.Event(), threading.Event()

    def first():
        with lock_file(path):
            order.append("first in")
            inside.set()
            assert release.wait(60)
            order.append("first out")

    def second():
        with lock_file(path):
            order.append("second in")

    holder = threading.Thread(target=first)
    holder.start()
    assert inside.wait(60)
    waiter = threading.Thread(target=second)
    waiter.start()
    release.set()
    holder.join(60)
    waiter.join(60)
    assert order == ["first in", "first out", "second in"] and path.is_file()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with lock_file(blocker / "x.lock"):  # its folder cannot be made: the block still runs
        order.append("unlocked")
    assert order[-1] == "unlocked"
