"""Verification (autotune/measure/verify.py, reference.py) without a GPU.

The device is a fake driver: device memory is one flat NumPy byte array, ``mem_alloc`` returns
integer addresses into it, ``memset_d8``/``memcpy_htod``/``memcpy_dtoh`` work on those. A
"kernel" is a Python function writing into views of that memory. The argument sets, input
values and references are the measuring side's own (buffers.py, reference.py), so a wrong
value, an unwritten element, a write into a guard, an inout array, a tolerance and a callable
comparison are each checked the way a benchmark checks a CUDA kernel; tests/gpu/ plants real
CUDA kernels of each kind."""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pytest

from autotune.errors import KernelFileError, TrialFailed
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.loader import load_kernel
from autotune.kernel.model import Check
from autotune.measure.buffers import GUARD_BYTES, ArgSet, array_layout, host_values, scalar_values
from autotune.measure.reference import begin_python_reference, python_reference
from autotune.measure.device_compare import DeviceComparer
from autotune.measure.verify import EXACT_POISONS, NAN_POISON, Verifier, compare, relative_norm_of

from fakes import FakeDriver
from kernel_files import write_kernel


REFS = '''
import threading

import numpy as np

seen = []


def twice(*, x, **_):
    return 2 * x


def inc(*, x, **_):
    return x + 1


def minmax(*, a, b, **_):
    return {"lo": np.minimum(a, b), "hi": np.maximum(a, b)}


def minmax_one(*, a, b, **_):
    return np.minimum(a, b)


def minmax_no_hi(*, a, b, **_):
    return {"lo": np.minimum(a, b)}


def twice_flat(*, x, **_):
    return (2 * x).ravel()[:-1]


gate = threading.Event()


def gated(*, x, **_):  # returns once the test opens the gate, naming the thread it ran in
    seen.append(threading.current_thread().name)
    gate.wait(60)
    return 2 * x


def spy(**kwargs):
    seen.append({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()})
    kwargs["x"][...] = 99  # must not reach the values the kernel gets
    return 2 * kwargs["x"]


def within_a_tenth(got, expected, *, name, dims):
    error = float(np.max(np.abs(got.astype(np.float64) - expected)))
    return None if error <= 0.1 else f"{name} off by {error:.2f} at {sorted(dims.items())}"


def within_norm(got, expected, *, name, dims):
    seen.append(name)
    if not np.isfinite(got).all():
        return f"{name} has elements not finite"
    error = np.linalg.norm(got.astype(np.float64) - expected) / np.linalg.norm(expected)
    return None if error <= 0.01 else f"{name} relative error {error:.3g} > 0.01"


within_norm.relative_norm = lambda dtype, dims: 0.01
'''


def vector_doc(name, reference, *, compare="exact", role="out", extra=(), **check):
    """A kernel of one dim ``n``: ``y`` (role ``role``) from ``x``, with ``extra`` arrays."""
    args = ([{"name": "x", "array": ["n"], "role": "inout"}] if role == "inout" else
            [{"name": "y", "array": ["n"], "role": role}, {"name": "x", "array": ["n"], "role": "in"}])
    return {"name": name, "source": "k.cu", "function": name, "problem": {"dims": ["n"]},
            "args": args + list(extra) + [{"name": "n", "scalar": "int32", "value": "n"}],
            "launch": {"block": [128], "grid": ["cdiv(n, 128)"]},
            "space": {"params": {"B": [1]}, "default": {"B": 1}},
            "check": {"reference": reference, "compare": compare, **check}}


TRANSPOSE = {"name": "t", "source": "k.cu", "function": "t", "problem": {"dims": ["rows", "cols"]},
             "args": [{"name": "out", "array": ["cols", "rows"], "role": "out"},
                      {"name": "src", "array": ["rows", "cols"], "role": "in", "init": "bits"},
                      {"name": "rows", "scalar": "int32", "value": "rows"},
                      {"name": "cols", "scalar": "int32", "value": "cols"}],
             "launch": {"block": [32, 8], "grid": ["cdiv(rows, 32) * cdiv(cols, 32)"]},
             "space": {"params": {"B": [1]}, "default": {"B": 1}},
             "check": {"reference": "autotune.kernel.references:transpose", "compare": "exact"}}

MINMAX = {**vector_doc("mm", "ref.py:minmax"),
          "args": [{"name": "lo", "array": ["n"], "role": "out"}, {"name": "hi", "array": ["n"], "role": "out"},
                   {"name": "a", "array": ["n"]}, {"name": "b", "array": ["n"]},
                   {"name": "n", "scalar": "int32", "value": "n"}]}


@pytest.fixture(autouse=True, params=["host", "device"])
def compared_on(request, monkeypatch):
    """Every verification test runs twice: compared on the host and on the (fake) device."""
    monkeypatch.setattr(Run, "on_device", request.param == "device")
    return request.param


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "k.cu").write_text("// kernels run as Python functions in these tests\n")
    (tmp_path / "ref.py").write_text(REFS)
    return tmp_path


class Run:
    """One kernel's argument set on the fake device, its input values and its verification
    (compared on the fake device when ``on_device``, else on the host)."""

    on_device = False

    def __init__(self, folder, doc, dims, dtype="float32", seed=0):
        self.drv = FakeDriver()
        self.kernel = load_kernel(write_kernel(folder / f"{doc['name']}.toml", doc))
        self.dims, dt = dims, get_dtype(dtype)
        self.layout = array_layout(self.kernel, self.kernel.env(dims, dt), dt)
        self.scalars = scalar_values(self.kernel, self.kernel.env(dims, dt))
        self.args = ArgSet.allocate(self.drv, self.layout)
        rng = np.random.default_rng(seed)
        self.values = {i: host_values(a, shape, d, rng) for i, (a, shape, d) in enumerate(self.layout)
                       if a.role != "out"}

    def index(self, name):
        return next(i for i, (a, _, _) in enumerate(self.layout) if a.name == name)

    def arrays(self):
        """Views of the device arrays by name, and the scalars: what a kernel gets."""
        views = {a.name: self.drv.view(p, shape, d.numpy) for (a, shape, d), p in zip(self.layout, self.args.pointers)}
        return {**views, **self.scalars}

    def poke(self, name, offset, value=7):
        """Write one byte at ``offset`` bytes from the start of array ``name`` (negative: before it)."""
        i = self.index(name)
        self.drv.memory[self.args.pointers[i] + offset] = value

    def verifier(self, values=None, expected=None, comparer=None) -> Verifier:
        values = self.values if values is None else values
        if expected is None:
            expected = python_reference(self.kernel, self.layout, self.scalars, values)
        if comparer is None and Run.on_device:
            comparer = DeviceComparer(self.drv, self.drv.load_module(b""))
        return Verifier(self.drv, [a.role for a, _, _ in self.layout], [a.name for a, _, _ in self.layout],
                        [d.numpy for _, _, d in self.layout], values, expected, self.kernel.check_spec, self.dims,
                        self.kernel.path.parent, comparer)

    def verify(self, body, values=None, expected=None):
        verifier = self.verifier(values, expected)
        before = len(self.drv.launches)
        try:
            verifier.verify(lambda: body(**self.arrays()), self.args)
        except TrialFailed as failure:
            if failure.status == "wrong_result":  # a comparison ran (and failed)
                self.compared_where(before)
            raise
        else:
            self.compared_where(before)
        finally:
            verifier.free()

    def compared_where(self, before):
        check = self.kernel.check_spec
        if Run.on_device and (check.exact or check.compare == "tolerance" or relative_norm_of(check, self.kernel.path.parent)):
            assert self.drv.launches[before:], "no comparison kernel ran on the device"
        else:  # the host compared: a module:function comparison always does
            assert not self.drv.launches[before:]

    def fails(self, body, **kwargs) -> TrialFailed:
        with pytest.raises(TrialFailed) as info:
            self.verify(body, **kwargs)
        assert info.value.status == "wrong_result" and "\n" not in info.value.reason
        return info.value


def transpose_ok(*, out, src, **_):
    out[...] = src.T


# --- exact ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, shape", [("float32", (7, 13)), ("int8", (1, 1000)), ("float16", (1000, 1)),
                                          ("float64", (33, 65)), ("uint8", (5, 3)), ("complex128", (9, 5))])
def test_a_correct_kernel_passes_bit_for_bit(folder, dtype, shape):
    run = Run(folder, TRANSPOSE, dict(zip(("rows", "cols"), shape)), dtype)
    if dtype.startswith("float"):
        assert np.isnan(run.values[1]).any() or math.prod(shape) < 100  # random bytes: NaN payloads too
    run.verify(transpose_ok)


def flip_one_bit(*, out, src, **_):
    out[...] = src.T
    out.view(np.uint8).reshape(*out.shape, out.itemsize)[12, 6, 0] ^= 1  # the element's lowest bit


def shifted(*, out, src, **_):
    out[...] = np.roll(src.T, 1)


def last_row_unwritten(*, out, src, **_):
    out[:-1] = src.T[:-1]


def nothing(**_):
    pass


@pytest.mark.parametrize("body, message", [
    (flip_one_bit, "1 of 91 elements of out differ from the reference; first at [12, 6]: got 0x"),
    (shifted, "elements of out differ from the reference; first at [0, 0]"),
    (last_row_unwritten, "7 of 91 elements of out differ from the reference; first at [12, 0]: got 0xa5a5a5a5"),
    (nothing, "91 of 91 elements of out differ"),
])
def test_a_wrong_or_unwritten_value_is_caught(folder, body, message):
    run = Run(folder, TRANSPOSE, {"rows": 7, "cols": 13})
    assert message in run.fails(body).reason


def test_sixteen_byte_elements_are_compared_bit_for_bit(folder):
    """complex128: one bit of one element, on the host and on the device (as 8-byte halves)."""
    run = Run(folder, TRANSPOSE, {"rows": 7, "cols": 13}, "complex128")
    reason = run.fails(flip_one_bit).reason
    assert reason.startswith("1 of 91 elements of out differ from the reference; first at [12, 6]: got 0x"), reason
    got, expected = (int(h, 16) for h in re.findall(r"0x([0-9a-f]+)", reason))
    assert got ^ expected == 1  # the low bit of the element's 16 bytes
    assert "7 of 91 elements" in run.fails(last_row_unwritten).reason


@pytest.mark.parametrize("poison", EXACT_POISONS)
def test_an_unwritten_element_cannot_pass_by_matching_a_poison(folder, poison):
    # the reference holds one poison's byte pattern where the kernel writes nothing: under that
    # poison the element looks right; the other poison exposes it
    assert set(EXACT_POISONS) == {0xA5, 0x5A}
    run = Run(folder, TRANSPOSE, {"rows": 4, "cols": 4})
    values = {1: run.values[1].copy()}
    values[1].view(np.uint8).reshape(4, 16)[0, :4] = poison

    def all_but_the_first(*, out, src, **_):
        keep = out[0, 0].copy()
        out[...] = src.T
        out[0, 0] = keep

    other = EXACT_POISONS[1 - EXACT_POISONS.index(poison)]
    reason = run.fails(all_but_the_first, values=values).reason
    assert f"1 of 16 elements of out differ from the reference; first at [0, 0]: got 0x{other:02x}{other:02x}" in reason


@pytest.mark.parametrize("where, offset, message", [
    ("after", 13 * 7 * 4, "wrote 1 guard bytes after out"),
    ("after", 13 * 7 * 4 + GUARD_BYTES - 1, "wrote 1 guard bytes after out"),
    ("before", -1, "wrote 1 guard bytes before out"),
    ("before", -GUARD_BYTES, "wrote 1 guard bytes before out"),
])
def test_a_write_into_either_guard_is_caught(folder, where, offset, message):
    run = Run(folder, TRANSPOSE, {"rows": 7, "cols": 13})

    def writes_outside(*, out, src, **_):
        out[...] = src.T
        run.poke("out", offset)

    assert run.fails(writes_outside).reason == message


def test_guards_hold_the_poison_of_each_run(folder):
    run = Run(folder, TRANSPOSE, {"rows": 3, "cols": 5})
    seen = []

    def looks(*, out, src, **_):
        start = run.args.pointers[0]
        seen.append((int(run.drv.memory[start - 1]), int(run.drv.memory[start + out.nbytes])))
        out[...] = src.T

    run.verify(looks)
    assert seen == [(p, p) for p in EXACT_POISONS]  # two runs, guards poisoned like the output


def test_a_failed_launch_is_a_launch_error_or_resources(folder):
    run = Run(folder, TRANSPOSE, {"rows": 2, "cols": 2})
    for text, status in (("cuLaunchKernel failed: an illegal memory access was encountered", "launch_error"),
                         ("cuLaunchKernel failed: too many resources requested for launch", "resources")):
        def crash(**_):
            raise FakeDriver.LaunchError(text + "\nmore lines")

        with pytest.raises(TrialFailed) as info:
            run.verify(crash)
        assert info.value.status == status and info.value.reason == text


# --- inout, several outputs, scratch ----------------------------------------------------------


def test_an_inout_array_is_reloaded_for_every_run_and_checked(folder):
    run = Run(folder, vector_doc("inc", "ref.py:inc", role="inout"), {"n": 100}, "int32")
    assert run.layout[0][0].role == "inout" and 0 in run.values

    def inc(*, x, **_):
        x += 1

    run.verify(inc)  # passes twice only if x holds its input values again before the second run
    assert "100 of 100 elements of x differ" in run.fails(nothing).reason

    def twice(*, x, **_):
        x *= 2

    assert "elements of x differ from the reference" in run.fails(twice).reason

    def past_the_end(*, x, **_):
        x += 1
        run.poke("x", x.nbytes)

    assert run.fails(past_the_end).reason == "wrote 1 guard bytes after x"


def test_each_of_several_outputs_is_checked_by_name(folder):
    run = Run(folder, MINMAX, {"n": 50})

    def ok(*, lo, hi, a, b, **_):
        lo[...], hi[...] = np.minimum(a, b), np.maximum(a, b)

    run.verify(ok)

    def hi_wrong(*, lo, hi, a, b, **_):
        ok(lo=lo, hi=hi, a=a, b=b)
        hi[49] = 0

    assert "1 of 50 elements of hi differ from the reference; first at [49]" in run.fails(hi_wrong).reason

    def into_lo_guard(*, lo, hi, a, b, **_):
        ok(lo=lo, hi=hi, a=a, b=b)
        run.poke("lo", -3)

    assert run.fails(into_lo_guard).reason == "wrote 1 guard bytes before lo"


def test_a_scratch_array_gets_its_init_before_the_run_and_is_not_checked(folder):
    work = {"name": "work", "array": ["n"], "role": "scratch", "init": "zeros"}
    run = Run(folder, vector_doc("w", "ref.py:twice", extra=[work]), {"n": 64})
    assert run.args.guarded == [True, False, False]

    def uses_work(*, y, x, work, **_):
        assert not work.any()  # zeros again before each run
        work[...] = 123  # scribbling over a workspace is fine
        y[...] = 2 * x

    run.verify(uses_work)


# --- tolerance and callable comparisons --------------------------------------------------------


def test_tolerance_poisons_with_nan_and_needs_every_element_finite(folder):
    run = Run(folder, vector_doc("tw", "ref.py:twice", compare="tolerance", atol=1e-6, rtol=1e-6), {"n": 91})
    assert not run.kernel.check_spec.exact and NAN_POISON == 0xFF
    seen = []

    def ok(*, y, x, **_):
        seen.append(np.isnan(y).all())
        y[...] = 2 * x + np.float32(1e-7)

    run.verify(ok)
    assert seen == [True]  # one run, the output all NaN before it
    assert run.fails(nothing).reason.startswith("91 of 91 elements of y are not finite (unwritten?); first at [0]")

    def last_unwritten(*, y, x, **_):
        y[:-1] = 2 * x[:-1]

    assert "1 of 91 elements of y are not finite (unwritten?); first at [90]" in run.fails(last_unwritten).reason

    def off(*, y, x, **_):
        y[...] = 2 * x
        y[40] += 1e-3

    reason = run.fails(off).reason
    assert "1 of 91 elements of y are off by more than atol=1e-06 + rtol=1e-06 * |expected|; worst at [40]" in reason

    def after(*, y, x, **_):
        y[...] = 2 * x
        run.poke("y", y.nbytes + 5)

    assert run.fails(after).reason == "wrote 1 guard bytes after y"


def test_a_callable_comparison_decides_and_names_the_array(folder):
    run = Run(folder, vector_doc("cc", "ref.py:twice", compare="ref.py:within_a_tenth"), {"n": 10}, "float64")
    assert not run.kernel.check_spec.exact

    def close(*, y, x, **_):
        y[...] = 2 * x + 0.05

    run.verify(close)

    def far(*, y, x, **_):
        y[...] = 2 * x + 0.5

    assert run.fails(far).reason == "y off by 0.50 at [('n', 10)]"
    assert "y off by nan" in run.fails(nothing).reason  # the NaN poison reaches the comparison


# --- compare() on its own --------------------------------------------------------------------


def test_exact_compares_bits():
    exact = Check(compare="exact")
    a = np.array([0.0, np.nan, 1.0], np.float32)
    assert compare(a, a.copy(), exact, "v", {}) is None  # equal NaN bits are equal
    b = a.copy()
    b[0] = -0.0
    assert "1 of 3 elements of v differ" in compare(a, b, exact, "v", {})  # signed zeros differ
    c = a.copy()
    c.view(np.uint32)[1] ^= 1  # another NaN payload
    assert "first at [1]" in compare(a, c, exact, "v", {})
    assert compare(a, b, Check(compare="tolerance"), "v", {}) is not None  # NaN is not finite


# --- python_reference ----------------------------------------------------------------------------


def test_the_reference_gets_every_argument_by_name_and_cannot_touch_the_inputs(folder):
    run = Run(folder, vector_doc("spy", "ref.py:spy"), {"n": 4}, "int32")
    before = run.values[1].copy()
    expected = python_reference(run.kernel, run.layout, run.scalars, run.values)
    np.testing.assert_array_equal(run.values[1], before)
    from autotune.kernel.callables import load_callable

    seen = load_callable("ref.py:spy", run.kernel.path.parent).__globals__["seen"][-1]
    assert set(seen) == {"y", "x", "n"} and seen["n"] == 4 and isinstance(seen["n"], np.int32)
    np.testing.assert_array_equal(seen["y"], np.zeros(4, np.int32))  # outputs zero-filled
    np.testing.assert_array_equal(seen["x"], before)
    assert list(expected) == [0] and (expected[0] == 2 * 99).all()


def test_several_outputs_come_back_by_index(folder):
    run = Run(folder, MINMAX, {"n": 5})
    expected = python_reference(run.kernel, run.layout, run.scalars, run.values)
    assert list(expected) == [0, 1]
    np.testing.assert_array_equal(expected[0], np.minimum(run.values[2], run.values[3]))
    np.testing.assert_array_equal(expected[1], np.maximum(run.values[2], run.values[3]))


def test_a_reference_begun_in_a_thread_lets_its_caller_go_on_and_gives_the_same_outputs(folder):
    """Issue 47 (the main job): a benchmark begins its Python reference as it opens, so that
    the measuring process measures the bounds meanwhile. The caller is not held up (the
    reference waits for a gate the test opens after); the outputs are the reference's."""
    from autotune.kernel.callables import load_callable

    run = Run(folder, vector_doc("gated", "ref.py:gated"), {"n": 4}, "int32")
    refs = load_callable("ref.py:gated", run.kernel.path.parent).__globals__
    expected = begin_python_reference(run.kernel, run.layout, run.scalars, run.values)
    assert not expected.done()  # begun without waiting for it (a reference run in place would be done)
    refs["gate"].set()
    got = expected.result(timeout=60)
    assert refs["seen"] == ["autotune-reference"]
    assert list(got) == [0] and (got[0] == 2 * run.values[1]).all()


def test_an_error_of_a_reference_begun_in_a_thread_is_raised_where_it_is_read(folder):
    run = Run(folder, vector_doc("none", "ref.py:nope"), {"n": 5})
    expected = begin_python_reference(run.kernel, run.layout, run.scalars, run.values)  # no error here
    with pytest.raises(KernelFileError, match="cannot load 'ref.py:nope'"):
        expected.result(timeout=60)


@pytest.mark.parametrize("doc, message", [
    ({**MINMAX, "check": {"reference": "ref.py:minmax_one"}},
     "reference ref.py:minmax_one returned one array; mm checks 2 outputs: return {name: array}"),
    ({**MINMAX, "check": {"reference": "ref.py:minmax_no_hi"}}, "reference ref.py:minmax_no_hi returned no 'hi'"),
    (vector_doc("flat", "ref.py:twice_flat"),
     r"reference ref.py:twice_flat returned y of shape \(5,\); the kernel's is \(6,\)"),
    (vector_doc("none", "ref.py:nope"), "cannot load 'ref.py:nope'"),
    (vector_doc("mod", "no_such_module_anywhere:f"), "cannot load 'no_such_module_anywhere:f'"),
])
def test_a_reference_that_returns_the_wrong_arrays_is_a_kernel_file_error(folder, doc, message):
    run = Run(folder, doc, {"n": 6 if doc["name"] == "flat" else 5})
    with pytest.raises(KernelFileError, match=message):
        python_reference(run.kernel, run.layout, run.scalars, run.values)


# --- the comparison on the device: what crosses PCIe, fallbacks ---------------------------------


def device_run(folder, doc, dims, dtype="float32", size=1 << 21):
    run = Run(folder, doc, dims, dtype)
    if size != run.drv.memory.size:
        run.drv = FakeDriver(size)
        run.args = ArgSet.allocate(run.drv, run.layout)
    return run


def test_on_the_device_inputs_stay_there_and_only_a_few_bytes_come_back(folder, compared_on):
    if compared_on == "host":
        pytest.skip("the device path only")
    run = device_run(folder, TRANSPOSE, {"rows": 64, "cols": 48})
    verifier = run.verifier()
    uploaded = run.drv.copies["htod"]
    out_bytes = run.args.nbytes[0]
    assert uploaded >= run.args.nbytes[1] + out_bytes  # pristine input and reference, once
    for _ in range(3):  # three configs verified by one benchmark
        verifier.verify(lambda: transpose_ok(**run.arrays()), run.args)
    # after the first upload only the comparison's 32-byte result words go up and come back
    launches = 3 * len(EXACT_POISONS)  # each: two guards and the elements
    assert run.drv.copies["htod"] - uploaded == 3 * launches * 32
    assert run.drv.copies["dtoh"] == 3 * launches * 32 < out_bytes
    assert run.drv.copies["dtod"] == 3 * len(EXACT_POISONS) * run.args.nbytes[1]  # inputs restored there
    verifier.free()


def test_a_device_without_room_for_the_copies_compares_on_the_host(folder, compared_on):
    # room for the argument set and the result words, not for the pristine input or the reference
    run = Run(folder, TRANSPOSE, {"rows": 64, "cols": 64})
    need = ArgSet.footprint(run.layout)
    run.drv = FakeDriver(256 + -(-need // 256) * 256 + 3 * 256 + 512)
    run.args = ArgSet.allocate(run.drv, run.layout)
    verifier = run.verifier(comparer=DeviceComparer(run.drv, run.drv.load_module(b"")))
    assert all(v is None for v in verifier.pristine.values())
    assert all(v is None for v in verifier.expected_on_device.values())
    verifier.verify(lambda: transpose_ok(**run.arrays()), run.args)
    assert not run.drv.launches
    with pytest.raises(TrialFailed, match="1 of 4096 elements of out differ from the reference; first at"):
        verifier.verify(lambda: flip_one_bit(**run.arrays()), run.args)


def test_float16_tolerance_and_a_nan_reference_agree_on_host_and_device(folder):
    doc = vector_doc("h", "ref.py:twice", compare="tolerance", atol=1e-3, rtol=1e-3)
    run = Run(folder, doc, {"n": 300}, "float16")

    def ok(*, y, x, **_):
        y[...] = 2 * x

    run.verify(ok)

    def off(*, y, x, **_):
        y[...] = 2 * x
        y[17] += np.float16(0.5)
        y[200] += np.float16(0.25)

    assert "2 of 300 elements of y are off by more than atol=0.001 + rtol=0.001 * |expected|; worst at [17]" \
        in run.fails(off).reason
    expected = {0: 2 * run.values[1].astype(np.float64)}
    expected[0][5] = np.nan  # a NaN expected: |got - nan| > bound is false on both sides, as in NumPy
    run.verify(ok, expected=expected)

    def inf(*, y, x, **_):
        y[...] = 2 * x
        y[299] = np.inf

    assert "1 of 300 elements of y are not finite (unwritten?); first at [299]" in run.fails(inf).reason


def test_the_comparer_names_what_it_takes():
    drv = FakeDriver()
    comparer = DeviceComparer(drv, drv.load_module(b""))
    with pytest.raises(ValueError, match="itemsize 3 is not allowed; allowed: 1, 2, 4, 8"):
        comparer.exact(0, 0, 1, 3)
    with pytest.raises(ValueError, match="dtype complex64 is not allowed; allowed: float16"):
        comparer.tolerance(0, 0, 1, "complex64", 0.0, 0.0)
    assert comparer.not_byte(1024, 0, 0) == (0, 2**64 - 1)  # nothing to check: no launch
    assert not drv.launches


def test_a_callable_comparison_with_a_relative_norm_is_computed_on_the_device(folder, compared_on):
    """A ``module:function`` comparison that declares ``relative_norm`` (the matrix products'
    ``product_tolerance`` does) is decided on the device where it passes: no output crosses
    PCIe and the function is not called; where it fails, the host's function words it."""
    run = Run(folder, vector_doc("rn", "ref.py:twice", compare="ref.py:within_norm"), {"n": 4000})
    from autotune.kernel.callables import load_callable

    seen = load_callable("ref.py:within_norm", folder).__globals__["seen"]  # the function's calls

    def close(*, y, x, **_):
        y[...] = 2 * x * (1 + 1e-3)

    verifier = run.verifier()
    dtoh = run.drv.copies["dtoh"]
    verifier.verify(lambda: close(**run.arrays()), run.args)
    calls = seen.count("y")
    if compared_on == "device":
        assert run.drv.launches.count("norm_float32") == 1 and calls == 0  # the host function never ran
        assert run.drv.copies["dtoh"] - dtoh == 3 * 32 < run.args.nbytes[0]  # result words only
    else:
        assert calls == 1 and "norm_float32" not in run.drv.launches
    verifier.free()

    def far(*, y, x, **_):
        y[...] = 2 * x * 1.02
    assert run.fails(far).reason.startswith("y relative error 0.02")
    assert run.fails(nothing).reason == "y has elements not finite"  # the NaN poison: worded by the host


def test_product_tolerance_agrees_on_host_and_device(folder):
    doc = {"name": "mm", "source": "k.cu", "function": "mm", "problem": {"dims": ["m", "n", "k"]},
           "args": [{"name": "C", "array": ["m", "n"], "role": "out"}, {"name": "A", "array": ["m", "k"]},
                    {"name": "B", "array": ["k", "n"]}],
           "launch": {"block": [128], "grid": ["cdiv(m * n, 128)"]},
           "space": {"params": {"B": [1]}, "default": {"B": 1}},
           "check": {"reference": "autotune.kernel.references:matmul",
                     "compare": "autotune.kernel.references:product_tolerance"}}
    run = Run(folder, doc, {"m": 48, "n": 40, "k": 300})

    def product(*, C, A, B, **_):
        C[...] = (A @ B).astype(np.float32)
    run.verify(product)

    def one_off(*, C, A, B, **_):
        C[...] = (A @ B).astype(np.float32)
        C[3, 7] += 1.0
    reason = run.fails(one_off).reason
    assert reason.startswith("relative error") and "(K=300); worst at [3, 7]" in reason
