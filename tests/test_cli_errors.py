"""Every kind of bad input: one clear line naming the value and what is allowed, exit code 2,
no traceback, and the database untouched (not created, or byte for byte the same)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from dataclasses import dataclass, field
from typing import Callable

import pytest
from typer.testing import CliRunner

import autotune.measure.benchmark
import autotune.measure.device
import autotune.store.schema
from autotune.cli import app
from autotune.store.repository import Store

runner = CliRunner()


class FakeDriver:
    """Stands in for pycuda.driver with ``count`` devices (count 0: no GPU)."""

    def __init__(self, count: int) -> None:
        self.Device = type("Device", (), {"count": staticmethod(lambda: count)})


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
    mp.setitem(sys.modules, "pycuda", None)  # "import pycuda.driver" raises ImportError
    mp.setitem(sys.modules, "pycuda.driver", None)


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
    Store(f"sqlite:///{db}").close()  # an up-to-date, empty database, WAL checkpointed


def not_a_database(tmp, db, mp):
    db.write_bytes(b"this is a text file, not SQLite\n" * 100)


def newer_schema(tmp, db, mp):
    Store(f"sqlite:///{db}").close()
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
    Case(S + ["--size", 64], "PyCUDA is not installed", no_pycuda),
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
         "--strategy 'annealing' is not known; allowed: tpe, random, grid, gp, cmaes, transfer"),
    Case(S + ["--size", 64, "--sampler", "annealing"], "--strategy 'annealing' is not known"),  # the old name
    Case(S + ["--size", 64, "--strategy", "tpe", "--sampler", "grid"], "--sampler grid (the old name of "
         "--strategy) and --strategy tpe disagree; give --strategy only"),
    Case(S + ["--size", 64, "--batch", 0], "--batch 0 is not allowed; give 1..1024 configs"),
    Case(S + ["--size", 64, "--top-k", 0], "--top-k 0 is not allowed; give 1 or more"),
    Case(S + ["--size", 64, "--repeats", 5], "--repeats 5 is not allowed; give 20 or more"),
    Case(S + ["--size", 64, "--bogus"], "No such option: --bogus"),
    Case(["best", "--size", 64], "the folder of database {tmp}/missing/db.sqlite does not exist", db="missing/db.sqlite"),
    Case(["best", "--size", 64], "the folder of database {tmp}/ro/db.sqlite is read-only", read_only_folder, db="ro/db.sqlite"),
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
