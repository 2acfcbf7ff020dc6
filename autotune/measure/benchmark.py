"""Verifying and timing configs of any kernel on a GPU (the CUDA backend, CUDA events).

Method, per config (the effective-bandwidth method of the CUDA transpose study, generalised
over the kernel model):

1. Compile (:class:`~autotune.measure.compile.Compiler`), evaluate the launch geometry on the
   problem's dims, and check block, grid and shared memory against the device's limits
   (shared memory: the limit with the opt-in, up to 227 KiB on sm_90; a launch above 48 KiB
   raises the function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES``, :mod:`autotune.measure.shared_memory`).
2. Verify (:mod:`autotune.measure.verify`): the benchmark's inputs (drawn once, kept on the
   device and restored device to device before each launch); outputs poisoned and guarded;
   one launch per poison; compared on the device (:mod:`autotune.measure.device_compare`)
   with the reference (:mod:`autotune.measure.reference`), computed and uploaded once per
   benchmark (so once per measuring process of a search), by the kernel's check; a Python
   reference is begun in a thread as the benchmark opens, while the bounds are measured.
3. Time (:mod:`autotune.measure.timing`): warm-up launches, then ``repeats`` samples between
   CUDA events, each a batch of launches (each launch preceded by the memsets of the arrays
   with ``reset`` and the restores of the inouts, which the time includes:
   :mod:`autotune.measure.resets`); median, min and max per launch, in ms; a config
   clearly slower than the best this benchmark has timed is stopped after its first samples
   (:class:`~autotune.measure.timing.EarlyStop`, noted in :attr:`Measurement.early_stop`).
   With a :class:`~autotune.measure.timing.Precision` (certified timing, the search's default),
   samples are taken until the 95 % CI of the median is narrow enough instead of ``repeats``;
   every measurement carries its sample count and CI, and the SM clock NVML reports while the
   first samples run.
3b. Energy (the measure options' ``energy``, where NVML has the total-energy counter): after
   timing, a window of :data:`ENERGY_WINDOW_MS` of back-to-back launches between two readings
   of the counter gives joules per launch (:class:`~autotune.measure.nvml.EnergyMeter`); a config stopped
   early is not metered (:mod:`autotune.measure.energy`). Without the counter,
   :attr:`Benchmark.energy_note` says why.
4. Figures: GB/s of the objective's ``bytes`` and GFLOP/s of its ``flops``; % of the bound: a
   device-to-device ``cudaMemcpy`` moving the same bytes, and the ``bound_kernel`` (e.g.
   ``copy_row``) at its default config on the same dims, both timed the same way in the same run.

L2: for a kernel with a ``bytes`` objective whose arguments fit in twice the L2 cache,
launches rotate over enough argument sets (filled with the same values) to cover four times
the L2, so that no config is credited with cache bandwidth (:attr:`Benchmark.l2_mode`).

Other shapes of the kernel and dtype, measured with the same compiler (``also``, ``at``,
``measure_at``, ``retime_at``), are :mod:`autotune.measure.other_shapes`.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future

import numpy as np

from autotune.errors import TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DType
from autotune.kernel.problem import Problem, ProblemRef
from autotune.measure.bounds import Bounds
from autotune.measure.buildcheck import geometry_problem
from autotune.measure.buffers import ArgSet, array_layout, check_fits, host_values, scalar_values
from autotune.measure.compile import CompiledKernel, Compiler
from autotune.measure.device import DeviceInfo, cuda_driver, open_device
from autotune.measure.device_compare import DeviceComparer
from autotune.measure.energy import ENERGY_WINDOW_MS as ENERGY_WINDOW_MS, joules_per_launch
from autotune.measure.measure_options import MeasureOptions
from autotune.measure.measurement import Measurement, Retiming
from autotune.measure.other_shapes import OtherShapes
from autotune.measure.phases import PhaseClock
from autotune.measure.reference import begin_python_reference, kernel_reference
from autotune.measure.resets import Prelude
from autotune.measure.shared_memory import needs_opt_in, opt_in
from autotune.measure import nvml
from autotune.measure.timing import EarlyStop, Timing, median_ci, samples, timing
from autotune.measure.verify import Verifier, relative_norm_of

__all__ = ["Benchmark", "Timing", "open_benchmark", "check_fits", "MAX_GRID", "ENERGY_WINDOW_MS"]

ROTATE_COVER = 4  # rotating argument sets cover this many times the L2
MAX_SETS = 64
MAX_GRID = (2**31 - 1, 65535, 65535)
"""CUDA's limits of blocks per grid along x, y and z."""


class Benchmark(OtherShapes):
    """Verifies and times configs of one problem (kernel, dims, dtype) on one device.

    Must be used inside a current CUDA context (:func:`open_benchmark` gives one).

    Args:
        device: the current device.
        problem: the :class:`~autotune.kernel.problem.Problem` (checked where it was built).
        measure: how each config is measured
            (:class:`~autotune.measure.measure_options.MeasureOptions`, checked where it was
            built; default: its defaults, certified timing): ``warmup`` launches, then
            ``repeats`` samples, or with ``ci`` above 0 samples until the median's CI is
            narrow enough (its :attr:`~MeasureOptions.precision`); ``seed`` of the inputs
            (``None``: fresh entropy); ``energy``: meter joules per launch where NVML offers
            the total-energy counter (:attr:`energy_note` says why not otherwise);
            ``early_stop``: stop configs clearly slower than the best so far
            (:class:`~autotune.measure.timing.EarlyStop`). Its ``trial_timeout`` is the
            measuring process's (:mod:`autotune.measure.isolation`).
        bounds: measure the objective's bounds (memcpy, bound kernel); off for the bound
            kernel's own benchmark.
        inputs: host values to reuse, by array name, where name, shape and element type
            match (the bound kernel's benchmark takes its problem's: 256 MB of random
            values drawn once, not twice).
        also: other problems of the kernel and dtype (:mod:`autotune.measure.other_shapes`).
        compiler: the :class:`~autotune.measure.compile.Compiler` to share (an other shape's).

    Raises:
        InvalidInputError: the arguments do not fit in free device memory.
    """

    def __init__(self, device: DeviceInfo, problem: Problem, measure: MeasureOptions | None = None, *,
                 bounds: bool = True, inputs: Mapping[str, np.ndarray] | None = None,
                 also: Sequence[Problem | ProblemRef] = (), compiler: Compiler | None = None) -> None:
        measure = measure or MeasureOptions()
        self._other_shapes(also, measure, bounds)
        self.drv = cuda_driver()
        self.problem = problem
        self.device, self.kernel, self.dtype, self.dims = device, problem.kernel, problem.dtype, problem.dims
        self.measure_options = measure
        self.warmup, self.repeats, self.precision = measure.warmup, measure.repeats, measure.precision
        self.sm_clock = nvml.sm_clock_reader(device.pci_bus_id) if device.pci_bus_id else None
        self.energy_note: str | None = None
        self.meter: nvml.EnergyMeter | None = None
        if measure.energy:
            meter = nvml.energy_meter(device.pci_bus_id)
            self.meter, self.energy_note = (None, meter) if isinstance(meter, str) else (meter, None)
        self.dim_values = problem.values
        env, kernel, dtype = problem.env(), problem.kernel, problem.dtype
        self.layout = array_layout(kernel, env, dtype)
        self.scalars = scalar_values(kernel, env)
        self.bytes, self.flops = problem.figure("bytes"), problem.figure("flops")
        footprint = check_fits(device, problem, self.drv.mem_get_info()[0])  # the free bytes
        self.rng = np.random.default_rng(measure.seed)
        self.compiler = compiler or Compiler(device.arch, device.max_threads_per_sm)
        self.sets = [ArgSet.allocate(self.drv, self.layout) for _ in range(self._set_count(footprint))]
        given = inputs or {}
        self._values = {i: self._input(a, shape, dt, given.get(a.name))
                        for i, (a, shape, dt) in enumerate(self.layout) if a.role != "out" or a.reset is not None}
        self.prelude = Prelude(self.drv, self.layout, self._values)
        self._filled = False
        self._verifier: Verifier | None = None
        self._comparer: DeviceComparer | None = None
        # begun now, in a thread (so computed while the bounds are measured and the search opens its store)
        self._expected: Future | None = None if kernel.check_spec.reference is None else \
            begin_python_reference(kernel, self.layout, self.scalars, self._values)
        self.early = EarlyStop() if measure.early_stop else None
        self.bounds = Bounds(self, enabled=bounds)

    def _input(self, array, shape: tuple[int, ...], dtype: DType, given: np.ndarray | None) -> np.ndarray:
        """``given`` where it fits ``shape`` and ``dtype``, else fresh values per the array's init
        (an array with ``reset``: its reset value)."""
        if array.reset is not None:
            return np.full(shape, array.reset, dtype.numpy)
        if given is not None and given.shape == tuple(shape) and given.dtype == dtype.numpy:
            return given
        return host_values(array, shape, dtype, self.rng)

    @property
    def inputs(self) -> dict[str, np.ndarray]:
        """The host values of the input arrays, by name (for another benchmark's ``inputs``)."""
        return {self.layout[i][0].name: v for i, v in self._values.items() if self.layout[i][0].role == "in"}

    @property
    def l2_mode(self) -> str:
        """``single`` (one argument set: larger than the L2) or ``rotating`` (see module doc)."""
        return "rotating" if len(self.sets) > 1 else "single"

    def _set_count(self, footprint: int) -> int:
        if self.bytes is None or footprint >= 2 * self.device.l2_bytes:
            return 1
        return max(1, min(MAX_SETS, math.ceil(ROTATE_COVER * self.device.l2_bytes / max(footprint, 1))))

    def _fill(self) -> None:
        """The same input values in every argument set (timing on zeros can flatter a kernel)."""
        if not self._filled:
            for args in self.sets:
                if self._verifier is not None:
                    self._verifier.restore(args)  # device to device
                    continue
                for i, values in self._values.items():
                    if args.nbytes[i]:
                        self.drv.memcpy_htod(args.pointers[i], np.ascontiguousarray(values))
            self._filled = True

    def free(self) -> None:
        """Release the device buffers (the other shapes' too)."""
        self._free_other_shapes()
        for held in (self._verifier, self._comparer):
            if held is not None:
                held.free()
        self._verifier = self._comparer = None
        self.prelude.free()
        for args in self.sets:
            args.free()
        self.bounds.free()

    @property
    def memcpy_gbps(self) -> float | None:
        """GB/s of a device-to-device memcpy moving the objective's bytes (``None``: no memcpy bound)."""
        return self.bounds.memcpy_gbps

    @property
    def copy_gbps(self) -> float | None:
        """GB/s of the objective's bound kernel on these dims (``None``: none)."""
        return self.bounds.kernel_gbps

    def compile(self, config: Config, clock: PhaseClock | None = None) -> tuple[CompiledKernel, tuple, tuple, int]:
        """Compile ``config`` and check its launch: ``(compiled, grid, block, dynamic shared bytes)``;
        ``clock`` gets the compile and load times (:class:`~autotune.measure.compile.Compiler`).

        Raises:
            TrialFailed: ``compile_error``, or ``resources`` (geometry over the limits, or
                an expression dividing by zero for this config; where the expressions alone
                say so, before nvcc runs).
        """
        try:
            grid, block, shared = self.problem.geometry(config)
        except ZeroDivisionError:
            raise TrialFailed("resources", "the launch geometry divides by zero for this config") from None
        bad = [f"{n}={g} > {m}" for n, g, m in zip("xyz", grid, MAX_GRID) if g > m] + \
              [f"{n}={g}" for n, g in zip("xyz", grid) if g < 1]
        if bad:
            raise TrialFailed("resources", f"grid {grid} is not allowed ({', '.join(bad)})")
        refused = geometry_problem(grid, block, shared, None, self.device.arch, self.device.shared_limit)
        if refused:  # the kernel file's expressions say it cannot launch: no nvcc for it
            raise TrialFailed("resources", refused)
        compiled = self.compiler(config, self.dtype, math.prod(block), self.kernel, clock)
        compiled.check_launch(self.device, block, shared)
        if needs_opt_in(compiled.shared_bytes, shared):  # above 48 KiB: the launch must opt in
            opt_in(compiled.function, shared)
        return compiled, grid, block, shared

    def launcher(self, compiled: CompiledKernel, grid, block, shared: int, sets: list[ArgSet] | None = None):
        """A launch of ``compiled`` that moves to the next argument set on every call, each
        launch preceded by its set's resets and restores (:mod:`autotune.measure.resets`)."""
        fn = compiled.function
        chosen = sets or self.sets
        launches = [fn.launcher(grid, block, self._params(args), shared) for args in chosen]
        if not self.prelude.empty:
            pairs = itertools.cycle([(self.prelude.for_set(args), go) for args, go in zip(chosen, launches)])

            def launch() -> None:
                before, go = next(pairs)
                before()
                go()
            return launch
        if len(launches) == 1:
            return launches[0]
        cycle = itertools.cycle(launches)
        return lambda: next(cycle)()

    def _params(self, args: ArgSet) -> list:
        pointers = iter(args.pointers)
        return [np.uintp(next(pointers)) if a.name not in self.scalars else self.scalars[a.name]
                for a in self.kernel.args]

    def verify(self, compiled: CompiledKernel, grid, block, shared: int) -> None:
        """Verify ``compiled`` against the kernel's check, on the benchmark's inputs.

        Raises:
            TrialFailed: ``wrong_result``, ``launch_error`` or ``resources``.
        """
        args = self.sets[0]
        self.verifier().verify(self.launcher(compiled, grid, block, shared, [args]), args)
        self._filled = False  # the verification wrote other values into the first set

    def verifier(self) -> Verifier:
        """The :class:`~autotune.measure.verify.Verifier` of this problem: made at the first
        verification (the reference computed, inputs and reference uploaded), then kept.

        Raises:
            TrialFailed: the reference kernel fails (``launch_error``), or the comparison
                kernels do not build (``compile_error``).
            KernelFileError: the Python reference is broken.
        """
        if self._verifier is None:
            k = self.kernel
            expected = self._reference(self._values)
            base = k.path.parent if k.path else None
            norm = relative_norm_of(k.check_spec, base)  # resolved once: the Verifier takes it whole
            device_side = k.check_spec.exact or k.check_spec.compare == "tolerance" or norm is not None
            if device_side and self._comparer is None:
                self._comparer = DeviceComparer.load(self.drv, self.device.arch)
            self._verifier = Verifier(self.drv, [a.role for a, _, _ in self.layout],
                                      [a.name for a, _, _ in self.layout], [dt.numpy for _, _, dt in self.layout],
                                      self._values, expected, k.check_spec, self.dim_values, base, self._comparer,
                                      relative_norm=norm)
        return self._verifier

    def _reference(self, values) -> dict[int, np.ndarray]:
        k = self.kernel
        if self._expected is not None:  # the Python reference, begun as the benchmark opened
            return self._expected.result()
        default = k.default_config()
        grid, block, shared = self.problem.geometry(default, k.check_spec.reference_launch)
        own = self.problem.geometry(default)  # the cached module's occupancy is that of the kernel's own launch
        compiled = self.compiler(default, self.dtype, own.threads, k)
        args = ArgSet.allocate(self.drv, self.layout)
        try:
            return kernel_reference(self.drv, k, compiled, self.layout, args, self._params(args), grid, block,
                                    shared, values)
        finally:
            args.free()

    def measure(self, config: Config) -> Measurement:
        """Compile, verify and time ``config``; the measurement's ``phases`` say how many ms
        each took (:mod:`autotune.measure.phases`).

        Raises:
            TrialFailed: compile error, launch over the device limits, failed launch, or a
                result that fails the kernel's check (its ``phases``: the time spent until then).
        """
        clock = PhaseClock()
        try:
            compiled, grid, block, shared = self.compile(config, clock)
            with clock("verify"):
                self.verify(compiled, grid, block, shared)
            seen: list[int | None] = []
            with clock("time"):
                self._fill()
                launch = self.launcher(compiled, grid, block, shared)
                t = timing(self.drv, launch, self.warmup, self.repeats, self.early, self.precision,
                           (lambda: seen.append(self.sm_clock())) if self.sm_clock is not None else None)
            joules = None
            if self.meter is not None and t.early_stop is None:
                with clock("energy"):
                    joules = self.energy(launch, t.median_ms)
        except TrialFailed as failure:
            failure.phases = dict(clock.ms)
            raise
        gbps, gflops = self.figures(t.median_ms)
        memcpy, copy = self.memcpy_gbps, self.copy_gbps
        return Measurement(t.median_ms, t.min_ms, t.max_ms, gbps,
                           100.0 * gbps / memcpy if gbps and memcpy else None, compiled.registers,
                           compiled.shared_bytes + shared, t.launches,
                           100.0 * gbps / copy if gbps and copy else None, compiled.occupancy, gflops,
                           dict(clock.ms), t.early_stop, t.samples, t.ci_low_ms, t.ci_high_ms, joules,
                           seen[0] if seen else None)

    def energy(self, launch, median_ms: float) -> float | None:
        """Joules per launch of ``launch`` (a config's launcher, ``median_ms`` per launch) over a
        window of launches (:func:`~autotune.measure.energy.joules_per_launch`; ``None``: no
        meter, or the counter did not move)."""
        return joules_per_launch(self.drv, self.meter, launch, median_ms)

    def figures(self, ms: float) -> tuple[float | None, float | None]:
        """GB/s of the objective's bytes and GFLOP/s of its flops in ``ms`` (``None`` where not given)."""
        gbps = None if self.bytes is None else self.bytes / (ms * 1e-3) / 1e9
        gflops = None if self.flops is None else self.flops / (ms * 1e-3) / 1e9
        return gbps, gflops

    def retime(self, configs: list[Config], rounds: int = 5) -> list[Retiming]:
        """Time already verified ``configs`` again, interleaved: in each of ``rounds`` rounds
        every config gets ``repeats`` samples, the starting config rotating round robin.

        Raises:
            TrialFailed: a config no longer compiles or launches (not expected after a search).
        """
        launchers = {c: self.launcher(*self.compile(c)) for c in configs}
        per_round: dict[Config, list[float]] = {c: [] for c in configs}
        pooled: dict[Config, list[np.ndarray]] = {c: [] for c in configs}
        self._fill()
        for r in range(rounds):
            for c in configs[r % len(configs):] + configs[:r % len(configs)]:
                ms, _ = samples(self.drv, launchers[c], self.warmup, self.repeats)
                per_round[c].append(float(np.median(ms)))
                pooled[c].append(ms)
        out = []
        for c in configs:
            every = np.concatenate(pooled[c])
            out.append(Retiming(c, tuple(per_round[c]), float(np.median(every)), *median_ci(every)))
        return out


@contextlib.contextmanager
def open_benchmark(ordinal: int, problem: Problem, measure: MeasureOptions | None = None, *, bounds: bool = True,
                   also: Sequence[Problem | ProblemRef] = ()) -> Iterator[Benchmark]:
    """A :class:`Benchmark` of ``problem`` on device ``ordinal``, inside its context, freed on
    exit, measuring as ``measure`` says
    (:class:`~autotune.measure.measure_options.MeasureOptions`; default: its defaults), with
    its ``bounds`` and other shapes ``also`` (the benchmark's arguments). This is the
    ``opener`` protocol of :func:`autotune.measure.isolation.open_isolated`:
    ``opener(ordinal, problem, measure, also=...)``.

    Raises:
        GPUUnavailableError: no CUDA backend, driver or device.
        InvalidInputError: ``ordinal`` out of range, or the problem too large for the GPU.
    """
    with open_device(ordinal) as device:
        check_fits(device, problem)
        bench = Benchmark(device, problem, measure, bounds=bounds, also=also)
        try:
            yield bench
        finally:
            bench.free()
