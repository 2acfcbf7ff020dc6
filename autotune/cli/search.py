"""``autotune search`` and ``autotune sweep``: tune one kernel for one problem (the library's
:func:`autotune.tune`), with progress, the top configs, the re-timing and the stored best."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.markup import escape

from autotune.errors import InvalidInputError, StoreError
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.arguments import check_db_arg
from autotune.kernel.dims import format_shape
from autotune.measure import phases
from autotune.measure.figures import duration, figure, headline, unit
from autotune.measure.measure_options import DEFAULT_TRIAL_TIMEOUT_S
from autotune.search.options import OptionError, SearchOptions
from autotune.search.outcome import SearchResult, TrialOutcome
from autotune.search.proposals import check_grid
from autotune.search.study import StudyExistsError
from autotune.search.strategies import DEFAULT_STRATEGY, PARETO_STRATEGY, STRATEGIES, SWEEP_STRATEGY
from autotune.search.tune import Started, tune
from autotune.search.workers import parse_devices
from .root import app
from ._common import complete_ordinals
from ._common import (MEASUREMENT, OUTPUT, SEARCH, Ci, CiFloor, Db, Device, DType, Energy, Kernel, MaxSamples,
                      MinSamples, Objective, Repeats, Rounds, SpaceFile, StrategyOptionArg, TopK, err, handle_errors,
                      open_db, out, parse_float, parse_int, parse_strategy_options)
from .output import Format, FormatOption, WideOption, config_object
from .search_many import BAR_WIDTH, best_text, print_reports, worker_progress
from .search_tables import print_tables, top_rows
from .shape import Shape, shape_options

TrialTimeout = Annotated[float, typer.Option("--trial-timeout", parser=parse_float, metavar="S", rich_help_panel=MEASUREMENT,
                                             help="Kill a trial (each measured in a child process) after "
                                                  "this many seconds and store it as timeout.")]
Batch = Annotated[Optional[int], typer.Option("--batch", parser=parse_int, metavar="K", rich_help_panel=SEARCH,
                                              help="Configs proposed at once, compiled on every core while the "
                                                   "GPU measures the batch before (default: one per compile "
                                                   "worker, AUTOTUNE_COMPILE_WORKERS or the CPU count).")]
DeviceSpec = Annotated[str, typer.Option("--device", "-d", metavar="ORDINALS", rich_help_panel=MEASUREMENT,
                                         autocompletion=complete_ordinals,
                                         help="CUDA device ordinal, or several (0,1) or all: "
                                              "one worker per GPU, one study (GPUs of one model).")]


@app.command(short_help="Search a kernel's config space for one problem and dtype.")
@handle_errors(interrupted="trials so far are stored")
@shape_options
def search(
    kernel: Kernel = "smem_pad",
    device: DeviceSpec = "0",
    shape: Shape = Shape(),
    dtype: DType = "float32",
    trials: Annotated[int, typer.Option("--trials", parser=parse_int, metavar="N", rich_help_panel=SEARCH,
                                        help="Configs to measure (>= 1; fewer if the space runs out); "
                                             "the kernel's default is measured first.")] = 100,
    timeout: Annotated[Optional[float], typer.Option(parser=parse_float, metavar="S", rich_help_panel=SEARCH,
                                                     help="Start no trial after this many seconds.")] = None,
    seed: Annotated[Optional[int], typer.Option(parser=parse_int, metavar="N", rich_help_panel=SEARCH,
                                                help="Seed of the strategy and of the random inputs.")] = None,
    strategy: Annotated[Optional[str], typer.Option(
        "--strategy", metavar="NAME", rich_help_panel=SEARCH, autocompletion=lambda incomplete: [s for s in STRATEGIES if s.startswith(incomplete)],
        help=f"Search strategy: {', '.join(STRATEGIES)} (default {DEFAULT_STRATEGY}; {PARETO_STRATEGY} with --objective time,energy); the docs' 'The search loop' "
             "page says what each does.")] = None,
    sampler: Annotated[Optional[str], typer.Option("--sampler", hidden=True,
                                                   help="Deprecated name of --strategy.")] = None,
    strategy_option: StrategyOptionArg = None,
    batch: Batch = None,
    resume: Annotated[bool, typer.Option("--resume", rich_help_panel=SEARCH, help="Continue this key's existing study.")] = False,
    space: SpaceFile = None,
    repeats: Repeats = 50,
    top: Annotated[int, typer.Option(parser=parse_int, metavar="N", rich_help_panel=OUTPUT,
                                     help="Rows of the final table.")] = 10,
    top_k: TopK = 5,
    rounds: Rounds = 5,
    trial_timeout: TrialTimeout = DEFAULT_TRIAL_TIMEOUT_S,
    ci: Ci = 0.01,
    ci_floor_us: CiFloor = 0.5,
    min_samples: MinSamples = 20,
    max_samples: MaxSamples = 200,
    objective: Objective = "time",
    energy: Energy = False,
    db: Db = None,
    op: Annotated[Optional[str], typer.Option(
        "--op", metavar="OP", rich_help_panel=SEARCH, help="Search an operation instead of one kernel: every catalog kernel computing it "
                                   "(transpose), the trials shared by successive halving; replaces --kernel.")] = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Search a kernel's config space on one GPU (or several of one model) for one problem and
    dtype; store every trial. With --format json or csv the results go to stdout and the
    progress to stderr.

    \b
    Examples:
      autotune search --kernel smem_pad --size 4096 --trials 100
      autotune search --kernel matmul_reg --m 4096 --n 2048 --k 1024
      autotune search --kernel my_kernel.toml --dims n=1048576 --device 0,1
      autotune search --op transpose --rows 8192 --cols 4096 --trials 200
      autotune search --kernel smem_pad --size 4096 --strategy tpe --strategy-option startup=20
    """
    if strategy is not None and sampler is not None and strategy != sampler:
        raise InvalidInputError(f"--sampler {sampler} (the old name of --strategy) and --strategy {strategy} "
                                "disagree; give --strategy only")
    check_db_arg(db, "--db")  # beside the options, not in them: given whole to what opens the database
    options = _options(trials=trials, timeout=timeout, seed=seed, strategy=strategy or sampler,
                       batch=batch, resume=resume, space=space, repeats=repeats, top_k=top_k, rounds=rounds,
                       trial_timeout=trial_timeout, strategy_options=parse_strategy_options(strategy_option),
                       ci=ci, ci_floor_us=ci_floor_us, min_samples=min_samples, max_samples=max_samples,
                       objective=objective, energy=energy)
    ordinals = parse_devices(device)
    if op is not None:
        from .search_op import run_op

        if space is not None:
            raise InvalidInputError(f"--space {space} is not allowed with --op: each kernel searches its own space")

        run_op(op, ordinals, shape, dtype, options, db, fmt, wide)
        return
    _run(shape.problem(resolve_kernel(kernel), dtype), ordinals, top, options, db, fmt, wide)


@app.command(short_help="Measure every valid config of a kernel's space.")
@handle_errors(interrupted="trials so far are stored")
@shape_options
def sweep(
    kernel: Kernel = "smem_pad",
    device: Device = 0,
    shape: Shape = Shape(),
    dtype: DType = "float32",
    space: SpaceFile = None,
    repeats: Repeats = 50,
    top_k: TopK = 5,
    rounds: Rounds = 5,
    trial_timeout: TrialTimeout = DEFAULT_TRIAL_TIMEOUT_S,
    batch: Batch = None,
    ci: Ci = 0.01,
    ci_floor_us: CiFloor = 0.5,
    min_samples: MinSamples = 20,
    max_samples: MaxSamples = 200,
    energy: Energy = False,
    db: Db = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Measure every valid config of a kernel's space (the exhaustive grid), stored like search
    trials in the key's study (configs it already measured are not measured again).

    \b
    Examples:
      autotune sweep --kernel smem_pad --size 2048
      autotune sweep --kernel smem_pad --size 2048 --format csv > sweep.csv
    """
    check_db_arg(db, "--db")
    options = _options(seed=0, strategy=SWEEP_STRATEGY, batch=batch, resume=True, space=space, repeats=repeats,
                       top_k=top_k, rounds=rounds, trial_timeout=trial_timeout, ci=ci, ci_floor_us=ci_floor_us,
                       min_samples=min_samples, max_samples=max_samples, energy=energy)
    if device < 0:
        parse_devices(str(device))
    problem = shape.problem(resolve_kernel(kernel), dtype)
    count = check_grid(problem.kernel.space(space))  # a space over the grid's limit is refused before any GPU work
    _run(problem, [device], count, options.replace(trials=count), db, fmt, wide)


def _options(**given) -> SearchOptions:
    """The search's options, built once; a bad value is said with its flag (``--top-k 0 ...``)."""
    try:
        return SearchOptions(**given)
    except OptionError as exc:
        raise exc.as_flag() from None


def _tuned_already(say, exc: StudyExistsError, db: str | None, fmt: Format, wide: bool) -> bool:
    """A search of a key already searched, without ``--resume``: say that it is tuned and print
    its stored best, as ``autotune best`` does (exit 0); ``False`` where no best is stored yet
    (an interrupted search: then the study-exists error stands, naming ``--resume``)."""
    from .results import emit_bests

    key = exc.key
    record = open_db(db, "read").best(key)
    if record is None:
        return False
    say.print(f"{key.kernel} {format_shape(key.dims)} {key.dtype} on {key.device.name} is tuned already; its stored "
              "best below (autotune best shows it too); pass --resume to measure more of its space", markup=False)
    emit_bests([record], "1 tuned key", fmt, wide)
    return True


def _run(problem, ordinals, top, options: SearchOptions, db: str | None, fmt: Format = Format.table,
         wide: bool = False) -> None:
    """Tune with progress into database ``db`` (``--db``); on Ctrl-C print the best so far and
    re-raise. Progress and text go to stdout with a table, to stderr with JSON or CSV (stdout is
    then the data alone)."""
    say = out if fmt is Format.table else err
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    started: list[Started] = []
    columns = (TextColumn("{task.description}"), BarColumn(bar_width=BAR_WIDTH), MofNCompleteColumn(),
               TimeElapsedColumn(),
               TextColumn("{task.fields[best]}"))
    with Progress(*columns, console=say, transient=False) as progress:
        task, on_report = None, None

        def on_start(s: Started) -> None:
            nonlocal task, on_report
            started.append(s)
            _print_header(say, s, problem, ordinals, options)
            if s.bench is not None:
                task = progress.add_task("configs", total=options.trials, best="")
            else:
                on_report = worker_progress(progress, ordinals, s.shares)

        def on_trial(outcome: TrialOutcome, result: SearchResult) -> None:
            best = result.best
            text = (best_text(say, "configs", headline(problem, best[1]), best[0].key) if best
                    else "no valid config yet")
            progress.update(task, completed=result.measured_count, best=text)  # configs measured

        try:
            result = tune(problem, device=ordinals if len(ordinals) > 1 else ordinals[0],
                          on_start=on_start, on_trial=on_trial,
                          on_report=lambda rep: on_report(rep) if on_report else None, options=options, db=db)
        except KeyboardInterrupt:
            if started:
                _print_best_so_far(say, started[0].store, started[0].key, problem)
            raise
        except StudyExistsError as exc:  # the same command run again: its answer, not an error
            if task is not None:
                progress.remove_task(task)  # no bar of configs that will not be measured
            if not _tuned_already(say, exc, db, fmt, wide):
                raise
            return
    if result.reports:
        print_reports(result.reports, say)
        if result.retimings:
            say.print(f"re-timing the top {len(result.retimings)} configs of the study on GPU {ordinals[0]} only")
    _print_result(say, result, started[0].store, problem, top, fmt, wide, summary=len(ordinals) == 1)


def _print_header(say, s: Started, problem, ordinals, options: SearchOptions) -> None:
    key, d = s.key, s.key.device
    where = (f"on {d.name} (device {ordinals[0]}" if s.bench is not None else
             f"on {len(ordinals)} x {d.name} (devices {','.join(map(str, ordinals))}")
    say.print(f"[bold]{key.kernel}[/] {format_shape(key.dims)} ({key.dims_key}) {key.dtype} {where}, "
              f"{d.arch}, driver {d.driver_version}, nvcc {key.nvcc_version}); "
              f"{_space_size(s.space)} in {escape(str(Path(s.space.path).resolve()))}"
              + (f"; one study, one worker per GPU, trials split {'+'.join(map(str, s.shares))} "
                 "(a GPU that measures faster takes more)" if s.shares else "")
              + f"; strategy {options.strategy_name}, batches of {s.batch}"
              + (f" per GPU ({s.batch * len(s.shares)} at a time in the study)" if s.shares else ""))
    b = s.bench
    if b is None:
        return
    bounds = [f"device-to-device memcpy: {b.memcpy_gbps:.0f} GB/s"] if b.memcpy_gbps else []
    if b.copy_gbps:
        bounds.append(f"{problem.kernel.objective.bound_kernel} bound: {b.copy_gbps:.0f} GB/s")
    p = options.precision
    sampling = (f"samples: {options.repeats} per config" if p is None else
                f"samples: until the median's 95% CI is within ±{100 * p.rel:g}% or ±{1e3 * p.floor_ms:g} µs "
                f"({p.min_samples}..{p.max_samples} per config)")
    say.print("; ".join([*bounds, f"figure: {unit(problem.kernel)}", f"L2: {b.l2_mode} buffers", sampling,
                         f"objective: {options.objective}"]))
    note = getattr(b, "energy_note", None)
    if note:
        err.print(f"warning: {note}", markup=False, soft_wrap=True)


HEADER_COUNT = 10_000
"""Most valid configs the header counts (a larger space is described by its raw size)."""


def _space_size(space) -> str:
    """``54 valid configs``, or for a large space ``over 10,000 valid configs (N combinations)``
    without enumerating it."""
    n = space.count(HEADER_COUNT)
    if n <= HEADER_COUNT:
        return f"{n} valid configs"
    return f"over {HEADER_COUNT:,} valid configs ({space.raw_size:,} combinations before constraints)"


def _print_result(say, result: SearchResult, store, problem, top: int, fmt: Format, wide: bool,
                  summary: bool = True) -> None:
    """The run's outcome counts and failures (on ``say``), the top configs of the study and
    the re-timing (:mod:`.search_tables`, on stdout), and the stored best."""
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    if summary:
        say.print(f"stopped: {result.stopped}; this run measured {result.measured_count} config"
                  f"{'s' if result.measured_count != 1 else ''}: "
                  + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if result.whole_space:
        say.print("  the trials covered the space: every valid config measured in the space's order, "
                  + ("each GPU its share of it first" if result.reports else "the default first")
                  + " (the strategy was not asked)")
    same = len(result.outcomes) - result.measured_count
    if summary and same:
        say.print(f"  {same} ok config{'s' if same != 1 else ''} of a binary measured before (the same cubin, "
                  "launched alike): recorded with its measurement, not measured again")
    if summary and result.early_stopped:
        say.print(f"  {result.early_stopped} ok configs timed only until clearly slower than the best so far "
                  "(early stop)")
    for o in result.outcomes:
        if o.status != "ok":
            say.print(f"  failed trial {o.number} {o.config.key}: {o.status}: {o.reason}", markup=False)
    records = sorted((t for t in store.key_trials(result.key) if t.status == "ok"), key=lambda t: t.median_ms)
    kern = problem.kernel
    rows = top_rows(records[:top], result, problem)
    key = result.key
    document = {"kernel": key.kernel, "dims": dict(key.dims), "dtype": key.dtype, "device": key.device.name,
                "stopped": result.stopped, "measured": result.measured_count, "outcomes": counts}
    if fmt is Format.json:
        best = store.best(key)
        document["best"] = None if best is None else {"config": best.config.as_dict(), "ms": best.time_ms,
                                                      "figure": figure(problem, best.time_ms),
                                                      "unit": unit(kern),
                                                      "tie_group": [config_object(t) for t in best.tie_group],
                                                      "certificate": best.certificate}
    say.print()
    print_tables(out, rows, result, kern, fmt, wide, document)
    if result.clock_warning:
        err.print(f"warning: GPU clocks moved during the search: {result.clock_warning}")
    say.print()
    _print_best(say, store, result.key, problem, "best")
    spent = result.phase_totals or phases.totals(t.phases for rep in result.reports if rep.search_id is not None
                                                 for t in store.trials(rep.search_id))
    if spent:
        say.print(f"where the time went: {phases.describe(spent)}")


def _print_best_so_far(say, store, key, problem) -> None:
    """The stored best after an interrupt; a database that cannot be read then is said, not
    raised (the interrupt is what the command ends with)."""
    try:
        _print_best(say, store, key, problem, "best so far")
    except StoreError as exc:
        err.print(f"best so far: unknown ({exc})", markup=False, soft_wrap=True)


def _print_best(say, store, key, problem, label: str) -> None:
    best = store.best(key)
    if best is None:
        say.print(f"{label}: no config of this key passed verification yet")
        return
    ms = best.pooled_median_ms or best.median_ms
    how = f"pooled over {best.rounds} rounds" if best.pooled_median_ms else "single measurement"
    figure_text = headline(problem, ms)
    if best.memcpy_gbps and problem.kernel.objective.bytes:
        figure_text += f"  {100 * figure(problem, ms) / best.memcpy_gbps:.1f}% of memcpy"
    say.print(f"{label}: {best.config.key}  {figure_text} ({duration(ms)}, {how})"
              + (f"; tie group: {' | '.join(best.tie_group)}" if len(best.tie_group) > 1 else ""))
    from autotune.store.records import certificate_lines

    for line in certificate_lines(best.certificate)[1:]:
        say.print(f"  {line}", markup=False)  # wrapped at spaces: a config stays whole
