"""``autotune search --device 0,1`` (or ``all``): one search over several GPUs of one model.

One worker process per GPU optimises the key's one Optuna study (:mod:`autotune.search.workers`);
this module validates, shows a progress bar per GPU, and afterwards re-times the study's top
configs once, on the first GPU listed, so the stored best is that of a single-GPU search.
"""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from autotune.measure import benchmark, device
from autotune.search import stop, workers as multi_gpu
from autotune.kernel.dtypes import get_dtype
from autotune.errors import AutotuneError
from autotune.kernel.catalog import get_kernel
from autotune.store.key import tuning_key
from autotune.kernel.problem import format_shape
from autotune.kernel.space import load_space
from autotune.store.repository import Store
from autotune.search.tuner import SearchResult, open_study, retime_study
from ._common import err, out

__all__ = ["tune_many"]


def tune_many(kernel: str, ordinals: list[int], shape: tuple[int, int, int], dtype: str, space: str | None, *,
              db: str | None, repeats: int, seed: int | None, trials: int, timeout: float | None,
              sampler: str, resume: bool, top_k: int, rounds: int) -> tuple[SearchResult, Store]:
    """Search on every GPU of ``ordinals`` into one study, then re-time on the first.

    ``shape`` is ``(rows, cols, 0)`` of a transpose or ``(M, N, K)`` of a matrix product.

    Raises:
        InvalidInputError: bad kernel, dtype, space or devices (several GPU models among them);
            the study exists and ``resume`` is false.
        AutotuneError: no worker finished (each one's reason is named).
        KeyboardInterrupt: SIGINT or SIGTERM, after the workers stopped and the best so far
            was printed.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dt = get_dtype(dtype)
    get_kernel(kernel).check_dtype(dt)
    space_ = load_space(get_kernel(kernel).name, space)
    infos = [device.query_device(o) for o in ordinals]
    multi_gpu.check_one_model(infos)
    with stop.deferred():  # a signal from here on: acted on between steps, never in a write
        return _tune_many(kernel, ordinals, infos, shape, dt, space, space_, db=db, repeats=repeats, seed=seed,
                          trials=trials, timeout=timeout, sampler=sampler, resume=resume, top_k=top_k, rounds=rounds)


def _tune_many(kernel, ordinals, infos, shape, dt, space, space_, *, db, repeats, seed, trials, timeout, sampler,
               resume, top_k, rounds) -> tuple[SearchResult, Store]:
    from .search import print_best_so_far

    r, c, depth = shape
    store = Store(db)  # after the GPUs: a machine without them must not create a database
    stop.check()
    key = tuning_key(kernel, infos[0], r, c, dt.name, depth)
    open_study(store, key, resume=resume)
    d = key.device
    shares = multi_gpu.split_trials(trials, len(ordinals))
    out.print(f"[bold]{key.kernel}[/] {format_shape(r, c, depth)} {dt.name} on {len(ordinals)} x {d.name} (devices "
              f"{','.join(map(str, ordinals))}, sm_{d.compute_capability}, driver {d.driver_version}, nvcc "
              f"{key.nvcc_version}); {len(space_.configs())} valid configs in {space_.path}; one study, "
              f"one worker per GPU, {trials} trials split {'+'.join(map(str, shares))}")
    plan = multi_gpu.Plan(key.kernel, r, c, dt.name, space, db, repeats, seed, sampler, timeout, depth)
    try:
        reports = _run_with_progress(plan, ordinals, trials)
    except KeyboardInterrupt:
        print_best_so_far(store, key)
        raise
    for rep in reports:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(rep.counts.items())) or "no trials"
        line = (f"GPU {rep.ordinal} {rep.name} {rep.uuid}".rstrip() + f": {counts}; "
                + (f"stopped: {rep.stopped}" if rep.state == "done" else f"{rep.state}: {rep.message}"))
        (out if rep.state == "done" else err).print(line, markup=False, soft_wrap=True)
        if rep.clock_warning:
            err.print(f"warning: GPU {rep.ordinal} clocks moved during the search: {rep.clock_warning}")
    finished = [rep for rep in reports if rep.state == "done"]
    if not finished:
        raise AutotuneError("no GPU worker finished: " + "; ".join(f"GPU {rep.ordinal}: {rep.message}"
                                                                   for rep in reports))
    search_id = next((rep.search_id for rep in finished if rep.search_id is not None), 0)
    with benchmark.open_benchmark(ordinals[0], r, c, dt, depth, repeats=repeats, seed=seed) as bench:
        stop.check()
        out.print(f"re-timing the top {top_k} configs of the study on GPU {ordinals[0]} only "
                  f"(interleaved, {rounds} rounds)")
        result = retime_study(key, store, bench.retime, search_id, top_k=top_k, rounds=rounds)
    return result, store


def _run_with_progress(plan: multi_gpu.Plan, ordinals: list[int], trials: int) -> list[multi_gpu.WorkerReport]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[best]}"))
    with Progress(*columns, console=out, transient=False) as progress:
        tasks = {o: progress.add_task(f"GPU {o}", total=n, best="starting")
                 for o, n in zip(ordinals, multi_gpu.split_trials(trials, len(ordinals)))}

        def on_report(rep: multi_gpu.WorkerReport) -> None:
            best = (f"best {rep.best_gbps:.0f} GB/s {rep.best_config}" if rep.best_gbps is not None
                    else "no valid config yet")
            if rep.state not in ("starting", "running", "done"):
                best = rep.state
            progress.update(tasks[rep.ordinal], completed=sum(rep.counts.values()), best=best,
                            description=f"GPU {rep.ordinal} {rep.name}".rstrip())

        return multi_gpu.run_workers(plan, ordinals, trials, on_report)
