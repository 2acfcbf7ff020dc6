"""Every kind of bad input: one clear line naming the value and what is allowed, exit code 2,
no traceback, and the database untouched (not created, or byte for byte the same)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
import sqlite3
from dataclasses import dataclass, field
from typing import Callable

import pytest

from autotune.store.opening import open_results
from typer.testing import CliRunner

from fakes import NO_BACKEND

import autotune.measure.benchmark
import autotune.measure.device
import autotune.store.schema
from autotune.cli import app

runner = CliRunner()


class FakeDriver:
    """Stands in for the CUDA backend with ``count`` devices (count 0: no GPU)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def device_count(self) -> int:
        return self.count


@dataclass
class Case:
    args: list
    message: str
    setup: Callable | None = None  # setup(tmp_path, db_path, monkeypatch) -> None
    db: str = "db.sqlite"           # file name of the --db SQLite file, under tmp_path
    ids: str = field(default="")


def space_file(text):
    def setup(tmp, db, mp):
        (tmp / "space.toml").write_text(text)
    return setup


GOOD_SPACE = ('kernel = "smem_pad"\nconstraints = ["TILE_DIM % BLOCK_ROWS == 0"]\n[params]\nTILE_DIM = [32]\n'
              'BLOCK_ROWS = [8]\nIPAD = [1]\nDIAGONAL = [0]\n')

LARGE_SPACE = ('kernel = "smem_pad"\nconstraints = ["TILE_DIM % BLOCK_ROWS == 0"]\n[params]\n'
               f"TILE_DIM = {list(range(1, 2001))}\nBLOCK_ROWS = {list(range(1, 2001))}\nIPAD = [0, 1, 2, 3, 4]\n"
               "DIAGONAL = [0, 1, 2, 3, 4]\n")  # 10^8 combinations, about 400,000 valid


def driver(count):
    def setup(tmp, db, mp):
        mp.setattr(autotune.measure.device, "cuda_driver", lambda: FakeDriver(count))
    return setup


def no_pycuda(tmp, db, mp):
    from fakes import no_backend

    no_backend(mp)  # "import cuda.bindings" and "import pycuda.driver" raise ImportError


def a_float32_only_kernel(tmp, db, mp):
    import dataclasses

    import autotune.kernel.catalog as kernels

    only = dataclasses.replace(kernels.KERNELS["smem_pad"], dtypes=("float32",))
    mp.setattr(kernels, "KERNELS", {**kernels.KERNELS, "smem_pad": only})


def an_80gb_gpu(tmp, db, mp):
    from autotune.measure.device import DeviceInfo

    @contextlib.contextmanager
    def open_device(ordinal):
        yield DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")

    mp.setattr(autotune.measure.benchmark, "open_device", open_device)
    # the search queries it before it starts its measuring process (autotune.measure.isolation)
    mp.setattr(autotune.measure.device, "query_device",
               lambda ordinal: DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0"))


def tuned_db(tmp, db, mp):
    open_results(f"sqlite:///{db}").close()  # an up-to-date, empty database, WAL checkpointed


def not_a_database(tmp, db, mp):
    db.write_bytes(b"this is a text file, not SQLite\n" * 100)


def newer_schema(tmp, db, mp):
    open_results(f"sqlite:///{db}").close()
    con = sqlite3.connect(db)
    con.execute("update autotune_alembic_version set version_num = 'ffff_from_the_future'")
    con.commit()
    con.close()  # checkpoints the WAL, so the bytes compared are the whole database


def newer_schema_and_a_gpu(tmp, db, mp):
    newer_schema(tmp, db, mp)

    class Bench:
        device = None

    @contextlib.contextmanager
    def open_benchmark(*args, **kwargs):
        yield Bench()

    mp.setattr(autotune.measure.benchmark, "open_benchmark", open_benchmark)


def read_only_folder(tmp, db, mp):
    folder = tmp / "ro"
    folder.mkdir()
    if os.geteuid() == 0:  # root writes anywhere: make the permission check see a read-only folder
        real = os.access
        mp.setattr(autotune.store.schema.os, "access", lambda p, m: False if str(p) == str(folder) else real(p, m))
    else:
        folder.chmod(0o555)


S = ["search", "--kernel", "smem_pad"]
CASES = [
    Case(S + ["--size", 0], "--size 0 is not allowed; give an integer 1..2147483647"),
    Case(S + ["--size", -5], "--size -5 is not allowed"),
    Case(S + ["--size", "abc"], "Invalid value for '--size': 'abc' is not an integer"),
    Case(S + ["--size", "2.5"], "'2.5' is not an integer"),
    Case(S + ["--size", 2**31], "--size 2147483648 is not allowed"),
    Case(S + ["--size", 300000], "smem_pad 300000x300000 float32 needs 670.6 GiB on the GPU; NVIDIA H100 80GB HBM3 has 79.2 GiB",
         an_80gb_gpu),
    Case(S + ["--rows", 10], "dim cols is missing; kernel smem_pad takes rows, cols: give --dims rows=N,cols=N or --size N"),
    Case(S + ["--cols", 10], "dim rows is missing"),
    Case(S, "dim rows is missing; kernel smem_pad takes rows, cols"),
    Case(S + ["--size", 8, "--rows", 10, "--cols", 4], "--size 8 sets no dim: the other options give every dim of kernel smem_pad (rows, cols); give either --size or those, not both"),
    Case(["search", "--kernel", "smem_padd", "--size", 64], "unknown kernel 'smem_padd' (did you mean smem_pad"),
    Case(S + ["--size", 64, "--dtype", "float128"], "unknown dtype 'float128'; allowed: int8, uint8"),
    Case(S + ["--size", 64, "--dtype", "int8"], "kernel smem_pad does not support dtype 'int8'; allowed: float32",
         a_float32_only_kernel),
    Case(S + ["--size", 64, "--device", 5], "--device 5 is out of range; allowed: 0..0", driver(1)),
    Case(S + ["--size", 64, "--device", -1], "--device -1 is not allowed"),
    Case(S + ["--size", 64], "no CUDA device is present", driver(0)),
    Case(S + ["--size", 64], NO_BACKEND, no_pycuda),
    Case(S + ["--size", 64, "--space", "{tmp}/space.toml"], "is not valid TOML", space_file("kernel = ")),
    Case(S + ["--size", 64, "--space", "{tmp}/space.toml"], "unknown macro 'UNROLL'",
         space_file(GOOD_SPACE + "UNROLL = [4]\n")),
    Case(S + ["--size", 64, "--space", "{tmp}/space.toml"], "IPAD in {tmp}/space.toml has an empty range",
         space_file(GOOD_SPACE.replace("IPAD = [1]", "IPAD = []"))),
    Case(S + ["--size", 64, "--space", "{tmp}/space.toml"], "constraint 'TILE_DIM % WARPS == 0' names WARPS; allowed names: BLOCK_ROWS, DIAGONAL, IPAD, TILE_DIM",
         space_file(GOOD_SPACE.replace("TILE_DIM % BLOCK_ROWS", "TILE_DIM % WARPS"))),
    Case(S + ["--size", 64, "--space", "{tmp}/space.toml"], "IPAD='1 -DEVIL' in {tmp}/space.toml is not allowed",
         space_file(GOOD_SPACE.replace("IPAD = [1]", "IPAD = ['1 -DEVIL']"))),
    Case(S + ["--size", 64, "--space", "{tmp}/space.toml"], "TILE_DIM=100000 in {tmp}/space.toml is not allowed; values are integers 0..4096",
         space_file(GOOD_SPACE.replace("TILE_DIM = [32]", "TILE_DIM = [100000]"))),
    Case(S + ["--size", 64, "--space", "{tmp}/nothing.toml"], "cannot read search space {tmp}/nothing.toml"),
    Case(["sweep", "--size", 64, "--space", "{tmp}/space.toml"], "the space in {tmp}/space.toml has more than "
         "100,000 valid configs (100,000,000 combinations before its constraints); a sweep measures at most 100,000",
         space_file(LARGE_SPACE)),
    Case(S + ["--size", 64, "--trials", 0], "--trials 0 is not allowed; give 1 or more"),
    Case(S + ["--size", 64, "--trials", -3], "--trials -3 is not allowed"),
    Case(S + ["--size", 64, "--timeout", -1], "--timeout -1 is not allowed; give a positive number of seconds"),
    Case(S + ["--size", 64, "--timeout", "soon"], "'soon' is not a number"),
    Case(S + ["--size", 64, "--strategy", "annealing"],
         "--strategy 'annealing' is not known; allowed: bandit, tpe, random, grid, gp, cmaes, transfer"),
    Case(S + ["--size", 64, "--sampler", "annealing"], "--strategy 'annealing' is not known"),  # the old name
    Case(S + ["--size", 64, "--strategy", "tpe", "--sampler", "grid"], "--sampler grid (the old name of "
         "--strategy) and --strategy tpe disagree; give --strategy only"),
    Case(S + ["--size", 64, "--strategy", "tpe", "--strategy-option", "bogus=1"],  # issue 38: each strategy's own options
         "--strategy-option 'bogus=1' is not allowed; strategy tpe takes startup (an integer 1..100000)"),
    Case(S + ["--size", 64, "--strategy", "tpe", "--strategy-option", "startup=many"],
         "--strategy-option 'startup=many' is not allowed; option startup of strategy tpe takes an integer 1..100000"),
    Case(S + ["--size", 64, "--strategy", "tpe", "--strategy-option", "startup"],
         "--strategy-option 'startup' is not allowed; give KEY=VALUE"),
    Case(S + ["--size", 64, "--strategy", "tpe", "--strategy-option", "startup=2", "--strategy-option", "startup=3"],
         "--strategy-option 'startup=3' is not allowed; startup is given twice"),
    Case(S + ["--size", 64, "--strategy", "random", "--strategy-option", "startup=2"],
         "--strategy-option 'startup=2' is not allowed; strategy random takes no option"),
    Case(S + ["--size", 64, "--strategy", "bandit", "--strategy-option", "startup=2"],  # bandit takes none
         "--strategy-option 'startup=2' is not allowed; strategy bandit takes no option"),
    Case(["tune-shapes", "smem_pad", "--dims-range", "rows=1:2,rows=3:4,cols=64:128"],  # issue 51: not the last taken
         "dim rows is given twice (--dims-range rows=1:2 and rows=3:4); give each dim once"),
    Case(["tune-shapes", "smem_pad", "--dims-range", "rows=64:128,cols=64:128", "--strategy-option", "queue=-1"],
         "--strategy-option 'queue=-1' is not allowed; option queue of strategy transfer takes an integer 0..1000"),
    Case(S + ["--size", 64, "--batch", 0], "--batch 0 is not allowed; give 1..1024 configs"),
    Case(S + ["--size", 64, "--top-k", 0], "--top-k 0 is not allowed; give 1 or more"),
    Case(S + ["--size", 64, "--repeats", 5], "--repeats 5 is not allowed; give 20 or more"),
    Case(S + ["--size", 64, "--ci", 1.5], "--ci 1.5 is not allowed; give a fraction 0 <= ci < 1"),
    Case(S + ["--size", 64, "--ci", "tight"], "'tight' is not a number"),
    Case(S + ["--size", 64, "--min-samples", 3], "--min-samples 3 is not allowed; give 10 or more"),
    Case(S + ["--size", 64, "--min-samples", 90, "--max-samples", 40],
         "--max-samples 40 is not allowed; give at least the minimum count of samples (90)"),
    Case(S + ["--size", 64, "--ci-floor-us", -2], "--ci-floor-us -2 is not allowed"),
    Case(S + ["--size", 64, "--objective", "power"], "--objective 'power' is not allowed; give one of time | energy | edp | time,energy"),
    Case(S + ["--size", 64, "--objective", "time,time"], "--objective 'time,time' is not allowed; give one of time | energy | edp | time,energy"),
    Case(S + ["--size", 64, "--objective", "energy,time,edp"], "--objective 'energy,time,edp' is not allowed; give one of time | energy | edp | time,energy"),
    Case(S + ["--size", 64, "--objective", ""], "--objective '' is not allowed; give one of time | energy | edp | time,energy"),
    Case(S + ["--size", 64, "--objective", "speed"], "--objective 'speed' is not allowed; give one of time | energy | edp | time,energy"),
    Case(S + ["--size", 64, "--objective", "time,energy", "--strategy", "tpe"],
         "--strategy 'tpe' cannot minimise time,energy together (its traits do not say pareto); give one of random, grid, nsga2"),
    Case(S + ["--size", 64, "--bogus"], "No such option: --bogus"),
    Case(["best", "--size", 64], "the folder of database {tmp}/missing/db.sqlite does not exist", db="missing/db.sqlite"),
    Case(["db", "upgrade"], "the folder of database {tmp}/ro/db.sqlite is read-only", read_only_folder,
         db="ro/db.sqlite"),  # best reads a database on a read-only mount; nothing there: "nothing is tuned"
    Case(["best", "--size", 64], "nothing is tuned for any kernel 64x64", read_only_folder, db="ro/db.sqlite"),
    Case(["best", "--size", 64], "file is not a database", not_a_database),
    Case(["best", "--size", 64], "has schema revision 'ffff_from_the_future', newer than this autotune knows",
         newer_schema),
    Case(["search", "--size", 64], "newer than this autotune knows", newer_schema_and_a_gpu),
    Case(["best", "--size", 64], "nothing is tuned for any kernel 64x64 or 64x64x64 float32", tuned_db),
    Case(["best", "--size", 0], "--size 0 is not allowed"),
    Case(["best", "--size", 64, "--kernel", "nope"], "unknown kernel 'nope'"),
    Case(["best", "--size", 64, "--dtype", "half"], "unknown dtype 'half'"),
    Case(["db", "upgrade"], "newer than this autotune knows", newer_schema),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{i:02d}-{' '.join(map(str, c.args[:1] + c.args[3:]))}"
                                             for i, c in enumerate(CASES)])
def test_bad_input(case, tmp_path, monkeypatch):
    db = tmp_path / case.db
    if case.setup:
        case.setup(tmp_path, db, monkeypatch)
    before = db.read_bytes() if db.exists() else None
    args = [str(a).format(tmp=tmp_path) for a in case.args] + ["--db", f"sqlite:///{db}"]
    result = runner.invoke(app, args)
    output = result.output
    assert result.exit_code == 2, output
    assert "Traceback" not in output
    lines = [l for l in output.splitlines() if l.startswith(("error:", "Error:"))]
    assert len(lines) == 1, output
    assert case.message.format(tmp=tmp_path) in lines[0], output
    assert (db.read_bytes() if db.exists() else None) == before, "the database was touched"


def test_there_are_at_least_25_cases():
    assert len(CASES) >= 25


@pytest.mark.parametrize("args", [["search", "--size", "64"], ["sweep", "--size", "64"],
                                  ["search", "--op", "transpose", "--rows", "64", "--cols", "64"],
                                  ["tune-shapes", "smem_pad", "--dims-range", "rows=64:128,cols=64:128"],
                                  ["tune", "app", "--budget", "1m"]])
def test_an_empty_db_is_refused_by_its_flag_before_anything_is_opened(args, tmp_path, monkeypatch):
    """Issue 50: ``--db`` is checked beside the search's options, no longer as one of them, and
    said by its flag as every command says it (an empty one would silently mean the default
    database)."""
    monkeypatch.setenv("AUTOTUNE_DB", f"sqlite:///{tmp_path / 'default.db'}")
    result = runner.invoke(app, [*args, "--db", ""])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [l for l in result.output.splitlines() if l.startswith("error:")]
    assert lines == ["error: --db '' is not allowed; it is empty; give a SQLAlchemy URL (sqlite:///PATH, "
                     "postgresql+psycopg://USER@HOST/DB)"], result.output
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# Issue 25 (bad input, round three): users' files, expressions, device files, databases of
# other applications, library arguments. Every case: exit 2, one `error:` line, no traceback,
# and nothing written anywhere under tmp_path (every file's bytes compared) nor to /dev/full.

from kernel_files import catalog_doc, toml  # noqa: E402

DEEP = "-" * 5000 + "1"


def kernel_file(change=None, raw=None, extra=None):
    """A setup writing ``{tmp}/k.toml`` (smem_pad's document as ``change(doc)`` left it, or the
    TOML text ``raw(text)`` returns) and the files of ``extra`` ({name: bytes})."""
    def setup(tmp, db, mp):
        doc = catalog_doc("smem_pad")
        doc["name"] = "mine"
        if change:
            change(doc, tmp)
        text = toml(doc)
        (tmp / "k.toml").write_bytes(raw(text).encode() if raw else text.encode())
        for name, data in (extra or {}).items():
            (tmp / name).write_bytes(data)
    return setup


def _set(path, value):
    def change(doc, tmp):
        *parents, last = path
        node = doc
        for p in parents:
            node = node[p]
        node[last] = value(tmp) if callable(value) else value
    return change


def _include(header):
    cu = b'#include "' + header.encode() + b'"\n' + (Path(catalog_doc("smem_pad")["source"]).read_bytes())
    return kernel_file(_set(("source",), "k.cu"), extra={"k.cu": cu})


def _reference_module(tmp, db, mp):
    kernel_file(_set(("check", "reference"), "ref.py:double"),
                extra={"ref.py": b"raise RuntimeError('my module is broken')\n"})(tmp, db, mp)


def foreign_db(tmp, db, mp):
    con = sqlite3.connect(db)
    con.execute("create table customers (id integer primary key, name text)")
    con.execute("insert into customers values (1, 'ada')")
    con.commit()
    con.close()


def two_revisions(tmp, db, mp):
    tuned_db(tmp, db, mp)
    con = sqlite3.connect(db)
    con.execute("insert into autotune_alembic_version values ('0003')")
    con.commit()
    con.close()


def fake_gpu(tmp, db, mp):
    from workers import fake_device, fake_open_benchmark

    mp.setattr(autotune.measure.benchmark, "open_benchmark", fake_open_benchmark)
    mp.setattr(autotune.measure.device, "query_device", fake_device)


def exported(tmp, db, mp):
    tuned_db(tmp, db, mp)
    from autotune.interchange.share import export_results

    source = open_results(f"sqlite:///{tmp / 'source.db'}")
    try:
        export_results(source, tmp / "in.json")
    finally:  # closed here, not whenever it is collected: its close checkpoints the WAL into source.db,
        source.close()  # which during the command under test would read as "a file was written"


def overflowing_import(tmp, db, mp):
    import json

    exported(tmp, db, mp)
    data = json.loads((tmp / "in.json").read_text())
    data["exported_at"] = "9999-12-31T23:59:59-23:59"
    (tmp / "in.json").write_text(json.dumps(data))


def huge_space(constraint):
    big = ('kernel = "smem_pad"\nconstraints = ["' + constraint + '"]\n[params]\n'
           f"TILE_DIM = {list(range(1, 2001))}\nBLOCK_ROWS = {list(range(1, 2001))}\nIPAD = [0, 1, 2, 3, 4]\n"
           "DIAGONAL = [0, 1, 2, 3, 4]\n")
    return space_file(big)


K, DB = ["check", "{tmp}/k.toml"], ["--db", "sqlite:///{db}"]
ROUND3 = [  # (id, setup, args, message)
    # 1. unreadable kernel files and sources
    ("kernel file latin-1", lambda tmp, db, mp: (tmp / "k.toml").write_bytes("name = 'caf\xe9'".encode("latin-1")),
     K, "cannot read kernel file {tmp}/k.toml: not UTF-8 text (byte 11)"),
    ("kernel file latin-1 (best)", lambda tmp, db, mp: (tmp / "k.toml").write_bytes(b"name = 'caf\xe9'"),
     ["best", "--kernel", "{tmp}/k.toml", "--size", "64", *DB], "not UTF-8 text"),
    ("source binary", kernel_file(_set(("source",), "k.cu"), extra={"k.cu": bytes(range(256))}), K,
     "kernel file {tmp}/k.toml: source: cannot read source {tmp}/k.cu: not UTF-8 text (byte 128)"),
    ("source with NUL bytes", kernel_file(_set(("source",), "k.cu"), extra={"k.cu": b"__global__\0void k();"}), K,
     "source {tmp}/k.cu: a binary file (it holds NUL bytes)"),
    ("source is a folder", kernel_file(_set(("source",), lambda tmp: (tmp / "sub").mkdir() or "sub")), K,
     "cannot read source {tmp}/sub: a folder; give a regular file"),
    ("source is a device", kernel_file(_set(("source",), "/dev/zero")), K,
     "cannot read source /dev/zero: a character device; give a regular file"),
    ("source missing", kernel_file(_set(("source",), "nope.cu")), K, "cannot read source {tmp}/nope.cu: no such file"),
    ("include missing", _include("nothere.cuh"), K,
     '#include "nothere.cuh" of k.cu: {tmp}/nothere.cuh does not exist'),
    ("include missing (best)", _include("nothere.cuh"), ["best", "--kernel", "{tmp}/k.toml", "--size", "64", *DB],
     "nothere.cuh does not exist"),
    ("include binary", lambda tmp, db, mp: (_include("bin.cuh")(tmp, db, mp), (tmp / "bin.cuh").write_bytes(b"\xff")),
     K, 'cannot read #include "bin.cuh" of k.cu {tmp}/bin.cuh: not UTF-8 text'),
    ("space file not UTF-8", lambda tmp, db, mp: (tmp / "space.toml").write_bytes(b"kernel = '\xff'"),
     ["check", "smem_pad", "--space", "{tmp}/space.toml"], "search space {tmp}/space.toml: not UTF-8 text"),
    # 2, 3. deep expressions and huge values
    ("deep unary minus", kernel_file(_set(("launch", "grid"), [DEEP, 1, 1])), K, "is too long; allowed: at most 1000"),
    ("deep not", kernel_file(_set(("space", "constraints"), ["not " * 3000 + "1"])), K, "is too long"),
    ("sum of 100,000 terms", kernel_file(_set(("objective", "bytes"), "+".join(["rows"] * 100_000))), K,
     "is too long"),
    ("nested parentheses", kernel_file(_set(("launch", "grid"), ["(" * 5000 + "1" + ")" * 5000, 1, 1])), K,
     "is too long"),
    ("nested 300 deep", kernel_file(_set(("launch", "grid"), ["-" * 300 + "rows", 1, 1])), K,
     "is nested too deep; allowed: at most 100 levels"),
    ("huge grid", kernel_file(lambda doc, tmp: (_set(("launch", "grid"), ["*".join(["2**60"] * 20), 1, 1])(doc, tmp),
                                                doc["space"].update(params={"TILE_DIM": [32], "BLOCK_ROWS": [8],
                                                                            "IPAD": [1], "DIAGONAL": [0]}))),
     K + ["--dtype", "float32"], "1 of 1 builds of mine failed"),
    # 4. references that cannot be imported
    ("reference :double", kernel_file(_set(("check", "reference"), ":double")), K,
     "cannot load ':double': give module:function"),
    ("reference ..:double", kernel_file(_set(("check", "reference"), "..:double")), K,
     "cannot load '..:double': give module:function"),
    ("reference raises", _reference_module, K,
     "cannot load 'ref.py:double': importing it raised RuntimeError: my module is broken"),
    ("reference is a folder", kernel_file(_set(("check", "reference"), lambda tmp: (tmp / "r.py").mkdir() or "r.py:f")),
     K, "cannot read reference module {tmp}/r.py: a folder"),
    # 5. import times out of range once in UTC
    ("import exported_at overflows", overflowing_import, ["import", "{tmp}/in.json", *DB],
     "exported_at is '9999-12-31T23:59:59-23:59', out of range once in UTC"),
    # 6. broken URLs and version tables
    ("postgres port abc", None, ["best", "--size", "64", "--db", "postgresql+psycopg://u:s3cret@h:abc/db"],
     "invalid database URL 'postgresql+psycopg://u:***@h:abc/db': the port is not a number"),
    ("two revisions (best)", two_revisions, ["best", "--size", "64", *DB], "holds several schema revisions"),
    ("two revisions (db upgrade)", two_revisions, ["db", "upgrade", *DB], "holds several schema revisions"),
    # 7. another application's database
    ("foreign db (best)", foreign_db, ["best", "--size", "64", *DB], "is not an autotune database"),
    ("foreign db (list)", foreign_db, ["list", *DB], "it holds other tables (customers)"),
    ("foreign db (db upgrade)", foreign_db, ["db", "upgrade", *DB], "is not an autotune database"),
    ("foreign db (import)", lambda tmp, db, mp: (exported(tmp, db, mp), db.unlink(), foreign_db(tmp, db, mp)),
     ["import", "{tmp}/in.json", *DB], "is not an autotune database"),
    ("foreign db (search)", lambda tmp, db, mp: (fake_gpu(tmp, db, mp), foreign_db(tmp, db, mp)),
     ["search", "--kernel", "smem_pad", "--size", "64", "--trials", "1", *DB], "is not an autotune database"),
    # 8. exporting onto what is not a regular file
    ("export --out /dev/full", tuned_db, ["export", "--out", "/dev/full", *DB],
     "cannot write /dev/full (--out): it is a character device"),
    ("export --header /dev/full", tuned_db, ["export", "--header", "/dev/full", "--kernel", "smem_pad", *DB],
     "cannot write /dev/full (--header): it is a character device"),
    ("export --out a FIFO", lambda tmp, db, mp: (tuned_db(tmp, db, mp), os.mkfifo(tmp / "fifo")),
     ["export", "--out", "{tmp}/fifo", *DB], "cannot write {tmp}/fifo (--out): it is a FIFO"),
    # 9. names with control characters
    ("kernel name with a newline", kernel_file(_set(("name",), "x\n")), K,
     "name: 'x\\n' is not allowed; give a name of letters, digits and _"),
    ("dim name with a newline", kernel_file(_set(("problem", "dims"), ["rows\n", "cols"])), K,
     "[problem] dims: 'rows\\n' is not allowed"),
    ("macro name with a newline", kernel_file(raw=lambda t: t.replace("UNROLL = 1", '"UNROLL\\n" = 1')), K,
     "[macros]: 'UNROLL\\n' is not allowed"),
    ("--dims name with a control character", None, ["best", "--kernel", "smem_pad", "--dims", "rows\a=5,cols=5", *DB],
     "--dims 'rows\\x07=5' is not allowed"),
    # 10. NaN and infinite tolerances
    ("atol nan", kernel_file(raw=lambda t: t.replace('compare = "exact"', 'compare = "tolerance"\natol = nan')), K,
     "[check] atol: nan is not allowed; give a finite number >= 0"),
    ("rtol inf", kernel_file(raw=lambda t: t.replace('compare = "exact"', 'compare = "tolerance"\nrtol = inf')), K,
     "[check] rtol: inf is not allowed; give a finite number >= 0"),
    # 11. spaces of 10^8 raw combinations
    ("empty space of 10^8", huge_space("TILE_DIM * BLOCK_ROWS * IPAD * DIAGONAL < 0"),
     ["check", "smem_pad", "--space", "{tmp}/space.toml"], "was found in 2,000,000 checks (100,000,000 combinations"),
    ("empty space of 10^8 --sample", huge_space("TILE_DIM * BLOCK_ROWS * IPAD * DIAGONAL < 0"),
     ["check", "smem_pad", "--space", "{tmp}/space.toml", "--sample", "5"], "was found in 2,000,000 checks"),
    ("space of 10^8 without a valid value", huge_space("TILE_DIM > 5000"),
     ["check", "smem_pad", "--space", "{tmp}/space.toml", "--sample", "5"], "satisfies its constraints"),
    ("large space built whole", space_file(LARGE_SPACE), ["check", "smem_pad", "--space", "{tmp}/space.toml"],
     "has more than 100,000 valid configs (100,000,000 combinations before its constraints); building them all "
     "is not allowed: give --sample N"),
    # 12. a dim given twice
    ("dim twice", None, ["best", "--kernel", "smem_pad", "--dims", "rows=5,rows=1024,cols=1024", *DB],
     "dim rows is given twice (--dims rows=5 and rows=1024)"),
    # 13. options a library would refuse
    ("seed -1", fake_gpu, S + ["--size", "64", "--seed", "-1", *DB], "--seed -1 is not allowed; give an integer 0..4294967295"),
    ("seed 2**40", fake_gpu, S + ["--size", "64", "--seed", str(2**40), *DB], "--seed 1099511627776 is not allowed"),
    ("timeout nan", fake_gpu, S + ["--size", "64", "--timeout", "nan", *DB], "--timeout nan is not allowed"),
    ("timeout inf", fake_gpu, S + ["--size", "64", "--timeout", "inf", *DB], "--timeout inf is not allowed"),
    # issue 28 item 8: check the environment before the database
    ("bench without a CUDA backend", no_pycuda, ["bench", "--size", "64", *DB], NO_BACKEND),
]


def _everything(tmp):
    """Every file under ``tmp`` with its bytes (a FIFO by name), and /dev/full's identity."""
    files = sorted((str(p.relative_to(tmp)), p.read_bytes() if p.is_file() else p.is_dir())
                   for p in tmp.rglob("*")  # a reader of a WAL database may add the -shm index and an empty -wal
                   if not p.name.endswith("-shm") and not (p.name.endswith("-wal") and not p.stat().st_size)
                   and "cubins" not in p.parts)  # nvcc's cache (AUTOTUNE_CACHE_DIR): only "huge grid" builds
    return files, os.stat("/dev/full").st_rdev


@pytest.mark.parametrize(("setup", "args", "message"), [c[1:] for c in ROUND3], ids=[c[0] for c in ROUND3])
def test_bad_input_round_three(setup, args, message, tmp_path, monkeypatch):
    import time

    db = tmp_path / "db.sqlite"
    if setup:
        setup(tmp_path, db, monkeypatch)
    before = _everything(tmp_path)
    started = time.monotonic()
    result = runner.invoke(app, [a.format(tmp=tmp_path, db=db) for a in args])
    output = result.output
    assert result.exit_code == 2, output
    assert "Traceback" not in output and result.exception is None or isinstance(result.exception, SystemExit), output
    lines = output.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and len(errors[0]) < 400, output
    others = [line for line in lines if not line.startswith("error:")]  # check: its header, each failed build
    assert all("kernel file ok" in line or line.startswith(("compiled ", "  failed:"))
               for line in others) and (not others or args[0] == "check"), output
    if message:
        assert message.format(tmp=tmp_path) in errors[0], output
    assert "s3cret" not in output
    assert _everything(tmp_path) == before, "a file was written"
    assert time.monotonic() - started < 30


def test_round_three_covers_every_cause():
    assert len(ROUND3) >= 45


@pytest.mark.parametrize("args", [
    ["export", "--out", "{tmp}/tuned.json"],
    ["export", "--header", "{tmp}/tuned.h", "--kernel", "smem_pad"],
    ["export", "--t4", "{tmp}/trials.json"],
    ["export", "--kt-cache", "{tmp}/cache.json", "--kernel", "smem_pad"],
    ["report", "--out", "{tmp}/plots"],
], ids=["out", "header", "t4", "kt-cache", "report"])
def test_export_and_report_of_a_missing_database_create_nothing(args, tmp_path):
    """Issue 28 item 8: a command that reads stored results and fails on a missing database
    says so in one line, exit 2, and leaves no file behind (no database, no output)."""
    db = tmp_path / "missing.db"
    result = runner.invoke(app, [a.format(tmp=tmp_path) for a in args] + ["--db", f"sqlite:///{db}"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: nothing is tuned yet; run: autotune search "), result.output
    assert f"(no results database at {db} yet)" in lines[0]
    assert sorted(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# Issue 41 (bad input, round four): T4 and Kernel Tuner files, export filters, stale results.
# Every case as round three's: exit 2, one `error:` line, no traceback, every file under tmp_path
# byte for byte the same (the database included) and /dev/full untouched.

def _tuned_store(path, **changes):
    """A database at ``path`` holding one searched key of smem_pad (ok and failed trials)."""
    from stored_results import configs, key, tune

    store = open_results(f"sqlite:///{path}")
    try:
        c = configs()
        tune(store, key(**changes), [(c[0], 2500.0), (c[1], 2700.0)])
    finally:
        store.close()  # the WAL folded in: the bytes compared are the whole database


def stale_db(tmp, db, mp):
    """The database holds one key, tuned with a kernel source that has changed since."""
    _tuned_store(db, source_hash="0" * 64)


def t4_file(edit=None, text=None):
    """A setup writing ``{tmp}/t4.json``: a T4 export of one key, ``edit(doc)`` applied, or the
    raw text ``text(original)`` returns; and an empty, up-to-date database."""
    def setup(tmp, db, mp):
        import json

        from autotune.interchange.t4 import export_t4

        _tuned_store(tmp / "source.db")
        source = open_results(f"sqlite:///{tmp / 'source.db'}")
        try:
            export_t4(source, tmp / "t4.json")
        finally:
            source.close()
        raw = (tmp / "t4.json").read_text()
        if edit is not None:
            doc = json.loads(raw)
            edit(doc)
            raw = json.dumps(doc)
        if text is not None:
            raw = text(raw)
        (tmp / "t4.json").write_bytes(raw if isinstance(raw, bytes) else raw.encode())
        tuned_db(tmp, db, mp)
    return setup


def _big_t4(tmp, db, mp):
    """A T4 document padded with spaces past 16 MiB: refused by its size, never parsed."""
    import autotune.interchange.share

    head = '{"schema_version": "1.0.0", "metadata": {}, "results": []}'
    (tmp / "t4.json").write_text(head + " " * (17 * 1024 * 1024))
    tuned_db(tmp, db, mp)

    def parsed(*args, **kwargs):
        raise AssertionError("a file over 16 MiB was parsed")
    mp.setattr(autotune.interchange.share.json, "loads", parsed)


def _measurement(field, value):
    def edit(doc):
        doc["results"][0]["measurements"][0][field] = value
    return edit


I = ["import", "{tmp}/t4.json", *DB]
KT = ["export", "--kt-cache", "{tmp}/kt.json", "--kernel", "smem_pad", *DB]
ROUND4 = [  # (id, setup, args, message)
    # 1. a T4 file is read by the one reader of users' files, once
    ("import a T4 file over 16 MiB", _big_t4, I, "bytes; allowed: at most 16777216 bytes"),
    ("import /dev/zero", tuned_db, ["import", "/dev/zero", *DB],
     "cannot read /dev/zero: a character device; give a regular file"),
    ("import a FIFO", lambda tmp, db, mp: (tuned_db(tmp, db, mp), os.mkfifo(tmp / "fifo")),
     ["import", "{tmp}/fifo", *DB], "cannot read {tmp}/fifo: a FIFO; give a regular file"),
    ("import a T4 file with NaN", t4_file(text=lambda t: t.replace('"value": ', '"value": NaN, "x": ', 1)), I,
     "{tmp}/t4.json is not valid JSON: NaN is not a number JSON allows"),
    ("import a T4 file with Infinity", t4_file(text=lambda t: t.replace('"value": ', '"value": -Infinity, "x": ', 1)),
     I, "-Infinity is not a number JSON allows"),
    ("import a truncated T4 file", t4_file(text=lambda t: t[: len(t) // 2]), I, "{tmp}/t4.json is not valid JSON"),
    ("import an empty file", t4_file(text=lambda t: ""), I, "{tmp}/t4.json is not valid JSON"),
    ("import a T4 file nested 100,000 deep", t4_file(text=lambda t: "[" * 100_000 + "]" * 100_000), I,
     "{tmp}/t4.json is not valid JSON"),
    ("import a number of 5000 digits", t4_file(text=lambda t: t.replace('"value": ', '"value": ' + "9" * 5000 + ', "x": ', 1)),
     I, "{tmp}/t4.json is not valid JSON"),
    ("import a T4 file that is not UTF-8", t4_file(text=lambda t: t.encode().replace(b'"1.0.0"', b'"1.0.0\xff"', 1)),
     I,
     "cannot read {tmp}/t4.json: not UTF-8 text (byte"),
    ("import T4 of another version", t4_file(lambda d: d.update(schema_version="2.0.0")), I,
     "schema_version is a string \"2.0.0\"; autotune reads T4 1.0.0"),
    ("import T4 whose version is a number", t4_file(lambda d: d.update(schema_version=1)), I,
     "is not an autotune results file (format is None, expected 'autotune-results') nor a T4 file"),
    ("import T4 whose results are an object", t4_file(lambda d: d.update(results={})), I,
     "is not an autotune results file"),
    ("import T4 with a measurement named by a list", t4_file(_measurement("name", ["time"])), I,
     "results[0].measurements[0].name is a list; it must be a string"),
    ("import T4 with a time of 0", t4_file(_measurement("value", 0)), I,
     "results[0].measurements[0].value is 0; it must be a positive number"),
    ("import T4 with a boolean time", t4_file(_measurement("value", True)), I,
     "results[0].measurements[0].value is a boolean; it must be a positive number"),
    ("import T4 with a key index that is a string", t4_file(lambda d: d["results"][0]["autotune"].update(key="0")), I,
     "results[0].autotune.key is a string"),
    ("import T4 with a key index out of range", t4_file(lambda d: d["results"][0]["autotune"].update(key=2**70)), I,
     "results[0].autotune.key is 1180591620717411303424; it must be an integer 0..0"),
    ("import T4 with a float macro", t4_file(lambda d: d["results"][0]["configuration"].update(TILE_DIM=32.0)), I,
     "results[0].configuration"),
    ("import T4 with a boolean macro", t4_file(lambda d: d["results"][0]["configuration"].update(IPAD=True)), I,
     "results[0].configuration"),
    ("import T4 with keys that are not a list", t4_file(lambda d: d["metadata"]["autotune"].update(keys="k")), I,
     "metadata.autotune.keys is a string \"k\"; it must be a list"),
    ("import T4 with a key of dims that do not fit",
     t4_file(lambda d: d["metadata"]["autotune"]["keys"][0].update(dims="n=5")), I,
     "metadata.autotune.keys[0].dims"),
    ("import T4 with a timestamp of 0", t4_file(lambda d: d["results"][0].update(timestamp=0)), I,
     "results[0].timestamp is an integer 0; it must be a string"),
    ("import T4 whose autotune part is a list", t4_file(lambda d: d["results"][0].update(autotune=[])), I,
     "results[0].autotune is a list; it must be an object"),
    ("import T4 with a key index false", t4_file(lambda d: d["results"][0]["autotune"].update(key=False)), I,
     "results[0].autotune.key is a boolean"),
    ("import T4 with a status of empty text", t4_file(lambda d: d["results"][0]["autotune"].update(status="")), I,
     "results[0].autotune.status"),
    ("import T4 with a timestamp without a zone", t4_file(lambda d: d["results"][0].update(timestamp="2026-01-01T00:00")),
     I, "results[0].timestamp is '2026-01-01T00:00', without a time zone"),
    # 3. export --dtype is checked before anything is opened
    ("export --t4 --dtype float17", tuned_db, ["export", "--t4", "{tmp}/t4out.json", "--dtype", "float17", *DB],
     "unknown dtype 'float17'; allowed: int8, uint8"),
    ("export --kt-cache --dtype float17", tuned_db, KT + ["--dtype", "float17"], "unknown dtype 'float17'"),
    ("export --kt-cache --dtype ''", tuned_db, KT + ["--dtype", ""], "unknown dtype ''"),
    ("export --t4 --dtype uint32", tuned_db, ["export", "--t4", "{tmp}/t4out.json", "--dtype", "uint32", *DB],
     "dtype 'uint32' is not a problem dtype; allowed: int8"),
    ("export --kt-cache of no stored key", tuned_db, KT + ["--dtype", "float64"],
     "no stored key of smem_pad (dtype float64) matches"),
    # 14. stale results: named as stale, with why, and the option that includes them
    ("export --kt-cache of a stale key", stale_db, KT,
     "no current stored key of smem_pad matches: left out 1 stale result (1 kernel source changed); "
     "--include-stale writes them"),
    ("best of a stale key", stale_db, ["best", "--size", "1024", "--kernel", "smem_pad", *DB],
     "nothing current is tuned for smem_pad 1024x1024 float32: left out 1 stale result (1 kernel source changed); "
     "--include-stale shows them"),
    ("report of a stale key", stale_db, ["report", "--out", "{tmp}/plots", "--size", "1024", *DB],
     "left out 1 stale result (1 kernel source changed); --include-stale plots them"),
]


@pytest.mark.parametrize(("setup", "args", "message"), [c[1:] for c in ROUND4], ids=[c[0] for c in ROUND4])
def test_bad_input_round_four(setup, args, message, tmp_path, monkeypatch):
    db = tmp_path / "db.sqlite"
    setup(tmp_path, db, monkeypatch)
    before = _everything(tmp_path)
    result = runner.invoke(app, [a.format(tmp=tmp_path, db=db) for a in args])
    output = result.output
    assert result.exit_code == 2, output
    assert "Traceback" not in output and (result.exception is None or isinstance(result.exception, SystemExit)), output
    errors = [line for line in output.strip().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and len(errors[0]) < 600, output
    assert message.format(tmp=tmp_path) in errors[0], output
    assert _everything(tmp_path) == before, "a file was written"
