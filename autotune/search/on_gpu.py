"""A search on one GPU: the benchmark in its measuring child, the compile pool, the store, the loop.

Both ``autotune.tune`` on one GPU and each worker of a search over several GPUs
(:mod:`autotune.search.workers`) run :func:`search_on_gpu`:

1. nvcc starts on every core before the measuring child exists (:mod:`autotune.measure.pipeline`:
   the benchmark's helper kernels, the kernel's default config, and an in-order strategy's
   (a grid's) first batches,
   or a new study's first batch of proposals: :meth:`~autotune.search.tuner.Tuner.early`);
2. the benchmark opens in a child process (:mod:`autotune.measure.isolation`: a config that
   crashes or hangs fails its own trial), while this process opens the store;
3. :class:`~autotune.search.tuner.Tuner` runs with the pool as its ``prefetch``: each batch
   the strategy proposes compiles while the GPU measures the batch before.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autotune.errors import AutotuneError, InvalidInputError, TrialFailed
from autotune.base import signals as stop
from autotune.search.companions import Companion
from autotune.search.options import SearchOptions
from autotune.search.outcome import SearchResult, TrialOutcome

if TYPE_CHECKING:
    from autotune.kernel.problem import Problem

__all__ = ["Started", "compile_pool", "search_on_gpu", "whole_space"]


@dataclass
class Started:
    """What a search is about, given to ``on_start`` before its first trial: the key, the
    open store, the space, and (one GPU) the benchmark with its bounds, or (several) the GPU
    ordinals and each worker's trial budget; ``batch``: the configs proposed at a time (on
    several GPUs, by each worker: :func:`autotune.search.workers.per_gpu`)."""

    key: object
    store: object
    space: object
    bench: object = None
    ordinals: tuple[int, ...] = ()
    shares: tuple[int, ...] = ()
    batch: int = 1


def whole_space(options: SearchOptions, space) -> bool:
    """Whether a search with ``options`` measures every valid config of ``space`` anyway: its
    ``trials`` cover the space and no ``timeout`` can cut it short. Such a search (the README's
    main job: TPE, 100 trials, smem_pad's 54 configs) proposes them in the grid's order, the
    default first, instead of asking its strategy (each is measured as its build ends): every
    config is measured and the winner is the re-timing's either way. A strategy that walks in order already (its traits' ``in_order``:
    ``grid``) is kept."""
    from autotune.search.proposals import GRID_LIMIT

    limit = min(options.trials, GRID_LIMIT)
    return not options.traits.in_order and options.timeout is None and space.count(limit) <= limit


def retime_or_error(retime):
    """``retime``, a failure of which (a config that crashed or hung its measuring process
    this time) ends the search with one error line instead of a traceback."""
    def run(configs, rounds):
        try:
            return retime(configs, rounds)
        except TrialFailed as failure:
            raise AutotuneError(f"the re-timing of the top {len(configs)} configs failed: {failure.status}: "
                                f"{failure.reason}; every trial of the search is stored, and the key's best is "
                                "its fastest single measurement") from None
    return run


def search_on_gpu(problem, ordinal: int, space, options: SearchOptions, *, db: str | None = None,
                  part: tuple[int, int] = (0, 1), open_benchmark=None, precheck: bool = True, retime: bool = True,
                  arch: str | None = None, fresh: bool | None = None, budget=None,
                  on_start: Callable[[Started], None] | None = None,
                  on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None,
                  on_end: Callable[[Started, SearchResult], None] | None = None,
                  also: Sequence[Problem] = ()) -> SearchResult:
    """Search ``problem`` (a :class:`~autotune.kernel.problem.Problem`) on GPU ``ordinal`` (module doc).

    Args:
        db: the results database's URL (``None``: ``$AUTOTUNE_DB``, else the default), opened
            while the measuring child starts, once the GPU is found.
        part: worker ``(i, n)`` of a search over several GPUs (:class:`~autotune.search.tuner.Tuner`).
        open_benchmark: opens the benchmark (default :func:`autotune.measure.benchmark.open_benchmark`).
        precheck: query the GPU here first, and start compiling before the measuring child
            starts (a worker, whose parent queried its GPUs, passes ``False`` and the GPUs'
            ``arch``: it starts compiling as its measuring child starts).
        retime: re-time the top configs at the end (the workers of several GPUs leave it to the parent).
        arch: the GPU's nvcc target (e.g. ``sm_90``) where the caller knows it without a precheck.
        fresh: the study holds no trial yet, so the strategy may propose its first batch before
            reading it (:meth:`~autotune.search.tuner.Tuner.early`; ``None``: a search alone, not ``resume``).
        budget: the trial budget shared by the workers of several GPUs (:class:`~autotune.search.tuner.Tuner`).
        on_end: called once the search has ended (not when it raised), with what ``on_start``
            got and the result, while the measuring child is still open (``started.bench``):
            a workload's tuning measures the default and the winner there.
        also: other problems of the kernel and dtype (other shapes), each config measured ok
            measured at each of them too in the same measuring process, as trials of their own
            studies, each with its own winner (:mod:`autotune.search.companions`;
            ``result.companions``).

    Raises:
        As :func:`autotune.tune`.
    """
    from autotune.measure import benchmark, isolation, nvml
    from autotune.measure.pipeline import workers
    from autotune.search.instruments import Instruments
    from autotune.search.strategies import SWEEP_STRATEGY
    from autotune.measure.toolchain import Toolchain
    from autotune.search.tuner import Tuner
    from autotune.store.key import TuningKey
    from autotune.store.opening import open_store

    opened: list = []
    whole = whole_space(options, space)
    if whole:
        options = options.replace(strategy=SWEEP_STRATEGY)
    batch = options.batch_size()
    builds = contextlib.ExitStack()
    feed: list = []
    ahead: list = []  # the pool's Ahead: what it made of each config
    early: list = []

    def start_compiling(target: str) -> None:
        """nvcc on every core from before the measuring child exists (its helpers' kernels first)."""
        pool, made = builds.enter_context(compile_pool(problem, target, space, options, batch, part))
        feed.append(pool)
        ahead.append(made)
        if pool is not None and early:  # proposed already (measuring in this process: meanwhile came first)
            pool.put(early[0][1])

    def meanwhile() -> None:
        """While the measuring child starts: open the store and Optuna's tables (after the
        precheck found the GPU, so a machine without one creates no database), and let a
        strategy that can propose before its study is open hand its first batch to the pool."""
        if arch is not None and not feed:  # a worker: its parent queried the GPUs
            start_compiling(arch)
        stop.check()
        store = open_store(db)
        opened.append(store)
        store.optuna_storage()  # Optuna's tables now, not after the child is ready (the store keeps it)
        first = Tuner.early(problem.kernel.name, space, options, part, fresh) if workers() else None
        if first is not None:
            early.append(first)
            if feed and feed[0] is not None:
                feed[0].put(first[1])

    with builds, isolation.open_isolated(open_benchmark or benchmark.open_benchmark, ordinal, problem,
                                         options.benchmark_options(), also=[p.ref or p for p in also],
                                         precheck=precheck,
                                         before=(lambda info: start_compiling(info.arch)) if precheck else None,
                                         meanwhile=meanwhile) as bench:
        if not feed:
            start_compiling(bench.device.arch)
        stop.check()
        note = getattr(bench, "energy_note", None)
        if options.objective != "time" and note:
            raise InvalidInputError(f"objective {options.objective} needs the energy per launch, and {note}")
        store = opened[0]
        toolchain = Toolchain.of(bench.device.arch)
        key = TuningKey.of(problem, bench.device, toolchain)
        companions = [Companion(TuningKey.of(p, bench.device, toolchain), functools.partial(bench.measure_at, i),
                                retime_or_error(functools.partial(bench.retime_at, i)) if retime else None)
                      for i, p in enumerate(also)]
        started = Started(key, store, space, bench, batch=batch)
        if on_start:
            on_start(started)
        tools = Instruments(bench.measure, retime=retime_or_error(bench.retime) if retime else None,
                            clocks=lambda: nvml.clock_state(bench.device.pci_bus_id),
                            prefetch=feed[0].put if feed and feed[0] is not None else None,
                            built=ahead[0].built if ahead and ahead[0] is not None else None,
                            ready=ahead[0].ready if ahead and ahead[0] is not None else None,
                            memcpy_gbps=bench.memcpy_gbps, copy_gbps=bench.copy_gbps, l2_mode=bench.l2_mode,
                            send=getattr(bench, "send", None))  # measured in a child: sent ahead
        result = Tuner(key, space, store, options, tools, on_trial=on_trial, part=part,
                       early=early[0] if early else None, budget=budget, companions=companions).run()
        result.whole_space = whole
        if on_end is not None:
            on_end(started, result)
        return result


@contextlib.contextmanager
def compile_pool(problem, arch: str, space, options: SearchOptions, batch: int, part: tuple[int, int] = (0, 1)):
    """The compile pool of a search of ``problem`` (:func:`autotune.measure.pipeline.compile_ahead`
    over a :class:`~autotune.measure.pipeline.Feed`), yielding ``(feed, ahead)``
    (``(None, None)`` where compiling ahead is off): the benchmark's helpers first, then the default
    config and, for an ``in_order`` strategy (a grid, or a search whose trials cover the space),
    as many of its first configs in the space's order as the pool holds
    (:data:`~autotune.measure.pipeline.AHEAD` per worker, at most the search's trials; worker
    ``part = (i, n)``: of its share, positions ``i`` modulo ``n``): that order is known, so no
    core waits for the search to propose them. The search puts each batch as it is proposed (one
    fed ahead already is not built again). Each config that cannot launch on ``problem`` is
    refused before nvcc, and nvcc runs past the
    :class:`~autotune.measure.pipeline.CompileDeadline` of the search's compiles are stopped
    (``ahead.built(config)`` says what became of each)."""
    from autotune.measure.pipeline import AHEAD, CompileDeadline, Feed, compile_ahead, helper_builds, workers
    from autotune.search.proposals import default_config

    n_workers = workers()
    if n_workers == 0:
        yield None, None
        return
    kernel, dtype = problem.kernel, problem.dtype
    default = default_config(kernel.name, space)
    first = [default] if default and part[0] == 0 else []  # worker 0 measures it
    if options.traits.in_order:
        i, n = part
        first += itertools.islice((c for k, c in enumerate(space.iter_configs()) if k % n == i and c != default),
                                  max(2 * batch, min(n_workers * AHEAD, options.trials) - len(first)))
    feed = Feed(first)
    with compile_ahead(kernel, dtype, arch, feed, n_workers, first=helper_builds(kernel, dtype, arch),
                       problem=problem, deadline=CompileDeadline()) as ahead:
        yield feed, ahead
