"""Compiling ahead: nvcc runs on every CPU core while the GPU measures, so it never waits.

For a search whose order is known (a grid: the default, then the space's order),
:func:`compile_ahead` compiles the configs in that order in a pool of threads, each running
an ``nvcc -cubin`` subprocess (:func:`autotune.measure.compile.build_cubin`) into the on-disk
cubin cache; the benchmark's :class:`~autotune.measure.compile.Compiler` then finds each config
there and only loads it. A config the GPU reaches before its build has finished waits for that
build (the cache's build lock) and loads it. Failures are left for the benchmark to meet and
record: compiling ahead only saves time.

The pool's threads run nvcc at a lower CPU priority (:data:`NICE`, Linux): the measuring
process's host work (the verification's comparison, the launches) is on the GPU's critical
path, nvcc ahead of it is not, so a burst of builds never slows the measurement it runs beside
(on a host with several GPUs, one search's measuring processes and their compile pools share
the cores: :mod:`autotune.measure.gpu_pool` gives each GPU's pool its share).

Each config's build ends in a :class:`Built` that the search reads before it measures the
config (:meth:`Ahead.built`), so nothing is compiled twice and nothing useless is compiled:

- a config the kernel file's launch expressions say cannot launch (a block over the limits,
  more dynamic shared memory than the device has: :func:`autotune.measure.buildcheck.refusal`)
  is refused before nvcc, its failure ``resources`` with the reason;
- a config whose nvcc run fails keeps its ``compile_error``: the search records it without
  handing it to the measuring child, which would run nvcc again (failures are not cached);
- a config whose nvcc runs past the :class:`CompileDeadline` (three times the median of the
  compiles seen so far, never under :data:`DEADLINE_FLOOR_S`) is stopped, its failure
  ``timeout`` with the reason :data:`~autotune.measure.compile.COMPILE_DEADLINE`;
- a built config carries its ``identity``: the cubin's digest with the launch geometry on the
  problem, so that two configs alike there (a macro the kernel ignores at this dtype) are
  measured once (:class:`autotune.search.tuner.Tuner`).

What every benchmark compiles besides the search's configs, :func:`helper_builds` (the
comparison kernels of the verification on the device, the bound kernel's default config),
goes to the pool first: a search starts compiling before its measuring child exists, and the
child finds them built (or waits for them) when it measures its bounds.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from autotune import settings
from autotune.errors import AutotuneError, InvalidInputError, TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DType
from autotune.kernel.model import Kernel

__all__ = ["AHEAD", "Ahead", "Built", "CompileDeadline", "DEADLINE_AFTER", "DEADLINE_FACTOR", "DEADLINE_FLOOR_S",
           "Feed", "NICE", "WORKERS_ENV", "compile_ahead", "helper_builds", "workers"]

AHEAD = 4
"""Builds kept queued per worker: the pool runs at most ``workers * AHEAD`` configs ahead."""


WORKERS_ENV = settings.COMPILE_WORKERS.name
"""Environment variable: how many configs to compile at once ahead of the GPU (0: none)."""

NICE = 10
"""How much lower than the search's the CPU priority of the pool's nvcc runs is (``nice``)."""


DEADLINE_FACTOR = 3.0
"""A compile is stopped past this many times the median of the compiles seen so far..."""
DEADLINE_FLOOR_S = 10.0
"""...and never under this many seconds (a kernel's compiles may differ by a few seconds)."""
DEADLINE_AFTER = 5
"""Compiles seen before any deadline applies: a median of fewer says little."""


class CompileDeadline:
    """The seconds an nvcc run of a search may last, taken from its compiles seen so far:
    ``max(factor x their median, floor_s)`` once ``after`` were seen (``None`` before), so a
    slow tail of the space is cut while a kernel whose every compile is slow keeps them all.
    Thread-safe: the pool's workers report to one. ``cut`` counts the runs stopped."""

    def __init__(self, factor: float = DEADLINE_FACTOR, floor_s: float = DEADLINE_FLOOR_S,
                 after: int = DEADLINE_AFTER) -> None:
        self.factor, self.floor_s, self.after = factor, floor_s, after
        self.seconds: list[float] = []
        self.cut = 0
        self._lock = threading.Lock()

    def seen(self, seconds: float) -> None:
        """A compile (an nvcc run, not a cache hit) ended after ``seconds``."""
        with self._lock:
            self.seconds.append(seconds)

    def was_cut(self) -> None:
        """A compile was stopped at its deadline."""
        with self._lock:
            self.cut += 1

    def limit(self) -> float | None:
        """The deadline of an nvcc run starting now, seconds (``None``: none yet)."""
        with self._lock:
            if len(self.seconds) < self.after:
                return None
            return max(self.factor * statistics.median(self.seconds), self.floor_s)


@dataclass(frozen=True)
class Built:
    """What the pool made of one config: ``identity``, the hex SHA-256 of its cubin's digest
    and its launch geometry on the problem (two configs of one problem with the same identity
    run the same binary the same way; ``None`` where unknown), or ``failure``, the
    ``TrialFailed`` a measurement would meet (refused before nvcc, a compile error, the
    compile deadline)."""

    identity: str | None = None
    failure: TrialFailed | None = None


def _background() -> None:
    """Lower the calling pool thread's CPU priority by :data:`NICE` (Linux keeps a nice value
    per thread, and the nvcc it starts inherits it); where that is not possible, nothing."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + NICE))
    except (AttributeError, OSError):  # not Linux, or not allowed
        pass


def workers() -> int:
    """Compile workers: ``$AUTOTUNE_COMPILE_WORKERS`` if set (0 turns compiling ahead off),
    else one per CPU this process may use.

    Raises:
        InvalidInputError: the variable is not an integer >= 0.
    """
    text = settings.COMPILE_WORKERS.get().strip()
    if text:
        if not text.isdigit():
            raise InvalidInputError(f"{WORKERS_ENV}={text!r} is not allowed; give 0 (off) or a number of workers")
        return int(text)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class Ahead:
    """Builds of :func:`compile_ahead`: ``done`` lists the configs whose build ended (built,
    cached or failed), in the order they ended; it grows while the search runs. ``helpers``
    counts the ended builds of ``first`` (:func:`helper_builds`). ``deadline``: the
    :class:`CompileDeadline` of the pool's nvcc runs (``None``: none)."""

    def __init__(self, deadline: CompileDeadline | None = None) -> None:
        self.done: list[Config] = []
        self.helpers = 0
        self.deadline = deadline
        self._results: dict[Config, Built] = {}
        self._waiting: collections.Counter[Config] = collections.Counter()  # queued, not ended
        self._queued = 0
        self._fed = False
        self._closed = False
        self._changed = threading.Condition()

    def _queue(self, config: Config | None = None) -> None:
        with self._changed:
            self._queued += 1
            if config is not None:
                self._waiting[config] += 1

    def _ended(self, config: Config | None, built: Built | None = None) -> None:
        """A build ended: ``config``'s (with what it made, where known), or (``None``) a helper's."""
        with self._changed:
            if config is None:
                self.helpers += 1
            else:
                self.done.append(config)
                self._waiting[config] -= 1
                if built is not None:
                    self._results[config] = built
            self._changed.notify_all()

    def built(self, config: Config) -> Built | None:
        """What the pool made of ``config``, waiting for its build where it is queued or
        running (a measurement would wait for it anyway: the cache's build lock); ``None``
        where the pool did not build it (not handed to it, or its build left nothing known):
        the measurement builds it then."""
        with self._changed:
            self._changed.wait_for(lambda: self._waiting[config] <= 0 or self._closed)
            return self._results.get(config)

    def ready(self, config: Config) -> bool:
        """Whether ``config``'s build has ended (built, cached or failed) and no other build of
        it is queued: :meth:`built` would answer at once. ``False`` for a config not handed to
        the pool yet (or never)."""
        with self._changed:  # a Counter keeps a key it counted down to 0: the config was queued
            return config in self._waiting and self._waiting[config] <= 0

    def wait(self, count: int | None = None, timeout: float | None = None) -> bool:
        """Block until ``count`` configs' builds ended (``None``: every build's, helpers too);
        ``False`` if ``timeout`` seconds passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.done) >= count if count is not None else
                                          self._fed and len(self.done) + self.helpers == self._queued, timeout)


class Feed:
    """Configs for :func:`compile_ahead` that arrive while it runs: a search's strategy
    proposes a batch, :meth:`put` hands it to the pool (every core compiles it while the GPU
    measures the batch before). Iterating blocks until a config is put or :meth:`close`
    (which :func:`compile_ahead` calls on exit)."""

    _END = object()

    def __init__(self, configs: Iterable[Config] = ()) -> None:
        import queue

        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.put(configs)

    def put(self, configs: Iterable[Config]) -> None:
        """Compile ``configs`` next, in order (after those put before)."""
        for config in configs:
            self._queue.put(config)

    def close(self) -> None:
        """End the iteration (builds queued and not started are dropped by the pool's exit)."""
        self._queue.put(self._END)

    def __iter__(self) -> Iterator[Config]:
        while (config := self._queue.get()) is not self._END:
            yield config


def helper_builds(kernel: Kernel, dtype: DType, arch: str) -> list[Callable[[], object]]:
    """The builds a benchmark of ``kernel`` needs besides its configs: the device comparison
    kernels (:mod:`autotune.measure.device_compare`) and the default config of the kernel's
    bound kernel (e.g. copy_row), if it names one."""
    from autotune.kernel.catalog import get_kernel
    from autotune.measure.compile import build_cubin
    from autotune.measure.device_compare import compare_cubin

    jobs: list[Callable[[], object]] = [lambda: compare_cubin(arch)]
    name = kernel.objective.bound_kernel
    if name is not None:
        bound = get_kernel(name)
        jobs.append(lambda: build_cubin(bound, bound.default_config(), dtype, arch))
    return jobs


@contextlib.contextmanager
def compile_ahead(kernel: Kernel, dtype: DType, arch: str, configs: Iterable[Config],
                  n_workers: int | None = None, first: Sequence[Callable[[], object]] = (), *,
                  problem=None, deadline: CompileDeadline | None = None,
                  clock: Callable[[], float] = time.perf_counter) -> Iterator[Ahead]:
    """Compile ``configs`` (in their order) for ``dtype`` and ``arch`` into the cubin cache in
    the background while the block runs, on ``n_workers`` threads (default :func:`workers`)
    (``configs`` may be a :class:`Feed` that a search fills as it goes; a config given again
    is built once), at most :data:`AHEAD` per worker queued; ``first``: other builds
    (:func:`helper_builds`) started before them. On exit, builds not started are dropped and
    those running are waited for (an nvcc run lasts seconds at most).

    ``problem`` (the :class:`~autotune.kernel.problem.Problem` searched): a config that cannot
    launch on it is refused before nvcc, and each build's :class:`Built` has its identity
    (without it, configs are only compiled). ``deadline``: nvcc runs past
    :meth:`CompileDeadline.limit` are stopped, each nvcc run's seconds (by ``clock``) told to it.

    Yields:
        An :class:`Ahead` (what was built so far; ``wait()`` for all).
    """
    n = n_workers or workers()
    ahead, stop = Ahead(deadline), threading.Event()
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="nvcc", initializer=_background)
    slots = threading.Semaphore(n * AHEAD)

    def run(job: Callable[[], object], config: Config | None = None) -> None:
        """One helper's build; a failure is left for the benchmark, which meets it again."""
        try:
            if not stop.is_set():
                job()
        except (AutotuneError, TrialFailed, OSError):
            pass
        finally:
            ahead._ended(config)

    def build(config: Config) -> None:
        """One config's build, its :class:`Built` kept (a fault other than the config's own,
        e.g. a full disk, is left for the benchmark, which meets it again)."""
        from autotune.measure import compile as compiling

        built = None
        try:
            if not stop.is_set():
                built = _build(compiling, config)
        except (AutotuneError, OSError):
            pass
        finally:
            ahead._ended(config, built)
            slots.release()

    def _build(compiling, config: Config) -> Built:
        geometry = None
        if problem is not None:
            from autotune.measure.buildcheck import refusal

            refused = refusal(problem, config, arch)
            if refused:
                return Built(failure=TrialFailed("resources", refused))
            geometry = tuple(problem.geometry(config))
        limit = deadline.limit() if deadline is not None else None
        started = clock()
        try:
            made = compiling.build_cubin(kernel, config, dtype, arch, deadline=limit)
        except TrialFailed as failure:
            if deadline is not None and failure.status == "timeout":
                deadline.was_cut()
            return Built(failure=failure)
        if not isinstance(made, tuple):  # a stand-in build (tests) that makes no cubin
            return Built()
        cubin, _, cached = made
        if deadline is not None and not cached:
            deadline.seen(clock() - started)
        if geometry is None:
            return Built()
        digest = compiling.cubin_digest(cubin)
        return Built(identity=hashlib.sha256(f"{digest} {geometry}".encode()).hexdigest())

    def feed() -> None:
        for job in first:
            ahead._queue()
            pool.submit(run, job)
        for config in configs:
            if config in ahead._waiting:  # put again (a grid's batch, fed ahead before): built once
                continue
            slots.acquire()
            if stop.is_set():
                return
            ahead._queue(config)
            pool.submit(build, config)
        with ahead._changed:
            ahead._fed = True
            ahead._changed.notify_all()

    feeder = threading.Thread(target=feed, name="nvcc-feed", daemon=True)
    feeder.start()
    try:
        yield ahead
    finally:
        stop.set()
        if isinstance(configs, Feed):
            configs.close()  # a feeder waiting for the next config wakes and sees stop
        slots.release()  # a feeder waiting for a slot wakes and sees stop
        feeder.join()
        pool.shutdown(wait=True, cancel_futures=True)
        with ahead._changed:  # builds dropped never end: nobody waits for them
            ahead._closed = True
            ahead._changed.notify_all()
