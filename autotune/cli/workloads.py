"""``autotune workloads``, ``plan`` and ``tune``: a program's recorded launches, what tuning them
would gain, and the tuning itself (the library's :mod:`autotune.workload`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from autotune.errors import InvalidInputError, NotTunedError
from autotune.kernel.arguments import check_db_arg
from autotune.measure.figures import duration
from autotune.store.workload_records import check_name
from autotune.workload.budget import format_seconds, parse_budget
from .root import app
from ._common import Db, Repeats, complete_ordinal, complete_ordinals, complete_workload, err, handle_errors, open_db
from ._common import out, parse_float, parse_int
from .output import Column, Format, FormatOption, WideOption, emit

class WorkloadName(str):
    """A workload's name (``--help`` shows this type as ``<name>``)."""


WorkloadName.__name__ = "name"

Name = Annotated[WorkloadName, typer.Argument(parser=WorkloadName, metavar="NAME", autocompletion=complete_workload,
                                              help="The workload: the name it was recorded under "
                                                   "(autotune.record(NAME) or AUTOTUNE_RECORD=NAME).")]
Budget = Annotated[str, typer.Option("--budget", "-b", metavar="DURATION",
                                     help="GPU time to spend, summed over the GPUs: 600, 90s, 10m, 1.5h.")]


def _ms(value: float | None) -> str:
    """A time in ms as every table prints it (:func:`~autotune.measure.figures.duration`: µs below 0.1 ms)."""
    return "" if value is None else duration(value)


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"


@app.command(short_help="List the recorded workloads.")
@handle_errors
def workloads(db: Db = None, fmt: FormatOption = Format.table, wide: WideOption = False) -> None:
    """List the workloads recorded in the database: each one's problems (kernel, dims, dtype),
    launches, sampled GPU time over those launches, devices and recording processes.

    \b
    Examples:
      autotune workloads
      autotune workloads --format json
    """
    from autotune.store.workloads import list_workloads

    store = open_db(db, "read")
    try:
        found = list_workloads(store)
    finally:
        store.close()
    if not found:  # the rule of every reading command: an empty answer is an error line, exit 2
        raise NotTunedError("no workload is recorded yet; record one: with autotune.record(NAME): ... or "
                            "AUTOTUNE_RECORD=NAME")
    columns = [Column("workload", "name", lambda w: w.name), Column("problems", "problems", lambda w: w.problems,
                                                                     right=True),
               Column("calls", "calls", lambda w: w.calls, right=True),
               Column("GPU time", "gpu_ms", lambda w: w.gpu_ms, _ms, right=True),
               Column("runs", "runs", lambda w: w.runs, right=True),
               Column("last recorded", "recorded_at", lambda w: w.recorded_at,
                      lambda t: f"{t:%Y-%m-%d %H:%M}", wide=True),
               Column("devices", "devices", lambda w: list(w.devices), ", ".join, long=True)]
    emit(out, found, columns, fmt, wide=wide, title=f"{len(found)} workload{'s' * (len(found) != 1)}")


def _plan_columns():
    return [Column("problem", "problem", lambda r: r.label),
            Column("calls", "calls", lambda r: r.recorded.calls, right=True),
            Column("per call", "ms_per_call", lambda r: r.recorded.ms_per_call, _ms, right=True),
            Column("share %", "share", lambda r: r.share, _pct, right=True),
            Column("rung", "rung", lambda r: r.chosen.rung if r.chosen else None),
            Column("gain %", "gain", lambda r: r.gain, _pct, right=True),
            Column("saving", "saving_ms", lambda r: r.saving_ms, _ms, right=True),
            Column("budget", "budget_s", lambda r: r.budget_s, lambda s: format_seconds(s) if s else "-", right=True),
            Column("strategy", "strategy", lambda r: r.strategy),
            Column("config", "config", lambda r: r.chosen.config.key if r.chosen else None, long=True),
            Column("gain from", "gain_why", lambda r: r.gain_why, long=True, breaks=" ", wide=True),
            Column("note", "note", lambda r: r.note, long=True, breaks=" ")]


@app.command(short_help="Show what tuning a workload would gain, per problem.")
@handle_errors
def plan(
    name: Name,
    budget: Budget = "10m",
    device: Annotated[Optional[int], typer.Option("--device", "-d", parser=parse_int, metavar="ORDINAL",
                                                  autocompletion=complete_ordinal, help="Plan for this GPU (default: the device model the "
                                                       "workload was recorded on; no GPU needed).")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", dir_okay=False, metavar="FILE.png",
                                                 help="Also plot each problem's share of the GPU time, before and "
                                                      "after the last tuning.")] = None,
    db: Db = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Show, per problem of a workload: its calls and share of the recorded GPU time, the rung
    and config the runtime picks today, the expected gain from tuning it, the GPU time that
    would save, and the budget and strategy `autotune tune` would give it (largest expected
    saving first).

    \b
    Examples:
      autotune plan app
      autotune plan app --budget 30m --plot app.png
    """
    from autotune.base.files import check_writable
    from autotune.workload.plan import make_plan

    check_name(name, "workload")
    seconds = parse_budget(budget)
    if plot is not None:
        check_writable(plot, "--plot")
    info = None
    if device is not None:
        from autotune.measure.device import query_device

        info = query_device(device)
    the_plan = make_plan(name, budget_s=seconds, device=info, db=db)
    document = {"workload": name, "device": the_plan.device.name, "budget_s": seconds, "gpu_ms": the_plan.gpu_ms,
                "saving_ms": the_plan.saving_ms}
    if fmt is Format.table:
        out.print(f"workload {name} on {the_plan.device.name}: {len(the_plan.rows)} problems, recorded GPU time "
                  f"{the_plan.gpu_ms:.4g} ms, expected saving {the_plan.saving_ms:.4g} ms "
                  f"({100 * the_plan.saving_ms / the_plan.gpu_ms if the_plan.gpu_ms else 0:.1f} %); budget "
                  f"{format_seconds(seconds)} of GPU time", markup=False, soft_wrap=True)
    emit(out, list(the_plan.rows), _plan_columns(), fmt, wide=wide, document=document)
    if plot is not None:
        _plot(name, the_plan, plot, db)


def _plot(name: str, the_plan, path: Path, db: str | None) -> None:
    from autotune.report.workload_plot import ShareBar, plot_shares
    from autotune.store.workloads import latest_tuning

    store = open_db(db, "read")
    try:
        tuning = latest_tuning(store, name, the_plan.device.name)
    finally:
        store.close()
    measured = {r.ident: r for r in tuning.results} if tuning is not None else {}
    bars = []
    for row in the_plan.rows:
        r, n = measured.get(row.recorded.ident), row.recorded.calls
        bars.append(ShareBar(row.label, row.recorded.gpu_ms or 0.0,
                             r.default_ms * n if r is not None and r.default_ms is not None else None,
                             r.tuned_ms * n if r is not None and r.tuned_ms is not None else None))
    title = f"workload {name} on {the_plan.device.name}: GPU time per problem"
    written = plot_shares(bars, path, title)
    out.print(f"plot: {written}", markup=False)


@app.command(short_help="Tune a recorded workload within a budget, on every GPU.")
@handle_errors
def tune(
    name: Name,
    budget: Budget = "10m",
    device: Annotated[str, typer.Option("--device", "-d", metavar="ORDINALS", autocompletion=complete_ordinals,
                                        help="GPU ordinal, several (0,1) or all: one worker per GPU, each taking "
                                             "the next problem (GPUs of one model).")] = "0",
    max_trials: Annotated[Optional[int], typer.Option("--max-trials", parser=parse_int, metavar="N",
                                                      help="At most N configs measured per problem (default: its "
                                                           "budget or its space ends its search).")] = None,
    seed: Annotated[Optional[int], typer.Option(parser=parse_int, metavar="N",
                                                help="Seed of the strategies and of the random inputs.")] = None,
    repeats: Repeats = 50,
    trial_timeout: Annotated[Optional[float], typer.Option("--trial-timeout", parser=parse_float, metavar="S",
                                                           help="Kill a trial after this many seconds.")] = None,
    db: Db = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Tune a recorded workload: spend the budget (GPU time, summed over the GPUs) where the
    expected saved GPU time is largest, one search per problem (transfer from the nearest tuned
    shapes where there are some), different problems on different GPUs at once, and what they
    leave in further rounds (resumed searches, largest expected gain per second first) until the
    budget is spent or every space was measured whole; then measure
    each problem at its default and its tuned config, and print the workload's GPU time both
    ways. Ctrl-C keeps what was measured; the same command resumes. A problem that fails is a
    row with its reason.

    \b
    Examples:
      autotune tune app --budget 10m
      autotune tune app --budget 20m --device all
    """
    from autotune.search.options import OptionError, SearchOptions
    from autotune.search.workers import parse_devices
    from autotune.workload.tune import tune_workload

    check_name(name, "workload")
    seconds = parse_budget(budget)
    if max_trials is not None and max_trials < 1:
        raise InvalidInputError(f"--max-trials {max_trials} is not allowed; give 1 or more")
    check_db_arg(db, "--db")
    try:
        options = SearchOptions.of(None, seed=seed, repeats=repeats,
                                   **({"trial_timeout": trial_timeout} if trial_timeout is not None else {}))
    except OptionError as exc:
        raise exc.as_flag() from None
    from autotune.store.workloads import workload_problems

    parse_devices(device, count=lambda: 1 << 16)  # its spelling first (0,0; -1; x), no GPU asked
    reader = open_db(db, "read")  # the name before the GPUs (--device all asks the driver): a typo said as such
    try:
        workload_problems(reader, name)
    finally:
        reader.close()
    ordinals = parse_devices(device)  # all, or a list's range: the driver asked
    from autotune.search.study import quiet_optuna

    quiet_optuna()  # the progress lines below say what happens

    def on_plan(rows, resumed) -> None:
        worth = sum(r.tunable for r in rows)
        out.print(f"{'resuming' if resumed else 'tuning'} workload {name}: {len(rows)} problems, {worth} worth a "
                  f"search; budget {format_seconds(seconds)} of GPU time on {len(ordinals)} GPU"
                  f"{'s' * (len(ordinals) > 1)}", markup=False, soft_wrap=True)

    def on_progress(p) -> None:
        r = p.result
        if p.event == "start":
            what = f"search {format_seconds(p.budget_s)}" if p.budget_s > 0 else "measure"
            if p.round > 1:
                what += f" more (round {p.round}: what the budget has left)"
            out.print(f"GPU {p.ordinal}: {r.label}: {what}", markup=False, soft_wrap=True)
            return
        speed = f", {r.default_ms / r.tuned_ms:.2f}x the default" if r.default_ms and r.tuned_ms else ""
        line = f"GPU {p.ordinal}: {r.label}: {r.status} ({r.trials} trials, {format_seconds(r.spent_s)}{speed})"
        (out if r.status != "failed" else err).print(line + (f": {r.reason}" if r.status == "failed" else ""),
                                                     markup=False, soft_wrap=True)

    try:
        outcome = tune_workload(name, budget_s=seconds, devices=ordinals, db=db, options=options, max_trials=max_trials,
                                on_plan=on_plan if fmt is Format.table else None,
                                on_progress=on_progress if fmt is Format.table else None)
    except KeyboardInterrupt:
        err.print(f"tuning of {name} interrupted: what was measured is stored; run the same command to resume it",
                  markup=False, soft_wrap=True)
        raise
    print_outcome(outcome, fmt, wide)


def _outcome_columns(calls):
    def total(which):
        return lambda r: None if getattr(r, which) is None else getattr(r, which) * calls.get(r.ident, 0)

    return [Column("problem", "problem", lambda r: r.label),
            Column("status", "status", lambda r: r.status),
            Column("calls", "calls", lambda r: calls.get(r.ident, 0), right=True),
            Column("default", "default_ms", lambda r: r.default_ms, _ms, right=True),
            Column("tuned", "tuned_ms", lambda r: r.tuned_ms, _ms, right=True),
            Column("speed-up", "speedup", lambda r: r.default_ms / r.tuned_ms if r.default_ms and r.tuned_ms
                   else None, lambda v: f"{v:.2f}x", right=True),
            Column("GPU time default", "gpu_ms_default", total("default_ms"), _ms, right=True, wide=True),
            Column("GPU time tuned", "gpu_ms_tuned", total("tuned_ms"), _ms, right=True, wide=True),
            Column("trials", "trials", lambda r: r.trials, right=True),
            Column("spent", "spent_s", lambda r: r.spent_s, format_seconds, right=True),
            Column("GPU", "gpu", lambda r: r.gpu_ordinal, wide=True),
            Column("config", "config", lambda r: r.config_key, long=True),
            Column("reason", "reason", lambda r: r.reason, long=True, breaks=" ")]


def print_outcome(outcome, fmt: Format, wide: bool) -> None:
    """The tuning's table and totals (measured): per problem its time per call at the default
    and tuned configs, in total the workload's GPU time over its recorded calls both ways."""
    t = outcome.tuning
    default, tuned = outcome.totals()
    document = {"workload": t.workload, "device": t.device.name, "status": t.status, "budget_s": t.budget_s,
                "spent_s": t.spent_s, "wall_s": outcome.wall_s, "gpus": t.gpus, "gpu_ms_default": default,
                "gpu_ms_tuned": tuned, "further_rounds": len(outcome.rounds),
                "further_rounds_s": sum(r.spent_s for r in outcome.rounds)}
    emit(out, t.results, _outcome_columns(outcome.calls), fmt, wide=wide, document=document,
         title=f"workload {t.workload} on {t.device.name}: tuned {sum(r.status == 'tuned' for r in t.results)}, "
               f"measured only {sum(r.status == 'skipped' for r in t.results)}, failed "
               f"{sum(r.status == 'failed' for r in t.results)} of {len(t.results)} problems")
    if fmt is not Format.table:
        return
    runs = f"; {format_seconds(t.wall_s)} over every run of this tuning" if outcome.resumed else ""
    out.print(f"spent {format_seconds(t.spent_s)} of GPU time of {format_seconds(t.budget_s)} in "
              f"{format_seconds(outcome.wall_s)} on {t.gpus} GPU{'s' * (t.gpus > 1)}{runs}", markup=False)
    if outcome.rounds:
        problems = len({r.label for r in outcome.rounds})
        out.print(f"of which {format_seconds(sum(r.spent_s for r in outcome.rounds))} in {len(outcome.rounds)} further "
                  f"round{'s' * (len(outcome.rounds) > 1)} ({problems} problem{'s' * (problems > 1)} searched again "
                  f"with what the first round left, {sum(r.trials for r in outcome.rounds)} more trials)",
                  markup=False, soft_wrap=True)
    if default is not None:
        out.print(f"workload GPU time over its recorded calls, measured: default configs {default:.4g} ms, tuned "
                  f"{tuned:.4g} ms ({100 * (1 - tuned / default):.1f} % less, {default / tuned:.2f}x)",
                  markup=False, soft_wrap=True)
    slower = [r.label for r in t.results if r.default_ms and r.tuned_ms and r.tuned_ms > r.default_ms * 1.01]
    if slower:
        err.print(f"slower than the default by more than 1 %: {', '.join(slower)}", markup=False, soft_wrap=True)


@app.command("bundle", short_help="Show a deployment bundle and check it against this machine.")
@handle_errors
def bundle_(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The bundle's folder (or its bundle.json).")],
    device: Annotated[Optional[int], typer.Option("--device", "-d", parser=parse_int, metavar="ORDINAL",
                                                  help="Check it against this GPU (default: GPU 0 where there is "
                                                       "one).")] = None,
    allow_same_arch: Annotated[bool, typer.Option("--allow-same-arch",
                                                  help="Accept another GPU model, driver or nvcc of the same compute "
                                                       "capability (the same_arch rung).")] = False,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Show what a bundle (autotune export NAME --bundle DIR) holds: its provenance and every
    problem's config and rung; and check it as a launch would where it runs: against the GPU
    (model, driver, compute capability), nvcc, and the current source of each of its kernels
    (the kernel file it was exported from, else the catalog's: the rule plan and export use). A bundle that cannot be used here
    is one error line naming the file and what differs, exit 2.

    \b
    Examples:
      autotune bundle deploy/app
      autotune bundle deploy/app --device 1 --allow-same-arch
    """
    from autotune.errors import GPUUnavailableError
    from autotune.kernel.arguments import check_ordinal_arg
    from autotune.runtime.bundle import BundleError, check_kernel, read_bundle

    if device is not None:  # a bad ordinal first, before the bundle is read or a backend asked
        check_ordinal_arg(device, "--device")
    b = read_bundle(folder)
    stored = {e.kernel: e.problem_key for e in b.entries.values()}
    unchecked = []
    for name, problem_key in sorted(stored.items()):
        found = problem_key.resolve()  # the one rule: its kernel file, else its catalog name
        if found.kernel is None:
            unchecked.append(name)
            continue
        check_kernel(b, found.kernel)
    checked = "not checked against a GPU"
    try:
        from autotune.measure.device import query_device
        from autotune.measure.toolchain import Toolchain
        from autotune.runtime.bundle import device_differences

        info = query_device(device if device is not None else 0)
        differs = device_differences(b, info, Toolchain.of(info.arch), allow_same_arch)
        checked = f"usable on {info.name} (GPU {info.ordinal})" + (f" at the same_arch rung: {differs}" if differs
                                                                    else "")
    except GPUUnavailableError as exc:
        if device is not None:
            raise
        checked = f"not checked against a GPU ({exc})"
    except BundleError:
        raise
    d = b.device
    document = {"bundle": str(b.path), "workload": b.workload, "device": d.name, "driver_version": d.driver_version,
                "nvcc_version": b.nvcc_version, "created": b.created, "check": checked}
    if fmt is Format.table:
        out.print(f"bundle {b.path}: workload {b.workload!r}, {len(b.entries)} problems, made {b.created} for "
                  f"{d.name} (sm_{d.compute_capability.replace('.', '')}, driver {d.driver_version}, CUDA "
                  f"{d.cuda_version}), nvcc {b.nvcc_version}", markup=False, soft_wrap=True)
        out.print(checked, markup=False, soft_wrap=True)
        if unchecked:
            err.print(f"kernels not checked (neither in the catalog nor at the file they were exported from): "
                      f"{', '.join(unchecked)}", markup=False, soft_wrap=True)
    columns = [Column("kernel", "kernel", lambda e: e.kernel),
               Column("shape", "shape", lambda e: "x".join(str(v) for _, v in e.dims)),
               Column("dtype", "dtype", lambda e: e.dtype), Column("rung", "rung", lambda e: e.rung),
               Column("default", "default_ms", lambda e: e.default_ms, _ms, right=True),
               Column("tuned", "tuned_ms", lambda e: e.tuned_ms, _ms, right=True),
               Column("config", "config", lambda e: ",".join(f"{k}={v}" for k, v in sorted(e.macros.items())),
                      long=True)]
    emit(out, list(b.entries.values()), columns, fmt, wide=wide, document=document)
