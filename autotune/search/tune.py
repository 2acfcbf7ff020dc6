"""``autotune.tune``: search a kernel's space for one problem on one GPU or several of one model.

This is the library behind ``autotune search`` and ``autotune sweep`` (the CLI only parses,
calls this and prints). On one GPU it opens a :class:`~autotune.measure.benchmark.Benchmark`
in a measuring child process (:mod:`autotune.measure.isolation`: a config that crashes or
hangs fails its own trial) and runs :func:`autotune.search.tuner.search` with the interleaved
re-timing. On several it starts one worker process per GPU on the key's one Optuna study
(:mod:`autotune.search.workers`, each measuring in a child of its own), then re-times the
study's top configs once, on the first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autotune.errors import AutotuneError, InvalidInputError, TrialFailed
from autotune.kernel.catalog import KERNELS, resolve_kernel
from autotune.kernel.dims import make_dims
from autotune.kernel.dtypes import get_dtype
from autotune.measure.isolation import DEFAULT_TRIAL_TIMEOUT_S
from autotune.base import signals as stop
from autotune.search.outcome import SearchResult, TrialOutcome
from autotune.search.tuner import SAMPLERS

__all__ = ["Started", "tune", "check_options", "whole_space"]


@dataclass
class Started:
    """What a search is about, given to ``on_start`` before its first trial: the key, the
    open store, the space, and (one GPU) the benchmark with its bounds, or (several) the GPU
    ordinals and each worker's trial budget."""

    key: object
    store: object
    space: object
    bench: object = None
    ordinals: tuple[int, ...] = ()
    shares: tuple[int, ...] = ()


MAX_SEED = 2**32 - 1
"""Largest seed: Optuna's samplers seed NumPy's ``RandomState``, which takes 0..2**32-1."""


def check_options(trials: int, timeout: float | None, sampler: str, repeats: int, top_k: int, rounds: int,
                  trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S, seed: int | None = None) -> None:
    """Refuse option values a search cannot take, naming the option.

    Raises:
        InvalidInputError: ``--trials`` < 1, ``--timeout`` not a positive finite number,
            unknown sampler, ``--repeats`` < 20, ``--top-k`` or ``--rounds`` < 1,
            ``--trial-timeout`` not a positive number, ``--seed`` not an integer 0..2**32-1.
    """
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED):
        raise InvalidInputError(f"--seed {seed!r} is not allowed; give an integer 0..{MAX_SEED}")
    if not (isinstance(trial_timeout, (int, float)) and not isinstance(trial_timeout, bool)
            and math.isfinite(trial_timeout) and trial_timeout > 0):
        raise InvalidInputError(f"--trial-timeout {trial_timeout!r} is not allowed; give a positive number of seconds")
    if trials < 1:
        raise InvalidInputError(f"--trials {trials} is not allowed; give 1 or more")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and math.isfinite(timeout) and timeout > 0):
        shown = f"{timeout:g}" if isinstance(timeout, (int, float)) else repr(timeout)
        raise InvalidInputError(f"--timeout {shown} is not allowed; give a positive number of seconds")
    if sampler not in SAMPLERS:
        raise InvalidInputError(f"unknown sampler {sampler!r}; allowed: {', '.join(SAMPLERS)}")
    if repeats < 20:
        raise InvalidInputError(f"--repeats {repeats} is not allowed; give 20 or more")
    for flag, value in (("--top-k", top_k), ("--rounds", rounds)):
        if value < 1:
            raise InvalidInputError(f"{flag} {value} is not allowed; give 1 or more")


def tune(kernel, dims, dtype="float32", *, device: int | Sequence[int] = 0, trials: int = 100,
         timeout: float | None = None, seed: int | None = None, sampler: str = "tpe", resume: bool = False,
         space: str | None = None, repeats: int = 50, top_k: int = 5, rounds: int = 5, db: str | None = None,
         trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S,
         on_start: Callable[[Started], None] | None = None,
         on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None,
         on_report: Callable | None = None) -> SearchResult:
    """Search ``kernel``'s space for ``dims`` and ``dtype``; store every trial and the winner.

    Args:
        kernel: a catalog name, a path to a kernel file, or a :class:`~autotune.kernel.model.Kernel`.
        dims: its named dims (``{"n": 1048576}``, pairs, or values in the kernel's order).
        device: a CUDA ordinal, or several (one worker per GPU, one study; GPUs of one model).
        trials: configs to measure (split between GPUs; the default first; repeats of a
            measured config are free); ``sampler``: tpe, random or grid; ``seed``
            seeds the sampler and the inputs; ``timeout``: start no trial after this many s.
        resume: continue the key's existing study; ``space``: a space file instead of the kernel's.
        repeats: timed samples per config; ``top_k``, ``rounds``: the interleaved re-timing.
        db: results database URL (default ``AUTOTUNE_DB`` or the platformdirs default).
        trial_timeout: seconds one trial may take; each config is measured in a child process
            (:mod:`autotune.measure.isolation`), killed past this and the trial stored as
            ``timeout``; a config that crashes it or breaks its CUDA context is stored as
            ``crash``, and the search goes on in a fresh one.
        on_start, on_trial, on_report: progress callbacks (one GPU: ``on_trial`` after each
            trial; several: ``on_report`` with a worker's report whenever it changes).

    Returns:
        The :class:`~autotune.search.outcome.SearchResult` (its ``key``, ``decision``...).

    Raises:
        InvalidInputError: bad kernel, dims, dtype, option, space or devices; the study exists
            and ``resume`` is false.
        GPUUnavailableError: no GPU, PyCUDA or nvcc.
        StoreError: the database cannot be used.
        AutotuneError: no GPU worker finished (several GPUs); the measuring process ended or
            hung while opening the GPU; the re-timing's measuring process crashed or hung (the
            trials stay stored).
        KeyboardInterrupt: SIGINT (Ctrl-C) or SIGTERM (:mod:`autotune.base.signals`), after the
            trials so far were stored and the search marked ``interrupted``.
    """
    check_options(trials, timeout, sampler, repeats, top_k, rounds, trial_timeout, seed)
    k, dt = resolve_kernel(kernel), get_dtype(dtype)
    k.check_dtype(dt)
    d = make_dims(k.dims, dims, f"kernel {k.name}")
    space_ = k.space(space)
    ordinals = [device] if isinstance(device, int) else list(device)
    if not ordinals or any(not isinstance(o, int) or isinstance(o, bool) or o < 0 for o in ordinals):
        raise InvalidInputError(f"device {device!r} is not allowed; give a CUDA ordinal 0, 1, ... or a list of them")
    options = dict(trials=trials, timeout=timeout, seed=seed, sampler=sampler, resume=resume, space=space,
                   repeats=repeats, top_k=top_k, rounds=rounds, db=db, trial_timeout=trial_timeout)
    # SIGINT/SIGTERM from here on: acted on in measurements and between steps, never in a write
    with stop.deferred():
        if len(ordinals) == 1:
            return _tune_one(k, d, dt, ordinals[0], space_, on_start, on_trial, **options)
        return _tune_many(k, d, dt, ordinals, space_, on_start, on_report, **options)


def _retime_or_error(retime):
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


def _tune_one(k, d, dt, ordinal, space_, on_start, on_trial, *, trials, timeout, seed, sampler, resume, space,
              repeats, top_k, rounds, db, trial_timeout) -> SearchResult:
    import contextlib

    from autotune.measure import benchmark, isolation, nvml
    from autotune.search.tuner import search
    from autotune.store.key import tuning_key
    from autotune.store import opening
    from autotune.store.repository import Store

    opened: list[Store] = []
    whole = whole_space(sampler, space_, trials, timeout)
    order = "grid" if whole else sampler
    builds = contextlib.ExitStack()

    def start_compiling(device) -> None:
        """nvcc on every core from before the measuring child exists (its bounds' kernels first)."""
        builds.enter_context(_ahead(order, k, dt, device.arch, space_, trials))

    def open_store() -> None:
        """The store and Optuna's tables, opened (a fresh database migrated) while the measuring
        child starts: after the precheck found the GPU, so a machine without one creates no
        database (in-process measuring: after the benchmark opened)."""
        stop.check()
        store = opening.open_store(db)
        opened.append(store)
        store.optuna_storage().engine.dispose()  # its tables now, not after the child is ready

    with builds, isolation.open_isolated(benchmark.open_benchmark, ordinal, k, d, dt, trial_timeout=trial_timeout,
                                         repeats=repeats, seed=seed, before=start_compiling,
                                         meanwhile=open_store) as bench:
        stop.check()
        store = opened[0]
        key = tuning_key(k, bench.device, d, dt.name)
        if on_start:
            on_start(Started(key, store, space_, bench))
        result = search(key, space_, bench.measure, store, n_trials=trials, timeout=timeout, seed=seed,
                        sampler=order, resume=resume, memcpy_gbps=bench.memcpy_gbps, copy_gbps=bench.copy_gbps,
                        l2_mode=bench.l2_mode, clocks=lambda: nvml.clock_state(bench.device.pci_bus_id),
                        retime=_retime_or_error(bench.retime), top_k=top_k, rounds=rounds, on_trial=on_trial)
        result.whole_space = whole
        return result


def whole_space(sampler: str, space_, trials: int, timeout: float | None) -> bool:
    """Whether a search with ``sampler`` measures every valid config of ``space_`` anyway: its
    ``trials`` cover the space and no ``timeout`` can cut it short. Such a search (the README's
    main job: TPE, 100 trials, smem_pad's 54 configs) measures them in the grid's order, the
    default first, instead of asking the sampler: every config is measured and the winner is
    the re-timing's either way, and a sampler on a nearly measured space mostly re-proposes
    configs it has (TPE: 99 repeats in 153 proposals on that space), each an Optuna trial."""
    from autotune.search.proposals import GRID_LIMIT

    return sampler != "grid" and timeout is None and space_.count(min(trials, GRID_LIMIT)) <= min(trials, GRID_LIMIT)


def _ahead(sampler: str, k, dt, arch: str, space_, trials: int | None = None):
    """The builds a search will need, compiled ahead on every core (:mod:`autotune.measure.pipeline`):
    the benchmark's helpers (:func:`~autotune.measure.pipeline.helper_builds`), then a grid's
    configs in the order it measures them (the default, then the space's order); a sampler's
    configs only where the space holds at most ``trials`` valid configs (it will measure
    every one), in that order too. Nothing where compiling ahead is off."""
    import contextlib
    import itertools

    from autotune.measure.pipeline import compile_ahead, helper_builds, workers
    from autotune.search.proposals import default_config

    if workers() == 0:
        return contextlib.nullcontext()
    whole = trials is not None and space_.count(trials) <= trials
    default = default_config(k.name, space_)
    configs = itertools.chain([default] if default else [], space_.iter_configs())
    return compile_ahead(k, dt, arch, configs if sampler == "grid" or whole else (),
                         first=helper_builds(k, dt, arch))


def _tune_many(k, d, dt, ordinals, space_, on_start, on_report, *, trials, timeout, seed, sampler, resume, space,
               repeats, top_k, rounds, db, trial_timeout) -> SearchResult:
    import optuna

    from autotune.measure import benchmark, device, isolation
    from autotune.search import workers
    from autotune.search.retiming import retime_study
    from autotune.search.tuner import open_study
    from autotune.store.key import tuning_key
    from autotune.store import opening

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    infos = [device.query_device(o) for o in ordinals]
    workers.check_one_model(infos)
    store = opening.open_store(db)  # after the GPUs: a machine without them must not create a database
    stop.check()
    key = tuning_key(k, infos[0], d, dt.name)
    open_study(store, key, resume=resume)
    shares = workers.split_trials(trials, len(ordinals))
    if on_start:
        on_start(Started(key, store, space_, None, tuple(ordinals), tuple(shares)))
    name = k.name if k.name in KERNELS and KERNELS[k.name] is k else str(k.path)
    whole = whole_space(sampler, space_, trials, timeout)
    plan = workers.Plan(name, d, dt.name, space, db, repeats, seed, "grid" if whole else sampler, timeout,
                        trial_timeout)
    reports = workers.run_workers(plan, ordinals, trials, on_report or (lambda rep: None))
    finished = [rep for rep in reports if rep.state == "done"]
    if not finished:
        raise AutotuneError("no GPU worker finished: " + "; ".join(f"GPU {rep.ordinal}: {rep.message}"
                                                                   for rep in reports))
    search_id = next((rep.search_id for rep in finished if rep.search_id is not None), 0)
    with isolation.open_isolated(benchmark.open_benchmark, ordinals[0], k, d, dt, trial_timeout=trial_timeout,
                                 precheck=False, repeats=repeats, seed=seed) as bench:
        stop.check()
        result = retime_study(key, store, _retime_or_error(bench.retime), search_id, top_k=top_k, rounds=rounds)
    result.reports = reports
    result.whole_space = whole
    return result
