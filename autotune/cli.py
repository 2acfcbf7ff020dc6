"""The ``autotune`` command line (Typer + Rich).

Commands are thin: they parse options, call the library, and print. Library errors map to
exit codes: 1 nothing tuned, 2 bad input, 3 no GPU / PyCUDA / nvcc, 4 database error,
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import benchmark
from .benchmark import MAX_DIM
from .dtypes import DTYPES, get_dtype
from .errors import (AutotuneError, GPUUnavailableError, InvalidInputError, NotTunedError,
                     StoreError)
from .kernels import KERNELS, get_kernel, source_hash
from .space import load_space
from .store import BestRecord, Store
from .tuner import SAMPLERS, SearchResult, TrialOutcome, search as run_search
from .key import tuning_key

# rich_markup_mode=None: usage errors print as one plain "Error: ..." line, not a box.
app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="Autotune CUDA kernels per GPU, shape and dtype; look tuned configs up.")
db_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Manage the results database schema.")
app.add_typer(db_app, name="db")

# Logs of searches are committed: off a terminal, print tables whole instead of 80 columns wide.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 220)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 220)

EXIT_CODES = {NotTunedError: 1, InvalidInputError: 2, GPUUnavailableError: 3, StoreError: 4}

def _int(value: str) -> int:
    """Parse an integer option, naming the value when it is not one."""
    try:
        return int(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an integer") from None


def _float(value: str) -> float:
    """Parse a number option, naming the value when it is not one."""
    try:
        return float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number") from None


Db = Annotated[Optional[str], typer.Option("--db", envvar="AUTOTUNE_DB", show_envvar=True,
                                           help="SQLAlchemy URL of the results database "
                                                "(default: a SQLite file in the user data dir).")]
Kernel = Annotated[str, typer.Option("--kernel", "-k", help=f"Kernel: {', '.join(KERNELS)}.")]
Size = Annotated[Optional[int], typer.Option("--size", parser=_int, help="Square matrix size (rows = cols).")]
Rows = Annotated[Optional[int], typer.Option("--rows", parser=_int, help="Input rows (with --cols).")]
Cols = Annotated[Optional[int], typer.Option("--cols", parser=_int, help="Input columns (with --rows).")]
DType = Annotated[str, typer.Option("--dtype", help=f"Element type: {', '.join(DTYPES)}.")]


def _shape(size: int | None, rows: int | None, cols: int | None) -> tuple[int, int]:
    for flag, value in (("--size", size), ("--rows", rows), ("--cols", cols)):
        if value is not None and not 1 <= value <= MAX_DIM:
            raise InvalidInputError(f"{flag} {value} is not allowed; give an integer 1..{MAX_DIM}")
    if size is not None and (rows is not None or cols is not None):
        raise InvalidInputError("give either --size or --rows with --cols, not both")
    if size is not None:
        return size, size
    if rows is None or cols is None:
        missing = "--cols" if rows is not None else "--rows" if cols is not None else "--size"
        raise InvalidInputError(f"{missing} is missing; give --size N or both --rows and --cols")
    return rows, cols


def _fail(exc: AutotuneError) -> typer.Exit:
    err.print(f"error: {exc}", markup=False, soft_wrap=True)
    code = next((c for cls, c in EXIT_CODES.items() if isinstance(exc, cls)), 1)
    return typer.Exit(code)


@app.command()
def search(
    kernel: Kernel = "smem_pad",
    device: Annotated[int, typer.Option("--device", "-d", parser=_int, help="CUDA device ordinal.")] = 0,
    size: Size = None, rows: Rows = None, cols: Cols = None, dtype: DType = "float32",
    trials: Annotated[int, typer.Option("--trials", "-n", parser=_int, help="Optuna trials (>= 1).")] = 100,
    timeout: Annotated[Optional[float], typer.Option(parser=_float, help="Start no trial after this many seconds.")] = None,
    seed: Annotated[Optional[int], typer.Option(parser=_int, help="Seed of the sampler and of the random inputs.")] = None,
    sampler: Annotated[str, typer.Option(help=f"Optuna sampler: {', '.join(SAMPLERS)}.")] = "tpe",
    resume: Annotated[bool, typer.Option("--resume", help="Continue this key's existing study.")] = False,
    space: Annotated[Optional[str], typer.Option("--space", help="Search-space TOML file "
                                                 "(default: configs/<kernel>.toml).")] = None,
    repeats: Annotated[int, typer.Option(parser=_int, help="Timed samples per config (>= 20; median of these).")] = 50,
    top: Annotated[int, typer.Option(parser=_int, help="Rows of the final table.")] = 10,
    db: Db = None,
) -> None:
    """Search a kernel's config space on one GPU for one shape and dtype; store every trial."""
    try:
        r, c = _shape(size, rows, cols)
        get_kernel(kernel)
        dt = get_dtype(dtype)
        space_ = load_space(kernel, space)
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
        store = Store(db)
        with benchmark.open_benchmark(device, r, c, dt, repeats=repeats, seed=seed) as bench:
            key = tuning_key(kernel, bench.device, r, c, dt.name)
            memcpy = bench.memcpy_gbps
            out.print(f"[bold]{kernel}[/] {r}x{c} {dt.name} on {key.device.name} (device {device}, "
                      f"sm_{key.device.compute_capability}, driver {key.device.driver_version}, "
                      f"nvcc {key.nvcc_version}); {len(space_.configs())} valid configs in {space_.path}")
            out.print(f"device-to-device memcpy: {memcpy:.0f} GB/s")
            result = _run_with_progress(key, space_, bench.measure, store, trials=trials, timeout=timeout,
                                        seed=seed, sampler=sampler, resume=resume, memcpy=memcpy)
        _print_search(result, store, top)
    except KeyboardInterrupt:
        err.print("interrupted: trials so far are stored")
        raise typer.Exit(130)
    except AutotuneError as exc:
        raise _fail(exc)


def _run_with_progress(key, space, measure, store, *, trials, timeout, seed, sampler, resume, memcpy):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
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


def _print_search(result: SearchResult, store: Store, top: int) -> None:
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
    best = store.best(result.key)
    if best is not None:
        out.print(f"best: {best.config.key}  {best.gbps:.0f} GB/s  {best.pct_memcpy:.1f}% of memcpy "
                  f"({best.median_ms:.4f} ms)")


def _device_filter(device: str | None) -> str | None:
    if device is None or not device.isdigit():
        return device
    from .device import query_device

    try:
        return query_device(int(device)).name
    except GPUUnavailableError as exc:
        raise GPUUnavailableError(f"--device {device} needs a GPU to resolve ({exc}); "
                                  "pass part of the device name instead") from None


def _current(records: list[BestRecord]) -> tuple[list[BestRecord], int]:
    """Split stored bests into current ones and a count of stale ones (kernel source changed)."""
    hashes = {name: source_hash(k) for name, k in KERNELS.items()}
    current = [b for b in records if hashes.get(b.kernel) == b.source_hash]
    return current, len(records) - len(current)


def _best_table(records: list[BestRecord], title: str, stale: list[bool] | None = None) -> Table:
    table = Table(title=title)
    numeric = ("median ms", "GB/s", "% memcpy", "regs", "smem B")
    for col in ("device", "kernel", "shape", "dtype", "config", *numeric, "tuned") + (("stale",) if stale else ()):
        table.add_column(col, justify="right" if col in numeric else "left", no_wrap=col == "config")
    for i, b in enumerate(records):
        cells = [b.device_name, b.kernel, f"{b.rows}x{b.cols}", b.dtype, b.config.key,
                 f"{b.median_ms:.4f}", f"{b.gbps:.0f}", f"{b.pct_memcpy:.1f}", str(b.registers),
                 str(b.shared_bytes), f"{b.updated_at:%Y-%m-%d %H:%M}"]
        table.add_row(*cells, *(("yes" if stale[i] else "",) if stale else ()))
    return table


@app.command()
def best(
    size: Size = None, rows: Rows = None, cols: Cols = None,
    kernel: Annotated[Optional[str], typer.Option("--kernel", "-k", help="Kernel (default: all).")] = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d",
                                                  help="Device ordinal or part of its name (default: all).")] = None,
    dtype: DType = "float32",
    db: Db = None,
) -> None:
    """Show the stored best config for a shape (and kernel, device, dtype)."""
    try:
        r, c = _shape(size, rows, cols)
        if kernel is not None:
            get_kernel(kernel)
        dt = get_dtype(dtype)
        name = _device_filter(device)
        found = Store(db).find_best(kernel=kernel, rows=r, cols=c, dtype=dt.name, device_name=name)
        current, stale = _current(found)
        if stale:
            err.print(f"skipped {stale} stale result(s): tuned with a kernel source that has changed since")
        if not current:
            what = f"{kernel or 'any kernel'} {r}x{c} {dt.name}" + (f" on {name}" if name else "")
            raise NotTunedError(f"nothing is tuned for {what}; run: autotune search --kernel "
                                f"{kernel or 'smem_pad'} --rows {r} --cols {c} --dtype {dt.name}")
        current.sort(key=lambda b: -b.gbps)
        out.print(_best_table(current, f"best configs for {r}x{c} {dt.name}"))
    except AutotuneError as exc:
        raise _fail(exc)


@app.command("list")
def list_(db: Db = None) -> None:
    """List everything tuned in the database (stale results are marked)."""
    try:
        found = Store(db).find_best()
    except AutotuneError as exc:
        raise _fail(exc)
    if not found:
        out.print("nothing is tuned yet; run: autotune search --kernel smem_pad --size 2048")
        return
    current, _ = _current(found)
    out.print(_best_table(found, f"{len(found)} tuned keys", stale=[b not in current for b in found]))


@app.command()
def kernels() -> None:
    """List the kernel catalog and the default config of each kernel."""
    table = Table(title="kernels")
    for col in ("kernel", "what it is", "default config", "source"):
        table.add_column(col)
    for k in KERNELS.values():
        table.add_row(k.name, k.summary, k.default_config().key, f"kernels/{k.file}")
    out.print(table)


@db_app.command("upgrade")
def db_upgrade(db: Db = None) -> None:
    """Migrate the database schema to the newest revision (creates a new database)."""
    try:
        store = Store(db, upgrade=False)
        store.upgrade()
        out.print(f"database {store} is at schema revision {store.current_revision()}")
    except AutotuneError as exc:
        raise _fail(exc)


@db_app.command("current")
def db_current(db: Db = None) -> None:
    """Print the schema revision of the database."""
    try:
        store = Store(db, upgrade=False)
        out.print(store.current_revision() or "empty (run: autotune db upgrade)")
    except AutotuneError as exc:
        raise _fail(exc)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
