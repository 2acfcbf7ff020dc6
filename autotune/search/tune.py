"""``autotune.tune``: search a kernel's space for one problem on one GPU or several of one model.

This is the library behind ``autotune search`` and ``autotune sweep`` (the CLI only parses,
builds one :class:`~autotune.search.options.SearchOptions`, calls this and prints). On one GPU it
runs :func:`autotune.search.on_gpu.search_on_gpu` (the benchmark in a measuring child, the
compile pool, the search loop, the interleaved re-timing). On several it starts one worker
process per GPU on the key's one Optuna study (:mod:`autotune.search.workers`, each running
that same function), then re-times the study's top configs once, on the first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.errors import AutotuneError, InvalidInputError
from autotune.kernel.arguments import check_callable_arg, check_db_arg, check_ordinal_arg, shown
from autotune.kernel.problem import Problem
from autotune.base import signals as stop
from autotune.search.on_gpu import Started, retime_or_error, search_on_gpu, whole_space
from autotune.search.options import SearchOptions
from autotune.search.outcome import SearchResult, TrialOutcome

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from autotune.kernel.dims import Dims
    from autotune.kernel.dtypes import DType
    from autotune.kernel.model import Kernel
    from autotune.search.workers import WorkerReport

__all__ = ["Started", "tune", "whole_space"]


def tune(kernel: str | Path | Kernel | Problem, dims: Mapping[str, int] | Sequence[int] | Dims | None = None,
         dtype: DTypeLike | DType = "float32", *, device: int | Sequence[int] = 0,
         options: SearchOptions | None = None, db: str | None = None,
         on_start: Callable[[Started], None] | None = None,
         on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None,
         on_report: Callable[[WorkerReport], None] | None = None,
         also: Sequence[Mapping[str, int] | Sequence[int] | Dims] = (), **fields: Any) -> SearchResult:
    """Search ``kernel``'s space for ``dims`` and ``dtype``; store every trial and the winner.

    Args:
        kernel: a catalog name, a path to a kernel file, or a `Kernel`;
            or a whole `Problem` (then no ``dims`` and ``dtype``).
        dims: its named dims (``{"n": 1048576}``, pairs, or values in the kernel's order).
        dtype: the problem's dtype: a NumPy dtype or its name (``"float32"``), one the kernel takes.
        device: a CUDA ordinal, or several (one worker per GPU, one study; GPUs of one model).
        options: the search's `SearchOptions` (trials,
            timeout, seed, strategy, batch, resume, space, and its groups ``measure`` and
            ``retime``, whose fields repeats, trial_timeout, top_k, rounds... are keywords too);
            default: the defaults, with ``fields`` over them.
        db: the results database's SQLAlchemy URL (``None``: ``$AUTOTUNE_DB``, else the
            default SQLite file), where every trial and the winner are stored; opened once
            the GPU is found (a machine without one creates no database), and handed whole to
            the workers of several GPUs.
        on_start: called once the search has started (its key, store and space), one GPU or several.
        on_trial: called after each trial with its outcome and the result so far (one GPU).
        on_report: called with a worker's report whenever it changes (several GPUs).
        also: other dims of the kernel at ``dtype`` (one GPU): each config measured ok is
            measured at each of them too, in the same measuring process (one compile, a trial
            of each shape's own study, each shape's own re-timed winner:
            ``result.companions``; ``autotune.search.companions``).
        **fields: the fields of ``options`` as keywords (``trials=50, strategy="random"``), over
            ``options`` if both are given (``sampler=`` is the deprecated name of ``strategy``).

    Returns:
        The search's `SearchResult` (its ``key``, ``decision``...).

    Raises:
        InvalidInputError: bad kernel, dims, dtype, option
            (`OptionError` names it), space or devices;
            ``options`` that is not a SearchOptions, a callback that is not callable; the study
            exists and ``resume`` is false. Each argument is checked by type and range before
            anything is read or opened (``autotune.kernel.arguments``).
        GPUUnavailableError: no GPU, CUDA backend or nvcc.
        StoreError: the database cannot be used.
        AutotuneError: no GPU worker finished (several GPUs); the measuring process ended or
            hung while opening the GPU; the re-timing's measuring process crashed or hung (the
            trials stay stored).
        KeyboardInterrupt: SIGINT (Ctrl-C) or SIGTERM (``autotune.base.signals``), after the
            trials so far were stored and the search marked ``interrupted``.
    """
    # every argument by type and range first: nothing is read, opened or measured for a bad one
    check_ordinal_arg(device, "device", several=True)
    check_db_arg(db)
    if options is not None and not isinstance(options, SearchOptions):
        raise InvalidInputError(f"options {shown(options)} is not allowed; give a SearchOptions, or its fields as "
                                "keywords (tune(..., trials=50, strategy='random'))")
    for name, callback in (("on_start", on_start), ("on_trial", on_trial), ("on_report", on_report)):
        check_callable_arg(callback, name)
    if fields or options is None:
        options = SearchOptions.of(options, **fields)
    problem = Problem.of(kernel, dims, dtype)
    others = _other_shapes(problem, also)
    space_ = problem.kernel.space(options.space)
    ordinals = [device] if isinstance(device, int) else list(device)
    if others and len(ordinals) > 1:
        raise InvalidInputError(f"also (other shapes measured alongside) is not allowed with several GPUs "
                                f"({len(ordinals)} given); give one GPU")
    # SIGINT/SIGTERM from here on: acted on in measurements and between steps, never in a write
    with stop.deferred():
        if len(ordinals) == 1:
            return search_on_gpu(problem, ordinals[0], space_, options, db=db, on_start=on_start,
                                 on_trial=on_trial, also=others)
        return _tune_many(problem, ordinals, space_, options, db, on_start, on_report)


def _other_shapes(problem: Problem, also) -> list[Problem]:
    """``also`` as problems of ``problem``'s kernel and dtype, each once, ``problem`` left out.

    Raises:
        InvalidInputError: ``also`` is not a list of dims, or holds dims the kernel refuses.
    """
    if isinstance(also, (str, bytes, Mapping)) or not isinstance(also, Sequence):
        raise InvalidInputError(f"also {shown(also)} is not allowed; give a list of other dims of {problem.kernel.name} "
                                "([{'rows': 64, 'cols': 128}, ...]), or none")
    others: list[Problem] = []
    for dims in also:
        try:
            other = Problem.of(problem.kernel, dims, problem.dtype)
        except InvalidInputError as exc:
            raise InvalidInputError(f"also: {exc}") from None
        if other != problem and other not in others:
            others.append(other)
    return others


def _tune_many(problem: Problem, ordinals, space_, options: SearchOptions, db: str | None, on_start,
               on_report) -> SearchResult:
    import optuna

    from autotune.measure import benchmark, device, isolation
    from autotune.search import workers
    from autotune.search.retiming import retime_study
    from autotune.search.strategies import SWEEP_STRATEGY
    from autotune.measure.toolchain import Toolchain
    from autotune.search.study import open_study
    from autotune.store.key import TuningKey
    from autotune.store.opening import open_store

    ref = problem.ref
    if ref is None:
        raise InvalidInputError(f"kernel {problem.kernel.name} has no kernel file, and a search over several GPUs "
                                "loads it in each worker; load it from a file (autotune.load_kernel), or give one GPU")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    infos = [device.query_device(o) for o in ordinals]
    workers.check_one_model(infos)
    store = open_store(db)  # after the GPUs: a machine without them must not create a database
    stop.check()
    key = TuningKey.of(problem, infos[0], Toolchain.of(infos[0].arch))
    fresh = not open_study(store, key, resume=options.resume, objective=options.objective).get_trials(deepcopy=False)
    shares = workers.split_trials(options.trials, len(ordinals))
    if on_start:
        on_start(Started(key, store, space_, None, tuple(ordinals), tuple(shares),
                         workers.per_gpu(options, len(ordinals))[0].batch_size()))
    whole = whole_space(options, space_)
    plan = workers.Plan(ref, options.replace(strategy=SWEEP_STRATEGY) if whole else options, store.url,
                        arch=infos[0].arch, fresh=fresh)  # the URL resolved here: every worker writes there
    reports = workers.run_workers(plan, ordinals, on_report or (lambda rep: None))
    finished = [rep for rep in reports if rep.state == "done"]
    if not finished:
        raise AutotuneError("no GPU worker finished: " + "; ".join(f"GPU {rep.ordinal}: {rep.message}"
                                                                   for rep in reports))
    search_id = next((rep.search_id for rep in finished if rep.search_id is not None), 0)
    # re-timing only: ``repeats`` samples a round, no certified timing, no energy
    retiming = options.measure.replace(ci=0, energy=False)
    with isolation.open_isolated(benchmark.open_benchmark, ordinals[0], problem, retiming, precheck=False) as bench:
        stop.check()
        result = retime_study(key, store, retime_or_error(bench.retime), search_id, options.retime,
                              objective=options.objective)
    result.reports = reports
    result.whole_space = whole
    return result
