"""The library's public functions check every argument's type and range first (issue 41, items
5-10 and 13; autotune/kernel/arguments.py): ``tune``, ``lookup``, ``compiled``, ``launcher``,
``transpose``, ``load_kernel`` and ``SearchOptions`` each called with wrong types and wrong values
of every argument. Each call must raise ``InvalidInputError`` naming the argument, before any file
is read, any database opened or any GPU asked: the test seals all three (a read, an opening or a
query raises AssertionError, which is not an InvalidInputError), so no GPU is needed."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import autotune
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.search.options import MeasureOptions, RetimeOptions

NAN, INF = float("nan"), float("inf")


class Sealed(AssertionError):
    """Something was read, opened or asked of a GPU before the arguments were checked."""


@pytest.fixture
def sealed(monkeypatch, tmp_path):
    """No file is read (the one reader), no database opened (the door), no GPU or CUDA context
    asked; the default database is a file that must not appear."""
    import autotune.base.files
    import autotune.measure.device
    import autotune.runtime.driver
    import autotune.store.opening

    def refuse(what):
        def call(*args, **kwargs):
            raise Sealed(f"{what} before the arguments were checked: {args!r:.200}")
        return call

    from autotune.kernel.catalog import KERNELS

    list(KERNELS)  # the catalog is package data, read once before the seal: a kernel name resolves
    monkeypatch.setattr(autotune.base.files, "read_bytes", refuse("a file was read"))
    for name in ("open_results", "open_store", "open_reader", "open_existing"):
        monkeypatch.setattr(autotune.store.opening, name, refuse("the database was opened"))
    for name in ("query_device", "current_device", "cuda_driver", "nvcc_version"):
        monkeypatch.setattr(autotune.measure.device, name, refuse("the GPU was asked"))
    monkeypatch.setattr(autotune.runtime.driver, "current_context", refuse("a CUDA context was asked"))
    db = tmp_path / "default.db"
    yield
    assert not db.exists(), "a database was created"


# --- objects that are not what they claim ----------------------------------------------------

class CAI:
    """An object exporting ``interface`` as its ``__cuda_array_interface__``."""

    def __init__(self, interface) -> None:
        self.interface = interface

    @property
    def __cuda_array_interface__(self):
        if isinstance(self.interface, Exception):
            raise self.interface
        return self.interface

    def __repr__(self) -> str:
        return "CAI(...)"


GOOD = {"shape": (64, 64), "typestr": "<f4", "data": (0x10000, False), "strides": None, "version": 3}


def cai(**changes):
    interface = {**GOOD, **changes}
    return CAI({k: v for k, v in interface.items() if v is not ...})


BAD_ARRAYS = [  # (array, what the message says) for the "a" of transpose and the launcher's arrays
    (None, "is not a GPU array"), (5, "is not a GPU array"), ("x", "is not a GPU array"),
    ([[1.0, 2.0]], "is not a GPU array"), (np.zeros((4, 4), np.float32), "is not a GPU array"),
    (CAI(["shape"]), "__cuda_array_interface__ is ['shape']"),
    (CAI(RuntimeError("cannot export")), "reading its __cuda_array_interface__ raised RuntimeError"),
    (cai(data=...), "['data'] is '<missing>'"), (cai(data=None), "['data'] is None"),
    (cai(data=(0x10000,)), "['data']"), (cai(data=("0x10000", False)), "['data']"),
    (cai(data=(0x10000, "no")), "['data']"), (cai(data=(0, False)), "a pointer 1..2**64-1"),
    (cai(data=(-8, False)), "['data']"), (cai(data=(2**70, False)), "['data']"),
    (cai(shape=...), "['shape'] is '<missing>'"), (cai(shape=64), "['shape'] is 64"),
    (cai(shape="64x64"), "['shape']"), (cai(shape=(64, -1)), "['shape']"), (cai(shape=(64.0, 64)), "['shape']"),
    (cai(shape=(True, 64)), "['shape']"), (cai(shape=(1,) * 65), "['shape']"),
    (cai(typestr=...), "['typestr'] is '<missing>'"), (cai(typestr=4), "['typestr'] is 4"),
    (cai(typestr="<q17"), "['typestr']"), (cai(typestr=None), "['typestr']"), (cai(typestr="|O"), "['typestr']"),
    (cai(strides=(4,)), "['strides']"), (cai(strides="C"), "['strides']"), (cai(strides=(256.0, 4.0)), "['strides']"),
    (cai(mask=object()), "is a masked array"), (cai(version="3"), "['version']"),
    (cai(strides=(2**62, 4)), "fits the 64-bit address space"), (cai(shape=(2**40, 2**40)), "fits the 64-bit"),
]
BAD_KERNELS = [None, 42, 4.2, True, b"smem_pad", "", "   ", "smem\x00pad", "smem_pad\n", ["smem_pad"],
               {"name": "smem_pad"}, "k" * 5000 + ".toml", object()]
BAD_DIMS = [None, 5, 1.5, True, "ab", b"ab", {64, 128}, (x for x in (64, 64)), (), {}, [True, 64], (64.0, 64),
            ("64", "64"), (64, None), {"rows": -1, "cols": 64}, {"rows": 2**40, "cols": 64},
            {"rows": NAN, "cols": 64}, {"rows": True, "cols": 64}, {"": 64}, {1: 64}, (1,) * 17]
BAD_DTYPES = [None, 5, 1.5, True, "", "x" * 100, [], {"name": "float32"}, object(), b"float32"]
BAD_DBS = ["", "   ", 5, True, b"sqlite:///x.db", "sqlite:///a\x00b.db", ["sqlite://"], "sqlite:///" + "x" * 5000]
BAD_ORDINALS = [-1, True, False, 1.5, 0.0, "0", [0], 2**40, object()]


def _dims_named(value) -> str:
    """What a refusal of ``value`` as dims names: the bad dim (``rows=-1``), else ``dims``."""
    return "rows=" if isinstance(value, dict) and "rows" in value else "dims"


def expect(call, message: str) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert message in str(caught.value), f"{message!r} not in {str(caught.value)!r}"
    assert len(str(caught.value)) < 600 and "\n" not in str(caught.value)
    return caught.value


DIMS, DEVICE = (64, 64), None  # DEVICE: set per test to the conftest DeviceInfo


def table():
    """(function, argument, value, what the message names) for every public function."""
    cases = []
    add = cases.append
    # tune(kernel, dims, dtype, *, device, options, on_start, on_trial, on_report, **fields)
    for v in BAD_KERNELS:
        add(("tune", "kernel", v, "kernel"))
    for v in BAD_DIMS:
        add(("tune", "dims", v, _dims_named(v)))
    for v in BAD_DTYPES:
        add(("tune", "dtype", v, "dtype"))
    for v in [o for o in BAD_ORDINALS if o != [0]] + [[], [0, 0], [0, -1], [True], (0, "1")]:
        add(("tune", "device", v, "device"))  # (a list of ordinals is a multi-GPU tune)
    for v in [5, {"trials": 5}, "fast", [], True, 1.5]:
        add(("tune", "options", v, "options"))
    for name in ("on_start", "on_trial", "on_report"):
        for v in [5, "print", True, [], 1.5]:
            add(("tune", name, v, name))
    for v in [5, "64x128", {"rows": 64, "cols": 128}, [{"rows": 0, "cols": 64}], [(64,)], [{"rows": 64}], True]:
        add(("tune", "also", v, "also"))
    options = {
        "trials": [0, -1, True, 1.5, "10", 2**40, NAN, None],
        "timeout": [0, -1, NAN, INF, True, "60", 1e300, []],
        "seed": [-1, True, 2**40, 1.5, "1", NAN],
        "strategy": [5, "annealing", True, [], "", "tpe\n"],  # (None: the objective's default strategy)
        "batch": [0, True, 2000, 1.5, "4", -1],
        "resume": ["no", 1, 0, "False", 0.0, [], "yes"],
        "space": ["", 5, True, "a\x00b.toml", [], "   ", b"space.toml"],
        "repeats": [19, True, 10**9, 1.5, None, "50"],
        "top_k": [0, True, 10**6, 1.5, "5", -3],
        "rounds": [0, True, 10**6, 1.5, "5", None],
        "trial_timeout": [0, NAN, INF, -1, True, "5", 1e300],
        "queue": [5, [], "TILE_DIM=32", (1, 2), ({"TILE_DIM": 32},), None, (None,)],
        "strategy_options": [5, "startup=3", [("startup", 3)], {"bogus": 1}, {"startup": 0}, {3: 1}],
        "ci": ["x", -1, NAN, 1.0, True, INF, "0.01"],
        "ci_floor_us": [-1, NAN, INF, "0.5", True, 1e300],
        "min_samples": [0, -1, True, 1.5, "20", 10**9],
        "max_samples": [0, 5, True, 1.5, "200", 10**9],
        "objective": ["speed", 3, None, "", "time,time", "energy,time,edp", "energy,time", " time", ["time"],
                      ("time", "energy")],
        "energy": ["yes", 1, 0, "False", [], None],
        "measure": [5, {"repeats": 20}, "repeats=20", True, RetimeOptions(), []],
        "retime": [5, (3, 3), {"top_k": 3}, True, MeasureOptions(), []],
    }
    for name, values in options.items():
        for v in values:
            add(("tune", name, v, name))
            add(("SearchOptions", name, v, name))
    add(("tune", "bogus", 1, "unknown search option 'bogus'"))
    for v in BAD_DBS:  # beside the options, not one of them
        add(("tune", "db", v, "db"))
    add(("SearchOptions", "db", "sqlite:///x.db", "db 'sqlite:///x.db' is not allowed; the results database is no "
                                                  "search option since 0.4.0: give db= beside the options"))
    # lookup(kernel, dims, dtype, *, device, db)
    for v in BAD_KERNELS:
        add(("lookup", "kernel", v, "kernel"))
    for v in BAD_DIMS:
        add(("lookup", "dims", v, _dims_named(v)))
    for v in BAD_DTYPES:
        add(("lookup", "dtype", v, "dtype"))
    for v in BAD_ORDINALS:
        add(("lookup", "device", v, "device"))
    for v in BAD_DBS:
        add(("lookup", "db", v, "db"))
    for v in ["", "exact", "Dispatch", None, 5, True, ["dispatch"], {"dispatch": 1}]:
        add(("lookup", "shape_rung", v, "shape_rung"))
    # compiled(kernel, dims, dtype, *, db, default)
    for v in BAD_KERNELS:
        add(("compiled", "kernel", v, "kernel"))
    for v in BAD_DIMS:
        add(("compiled", "dims", v, _dims_named(v)))
    for v in BAD_DTYPES:
        add(("compiled", "dtype", v, "dtype"))
    for v in BAD_DBS:
        add(("compiled", "db", v, "db"))
    for v in [5, "TILE_DIM=32", {"TILE_DIM": 32}, True, ("smem_pad", {}), 1.5]:
        add(("compiled", "default", v, "default"))
    for v in ["", 5, True, "a\x00b", [], b"bundle", 1.5]:
        add(("compiled", "bundle", v, "bundle"))
    for v in ["yes", 1, 0, "same_arch", [], 1.5]:
        add(("compiled", "allow_same_arch", v, "allow_same_arch"))
    # launcher(kernel, dtype=None, *, db, dims, reset, bundle, allow_same_arch, tune)
    for v in BAD_KERNELS:
        add(("launcher", "kernel", v, "kernel"))
    for v in [5, 1.5, True, "", "x" * 100, [], object()]:
        add(("launcher", "dtype", v, "dtype"))
    for v in BAD_DBS:
        add(("launcher", "db", v, "db"))
    for v in [[1, 2], "ab", 5, (("n", 4),), {"n": True}, {"n": 0}, {"n": 1.5}, {1: 2}, {"n": "4"}, {"n": -4}]:
        add(("launcher", "dims", v, "dims" if not isinstance(v, dict) or 1 in v else "n="))
    for v in ["no", 1, None, "False", 0.0, []]:
        add(("launcher", "reset", v, "reset"))
    for v in ["", 5, True, "a\x00b", [], b"bundle", 1.5]:
        add(("launcher", "bundle", v, "bundle"))
    for v in ["yes", 1, 0, "same_arch", [], 1.5]:
        add(("launcher", "allow_same_arch", v, "allow_same_arch"))
    for v in ["fast", "", "QUICK", 1, True, ["quick"]]:
        add(("launcher", "tune", v, "tune"))
    # transpose(a, *, kernel, db, out, stream)
    for v, message in BAD_ARRAYS:
        add(("transpose", "a", v, message))
    for v in [42, "", True, b"smem_vec", ["smem_vec"], "smem\x00vec", 4.2]:
        add(("transpose", "kernel", v, "kernel"))
    for v in BAD_DBS:
        add(("transpose", "db", v, "db"))
    for v, message in BAD_ARRAYS[1:9]:  # (out=None is the default: a new array)
        add(("transpose", "out", v, message))
    for v in ["0", 1.5, True, -1, 2**70, object(), [0]]:
        add(("transpose", "stream", v, "stream"))
    # load_kernel(path)
    for v in [None, 42, 4.2, True, b"k.toml", "", "   ", "k\x00.toml", ["k.toml"], "k" * 5000]:
        add(("load_kernel", "path", v, "path"))
    return cases


def call_of(function: str, argument: str, value):
    """The call of ``function`` with every argument good but ``argument``, which is ``value``."""
    good = {"kernel": "smem_pad", "dims": DIMS, "dtype": "float32"}
    if function == "tune":
        args = {**good, "device": 0, "options": None, "on_start": None, "on_trial": None, "on_report": None}
        fields = {}
        if argument in args:
            args[argument] = value
        else:
            fields[argument] = value
        return lambda: autotune.tune(args.pop("kernel"), args.pop("dims"), args.pop("dtype"), **args, **fields)
    if function == "SearchOptions":
        return lambda: autotune.SearchOptions(**{argument: value})
    if function == "lookup":
        args = {**good, "device": DEVICE, "db": None, "shape_rung": "dispatch", argument: value}
        return lambda: autotune.lookup(args.pop("kernel"), args.pop("dims"), args.pop("dtype"), **args)
    if function == "compiled":
        args = {**good, "db": None, "default": None, argument: value}
        return lambda: autotune.compiled(args.pop("kernel"), args.pop("dims"), args.pop("dtype"), **args)
    if function == "launcher":
        args = {"kernel": "smem_pad", "dtype": None, "db": None, "dims": None, "reset": False, argument: value}
        return lambda: autotune.launcher(args.pop("kernel"), args.pop("dtype"), **args)
    if function == "transpose":
        args = {"a": cai(), "kernel": None, "db": None, "out": None, "stream": None, argument: value}
        return lambda: autotune.transpose(args.pop("a"), **args)
    if function == "load_kernel":
        return lambda: autotune.load_kernel(value)
    raise AssertionError(function)


CASES = table()


@pytest.mark.parametrize(("function", "argument", "value", "message"), CASES,
                         ids=[f"{f}-{a}-{i}" for i, (f, a, _, _) in enumerate(CASES)])
def test_every_argument_is_checked_first_naming_it(function, argument, value, message, sealed, device_info):
    global DEVICE
    DEVICE = device_info
    error = expect(call_of(function, argument, value), message)
    assert not isinstance(error, Sealed)


def test_the_table_has_five_wrong_values_of_every_argument():
    import inspect

    counts: dict[tuple[str, str], int] = {}
    for function, argument, _, _ in CASES:
        counts[function, argument] = counts.get((function, argument), 0) + 1
    signatures = {"tune": autotune.tune, "lookup": autotune.lookup, "compiled": autotune.compiled,
                  "launcher": autotune.launcher, "transpose": autotune.transpose, "load_kernel": autotune.load_kernel}
    for function, fn in signatures.items():
        for name, p in inspect.signature(fn).parameters.items():
            if p.kind is p.VAR_KEYWORD:
                continue
            assert counts.get((function, name), 0) >= 5, (function, name)
    for name in inspect.signature(autotune.SearchOptions).parameters:  # the fields, the groups' flat names
        assert counts.get(("SearchOptions", name), 0) >= 5, name
        assert counts.get(("tune", name), 0) >= 5, name


# --- what the table cannot say in one call ----------------------------------------------------

def test_a_cached_lookup_is_no_door_for_what_equals_it(monkeypatch, device_info, db_url):
    """True == 1, 0.0 == 0, 64.0 == 64 and "" (the default database) hash like the good values:
    a warm lookup must not answer them from the cache."""
    import autotune.runtime.lookup as lookup_module

    monkeypatch.setattr(lookup_module, "query_device", lambda ordinal: device_info)
    monkeypatch.setattr(lookup_module, "_devices", {})  # the fake GPU's info must not outlive this test
    autotune.clear_cache()
    monkeypatch.setenv("AUTOTUNE_DB", db_url)
    good = autotune.lookup("smem_pad", (64, 64), "float32", device=0)
    assert good.rung == "default" and autotune.lookup("smem_pad", (64, 64), "float32", device=0) is good
    assert autotune.lookup("smem_pad", (np.int64(64), 64), "float32", device=0).config == good.config
    expect(lambda: autotune.lookup("smem_pad", (64, 64), "float32", device=False), "device False is not allowed")
    expect(lambda: autotune.lookup("smem_pad", (64, 64), "float32", device=0.0), "device 0.0 is not allowed")
    expect(lambda: autotune.lookup("smem_pad", (64.0, 64), "float32", device=0), "dims")
    expect(lambda: autotune.lookup("smem_pad", {"rows": 64, "cols": True}, "float32", device=0), "cols=True")
    expect(lambda: autotune.lookup("smem_pad", (64, 64), "float32", device=0, db=""), "db '' is not allowed")
    autotune.clear_cache()


def test_lookup_names_a_bad_ordinal_not_a_missing_pycuda(monkeypatch):
    """Item 13: lookup(device=-1) said PyCUDA was missing; tune(device=-1) named the value."""
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    for call in (lambda: autotune.lookup("smem_pad", (64, 64), device=-1),
                 lambda: autotune.tune("smem_pad", (64, 64), device=-1)):
        expect(call, "device -1 is not allowed; give a CUDA ordinal 0, 1, ...")


def test_a_default_of_another_kernel_is_refused(monkeypatch):
    import autotune.runtime.driver

    monkeypatch.setattr(autotune.runtime.driver, "current_context", lambda: (_ for _ in ()).throw(Sealed("CUDA")))
    other = Config.of("copy_row", {"TILE_DIM": 32, "BLOCK_ROWS": 8})
    expect(lambda: autotune.compiled("smem_pad", (64, 64), default=other), "is not for kernel 'smem_pad'")


def test_a_launch_call_refuses_a_reset_that_is_not_a_bool(monkeypatch):
    f = autotune.launcher("examples/histogram/histogram.toml")
    for value in ("no", 1, "False", [], 0.0):
        expect(lambda: f(reset=value), "reset")


@pytest.mark.parametrize(("array", "message"), BAD_ARRAYS)
def test_the_cuda_array_interface_is_read_field_by_field(array, message):
    """Item 10: a missing ``data``, a ``shape`` that is not a tuple or a ``typestr`` that is not a
    string gave KeyError, TypeError or AttributeError. Both readers (compiled's and the launcher's
    ``describe``, transpose's ``view_of``) refuse them in one line."""
    from autotune.runtime.arrays import describe
    from autotune.runtime.transpose.views import view_of

    expect(lambda: describe(array, "input"), message)
    expect(lambda: view_of(array, "input"), message)


def test_a_good_interface_is_read():
    from autotune.runtime.arrays import describe, read_interface
    from autotune.runtime.transpose.views import view_of

    got = read_interface(cai(strides=(256, 4), data=(0x10000, True)))
    assert (got.pointer, got.shape, got.dtype, got.strides, got.readonly) == (
        0x10000, (64, 64), np.dtype("<f4"), (256, 4), True)
    assert describe(cai()).shape == (64, 64) and view_of(cai(shape=[8, 4])).shape == (8, 4)
    assert read_interface(cai(data=(None, False), shape=(0, 4))).pointer == 0  # an empty array has no pointer
    expect(lambda: view_of(cai(data=(None, False), shape=(0, 4)), "x"), "x of shape 0x4 is empty")


def test_every_check_message_is_short_whatever_the_value():
    """A 1 MB name or URL is quoted in 80 characters, not echoed whole."""
    huge = "k" * 1_000_000
    for call in (lambda: autotune.lookup(huge, (64, 64), device=0),
                 lambda: autotune.tune("smem_pad", (64, 64), db=huge),
                 lambda: autotune.SearchOptions(db=huge),
                 lambda: autotune.launcher("smem_pad", dims={"n": huge})):
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert len(str(caught.value)) < 600


def test_nan_is_never_a_number_here():
    for field in ("timeout", "trial_timeout"):
        for value in (NAN, INF, -INF):
            expect(lambda: autotune.SearchOptions(**{field: value}), field)
    assert math.isnan(NAN)


def test_search_options_refuse_unknown_names_and_misplaced_values_as_bad_input():
    """A dataclass raises TypeError for these; SearchOptions says them like any bad value."""
    for call, message in ((lambda: autotune.SearchOptions(bogus=1), "unexpected keyword argument 'bogus'"),
                          (lambda: autotune.SearchOptions(5, trials=6), "multiple values for argument 'trials'"),
                          (lambda: autotune.SearchOptions(*range(1, 30)), "too many positional arguments"),
                          (lambda: autotune.SearchOptions().replace(bogus=2), "unknown search option 'bogus'"),
                          (lambda: autotune.SearchOptions().replace(trials=0), "trials 0 is not allowed")):
        expect(call, message)
    assert autotune.SearchOptions(trials=5).replace(trials=7).trials == 7


def test_a_refusal_imports_neither_optuna_sqlalchemy_nor_pycuda():
    """Before anything is imported for the work: a fresh process refuses bad arguments of every
    function and has imported none of the heavy libraries."""
    import subprocess
    from pathlib import Path

    code = """
import sys, autotune
from autotune.errors import InvalidInputError
calls = [lambda: autotune.SearchOptions(strategy=5), lambda: autotune.SearchOptions(resume="no"),
         lambda: autotune.tune("smem_pad", 5), lambda: autotune.tune("smem_pad", (64, 64), options={}),
         lambda: autotune.lookup("smem_pad", (64, 64), device=-1), lambda: autotune.lookup("smem_pad", (64, 64), db=""),
         lambda: autotune.compiled(None, (64, 64)), lambda: autotune.launcher(42),
         lambda: autotune.launcher("smem_pad", dims="ab"), lambda: autotune.transpose(object()),
         lambda: autotune.load_kernel(b"k.toml")]
for call in calls:
    try:
        call()
    except InvalidInputError:
        continue
    raise SystemExit(f"not refused: {call}")
heavy = [m for m in ("optuna", "sqlalchemy", "pycuda", "torch", "cupy", "matplotlib") if m in sys.modules]
assert not heavy, heavy
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
