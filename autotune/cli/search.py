"""``autotune search``: tune one kernel for one shape and dtype on one GPU."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from autotune.measure import benchmark, nvml
from autotune.kernel.dtypes import get_dtype
from autotune.errors import InvalidInputError, StoreError
from autotune.kernel.catalog import get_kernel
from autotune.search import stop
from autotune.search.workers import parse_devices
from autotune.kernel.problem import format_shape, problem_of
from autotune.store.key import tuning_key
from autotune.kernel.space import load_space
from autotune.store.repository import Store
from autotune.search.tuner import SAMPLERS, SearchResult, TrialOutcome, search as run_search
from . import app
from ._common import (Cols, Db, Device, DType, K, Kernel, M, N, Repeats, Rounds, Rows, Size, SpaceFile, TopK, dims,
                      err, handle_errors, out, parse_float, parse_int)
from .search_many import tune_many


DeviceSpec = Annotated[str, typer.Option("--device", "-d", help="CUDA device ordinal, or several (0,1) or all: "
                                                               "one worker per GPU, one study (GPUs of one model).")]


@app.command()
@handle_errors
def search(
    kernel: Kernel = "smem_pad",
    device: DeviceSpec = "0",
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    dtype: DType = "float32",
    trials: Annotated[int, typer.Option("--trials", "-n", parser=parse_int, help="Optuna trials (>= 1).")] = 100,
    timeout: Annotated[Optional[float], typer.Option(parser=parse_float,
                                                     help="Start no trial after this many seconds.")] = None,
    seed: Annotated[Optional[int], typer.Option(parser=parse_int,
                                                help="Seed of the sampler and of the random inputs.")] = None,
    sampler: Annotated[str, typer.Option(help=f"Sampler: {', '.join(SAMPLERS)}.")] = "tpe",
    resume: Annotated[bool, typer.Option("--resume", help="Continue this key's existing study.")] = False,
    space: SpaceFile = None,
    repeats: Repeats = 50,
    top: Annotated[int, typer.Option(parser=parse_int, help="Rows of the final table.")] = 10,
    top_k: TopK = 5,
    rounds: Rounds = 5,
    db: Db = None,
) -> None:
    """Search a kernel's config space on one GPU (or several of one model) for one shape and
    dtype; store every trial."""
    ordinals = parse_devices(device)
    _check_options(trials, timeout, sampler, ordinals[0], repeats, top_k, rounds)
    shape_ = dims(problem_of(kernel), f"kernel {kernel}", size, rows, cols, m, n, k)
    tune = _tune if len(ordinals) == 1 else tune_many
    result, store = tune(kernel, ordinals[0] if len(ordinals) == 1 else ordinals, shape_, dtype,
                         space, db=db, repeats=repeats, seed=seed, trials=trials, timeout=timeout, sampler=sampler,
                         resume=resume, top_k=top_k, rounds=rounds)
    _print_result(result, store, top, summary=len(ordinals) == 1)


@app.command()
@handle_errors
def sweep(
    kernel: Kernel = "smem_pad",
    device: Device = 0,
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    dtype: DType = "float32",
    space: SpaceFile = None,
    repeats: Repeats = 50,
    top_k: TopK = 5,
    rounds: Rounds = 5,
    db: Db = None,
) -> None:
    """Measure every valid config of a kernel's space (the exhaustive grid), stored like search
    trials in the key's study (configs it already measured are not measured again)."""
    _check_options(1, None, "grid", device, repeats, top_k, rounds)
    space_ = load_space(get_kernel(kernel).name, space)
    shape_ = dims(problem_of(kernel), f"kernel {kernel}", size, rows, cols, m, n, k)
    result, store = _tune(kernel, device, shape_, dtype, space, db=db, repeats=repeats, seed=0,
                          trials=len(space_.configs()), timeout=None, sampler="grid", resume=True,
                          top_k=top_k, rounds=rounds)
    _print_result(result, store, top=len(space_.configs()))


def _tune(kernel, device, shape_, dtype, space, *, db, repeats, seed, trials, timeout, sampler, resume, top_k,
          rounds):
    """Validate, open the GPU and the store, print the header, run the tuner with progress."""
    r, c, depth = shape_
    dt = get_dtype(dtype)
    get_kernel(kernel).check_dtype(dt)
    space_ = load_space(get_kernel(kernel).name, space)
    # a signal from here on: acted on in measurements, between trials and phases; never in a write
    with stop.deferred(), benchmark.open_benchmark(device, r, c, dt, depth, repeats=repeats, seed=seed) as bench:
        stop.check()
        store = Store(db)  # after the GPU: a machine without one must not create a database
        stop.check()
        key = tuning_key(kernel, bench.device, r, c, dt.name, depth)
        d = key.device
        out.print(f"[bold]{key.kernel}[/] {format_shape(r, c, depth)} {dt.name} on {d.name} (device {device}, "
                  f"sm_{d.compute_capability}, driver {d.driver_version}, nvcc {key.nvcc_version}); "
                  f"{len(space_.configs())} valid configs in {space_.path}")
        if problem_of(kernel).is_matmul:
            out.print(f"figure: GFLOP/s = 2*M*N*K / time; L2: {bench.l2_mode} buffers")
        else:
            out.print(f"device-to-device memcpy: {bench.memcpy_gbps:.0f} GB/s; copy_row bound: "
                      f"{bench.copy_gbps:.0f} GB/s; L2: {bench.l2_mode} buffers")
        try:
            result = _run_with_progress(key, space_, bench, store, trials=trials, timeout=timeout, seed=seed,
                                        sampler=sampler, resume=resume, top_k=top_k, rounds=rounds)
        except KeyboardInterrupt:
            print_best_so_far(store, key)
            raise
    return result, store


def _check_options(trials: int, timeout: float | None, sampler: str, device: int, repeats: int,
                   top_k: int, rounds: int) -> None:
    if trials < 1:
        raise InvalidInputError(f"--trials {trials} is not allowed; give 1 or more")
    if timeout is not None and timeout <= 0:
        raise InvalidInputError(f"--timeout {timeout:g} is not allowed; give a positive number of seconds")
    if sampler not in SAMPLERS:
        raise InvalidInputError(f"unknown sampler {sampler!r}; allowed: {', '.join(SAMPLERS)}")
    if device < 0:
        raise InvalidInputError(f"--device {device} is not allowed; give a CUDA device ordinal 0, 1, ...")
    if repeats < 20:
        raise InvalidInputError(f"--repeats {repeats} is not allowed; give 20 or more")
    for flag, value in (("--top-k", top_k), ("--rounds", rounds)):
        if value < 1:
            raise InvalidInputError(f"{flag} {value} is not allowed; give 1 or more")


def _run_with_progress(key, space, bench, store, *, trials, timeout, seed, sampler, resume, top_k, rounds):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[best]}"))
    with Progress(*columns, console=out, transient=False) as progress:
        task = progress.add_task("trials", total=trials, best="")

        problem, itemsize = problem_of(key.kernel), get_dtype(key.dtype).itemsize

        def on_trial(outcome: TrialOutcome, result: SearchResult) -> None:
            best = result.best
            figure = problem.of_gbps(best[1], key.rows, key.cols, key.depth, itemsize) if best else 0.0
            text = f"best {figure:.0f} {problem.unit} {best[0].key}" if best else "no valid config yet"
            progress.update(task, advance=1, best=text)

        return run_search(key, space, bench.measure, store, n_trials=trials, timeout=timeout, seed=seed,
                          sampler=sampler, resume=resume, memcpy_gbps=bench.memcpy_gbps,
                          copy_gbps=bench.copy_gbps, l2_mode=bench.l2_mode,
                          clocks=lambda: nvml.clock_state(bench.device.pci_bus_id), retime=bench.retime,
                          top_k=top_k, rounds=rounds, on_trial=on_trial)


def _print_result(result: SearchResult, store: Store, top: int, summary: bool = True) -> None:
    """The run's outcome counts (``summary``; several GPUs print theirs per GPU), failures,
    the top configs of the study, the re-timing and the stored best."""
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    if summary:
        out.print(f"stopped: {result.stopped}; this run: "
                  + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for o in result.outcomes:
        if o.status not in ("ok", "constraint", "duplicate"):
            out.print(f"  failed trial {o.number} {o.config.key}: {o.status}: {o.reason}", markup=False)
    records = sorted((t for t in store.key_trials(result.key) if t.status == "ok"), key=lambda t: -t.gbps)
    matmul = problem_of(result.key.kernel).is_matmul
    figures = ("GFLOP/s",) if matmul else ("GB/s", "% memcpy", "% copy")
    table = Table(title=f"top {min(top, len(records))} configs of the study")
    for col in ("#", "config", "median ms", "min..max ms", *figures, "regs", "smem B", "occupancy"):
        table.add_column(col, justify="left" if col == "config" else "right", no_wrap=col == "config")
    for i, t in enumerate(records[:top], 1):
        cells = ((f"{t.gflops:.0f}",) if matmul else
                 (f"{t.gbps:.0f}", f"{t.pct_memcpy:.1f}", "" if t.pct_copy is None else f"{t.pct_copy:.1f}"))
        table.add_row(str(i), t.config.key, f"{t.median_ms:.4f}", f"{t.min_ms:.4f}..{t.max_ms:.4f}", *cells,
                      str(t.registers), str(t.shared_bytes),
                      "" if t.occupancy is None else f"{100 * t.occupancy:.0f} %")
    out.print(table)
    if result.decision is not None:
        out.print(_retiming_table(result))
    if result.clock_warning:
        err.print(f"warning: GPU clocks moved during the search: {result.clock_warning}")
    _print_best(store, result.key, "best")


def _retiming_table(result: SearchResult) -> Table:
    d, key = result.decision, result.key
    problem, itemsize = problem_of(key.kernel), get_dtype(key.dtype).itemsize
    rounds = len(d.winner.round_medians_ms)
    tie = "" if d.winner is d.fastest else f" (tied with the fastest, {d.fastest.config.key}; rule: fewer threads)"
    table = Table(title=f"re-timing of the top {len(result.retimings)} configs, interleaved over {rounds} rounds: "
                        f"winner {d.winner.config.key}{tie}")
    for col in ("config", "pooled ms", problem.unit, "spread %", "rounds (ms)", "tie group"):
        table.add_column(col, justify="left" if col in ("config", "rounds (ms)") else "right", no_wrap=True)
    for r in sorted(result.retimings, key=lambda r: r.pooled_median_ms):
        table.add_row(r.config.key, f"{r.pooled_median_ms:.4f}",
                      f"{problem.figure(key.rows, key.cols, key.depth, itemsize, r.pooled_median_ms):.0f}",
                      f"{100 * r.spread:.2f}", " ".join(f"{m:.4f}" for m in r.round_medians_ms),
                      ("winner" if r is d.winner else "yes") if r in d.tie_group else "")
    return table


def print_best_so_far(store: Store, key) -> None:
    """The stored best after an interrupt; a database that cannot be read then is said, not
    raised (the interrupt is what the command ends with)."""
    try:
        _print_best(store, key, "best so far")
    except StoreError as exc:
        err.print(f"best so far: unknown ({exc})", markup=False, soft_wrap=True)


def _print_best(store: Store, key, label: str) -> None:
    best = store.best(key)
    if best is None:
        out.print(f"{label}: no config of this key passed verification yet")
    else:
        gbps = best.pooled_gbps or best.gbps
        how = f"pooled over {best.rounds} rounds" if best.pooled_median_ms else "single measurement"
        if best.depth:
            figure = f"{best.pooled_gflops:.0f} GFLOP/s"
        else:
            pct = gbps / best.memcpy_gbps * 100 if best.memcpy_gbps else best.pct_memcpy
            figure = f"{gbps:.0f} GB/s  {pct:.1f}% of memcpy"
        out.print(f"{label}: {best.config.key}  {figure} "
                  f"({best.pooled_median_ms or best.median_ms:.4f} ms, {how})"
                  + (f"; tie group: {' | '.join(best.tie_group)}" if len(best.tie_group) > 1 else ""))
