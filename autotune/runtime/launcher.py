"""``f = autotune.launcher(kernel); f(out, x)``: a tuned launch whose dims come from the arrays.

A :class:`KernelLauncher` is a callable on one device array per array argument of the kernel
(scratch included), in the kernel file's order. It reads the dims from the arrays' shapes
(:mod:`autotune.runtime.shapes`) and dispatches per (thread, device, shapes, dtypes) to a
:class:`~autotune.runtime.packed.PackedLaunch`:

* first sight of a key (the cold path, milliseconds): every array is read through its
  ``__cuda_array_interface__`` and checked (a GPU array, C-contiguous, of the argument's
  dtype), the dims are solved and checked against every shape, the config comes from the
  lookup ladder (:func:`autotune.lookup`: exact, nearest shape, same arch, default), and the
  config is built through the on-disk cubin cache and loaded (:func:`autotune.compiled`); a
  config of the ``same_arch`` rung is then timed against the default on the call's arrays and
  stream, once per process and problem, and the faster kept (:mod:`autotune.runtime.guard`);
* after that (the hot path) a call is one dict lookup on the key, a contiguity check per
  array, the pointers packed into the argument buffer and one ``cuLaunchKernel`` on the current
  stream: PyTorch tensors are read through ``data_ptr()``, ``shape``, ``dtype``,
  ``is_contiguous()`` and ``get_device()`` (no ``__cuda_array_interface__``: it costs several
  µs a tensor); CuPy arrays likewise through ``data.ptr``, ``data.device_id``, ``shape``,
  ``dtype`` and their C-contiguous flag (the key holds the first array's device: that every
  array is on it is checked on first sight of a shape). PyCUDA GPUArrays and other arrays take
  the general path (``gpudata`` and ``flags``, or the interface, and the current context).
  Nothing else is checked again: anything else that could differ is in the key.

The stream is the caller's current stream of the arrays' library (PyTorch's
``torch.cuda.current_stream()``, so launches are captured by ``torch.cuda.graph``; CuPy's
``get_current_stream()``; the legacy default stream for PyCUDA), or ``stream=``. Make the first
call of each shape outside a graph capture: loading a module is not allowed while capturing.

Host time per launch: ``benchmarks/launch_overhead.py``.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.errors import InvalidInputError
from autotune.kernel.arguments import (check_bundle_args, check_db_arg, check_dims_arg, check_dtype_arg, check_flag_arg,
                                       check_kernel_arg)
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.problem import Problem
from autotune.runtime import driver
from autotune.runtime.arrays import describe, describe_torch
from autotune.runtime.guard import settle
from autotune.runtime.packed import PackedLaunch
from autotune.runtime.shapes import DimSolver
from autotune.runtime.streams import cupy_stream, stream_handle, torch_stream_reader

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from autotune.kernel.dtypes import DType
    from autotune.kernel.model import Kernel

__all__ = ["KernelLauncher", "launcher", "MAX_PREPARED"]

MAX_PREPARED = 4096
"""Prepared launches kept per launcher; the table starts afresh when full."""

_shape_dtype = operator.attrgetter("shape", "dtype")
_data_ptr = operator.methodcaller("data_ptr")
_is_contiguous = operator.methodcaller("is_contiguous")
_get_ident = threading.get_ident
_cupy_pointer = operator.attrgetter("data.ptr")
_c_contiguous = operator.attrgetter("_c_contiguous")  # CuPy's own flag: no Flags object per call


def _flags_contiguous(a) -> bool:
    return a.flags.c_contiguous


def launcher(kernel: str | Path | Kernel, dtype: DTypeLike | DType | None = None, *, db: str | None = None,
             dims: Mapping[str, int] | None = None, reset: bool = False, bundle: str | Path | None = None,
             allow_same_arch: bool | None = None, tune: str | None = None) -> KernelLauncher:
    """A tuned launch of ``kernel`` for any shape: ``f = launcher(kernel); f(*arrays)``.

    Args:
        kernel: a catalog name, a path to a kernel file, or a `Kernel`.
        dtype: the problem's dtype (NumPy dtype or name); ``None``: read from the arrays (the
            first array argument of dtype ``"T"``).
        db: results database URL (default ``AUTOTUNE_DB`` or the platformdirs default).
        dims: values of dims that no array's shape names (``{"k": 64}``).
        reset: clear the arrays whose kernel file gives ``reset`` before every launch (each call
            may say otherwise with ``reset=``).
        bundle: a deployment bundle's folder (``autotune export NAME --bundle DIR``): every
            config comes from it, no database is read (default ``AUTOTUNE_BUNDLE``, if set).
            It is read and checked here (its kernel's source), and against the device at
            the first launch of each shape (``autotune.runtime.bundle``).
        allow_same_arch: use a bundle made for another device model, driver or nvcc of the
            same compute capability, at the ``same_arch`` rung (default: refused, unless
            ``AUTOTUNE_BUNDLE_ALLOW=same_arch``). A ``same_arch`` config, from a bundle or the
            database, is timed against the default at its problem's first launch and kept only
            where faster (``autotune.runtime.guard``; ``AUTOTUNE_SAME_ARCH_GUARD=off``: not).
        tune: ``None`` (the default): launch what the lookup ladder gives. ``"quick"``: a shape
            with no tuned config stored is first tuned by a short search in a child process
            (module ``autotune.runtime.first_sight``), stored, then launched; each shape tuned (or
            not) is said once by a ``TuningWarning``. Not with a bundle (its configs are chosen).
            Processes meeting one new shape on one host search it once: the others wait for
            that search and launch its winner. ``AUTOTUNE_TUNE`` overrides ``tune`` for the
            whole process: ``off``, or ``quick`` (every launcher without a bundle).

    Raises:
        InvalidInputError: unknown kernel or dtype; a dim no array's shape names and not in
            ``dims``; ``reset=True`` for a kernel without ``reset`` arrays; an argument of
            another type or out of range (``dims`` not a mapping of integers, ``reset`` not a
            bool), checked before the kernel file is read (``autotune.kernel.arguments``); a
            bundle that cannot be read, or was made for another source of the kernel
            (``BundleError``: one line naming the file and what is wrong); ``tune`` not a
            preset, or given with a bundle; at a new shape's first launch, ``AUTOTUNE_TUNE``
            neither ``off`` nor a preset.
        KernelFileError: the kernel file is malformed.
    """
    return KernelLauncher(kernel, dtype, db=db, dims=dims, reset=reset, bundle=bundle,
                          allow_same_arch=allow_same_arch, tune=tune)


class KernelLauncher:
    """A kernel's tuned launch, dispatched on the arrays' shapes and dtypes: the first call of a
    shape checks every array, solves the dims, looks the config up and loads it (milliseconds);
    later calls of that shape are a dict lookup and one ``cuLaunchKernel`` (module
    ``autotune.runtime.launcher``).

    Made by `launcher`. Thread-safe: each thread gets its own prepared launches.
    """

    def __init__(self, kernel: str | Path | Kernel, dtype: DTypeLike | DType | None = None, *,
                 db: str | None = None, dims: Mapping[str, int] | None = None, reset: bool = False,
                 bundle: str | Path | None = None, allow_same_arch: bool | None = None,
                 tune: str | None = None) -> None:
        from autotune.runtime.bundle import check_kernel, given_bundle, read_bundle
        from autotune.runtime.first_sight import check_preset

        check_kernel_arg(kernel)  # every argument by type and range before the kernel file is read
        check_dtype_arg(dtype, optional=True)
        check_db_arg(db)
        check_dims_arg(dims, "dims", optional=True, positional=False, empty=True)
        check_flag_arg(reset, "reset")
        check_bundle_args(bundle, allow_same_arch)
        self.tune, self._seen = check_preset(tune), set()
        self.kernel = resolve_kernel(kernel)
        self.bundle, self.allow_same_arch = given_bundle(bundle), allow_same_arch
        if self.tune is not None and bundle is not None:
            raise InvalidInputError(f"tune={tune!r} is not allowed with a bundle: its configs are chosen already")
        if self.bundle is not None:  # a bad bundle, or one of another source of this kernel: said now
            check_kernel(read_bundle(self.bundle), self.kernel)
        self.dtype = None if dtype is None else get_dtype(dtype)
        if self.dtype is not None:
            self.kernel.check_dtype(self.dtype)
        self.db, self.reset = db, bool(reset)
        if self.reset and not any(a.reset is not None for a in self.kernel.arrays):
            raise InvalidInputError(f"reset=True is not allowed: no array of {self.kernel.name} has reset in its "
                                    "kernel file")
        self.solver = DimSolver(self.kernel, dims)
        self._prepared: dict[tuple, PackedLaunch] = {}
        self._tensor = None  # torch.Tensor, once a call has given one (imported by the caller, not here)
        self._torch_stream = None
        self._cupy = None  # cupy.ndarray, likewise
        self._cupy_contiguous = _flags_contiguous
        self._lock = threading.Lock()

    def __call__(self, *arrays: Any, stream: Any = None, reset: bool | None = None) -> None:
        """Launch on ``arrays``: one device array per array argument of the kernel, in order
        (scratch included): PyTorch CUDA tensors, CuPy arrays, PyCUDA GPUArrays or any
        ``__cuda_array_interface__``, C-contiguous, on the device of the current CUDA context.
        Scalars come from the dims. ``stream``: a handle or stream object (default: the
        current stream of the arrays' library). ``reset``: clear the ``reset`` arrays first
        (default: the launcher's).

        Raises:
            InvalidInputError: wrong number of arrays, an array that is not a C-contiguous GPU
                array of its argument's dtype, dims the arrays disagree on, or a shape that does
                not fit the dims (one line naming them).
            AutotuneError: the config does not build or fit this device, or the driver refused
                the launch.
        """
        if reset is not None and reset is not True and reset is not False:
            check_flag_arg(reset, "reset")  # "no" is a truthy string: never a reset
        first = arrays[0] if arrays else None
        if type(first) is self._tensor:
            device = first.get_device()
            try:
                p = self._prepared.get((_get_ident(), device, *map(_shape_dtype, arrays)))
                ready = p is not None and all(map(_is_contiguous, arrays))
            except AttributeError:  # not every array is a tensor: the cold path says which
                ready = False
            if ready:
                s = self._torch_stream(device) if stream is None else stream_handle(stream, first)
                if reset or (reset is None and self.reset):
                    p(map(_data_ptr, arrays), s, True)
                else:
                    p.go(map(_data_ptr, arrays), s)
                return
        elif type(first) is self._cupy:
            try:
                p = self._prepared.get((_get_ident(), ("cupy", first.data.device_id), *map(_shape_dtype, arrays)))
                ready = p is not None and all(map(self._cupy_contiguous, arrays))
            except AttributeError:
                ready = False
            if ready:
                s = cupy_stream() if stream is None else stream_handle(stream, first)
                if reset or (reset is None and self.reset):
                    p(map(_cupy_pointer, arrays), s, True)
                else:
                    p.go(map(_cupy_pointer, arrays), s)
                return
        self._other(arrays, stream, self.reset if reset is None else reset)

    def prepared(self, *arrays: Any) -> PackedLaunch:
        """The prepared launch a call on ``arrays`` uses (``.launcher.chosen``: the config and
        the lookup rung; ``.launcher.dims``: the solved dims), prepared now if new (the
        ``same_arch`` guard included, on ``arrays`` and the current stream).

        Raises:
            InvalidInputError: as a call.
            AutotuneError: as a call.
        """
        return self._lookup(arrays)[0]

    def _other(self, arrays, stream, reset: bool) -> None:
        """Every call but a hot PyTorch one: CuPy, PyCUDA and other arrays, and first sights."""
        p, pointers, kind = self._lookup(arrays, stream)
        p(pointers, stream_handle(stream, arrays[0], kind), reset)

    def _lookup(self, arrays, stream: Any = None) -> tuple[PackedLaunch, list[int], str]:
        if not arrays:
            raise InvalidInputError(f"{self.kernel.name} takes {len(self.kernel.arrays)} arrays "
                                    f"({', '.join(a.name for a in self.kernel.arrays)}); got none")
        first = type(arrays[0])
        kind = first.__module__.split(".")[0] if all(type(a) is first for a in arrays) else "mixed"
        if kind == "torch" and hasattr(arrays[0], "data_ptr"):
            key = (_get_ident(), arrays[0].get_device(), *map(_shape_dtype, arrays))
            ready = all(map(_is_contiguous, arrays))
            pointers = [a.data_ptr() for a in arrays] if ready else None
        elif kind == "cupy" and hasattr(arrays[0], "data"):
            key = (_get_ident(), ("cupy", arrays[0].data.device_id), *map(_shape_dtype, arrays))
            ready = all(a.flags.c_contiguous for a in arrays)
            pointers = [a.data.ptr for a in arrays] if ready else None
        elif kind == "pycuda" and hasattr(arrays[0], "gpudata"):
            key = (_get_ident(), driver.current_context(), *map(_shape_dtype, arrays))
            ready = all(a.flags.c_contiguous for a in arrays)
            pointers = [int(a.gpudata) for a in arrays] if ready else None
        else:
            described = self._describe(arrays)
            key = (_get_ident(), driver.current_context(), *((d.shape, d.dtype.name) for d in described))
            pointers, ready = [d.pointer for d in described], True
        p = self._prepared.get(key) if ready else None
        if p is None:
            p, pointers = self._prepare(key, arrays, kind, stream)
        return p, pointers, first.__module__.split(".")[0]

    def _describe(self, arrays) -> list:
        k = self.kernel
        if len(arrays) != len(k.arrays):
            raise InvalidInputError(f"{k.name} takes {len(k.arrays)} arrays ({', '.join(a.name for a in k.arrays)}); "
                                    f"got {len(arrays)}")
        return [describe_torch(obj, a.name) if type(obj).__module__.split(".")[0] == "torch" else
                describe(obj, a.name, None) for obj, a in zip(arrays, k.arrays)]

    def _compiled(self, problem: Problem):
        """``compiled(problem)``; with ``tune``, a problem with nothing stored for its exact key is
        tuned first, once per launcher (``autotune.runtime.first_sight``)."""
        from autotune.runtime.compiled import compiled

        from autotune.runtime.first_sight import preset_now

        preset = preset_now(self.tune)  # AUTOTUNE_TUNE, read at each new shape, else tune=
        if preset is not None and self.bundle is None and problem not in self._seen:
            from autotune.base.caches import clear_cache
            from autotune.measure.device import current_device
            from autotune.runtime.first_sight import tune_first
            from autotune.runtime.lookup import lookup

            with self._lock:
                first = problem not in self._seen
                self._seen.add(problem)
            device = current_device()
            answer = lookup(problem, device=device, db=self.db)

            def stored() -> bool:  # after waiting for another process's search of it
                clear_cache()
                return lookup(problem, device=device, db=self.db).rung == "exact"

            if first and answer.rung != "exact" and tune_first(problem, device.ordinal, self.db, preset,
                                                                answer.rung, answer.config.key,
                                                                device_name=device.name, stored=stored):
                clear_cache()  # the lookup reads the stored winner afresh
        return compiled(problem, db=self.db, bundle=self.bundle, allow_same_arch=self.allow_same_arch)

    def _prepare(self, key: tuple, arrays, kind: str, stream: Any = None) -> tuple[PackedLaunch, list[int]]:
        """The cold path (see module doc): check everything, look the config up, load it."""
        k = self.kernel
        described = self._describe(arrays)
        dt = self.dtype
        if dt is None:  # the first array of the problem's dtype tells it
            problem = [d.dtype for d, a in zip(described, k.arrays) if a.dtype == "T"]
            dt = problem[0] if problem else get_dtype(k.dtypes[0])
        k.check_dtype(dt)
        for d, a in zip(described, k.arrays):
            want = a.dtype_of(dt)
            if d.dtype.name != want.name:
                why = "the problem's dtype" if a.dtype == "T" else "its kernel file's"
                raise InvalidInputError(f"{a.name} must be {want.name} ({why}), not {d.dtype.name}")
            if a.role != "in" and d.readonly:
                raise InvalidInputError(f"{a.name} is read-only; the kernel writes it ({a.role})")
        devices = {a.get_device() if kind == "torch" else a.data.device_id for a in arrays} \
            if kind in ("torch", "cupy") else set()
        if len(devices) > 1:
            raise InvalidInputError(f"the arrays are on devices {sorted(devices)}; {k.name} takes arrays on one device")
        shapes = [d.shape for d in described]
        dims = self.solver.solve(shapes)
        problem = Problem.of(k, dims, dt)
        scope: Any = contextlib.nullcontext()
        if kind == "torch":
            import torch

            self._tensor = type(arrays[0]) if type(arrays[0]) is torch.Tensor else self._tensor
            self._torch_stream = torch_stream_reader()
            scope = torch.cuda.device(arrays[0].device)
        elif kind == "cupy":
            import cupy

            self._cupy = type(arrays[0]) if type(arrays[0]) is cupy.ndarray else self._cupy
            self._cupy_contiguous = _c_contiguous if hasattr(arrays[0], "_c_contiguous") else _flags_contiguous
            scope = cupy.cuda.Device(arrays[0].data.device_id)
        with scope:
            made = self._compiled(problem)
            self.solver.check(dims, shapes, [shape for _, shape, _, _ in made.expected])
            if made.pending is not None:  # the same_arch rung: timed against the default, once per launcher
                settle(made, [d.pointer for d in described], stream_handle(stream, arrays[0]))
        p = PackedLaunch(made)
        with self._lock:
            if len(self._prepared) >= MAX_PREPARED:
                self._prepared.clear()
            self._prepared[key] = p
        return p, [d.pointer for d in described]
