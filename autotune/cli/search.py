"""``autotune search``: tune one kernel for one shape and dtype on one GPU."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import benchmark
from ..dtypes import get_dtype
from ..errors import InvalidInputError
from ..kernels import get_kernel
from ..key import tuning_key
from ..space import load_space
from ..store import Store
from ..tuner import SAMPLERS, SearchResult, TrialOutcome, search as run_search
from . import app
from ._common import Cols, Db, DType, Kernel, Rows, Size, handle_errors, out, parse_float, parse_int, shape


@app.command()
@handle_errors
def search(
    kernel: Kernel = "smem_pad",
    device: Annotated[int, typer.Option("--device", "-d", parser=parse_int, help="CUDA device ordinal.")] = 0,
    size: Size = None, rows: Rows = None, cols: Cols = None, dtype: DType = "float32",
    trials: Annotated[int, typer.Option("--trials", "-n", parser=parse_int, help="Optuna trials (>= 1).")] = 100,
    timeout: Annotated[Optional[float], typer.Option(parser=parse_float,
                                                     help="Start no trial after this many seconds.")] = None,
    seed: Annotated[Optional[int], typer.Option(parser=parse_int,
                                                help="Seed of the sampler and of the random inputs.")] = None,
    sampler: Annotated[str, typer.Option(help=f"Sampler: {', '.join(SAMPLERS)}.")] = "tpe",
    resume: Annotated[bool, typer.Option("--resume", help="Continue this key's existing study.")] = False,
    space: Annotated[Optional[str], typer.Option("--space", help="Search-space TOML file "
                                                 "(default: configs/<kernel>.toml).")] = None,
    repeats: Annotated[int, typer.Option(parser=parse_int,
                                         help="Timed samples per config (>= 20; median of these).")] = 50,
    top: Annotated[int, typer.Option(parser=parse_int, help="Rows of the final table.")] = 10,
    db: Db = None,
) -> None:
    """Search a kernel's config space on one GPU for one shape and dtype; store every trial."""
    r, c = shape(size, rows, cols)
    get_kernel(kernel)
    dt = get_dtype(dtype)
    space_ = load_space(kernel, space)
    _check_options(trials, timeout, sampler, device, repeats)
    with benchmark.open_benchmark(device, r, c, dt, repeats=repeats, seed=seed) as bench:
        store = Store(db)  # after the GPU: a machine without one must not create a database
        key = tuning_key(kernel, bench.device, r, c, dt.name)
        memcpy = bench.memcpy_gbps
        d = key.device
        out.print(f"[bold]{kernel}[/] {r}x{c} {dt.name} on {d.name} (device {device}, sm_{d.compute_capability}, "
                  f"driver {d.driver_version}, nvcc {key.nvcc_version}); "
                  f"{len(space_.configs())} valid configs in {space_.path}")
        out.print(f"device-to-device memcpy: {memcpy:.0f} GB/s")
        try:
            result = _run_with_progress(key, space_, bench.measure, store, trials=trials, timeout=timeout,
                                        seed=seed, sampler=sampler, resume=resume, memcpy=memcpy)
        except KeyboardInterrupt:
            _print_best(store, key, "best so far")
            raise
    _print_result(result, store, top)


def _check_options(trials: int, timeout: float | None, sampler: str, device: int, repeats: int) -> None:
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


def _run_with_progress(key, space, measure, store, *, trials, timeout, seed, sampler, resume, memcpy):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[best]}"))
    with Progress(*columns, console=out, transient=False) as progress:
        task = progress.add_task("trials", total=trials, best="")

        def on_trial(outcome: TrialOutcome, result: SearchResult) -> None:
            best = result.best
            text = f"best {best[1]:.0f} GB/s {best[0].key}" if best else "no valid config yet"
            progress.update(task, advance=1, best=text)

        return run_search(key, space, measure, store, n_trials=trials, timeout=timeout, seed=seed,
                          sampler=sampler, resume=resume, memcpy_gbps=memcpy, on_trial=on_trial)


def _print_result(result: SearchResult, store: Store, top: int) -> None:
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    out.print(f"stopped: {result.stopped}; this run: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for o in result.outcomes:
        if o.status not in ("ok", "constraint", "duplicate"):
            out.print(f"  failed trial {o.number} {o.config.key}: {o.status}: {o.reason}", markup=False)
    records = sorted((t for t in store.key_trials(result.key) if t.status == "ok"), key=lambda t: -t.gbps)
    table = Table(title=f"top {min(top, len(records))} configs of the study")
    for col in ("#", "config", "median ms", "min..max ms", "GB/s", "% memcpy", "regs", "smem B"):
        table.add_column(col, justify="left" if col == "config" else "right", no_wrap=col == "config")
    for i, t in enumerate(records[:top], 1):
        table.add_row(str(i), t.config.key, f"{t.median_ms:.4f}", f"{t.min_ms:.4f}..{t.max_ms:.4f}",
                      f"{t.gbps:.0f}", f"{t.pct_memcpy:.1f}", str(t.registers), str(t.shared_bytes))
    out.print(table)
    _print_best(store, result.key, "best")


def _print_best(store: Store, key, label: str) -> None:
    best = store.best(key)
    if best is None:
        out.print(f"{label}: no config of this key passed verification yet")
    else:
        out.print(f"{label}: {best.config.key}  {best.gbps:.0f} GB/s  {best.pct_memcpy:.1f}% of memcpy "
                  f"({best.median_ms:.4f} ms)")
