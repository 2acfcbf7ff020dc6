"""The expected outputs of a verification run: a Python reference or a reference kernel.

``[check] reference = "module:function"`` is called with every argument by name (NumPy on
the CPU): in, inout and scratch arrays holding the values the kernel gets (an array with
``reset`` holds its reset value), out arrays zero-filled (or their reset value), scalars as
NumPy scalars of their C type; it returns the expected array (one checked output) or
``{name: array}`` of every checked output (out and inout), each of the output's shape and of
a dtype of a kind the output's holds (float64 or int64 for float32; any integer type for
uint32; no float for an integer output, no complex for a real one). ``reference_kernel`` is an entry point of the same source, compiled with
the default config's macros and launched once with ``[check.launch]`` on its own copy of the
arguments; its checked outputs are the reference.

A Python reference may be begun in a thread (:func:`begin_python_reference`), as a benchmark
does as it opens (:class:`~autotune.measure.benchmark.Benchmark`): in a search's measuring
process it is then computed while the bounds are measured and the search opens its store, not
after the first config is sent.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import Future

import numpy as np

from autotune.errors import KernelFileError, TrialFailed
from autotune.kernel.callables import load_callable
from autotune.kernel.model import Kernel
from autotune.measure.buffers import ArgSet
from autotune.measure.verify import load_inputs, read_output, run_once
from autotune.measure.shared_memory import needs_opt_in, opt_in

__all__ = ["begin_python_reference", "python_reference", "kernel_reference"]

_KINDS = {"i": "biu", "u": "biu", "f": "biuf", "c": "biufc"}
"""The NumPy kinds of values a reference may return for an output of each kind (no float for an
integer output, no complex for a real one)."""


def python_reference(kernel: Kernel, layout, scalars: Mapping[str, np.generic],
                     values: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Expected outputs (by array index) from the kernel's Python reference.

    Raises:
        KernelFileError: the reference cannot be loaded, or returns the wrong arrays or shapes.
    """
    fn = load_callable(kernel.check_spec.reference, kernel.path.parent if kernel.path else None)
    kwargs: dict[str, object] = dict(scalars)
    for i, (array, shape, dt) in enumerate(layout):
        kwargs[array.name] = values[i].copy() if i in values else np.zeros(shape, dt.numpy)
    result = fn(**kwargs)
    checked = {i: a for i, (a, _, _) in enumerate(layout) if a.role in ("out", "inout")}
    if not isinstance(result, Mapping):
        if len(checked) != 1:
            raise KernelFileError(f"reference {kernel.check_spec.reference} returned one array; {kernel.name} "
                                  f"checks {len(checked)} outputs: return {{name: array}}")
        result = {next(iter(checked.values())).name: result}
    out = {}
    for i, array in checked.items():
        if array.name not in result:
            raise KernelFileError(f"reference {kernel.check_spec.reference} returned no {array.name!r}")
        got = np.asarray(result[array.name])
        if got.shape != layout[i][1]:
            raise KernelFileError(f"reference {kernel.check_spec.reference} returned {array.name} of shape "
                                  f"{got.shape}; the kernel's is {layout[i][1]}")
        want = layout[i][2].numpy
        if got.dtype.kind not in _KINDS.get(want.kind, "b"):
            raise KernelFileError(f"reference {kernel.check_spec.reference} returned {array.name} of dtype "
                                  f"{got.dtype}; the kernel's is {want} (give values of that kind)")
        out[i] = got
    return out


def begin_python_reference(kernel: Kernel, layout, scalars: Mapping[str, np.generic],
                           values: Mapping[int, np.ndarray]) -> Future:
    """:func:`python_reference` computed in a thread: its future holds the expected outputs,
    or the error it raised (``KernelFileError``), for whoever reads it. NumPy's copies release
    the interpreter's lock, so the thread that began it goes on meanwhile (issuing the bounds'
    launches). The thread is a daemon: a process that ends before it reads the result does not
    wait for it."""
    expected: Future = Future()
    values = dict(values)

    def compute() -> None:
        try:
            expected.set_result(python_reference(kernel, layout, scalars, values))
        except BaseException as exc:  # noqa: BLE001  (raised where the result is read)
            expected.set_exception(exc)

    threading.Thread(target=compute, name="autotune-reference", daemon=True).start()
    return expected


def kernel_reference(drv, kernel: Kernel, compiled, layout, args: ArgSet, params: list, grid, block, shared: int,
                     values: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Expected outputs (by array index) from the reference kernel ``compiled`` (a
    :class:`~autotune.measure.compile.CompiledKernel` of the default config whose module
    holds the reference entry point), run once on ``args`` (its own argument set).

    Raises:
        TrialFailed: the reference kernel itself fails to launch (``launch_error``).
    """
    fn = compiled.module.function(kernel.check_spec.reference_kernel, kernel.signature)
    if needs_opt_in(fn.static_shared, shared):  # its own function: its own opt-in above 48 KiB
        opt_in(fn, shared)
    roles = [a.role for a, _, _ in layout]
    load_inputs(drv, args, roles, values, 0)
    try:
        run_once(drv, fn.launcher(grid, block, params, shared))
    except TrialFailed as exc:
        raise TrialFailed("launch_error", f"the reference kernel failed: {exc.reason}") from None
    return {i: read_output(drv, args, i, 0, a.name).view(dt.numpy).reshape(shape).copy()
            for i, (a, shape, dt) in enumerate(layout) if a.role in ("out", "inout")}
