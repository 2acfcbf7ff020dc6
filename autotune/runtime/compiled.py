"""Launching any kernel with its tuned config: ``f = compiled(kernel, dims, dtype); f(*arrays)``.

:func:`compiled` looks the config up (:func:`autotune.lookup`), builds it with ``nvcc -cubin``
through the project's on-disk cubin cache (:func:`autotune.measure.compile.build_cubin`: a
config built once, by a search, ``autotune check`` or an earlier process, is read from a
file), loads the cubin into the CUDA context current on the calling thread (the primary
context CuPy and PyTorch use, or a PyCUDA context) through the driver API
(:mod:`autotune.runtime.driver`, no PyCUDA), and returns a :class:`Launcher`. Its call checks
the arrays' shapes and dtypes against the kernel's arguments and launches with
``cuLaunchKernel`` on the caller's current stream (:mod:`autotune.runtime.streams`).
Launchers are cached per (context, kernel, dims, dtype, database) until
:func:`autotune.clear_cache`. A config of the ``same_arch`` rung (tuned on another GPU model of
this compute capability) is timed against the default at the launcher's first call, and the
faster kept (:mod:`autotune.runtime.guard`).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.base import caches
from autotune.measure.packing import PackedArguments, kernel_layout
from autotune.errors import AutotuneError, InvalidInputError, TrialFailed
from autotune.kernel.arguments import check_bundle_args, check_db_arg, shown
from autotune.kernel.config import Config
from autotune.kernel.dims import Dims
from autotune.kernel.model import Array, Kernel
from autotune.kernel.problem import Problem
from autotune.runtime import driver, guard, recording
from autotune.runtime.arrays import describe, describe_torch
from autotune.runtime.streams import stream_handle

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from autotune.kernel.dtypes import DType
    from autotune.measure.device import DeviceInfo
    from autotune.runtime.lookup import LaunchConfig

__all__ = ["Launcher", "compiled", "clear_launchers"]

_lock = threading.Lock()
_launchers: dict[tuple, Launcher] = {}
MAX_GRID = (2**31 - 1, 65535, 65535)
"""CUDA's limits of blocks per grid along x, y and z."""
CTYPES = {"int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
          "float32": ctypes.c_float, "float64": ctypes.c_double}
"""The ctypes type of each scalar argument type of a kernel file."""


@dataclass
class Launcher:
    """A loaded kernel with its tuned config for one context and problem.

    Attributes:
        problem: the `Problem` (also its ``kernel``, ``dims``
            and ``dtype`` as properties).
        chosen: the `LaunchConfig` used (config, rung, note).
        grid: the launch's blocks per grid (x, y, z).
        block: its threads per block (x, y, z).
        shared: its dynamic shared memory, bytes.
        function: the driver's function handle (valid in the context it was loaded in).
        module: the driver's module handle (likewise).
        expected: ``(name, shape, dtype, written)`` of each array argument, in order.
        scalars: the ctypes value of each scalar argument, by name (from the dims).
        device: the identity of the device it was loaded for (``None``: not known; what a
            recording counts its launches under, `autotune.runtime.recording`).
        pending: the ``same_arch`` guard not run yet (``None``: none, or run: ``chosen`` says
            its verdict; `autotune.runtime.guard`): the first call runs it, and may load the
            default's function instead.
    """

    problem: Problem
    chosen: LaunchConfig
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    function: int
    module: int
    expected: list[tuple[str, tuple[int, ...], DType, bool]]
    scalars: dict[str, Any]
    device: DeviceInfo | None = None
    pending: guard.Pending | None = None

    @property
    def kernel(self) -> Kernel:
        """The problem's kernel."""
        return self.problem.kernel

    @property
    def dims(self) -> Dims:
        """The problem's dims, ``(name, value)`` pairs."""
        return self.problem.dims

    @property
    def dtype(self) -> DType:
        """The problem's dtype."""
        return self.problem.dtype

    def __call__(self, *arrays: Any, stream: Any = None) -> None:
        """Launch on ``arrays``: one device array per array argument of the kernel, in order
        (PyTorch, CuPy, PyCUDA or any ``__cuda_array_interface__``), C-contiguous, of the
        argument's shape and dtype. Scalars come from the dims. Every array is checked on every
        call (PyTorch tensors through their own attributes, others through the interface); for
        many launches `launcher` checks only what can change.

        Raises:
            InvalidInputError: wrong number of arrays, a shape, dtype or read-only output
                that does not fit, or a bad ``stream``.
            AutotuneError: the driver refused the launch.
        """
        if len(arrays) != len(self.expected):
            names = ", ".join(name for name, *_ in self.expected)
            raise InvalidInputError(f"{self.kernel.name} takes {len(self.expected)} arrays ({names}); "
                                    f"got {len(arrays)}")
        values = []
        for obj, (name, shape, dtype, written) in zip(arrays, self.expected):
            a = describe_torch(obj, name) if type(obj).__module__.startswith("torch") else describe(obj, name, None)
            if a.shape != shape or a.dtype.name != dtype.name or (written and a.readonly):
                raise InvalidInputError(f"{name} must be a{' writable' if written else ''} C-contiguous "
                                        f"{'x'.join(map(str, shape))} {dtype.name} array, not "
                                        f"{'x'.join(map(str, a.shape))} {a.dtype.name}")
            values.append(a.pointer)
        s = stream_handle(stream, arrays[0])
        if self.pending is not None:  # the first call at the same_arch rung: timed against the default
            guard.settle(self, values, s)
        packed = PackedArguments(kernel_layout(self.kernel.args))
        pointers = iter(values)
        for a in self.kernel.args:
            packed.put(a.name, next(pointers) if isinstance(a, Array) else self.scalars[a.name].value)
        driver.launch(self.function, self.grid, self.block, self.shared, s, packed.argv, self.kernel.name)

    def adopt(self, other: Launcher) -> None:
        """Launch ``other``'s loaded function, geometry and shared memory from now on (another
        config of the same problem, chosen by the guard)."""
        self.grid, self.block, self.shared = other.grid, other.block, other.shared
        self.function, self.module = other.function, other.module


recording.register_method(Launcher, "__call__", recording.launcher_call)  # counted while a recording is active


def compiled(kernel: str | Path | Kernel | Problem, dims: Mapping[str, int] | Sequence[int] | Dims | None = None,
             dtype: DTypeLike | DType = "float32", *, db: str | None = None,
             default: Config | None = None, bundle: str | Path | None = None,
             allow_same_arch: bool | None = None) -> Launcher:
    """The tuned launch of ``kernel`` for ``dims`` and ``dtype`` on the current context's device.

    Args:
        kernel: a catalog name, a path to a kernel file, or a `Kernel`;
            or a whole `Problem` (then no ``dims`` and ``dtype``).
        dims: its named dims: a mapping ``{"n": 1048576}``, pairs, or values in its order.
        dtype: the problem's dtype (NumPy dtype or name).
        db: results database URL (default ``AUTOTUNE_DB`` or the platformdirs default).
        default: the config to launch where nothing is tuned (the ``default`` rung of
            `lookup`) instead of the kernel file's default, e.g.
            the transpose rule's config for a class of shapes (``autotune.runtime.transpose.choice.rule_config``).
        bundle: a deployment bundle's folder (``autotune export NAME --bundle DIR``) to take
            the config from instead of the database (default ``AUTOTUNE_BUNDLE``, if set;
            ``autotune.runtime.bundle``).
        allow_same_arch: use a bundle made for another device model, driver or nvcc of this
            compute capability, at the ``same_arch`` rung (default ``AUTOTUNE_BUNDLE_ALLOW=same_arch``).

    Raises:
        InvalidInputError: unknown kernel or dtype, bad dims, ``db`` or ``default`` (a
            ``default`` that is not a Config of the kernel's tunables), each checked before
            anything is opened (``autotune.kernel.arguments``); a bundle that cannot be read or
            used here (``autotune.runtime.bundle.BundleError``, naming the file and what is wrong).
        GPUUnavailableError: no current CUDA context, CUDA backend (the device's identity) or nvcc.
        AutotuneError: the chosen config does not compile or fit on this device.
    """
    from autotune.runtime.bundle import given_bundle

    check_db_arg(db)
    check_bundle_args(bundle, allow_same_arch)
    if default is not None and not isinstance(default, Config):
        raise InvalidInputError(f"default {shown(default)} is not allowed; give a Config of the kernel, or None")
    problem = Problem.of(kernel, dims, dtype)
    if default is not None:
        problem.kernel.check(default)  # its macros are the kernel's tunables
    bundle = given_bundle(bundle)
    key = (driver.current_context(), problem, db, default, bundle, allow_same_arch)
    return caches.get_or_make(_launchers, key, lambda: _build(problem, db, default, bundle, allow_same_arch), _lock)


def clear_launchers() -> None:
    """Forget every launcher (their modules stay loaded): the next call looks up and loads afresh."""
    with _lock:
        _launchers.clear()


caches.register("launchers", clear_launchers)


def _build(problem: Problem, db: str | None, default: Config | None = None, bundle: str | None = None,
           allow_same_arch: bool | None = None) -> Launcher:
    from autotune.measure.device import current_device
    from autotune.runtime.lookup import lookup

    recording.from_environment()  # AUTOTUNE_RECORD: the first cold launch starts it
    k = problem.kernel
    device = current_device()
    if bundle is not None:  # the bundle decides, not a database
        from autotune.measure.toolchain import Toolchain
        from autotune.runtime.bundle import allowed_same_arch, bundle_config, read_bundle

        chosen = bundle_config(read_bundle(bundle), problem, device, Toolchain.of(device.arch),
                               allowed_same_arch(allow_same_arch))
    else:
        chosen = lookup(problem, device=device, db=db)
    if default is not None and chosen.rung == "default" and default != chosen.config:
        chosen = replace(chosen, config=default, note=f"{chosen.note}; the rule's config {default.key} instead")
    made = _load(problem, chosen, device)
    base = default if default is not None else k.default_config()
    if chosen.rung == "same_arch" and base != chosen.config and guard.enabled():
        from autotune.runtime.lookup import LaunchConfig

        fallback = LaunchConfig(base, "default", rung="default")
        made.pending = guard.Pending(fallback, lambda: _load(problem, fallback, device))
    return made


def _load(problem: Problem, chosen: LaunchConfig, device: DeviceInfo) -> Launcher:
    """``chosen``'s config of ``problem`` built (through the cubin cache), loaded and checked
    against ``device``.

    Raises:
        InvalidInputError: its grid is over CUDA's limits.
        AutotuneError: it does not compile, or does not fit the device.
    """
    from autotune.measure.compile import build_cubin
    from autotune.measure.buffers import scalar_values

    k, dt = problem.kernel, problem.dtype
    config = chosen.config
    env = problem.env(config)
    grid, block, shared = problem.geometry(config)
    over = [f"{n}={g} > {m}" for n, g, m in zip("xyz", grid, MAX_GRID) if g > m] + \
        [f"{n}={g}" for n, g in zip("xyz", grid) if g < 1]
    if over:
        raise InvalidInputError(f"{k.name} at {problem.display} cannot be launched with config {config}: grid "
                                f"{grid} is not allowed ({', '.join(over)})")
    try:
        cubin, _, _ = build_cubin(k, config, dt, device.arch)
    except TrialFailed as exc:
        raise AutotuneError(f"config {config} of {k.name} does not compile: {exc.reason}") from None
    module, function = driver.load_function(cubin, k.function)
    limit = min(device.max_threads_per_block,
                driver.function_attribute(function, driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
    if block[0] * block[1] * block[2] > limit:
        raise AutotuneError(f"config {config} cannot run on {device.name}: {block[0] * block[1] * block[2]} threads "
                            f"per block > {limit} allowed")
    _opt_in(function, shared, device, config)
    expected = [(a.name, a.shape_of(env), a.dtype_of(dt), a.role != "in") for a in k.arrays]
    scalars = {name: CTYPES[next(s.ctype for s in k.args if s.name == name)](value.item())
               for name, value in scalar_values(k, env).items()}
    return Launcher(problem, chosen, grid, block, shared, function, module, expected, scalars, device)


def _opt_in(function: int, shared: int, device, config) -> None:
    """Check the shared memory per block against the device's limit and, above 48 KiB, raise the
    function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` (:mod:`autotune.measure.shared_memory`).

    Raises:
        AutotuneError: more than the device allows per block.
    """
    from autotune.measure.shared_memory import needs_opt_in

    static = driver.function_attribute(function, driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
    if static + shared > device.shared_limit:
        raise AutotuneError(f"config {config} cannot run on {device.name}: {static + shared} B shared memory per "
                            f"block ({static} static + {shared} dynamic) > {device.shared_limit} B allowed")
    if needs_opt_in(static, shared):
        driver.set_function_attribute(function, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
