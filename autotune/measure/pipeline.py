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
the cores: :mod:`autotune.search.workers` gives each GPU's pool its share).

What every benchmark compiles besides the search's configs, :func:`helper_builds` (the
comparison kernels of the verification on the device, the bound kernel's default config),
goes to the pool first: a search starts compiling before its measuring child exists, and the
child finds them built (or waits for them) when it measures its bounds.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from autotune import settings
from autotune.errors import AutotuneError, InvalidInputError, TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DType
from autotune.kernel.model import Kernel

__all__ = ["Ahead", "Feed", "NICE", "WORKERS_ENV", "compile_ahead", "helper_builds", "workers"]

AHEAD = 4
"""Builds kept queued per worker: the pool runs at most ``workers * AHEAD`` configs ahead."""


WORKERS_ENV = settings.COMPILE_WORKERS.name
"""Environment variable: how many configs to compile at once ahead of the GPU (0: none)."""

NICE = 10
"""How much lower than the search's the CPU priority of the pool's nvcc runs is (``nice``)."""


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
    counts the ended builds of ``first`` (:func:`helper_builds`)."""

    def __init__(self) -> None:
        self.done: list[Config] = []
        self.helpers = 0
        self._queued = 0
        self._fed = False
        self._changed = threading.Condition()

    def _queue(self) -> None:
        with self._changed:
            self._queued += 1

    def _ended(self, config: Config | None) -> None:
        """A build ended: ``config``'s, or (``None``) a helper's."""
        with self._changed:
            if config is None:
                self.helpers += 1
            else:
                self.done.append(config)
            self._changed.notify_all()

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
                  n_workers: int | None = None, first: Sequence[Callable[[], object]] = ()) -> Iterator[Ahead]:
    """Compile ``configs`` (in their order) for ``dtype`` and ``arch`` into the cubin cache in
    the background while the block runs, on ``n_workers`` threads (default :func:`workers`)
    (``configs`` may be a :class:`Feed` that a search fills as it goes),
    at most :data:`AHEAD` per worker queued; ``first``: other builds (:func:`helper_builds`)
    started before them. On exit, builds not started are dropped and those running are
    waited for (an nvcc run lasts seconds at most).

    Yields:
        An :class:`Ahead` (what was built so far; ``wait()`` for all).
    """
    n = n_workers or workers()
    ahead, stop = Ahead(), threading.Event()
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="nvcc", initializer=_background)
    slots = threading.Semaphore(n * AHEAD)

    def run(job: Callable[[], object], config: Config | None = None) -> None:
        """One build (``config``'s, or a helper's when ``None``); a compile error is left for the
        benchmark, which meets it again and records it."""
        try:
            if not stop.is_set():
                job()
        except (AutotuneError, TrialFailed, OSError):
            pass
        finally:
            ahead._ended(config)
            if config is not None:
                slots.release()

    def feed() -> None:
        from autotune.measure.compile import build_cubin

        for job in first:
            ahead._queue()
            pool.submit(run, job)
        for config in configs:
            slots.acquire()
            if stop.is_set():
                return
            ahead._queue()
            pool.submit(run, lambda c=config: build_cubin(kernel, c, dtype, arch), config)
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
