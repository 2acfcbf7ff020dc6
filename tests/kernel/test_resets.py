"""``reset`` on out, inout and scratch arrays, without a GPU: the kernel file's field, the memsets
that do it for every dtype (run on the fake device), and a benchmark's prelude: resets before
every launch and inouts restored before every launch (tests/fakes.py's FakeDriver)."""

from pathlib import Path

import numpy as np
import pytest

from autotune.errors import KernelFileError
from autotune.kernel.dtypes import ARG_DTYPES, get_dtype
from autotune.kernel.loader import kernel_from_dict, load_kernel
from autotune.kernel.model import Array
from autotune.kernel.resets import Fill, fill_ops
from autotune.measure.buffers import ArgSet
from autotune.measure.resets import Prelude

from fakes import FakeDriver
from kernel_files import write_kernel

ROOT = Path(__file__).resolve().parents[2]


def doc(bins: dict, inout: dict | None = None) -> dict:
    args = [{"name": "bins", "array": [256], "dtype": "uint32", "role": "out", **bins},
            {"name": "in", "array": ["n"], "role": "in"}]
    if inout is not None:
        args.append({"name": "acc", "array": ["n"], "role": "inout", **inout})
    return {"name": "resettable", "source": str(ROOT / "examples/histogram/histogram.cu"), "function": "histogram256",
            "problem": {"dims": ["n"], "dtypes": ["uint8", "float32"]},
            "args": args + [{"name": "n", "scalar": "int64", "value": "n"}],
            "launch": {"block": [256, 1, 1], "grid": [1, 1, 1], "shared": 1024},
            "space": {"params": {"BLOCK_SIZE": [256]}, "default": {"BLOCK_SIZE": 256}},
            "check": {"reference": "numpy:bincount"}}


@pytest.mark.parametrize("bins, inout, value", [({"reset": "zeros"}, None, 0), ({"reset": 7}, None, 7),
                                                ({}, {"reset": 1.5, "dtype": "float32"}, None),
                                                ({}, {"reset": -2, "dtype": "int32"}, None)])
def test_reset_is_read_from_the_kernel_file(tmp_path, bins, inout, value):
    k = load_kernel(write_kernel(tmp_path / "k.toml", doc(bins, inout)))
    assert k.arrays[0].reset == value
    if inout is not None:
        assert k.arrays[2].reset == inout["reset"]


@pytest.mark.parametrize("bins, inout, message", [
    ({"reset": "ones"}, None, "[[args]] 1 reset: 'ones' is not allowed; allowed: \"zeros\" or a finite number"),
    ({"reset": -1}, None, "[[args]] 1 reset: -1 is not a value of uint32"),
    ({"reset": 2.5}, None, "[[args]] 1 reset: 2.5 is not a value of uint32"),
    ({"reset": True}, None, "[[args]] 1 reset: True is not allowed"),
    ({}, {"reset": 300}, "[[args]] 3 reset: 300 is not a value of uint8"),  # T: every dtype of the kernel
    ({"reset": float("nan")}, None, "[[args]] 1 reset: nan is not allowed"),
    ({}, {"reset": 1e10, "dtype": "float16"}, "[[args]] 3 reset: 10000000000.0 is not a value of float16"),
    ({"init": "zeros"}, None, "[[args]] 1 init: bins: an out array is not filled"),
])
def test_a_bad_reset_or_an_init_on_an_out_is_one_error_naming_the_field(tmp_path, bins, inout, message):
    with pytest.raises(KernelFileError) as info:
        kernel_from_dict(doc(bins, inout), tmp_path / "k.toml")
    assert message in str(info.value)


def test_reset_on_an_in_array_is_refused(tmp_path):
    d = doc({})
    d["args"][1]["reset"] = "zeros"
    with pytest.raises(KernelFileError, match="an in array is never reset"):
        load_kernel(write_kernel(tmp_path / "k.toml", d))


def test_reset_counts_in_the_spec_hash_only_where_it_is_given(tmp_path):
    plain = load_kernel(write_kernel(tmp_path / "a" / "k.toml", doc({})))
    again = load_kernel(write_kernel(tmp_path / "b" / "k.toml", {**doc({}), "name": "resettable2"}))
    reset = load_kernel(write_kernel(tmp_path / "c" / "k.toml", {**doc({"reset": "zeros"}), "name": "resettable3"}))
    assert plain.spec_hash == again.spec_hash != reset.spec_hash


@pytest.mark.parametrize("value, dtype, fills", [
    (0, "float32", [Fill("d8", 0, 0, 40)]), (7, "uint8", [Fill("d8", 0, 7, 40)]),
    (-1, "int64", [Fill("d8", 0, 0xFF, 40)]), (1.0, "float16", [Fill("d16", 0, 0x3C00, 20)]),
    (1.0, "float32", [Fill("d32", 0, 0x3F800000, 10)]), (257, "int16", [Fill("d8", 0, 1, 40)]), (258, "int16", [Fill("d16", 0, 0x0102, 20)]),
    (1.0, "float64", [Fill("d2d32", 0, 0, 5, 8), Fill("d2d32", 4, 0x3FF00000, 5, 8)]),
])
def test_a_reset_is_the_fewest_memsets(value, dtype, fills):
    assert fill_ops(value, np.dtype(dtype), 40) == fills


@pytest.mark.parametrize("dtype", sorted(ARG_DTYPES))
@pytest.mark.parametrize("value", [0, 1, -3, 2.5, 1e10])
def test_the_memsets_set_every_element_to_the_value(dtype, value):
    from autotune.kernel.loader import _fits

    dt = np.dtype(dtype)
    if not _fits(value, dt):  # the loader refuses it
        return
    drv, n = FakeDriver(), 37
    at = int(drv.mem_alloc(n * dt.itemsize + 64)) + 16
    drv.memory[:] = 0xA5
    a = Array("x", (), dtype, "scratch", reset=value)
    args = ArgSet([], [at], [n * dt.itemsize], [False])
    Prelude(drv, [(a, (n,), get_dtype(dtype))], {}).for_set(args)()
    got = drv.memory[at:at + n * dt.itemsize].view(dt)
    np.testing.assert_array_equal(got, np.full(n, value).astype(dt))
    assert (drv.memory[at - 16:at] == 0xA5).all() and (drv.memory[at + n * dt.itemsize:][:16] == 0xA5).all()


def test_before_every_launch_reset_arrays_are_cleared_and_inouts_restored():
    """A kernel that adds its input into ``bins`` and doubles ``acc`` in place: with the prelude,
    every launch leaves what the first left."""
    drv = FakeDriver()
    layout = [(Array("bins", (), "uint32", "out", reset=0), (4,), get_dtype("uint32")),
              (Array("src", (), "uint32", "in"), (4,), get_dtype("uint32")),
              (Array("acc", (), "float32", "inout"), (3,), get_dtype("float32")),
              (Array("work", (), "uint32", "scratch"), (2,), get_dtype("uint32"))]
    args = ArgSet.allocate(drv, layout)
    values = {1: np.array([1, 2, 3, 4], np.uint32), 2: np.array([1, 2, 3], np.float32), 3: np.zeros(2, np.uint32)}
    for i, v in values.items():
        drv.memcpy_htod(args.pointers[i], v)
    prelude = Prelude(drv, layout, values)
    assert not prelude.empty and prelude.restored == [2]
    before = prelude.for_set(args)

    def kernel():
        drv.view(args.pointers[0], (4,), np.uint32)[:] += drv.view(args.pointers[1], (4,), np.uint32)
        drv.view(args.pointers[2], (3,), np.float32)[:] *= 2
        drv.view(args.pointers[3], (2,), np.uint32)[:] += 1  # scratch without reset: keeps its state

    for _ in range(3):
        before()
        kernel()
    np.testing.assert_array_equal(drv.view(args.pointers[0], (4,), np.uint32), [1, 2, 3, 4])
    np.testing.assert_array_equal(drv.view(args.pointers[2], (3,), np.float32), [2, 4, 6])
    np.testing.assert_array_equal(drv.view(args.pointers[3], (2,), np.uint32), [3, 3])
    assert Prelude(drv, [layout[1]], values).empty
