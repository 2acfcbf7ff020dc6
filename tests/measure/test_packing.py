"""The one argument packer (autotune/measure/packing.py): each argument at its alignment in one
8-byte aligned buffer, the address array in the kernel's order, values written by name and
through views that alias the buffer."""

from __future__ import annotations

import ctypes
import struct

import pytest

from autotune.measure.packing import POINTER, SCALAR_FORMATS, PackedArguments


def test_each_argument_sits_at_its_alignment_and_argv_points_at_it():
    p = PackedArguments([("n", "i"), ("out", POINTER), ("scale", "f"), ("x", POINTER), ("m", "q")])
    assert p.offsets == {"n": 0, "out": 8, "scale": 16, "x": 24, "m": 32}
    assert ctypes.addressof(p.buffer) % 8 == 0 and ctypes.sizeof(p.buffer) == 40
    base = ctypes.addressof(p.buffer)
    assert list(p.argv) == [base + 0, base + 8, base + 16, base + 24, base + 32]


def test_argv_follows_the_kernels_order_not_the_layout():
    p = PackedArguments([("a", POINTER), ("b", POINTER), ("n", "i")], order=["n", "a", "b"])
    base = ctypes.addressof(p.buffer)
    assert list(p.argv) == [base + 16, base + 0, base + 8]


def test_put_writes_each_type_and_a_view_aliases_the_bytes():
    p = PackedArguments([(k, f) for k, f in SCALAR_FORMATS.items()] + [("ptr", POINTER)])
    values = {"int32": -5, "uint32": 7, "int64": -(2**40), "uint64": 2**63, "float32": 1.5, "float64": -2.25,
              "ptr": 0x7F0000001000}
    for name, value in values.items():
        p.put(name, value)
    raw = bytes(p.buffer)
    for name, value in values.items():
        fmt = p.formats[name]
        assert struct.unpack_from(fmt, raw, p.offsets[name])[0] == value
    view = p.view("ptr")
    view.value = 0x1234
    assert struct.unpack_from("Q", bytes(p.buffer), p.offsets["ptr"])[0] == 0x1234
    assert p.view("float32").value == 1.5


def test_no_arguments_still_gives_a_buffer_and_an_argv():
    p = PackedArguments([])
    assert len(p.argv) == 1 and ctypes.sizeof(p.buffer) == 8


def test_an_unknown_format_is_refused():
    with pytest.raises(KeyError):
        PackedArguments([("x", "h")])


def test_a_kernels_layout_is_a_pointer_per_array_and_each_scalars_format():
    from pathlib import Path

    from autotune.kernel.loader import load_kernel
    from autotune.measure.packing import kernel_layout

    k = load_kernel(Path(__file__).resolve().parents[2] / "examples/histogram/histogram.toml")
    assert kernel_layout(k.args) == [("bins", POINTER), ("in", POINTER), ("n", "q")]
