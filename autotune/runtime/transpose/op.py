"""``autotune.transpose(x)``: ``x.mT`` of any GPU array, by a catalog transpose with its tuned config.

A repeat call is cheap (a few µs of host time, :mod:`autotune.runtime.transpose.prepared`): read the
input's pointer, shape, strides and element type (:mod:`autotune.runtime.transpose.views`), find the
launch prepared for (thread, context, kernel, database, rows, cols, element type), allocate
the output, fill two pointers and call ``cuLaunchKernel``. The first call of a shape looks
the config up, builds it through the on-disk cubin cache and loads it (no PyCUDA for the
load; the CUDA backend, cuda-bindings or PyCUDA, still reads the device's identity once per process).
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.base import caches
from autotune.errors import InvalidInputError
from autotune.kernel.arguments import check_db_arg, check_kernel_arg
from autotune.kernel.dims import MAX_DIM
from autotune.kernel.dtypes import DTYPES, DType, word_dtype
from autotune.kernel.problem import Problem
from autotune.runtime import driver
from autotune.runtime.guard import settle
from autotune.runtime.transpose.layout import Layout, layout_of
from autotune.runtime.transpose.prepared import PreparedTranspose
from autotune.runtime.streams import stream_handle
from autotune.runtime.transpose.views import View, view_of

if TYPE_CHECKING:
    from autotune.kernel.model import Kernel

__all__ = ["transpose", "transpose_plan", "clear_prepared"]

_prepared: dict[tuple, PreparedTranspose] = {}
_kernels: dict = {}  # the caller's kernel argument -> the checked Kernel
_torch_devices: dict = {}  # CUDA ordinal -> torch.device
_lock = threading.Lock()


def transpose(a: Any, *, kernel: str | Path | Kernel | None = None, db: str | None = None, out: Any = None,
              stream: Any = None) -> Any:
    """Return ``a`` with its last two dims swapped, ``(..., rows, cols) -> (..., cols, rows)``,
    as a new C-contiguous array of ``a``'s kind, bit for bit.

    Args:
        a: a device array of 1, 2, 4, 8 or 16-byte elements, 2-D or a batch: a PyTorch CUDA
            tensor (any dtype: bool, int8/uint8, the float8 types, float16, bfloat16,
            int32/float32, int64/float64/complex64, complex128), a CuPy array, a PyCUDA
            GPUArray or any ``__cuda_array_interface__`` exporter, on the device of the
            current CUDA context. Views are read in place: columns adjacent (stride 1), rows
            any stride apart (a slice of rows or columns), leading dims folding into one batch
            stride (``autotune.runtime.transpose.layout``). A batch is transposed in one launch.
        kernel: a transpose of the catalog or a kernel file of one (dims ``rows, cols``,
            arguments ``out`` cols x rows, ``src`` rows x cols). Default ``None``: the kernel
            for the shape (``autotune.runtime.transpose.choice.transpose_kernel_for``): the op
            best stored by ``autotune search --op transpose`` for this exact key, else the rule
            (``autotune.runtime.transpose.choice.rule_kernel``: by row alignment, element size and
            shape, e.g. ``smem_vec`` for 16-byte-aligned rows, ``smem_aligned_out`` for 4- and
            8-byte elements whose output rows are not, ``naive_flat`` for small matrices; the
            list with its measurements is docs/transpose.md). Views and batches need a kernel that
            takes ``ld`` and ``batch_stride``: every catalog transpose does.
        db: results database URL (see `lookup`).
        out: optional C-contiguous ``(..., cols, rows)`` array of elements of the same size
            and type to write into (any accepted kind).
        stream: stream to launch on (default: the caller's current stream of ``a``'s library,
            e.g. ``torch.cuda.current_stream()``, so it works inside ``torch.cuda.graph``
            capture; the legacy default stream for PyCUDA arrays).

    Elements are moved as words of their size: a dtype of the catalog
    (`DTYPES`) uses the config tuned for itself, any other
    (bool, bfloat16, float8, complex64, unsigned ints) the config tuned for the canonical dtype
    of its size (``autotune.kernel.dtypes.WORD_DTYPES``), as ``transpose_plan``'s ``chosen``
    says. A 1-row or 1-column input whose elements are contiguous is copied with
    ``cuMemcpyDtoDAsync`` (its transpose keeps the element order): no kernel.

    Returns:
        ``out`` if given, else a new array of the input's kind (a PyTorch tensor on the same
            device for a PyTorch input, CuPy for CuPy, a PyCUDA GPUArray otherwise).

    Raises:
        InvalidInputError: not a device array, fewer than 2 dims, empty, elements of another
            size, strides that are not a batch of row-pitched matrices, a wrong or read-only
            ``out``, a kernel that is not a transpose (or takes no views, given one), a bad
            ``stream``.
        GPUUnavailableError: no current CUDA context.
    """
    if db is not None:
        check_db_arg(db)
    given = None if stream is None else stream_handle(stream, a)  # every argument before the array is read
    if kernel is not None and (type(kernel) is not str or kernel not in _kernels):
        _kernel(kernel)  # a kernel that is not a transpose is refused first (then a dict lookup)
    v = view_of(a)
    o = None if out is None else view_of(out, "out")  # read before the GPU is: a wrong out is refused first
    lay = layout_of(v)
    if lay.rows > MAX_DIM or lay.cols > MAX_DIM:
        raise InvalidInputError(f"shape {'x'.join(map(str, v.shape))} is not allowed; rows and cols are 1..{MAX_DIM}")
    copy = (lay.rows == 1 or lay.cols == 1) and lay.contiguous
    plan = None if copy else _plan(kernel, db, lay, v)
    if plan is not None and not plan.pitched and (lay.batch > 1 or lay.ld != lay.cols):
        raise InvalidInputError(f"kernel {plan.launcher.kernel.name} takes a contiguous 2-D input, not shape "
                                f"{tuple(v.shape)} strides {tuple(v.strides)}; use smem_vec for views and batches")
    if out is None:
        out, target = _empty(a, v, lay)
    else:
        target = _out_pointer(o, v, lay)
    s = stream_handle(stream, a, v.kind, v.device) if given is None else given
    if copy:
        if target != v.pointer:
            driver.copy_async(target, v.pointer, lay.batch * lay.rows * lay.cols * v.itemsize, s)
    else:
        if plan.unsettled:  # the same_arch rung: timed against the default at the first launch
            settle(plan.launcher, [target, v.pointer], s)
            plan.refresh()
            plan.unsettled = False
        plan(target, v.pointer, lay.ld, lay.batch, lay.batch_stride, s)
    return out


def transpose_plan(a: Any, *, kernel: str | Path | Kernel | None = None, db: str | None = None) -> PreparedTranspose:
    """The prepared launch :func:`transpose` uses for ``a`` (its matrices' shape, layout and
    element type): ``.launcher.kernel`` is the kernel (chosen for the shape when ``kernel`` is
    ``None``), ``.launcher.chosen`` the :class:`~autotune.runtime.lookup.LaunchConfig` (config,
    rung, note; the note says why that kernel was chosen and names the canonical dtype whose
    config a word-moved dtype uses).

    Raises:
        InvalidInputError, GPUUnavailableError: as :func:`transpose`.
    """
    check_db_arg(db)
    if kernel is not None:
        _kernel(kernel)
    v = view_of(a)
    return _plan(kernel, db, layout_of(v), v)


def clear_prepared() -> None:
    """Forget every prepared launch (called by :func:`autotune.clear_cache`)."""
    with _lock:
        _prepared.clear()
        _kernels.clear()


caches.register("prepared_transposes", clear_prepared)


def _plan(kernel, db, lay: Layout, v: View) -> PreparedTranspose:
    views = kernel is None and (lay.batch > 1 or lay.ld != lay.cols)  # the choice may differ for views
    key = (threading.get_ident(), driver.current_context(), kernel, views, db, lay.rows, lay.cols, v.itemsize,
           v.type_name)
    return caches.get_or_make(_prepared, key, lambda: _prepare(kernel, db, lay, v, views), _lock)


def _prepare(kernel, db, lay: Layout, v: View, views: bool) -> PreparedTranspose:
    from dataclasses import replace

    check_db_arg(db)

    from autotune.runtime.compiled import compiled

    dt: DType = DTYPES.get(v.type_name) or word_dtype(v.itemsize)
    why = default = None
    if kernel is None:
        from autotune.measure.device import current_device
        from autotune.runtime.transpose.choice import rule_config, transpose_kernel_for

        kernel, why = transpose_kernel_for(lay.rows, lay.cols, dt, views=views, device=current_device(), db=db)
        default = rule_config(lay.rows, lay.cols, dt.itemsize)
        default = default if default is not None and default.kernel == kernel else None
    launcher = compiled(Problem.of(_kernel(kernel), (lay.rows, lay.cols), dt), db=db, default=default)
    note = launcher.chosen.note
    if dt.name != v.type_name:
        note = f"{v.type_name} moved as {v.itemsize}-byte words with the config of {dt.name}: {note}"
    if why is not None:
        note = f"{note}; kernel {kernel} chosen for the shape: {why}"
    if note != launcher.chosen.note:
        launcher = replace(launcher, chosen=replace(launcher.chosen, note=note))
    return PreparedTranspose(launcher, v.itemsize)


def _kernel(kernel):
    found = _kernels.get(kernel) if isinstance(kernel, str) else None
    if found is None:
        from autotune.kernel.catalog import resolve_kernel

        check_kernel_arg(kernel)
        found = resolve_kernel(kernel)
        if found.dims != ("rows", "cols") or found.check_spec.reference != "autotune.kernel.references:transpose":
            raise InvalidInputError(f"kernel {kernel!r} is not a transpose")
        if isinstance(kernel, str):
            _kernels[kernel] = found
    return found


def _empty(like, v: View, lay: Layout):
    """A new contiguous ``(..., cols, rows)`` array of ``like``'s kind and element type, and its address."""
    shape = (*lay.lead, lay.cols, lay.rows)
    if v.kind == "torch":
        device = _torch_devices.get(v.device)
        if device is None:
            device = _torch_devices[v.device] = like.device
        t = _torch_empty()(shape, dtype=v.native, device=device)
        return t, t.data_ptr()
    if v.kind == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            c = cupy.empty(shape, dtype=v.native)
        return c, c.data.ptr
    from pycuda import gpuarray

    g = gpuarray.empty(shape, v.native)
    return g, int(g.gpudata)


@functools.cache
def _torch_empty():
    import torch

    return torch.empty


def _out_pointer(o: View, v: View, lay: Layout) -> int:
    """The address of ``o`` (the view of ``out``), once checked to be a writable contiguous
    ``(..., cols, rows)`` array of ``v``'s element size and type."""
    shape = (*lay.lead, lay.cols, lay.rows)
    raw = "raw" in (o.type_name + v.type_name)
    if (tuple(o.shape) != shape or o.itemsize != v.itemsize or (o.type_name != v.type_name and not raw)
            or o.readonly or not layout_of(o, "out").contiguous):
        raise InvalidInputError(f"out must be a writable C-contiguous {'x'.join(map(str, shape))} {v.type_name} "
                                f"array, not {'x'.join(map(str, o.shape))} {o.type_name} strides {tuple(o.strides)}")
    return o.pointer
