"""``autotune search`` and ``autotune sweep``: tune one kernel for one problem (the library's
:func:`autotune.tune`), with progress, the top configs, the re-timing and the stored best."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from autotune.errors import InvalidInputError, StoreError
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.dims import format_shape
from autotune.kernel.dtypes import get_dtype
from autotune.measure import phases
from autotune.measure.figures import figure, headline, unit
from autotune.measure.isolation import DEFAULT_TRIAL_TIMEOUT_S
from autotune.search.options import OptionError, SearchOptions
from autotune.search.outcome import SearchResult, TrialOutcome
from autotune.search.proposals import check_grid
from autotune.search.strategies import DEFAULT_STRATEGY, STRATEGIES
from autotune.search.tune import Started, tune
from autotune.search.workers import parse_devices
from . import app
from ._common import (Cols, Db, Device, Dims, DType, K, Kernel, M, N, Repeats, Rounds, Rows, Size, SpaceFile, TopK,
                      err, handle_errors, out, parse_dims, parse_float, parse_int)
from .search_many import print_reports, worker_progress

TrialTimeout = Annotated[float, typer.Option("--trial-timeout", parser=parse_float, metavar="S",
                                             help="Kill a trial (each measured in a child process) after "
                                                  "this many seconds and store it as timeout.")]
Batch = Annotated[Optional[int], typer.Option("--batch", parser=parse_int, metavar="K",
                                              help="Configs proposed at once, compiled on every core while the "
                                                   "GPU measures the batch before (default: one per compile "
                                                   "worker, AUTOTUNE_COMPILE_WORKERS or the CPU count).")]
DeviceSpec = Annotated[str, typer.Option("--device", "-d", help="CUDA device ordinal, or several (0,1) or all: "
                                                               "one worker per GPU, one study (GPUs of one model).")]


@app.command()
@handle_errors
def search(
    kernel: Kernel = "smem_pad",
    device: DeviceSpec = "0",
    dims: Dims = None,
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    dtype: DType = "float32",
    trials: Annotated[int, typer.Option("--trials", "-n", parser=parse_int,
                                        help="Configs to measure (>= 1; fewer if the space runs out); "
                                             "the kernel's default is measured first.")] = 100,
    timeout: Annotated[Optional[float], typer.Option(parser=parse_float,
                                                     help="Start no trial after this many seconds.")] = None,
    seed: Annotated[Optional[int], typer.Option(parser=parse_int,
                                                help="Seed of the sampler and of the random inputs.")] = None,
    strategy: Annotated[Optional[str], typer.Option(
        "--strategy", help=f"Search strategy: {', '.join(STRATEGIES)} (default {DEFAULT_STRATEGY}); see "
                           "docs/search.md.")] = None,
    sampler: Annotated[Optional[str], typer.Option("--sampler", hidden=True,
                                                   help="Deprecated name of --strategy.")] = None,
    batch: Batch = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue this key's existing study.")] = False,
    space: SpaceFile = None,
    repeats: Repeats = 50,
    top: Annotated[int, typer.Option(parser=parse_int, help="Rows of the final table.")] = 10,
    top_k: TopK = 5,
    rounds: Rounds = 5,
    trial_timeout: TrialTimeout = DEFAULT_TRIAL_TIMEOUT_S,
    db: Db = None,
    op: Annotated[Optional[str], typer.Option("--op", help="Search an operation instead of one kernel: every "
                                                           "catalog kernel computing it (transpose), the "
                                                           "trials shared by successive halving; replaces "
                                                           "--kernel.")] = None,
) -> None:
    """Search a kernel's config space on one GPU (or several of one model) for one problem and
    dtype; store every trial."""
    if strategy is not None and sampler is not None and strategy != sampler:
        raise InvalidInputError(f"--sampler {sampler} (the old name of --strategy) and --strategy {strategy} "
                                "disagree; give --strategy only")
    options = _options(trials=trials, timeout=timeout, seed=seed, strategy=strategy or sampler or DEFAULT_STRATEGY,
                       batch=batch, resume=resume, space=space, repeats=repeats, top_k=top_k, rounds=rounds, db=db,
                       trial_timeout=trial_timeout)
    ordinals = parse_devices(device)
    if op is not None:
        from .search_op import run_op

        if space is not None:
            raise InvalidInputError(f"--space {space} is not allowed with --op: each kernel searches its own space")

        run_op(op, ordinals, dims, size, rows, cols, m, n, k, dtype, options)
        return
    kern = resolve_kernel(kernel)
    problem = parse_dims(kern, dims, size, rows, cols, m, n, k)
    _run(kern, problem, dtype, ordinals, top, options)


@app.command()
@handle_errors
def sweep(
    kernel: Kernel = "smem_pad",
    device: Device = 0,
    dims: Dims = None,
    size: Size = None, rows: Rows = None, cols: Cols = None, m: M = None, n: N = None, k: K = None,
    dtype: DType = "float32",
    space: SpaceFile = None,
    repeats: Repeats = 50,
    top_k: TopK = 5,
    rounds: Rounds = 5,
    trial_timeout: TrialTimeout = DEFAULT_TRIAL_TIMEOUT_S,
    batch: Batch = None,
    db: Db = None,
) -> None:
    """Measure every valid config of a kernel's space (the exhaustive grid), stored like search
    trials in the key's study (configs it already measured are not measured again)."""
    options = _options(seed=0, strategy="grid", batch=batch, resume=True, space=space, repeats=repeats, top_k=top_k,
                       rounds=rounds, db=db, trial_timeout=trial_timeout)
    if device < 0:
        parse_devices(str(device))
    kern = resolve_kernel(kernel)
    problem = parse_dims(kern, dims, size, rows, cols, m, n, k)
    count = check_grid(kern.space(space))  # a space over the grid's limit is refused before any GPU work
    _run(kern, problem, dtype, [device], count, options.replace(trials=count))


def _options(**given) -> SearchOptions:
    """The search's options, built once; a bad value is said with its flag (``--top-k 0 ...``)."""
    try:
        return SearchOptions(**given)
    except OptionError as exc:
        raise exc.as_flag() from None


def _run(kern, problem, dtype, ordinals, top, options: SearchOptions) -> None:
    """Tune with progress; on Ctrl-C print the best so far and re-raise."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dt = get_dtype(dtype)
    kern.check_dtype(dt)
    started: list[Started] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[best]}"))
    with Progress(*columns, console=out, transient=False) as progress:
        task, on_report = None, None

        def on_start(s: Started) -> None:
            nonlocal task, on_report
            started.append(s)
            _print_header(s, kern, problem, dt, ordinals, options)
            if s.bench is not None:
                task = progress.add_task("configs", total=options.trials, best="")
            else:
                on_report = worker_progress(progress, ordinals, s.shares)

        def on_trial(outcome: TrialOutcome, result: SearchResult) -> None:
            best = result.best
            text = f"best {headline(kern, problem, dt, best[1])} {best[0].key}" if best else "no valid config yet"
            progress.update(task, completed=result.measured_count, best=text)  # configs measured

        try:
            result = tune(kern, problem, dt, device=ordinals if len(ordinals) > 1 else ordinals[0],
                          on_start=on_start, on_trial=on_trial,
                          on_report=lambda rep: on_report(rep) if on_report else None, options=options)
        except KeyboardInterrupt:
            if started:
                _print_best_so_far(started[0].store, started[0].key, kern)
            raise
    if result.reports:
        print_reports(result.reports)
        if result.retimings:
            out.print(f"re-timing the top {len(result.retimings)} configs of the study on GPU {ordinals[0]} only")
    _print_result(result, started[0].store, kern, top, summary=len(ordinals) == 1)


def _print_header(s: Started, kern, problem, dt, ordinals, options: SearchOptions) -> None:
    key, d = s.key, s.key.device
    where = (f"on {d.name} (device {ordinals[0]}" if s.bench is not None else
             f"on {len(ordinals)} x {d.name} (devices {','.join(map(str, ordinals))}")
    out.print(f"[bold]{key.kernel}[/] {format_shape(key.dims)} ({key.dims_key}) {dt.name} {where}, "
              f"sm_{d.compute_capability}, driver {d.driver_version}, nvcc {key.nvcc_version}); "
              f"{_space_size(s.space)} in {s.space.path}"
              + (f"; one study, one worker per GPU, trials split {'+'.join(map(str, s.shares))}" if s.shares else "")
              + f"; strategy {options.strategy_name}, batches of {s.batch}")
    b = s.bench
    if b is None:
        return
    bounds = [f"device-to-device memcpy: {b.memcpy_gbps:.0f} GB/s"] if b.memcpy_gbps else []
    if b.copy_gbps:
        bounds.append(f"{kern.objective.bound_kernel} bound: {b.copy_gbps:.0f} GB/s")
    out.print("; ".join([*bounds, f"figure: {unit(kern)}", f"L2: {b.l2_mode} buffers"]))


HEADER_COUNT = 10_000
"""Most valid configs the header counts (a larger space is described by its raw size)."""


def _space_size(space) -> str:
    """``54 valid configs``, or for a large space ``over 10,000 valid configs (N combinations)``
    without enumerating it."""
    n = space.count(HEADER_COUNT)
    if n <= HEADER_COUNT:
        return f"{n} valid configs"
    return f"over {HEADER_COUNT:,} valid configs ({space.raw_size:,} combinations before constraints)"


def _print_result(result: SearchResult, store, kern, top: int, summary: bool = True) -> None:
    """The run's outcome counts, failures, the top configs of the study, the re-timing and
    the stored best."""
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    if summary:
        out.print(f"stopped: {result.stopped}; this run measured {result.measured_count} config"
                  f"{'s' if result.measured_count != 1 else ''}: "
                  + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if result.whole_space:
        out.print("  the trials covered the space: every valid config measured in the space's order, "
                  + ("each GPU its share of it first" if result.reports else "the default first")
                  + " (the strategy was not asked)")
    if summary and result.early_stopped:
        out.print(f"  {result.early_stopped} ok configs timed only until clearly slower than the best so far "
                  "(early stop)")
    for o in result.outcomes:
        if o.status != "ok":
            out.print(f"  failed trial {o.number} {o.config.key}: {o.status}: {o.reason}", markup=False)
    records = sorted((t for t in store.key_trials(result.key) if t.status == "ok"), key=lambda t: t.median_ms)
    has = {f: any(getattr(t, f) is not None for t in records) for f in ("gflops", "gbps", "pct_memcpy", "pct_copy")}
    names = {"gflops": "GFLOP/s", "gbps": "GB/s", "pct_memcpy": "% memcpy", "pct_copy": "% bound kernel"}
    shown = [f for f in names if has[f]]
    table = Table(title=f"top {min(top, len(records))} configs of the study")
    for col in ("#", "config", "median ms", "min..max ms", *(names[f] for f in shown), "regs", "smem B", "occupancy"):
        table.add_column(col, justify="left" if col == "config" else "right", no_wrap=col == "config")
    for i, t in enumerate(records[:top], 1):
        cells = [_cell(getattr(t, f), ".1f" if f.startswith("pct") else ".0f") for f in shown]
        table.add_row(str(i), t.config.key, f"{t.median_ms:.4f}", f"{t.min_ms:.4f}..{t.max_ms:.4f}", *cells,
                      str(t.registers), str(t.shared_bytes),
                      "" if t.occupancy is None else f"{100 * t.occupancy:.0f} %")
    out.print(table)
    if result.decision is not None:
        out.print(_retiming_table(result, kern))
    if result.clock_warning:
        err.print(f"warning: GPU clocks moved during the search: {result.clock_warning}")
    _print_best(store, result.key, kern, "best")
    spent = result.phase_totals or phases.totals(t.phases for rep in result.reports if rep.search_id is not None
                                                 for t in store.trials(rep.search_id))
    if spent:
        out.print(f"where the time went: {phases.describe(spent)}")


def _cell(value, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def _retiming_table(result: SearchResult, kern) -> Table:
    d, key = result.decision, result.key
    dims = dict(key.dims)
    rounds = len(d.winner.round_medians_ms)
    tie = "" if d.winner is d.fastest else f" (tied with the fastest, {d.fastest.config.key}; rule: fewer threads)"
    table = Table(title=f"re-timing of the top {len(result.retimings)} configs, interleaved over {rounds} rounds: "
                        f"winner {d.winner.config.key}{tie}")
    for col in ("config", "pooled ms", unit(kern), "spread %", "rounds (ms)", "tie group"):
        table.add_column(col, justify="left" if col in ("config", "rounds (ms)") else "right", no_wrap=True)
    for r in sorted(result.retimings, key=lambda r: r.pooled_median_ms):
        table.add_row(r.config.key, f"{r.pooled_median_ms:.4f}",
                      f"{figure(kern, dims, key.dtype, r.pooled_median_ms):.4g}",
                      f"{100 * r.spread:.2f}", " ".join(f"{m:.4f}" for m in r.round_medians_ms),
                      ("winner" if r is d.winner else "yes") if r in d.tie_group else "")
    return table


def _print_best_so_far(store, key, kern) -> None:
    """The stored best after an interrupt; a database that cannot be read then is said, not
    raised (the interrupt is what the command ends with)."""
    try:
        _print_best(store, key, kern, "best so far")
    except StoreError as exc:
        err.print(f"best so far: unknown ({exc})", markup=False, soft_wrap=True)


def _print_best(store, key, kern, label: str) -> None:
    best = store.best(key)
    if best is None:
        out.print(f"{label}: no config of this key passed verification yet")
        return
    ms = best.pooled_median_ms or best.median_ms
    how = f"pooled over {best.rounds} rounds" if best.pooled_median_ms else "single measurement"
    figure_text = headline(kern, dict(key.dims), key.dtype, ms)
    if best.memcpy_gbps and kern.objective.bytes:
        figure_text += f"  {100 * figure(kern, dict(key.dims), key.dtype, ms) / best.memcpy_gbps:.1f}% of memcpy"
    out.print(f"{label}: {best.config.key}  {figure_text} ({ms:.4f} ms, {how})"
              + (f"; tie group: {' | '.join(best.tie_group)}" if len(best.tie_group) > 1 else ""))
