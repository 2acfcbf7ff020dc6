"""What every command shares: consoles, option types, errors -> exit codes (the shape options: :mod:`.shape`)."""

from __future__ import annotations

import contextvars
import functools
import os
import signal
import sys
from typing import Annotated, Optional

import typer
from rich.console import Console

from autotune.errors import AutotuneError
from autotune.kernel.arguments import check_db_arg
from autotune.kernel.dtypes import DTYPES
from autotune.base import signals as stop

OFF_TERMINAL_WIDTH = 220
"""Width of output that goes to a file or pipe (logs of searches are committed): tables whole,
and no printed line broken (a header naming a long path stays one line a log can grep)."""

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def on_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (the CLI's tests replace this to render as one)."""
    return stream.isatty()


def fit_consoles() -> None:
    """Size both consoles for this command: on a terminal, ``$COLUMNS`` when set, else the
    terminal's width, text wrapped at it; off a terminal (a pipe, a log file),
    :data:`OFF_TERMINAL_WIDTH` with lines left unbroken, whatever ``$COLUMNS`` says (GNU
    readline exports ``COLUMNS=80`` to the children of any process that loaded it). Called
    once per command (the app's callback)."""
    columns = os.environ.get("COLUMNS", "").strip()
    for console, stream in ((out, sys.stdout), (err, sys.stderr)):
        if on_terminal(stream):
            console.width = int(columns) if columns.isdigit() and int(columns) > 0 else None
            console.soft_wrap = False
        else:
            console.width, console.soft_wrap = OFF_TERMINAL_WIDTH, True

fit_consoles()

EXIT_ERROR = 2
"""Exit code of every error the user can act on: bad input, no GPU/CUDA backend/nvcc, a database
that cannot be used, nothing tuned for the key (each says so in one ``error:`` line)."""
EXIT_INTERRUPTED = 130
"""Exit code after SIGINT (Ctrl-C); SIGTERM exits 143 (128 + the signal's number)."""


def open_db(db: str | None, mode: str = "write"):
    """The results database through the one door (:func:`autotune.store.opening.open_results`,
    ``mode`` one of its :data:`~autotune.store.opening.MODES`), imported here: the CLI imports
    SQLAlchemy only when a command opens its database (a search does so while its measuring
    child starts). ``--db`` is checked first (an empty one would silently mean the default)."""
    from autotune.store.opening import open_results

    check_db_arg(db, "--db")
    return open_results(db, mode)


def parse_int(value: str) -> int:
    """Parse an integer option, naming the value when it is not one."""
    try:
        return int(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an integer") from None


def parse_float(value: str) -> float:
    """Parse a number option, naming the value when it is not one."""
    try:
        return float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number") from None


PROBLEM, SEARCH, MEASUREMENT, OUTPUT = "Problem", "Search", "Measurement", "Database and output"
"""The panels of ``--help`` (``rich_help_panel``): what is tuned, how it is searched, how a config
is measured, where results go and how they print."""


def _files(incomplete: str, suffixes: tuple[str, ...]) -> list[str]:
    """Paths starting with ``incomplete``: folders (with a ``/``) and files ending in ``suffixes``."""
    import glob

    found = []
    for path in sorted(glob.glob(os.path.expanduser(incomplete) + "*"))[:200]:
        if os.path.isdir(path):
            found.append(path + "/")
        elif path.endswith(suffixes):
            found.append(path)
    return found


def complete_kernel(incomplete: str) -> list[str]:
    """``--kernel`` completion: catalog kernels whose name starts with what is typed, and kernel
    files (``.toml``) and folders where it looks like a path."""
    from autotune.kernel.catalog import KERNELS, is_kernel_path

    names = [name for name in KERNELS if name.startswith(incomplete)]
    return names + _files(incomplete, (".toml",)) if is_kernel_path(incomplete) or not names else names


def complete_dtype(incomplete: str) -> list[str]:
    """``--dtype`` completion: the element types."""
    return [name for name in DTYPES if name.startswith(incomplete)]


def complete_objective(incomplete: str) -> list[str]:
    """``--objective`` completion: what a search may minimise."""
    from autotune.search.options import OBJECTIVES

    return [name for name in OBJECTIVES if name.startswith(incomplete)]


def _ordinals() -> list[str]:
    """The GPUs' ordinals as text (``["0"]`` where the driver cannot say: completion never fails)."""
    try:
        from autotune.measure.device import device_count

        return [str(i) for i in range(device_count())] or ["0"]
    except Exception:  # noqa: BLE001 - no driver, no backend: offer the first ordinal
        return ["0"]


def complete_ordinal(incomplete: str) -> list[str]:
    """``--device ORDINAL`` completion: the GPUs' ordinals."""
    return [o for o in _ordinals() if o.startswith(incomplete)]


def complete_ordinals(incomplete: str) -> list[str]:
    """``--device ORDINALS`` completion (``0``, ``0,1``, ``all``): ``all`` and the ordinals, after
    the ones already typed (``0,`` completes to ``0,1``)."""
    head, _, last = incomplete.rpartition(",")
    done = set(head.split(",")) if head else set()
    found = [f"{head + ',' if head else ''}{o}" for o in _ordinals() if o.startswith(last) and o not in done]
    return found + (["all"] if not head and "all".startswith(incomplete) else [])


def complete_workload(ctx: typer.Context, incomplete: str) -> list[str]:
    """A workload NAME's completion: the workloads recorded in the database (``--db`` if typed
    before the name, else ``$AUTOTUNE_DB`` or the default), read only; nothing where none can be read."""
    try:
        from autotune.store.opening import open_results
        from autotune.store.workloads import list_workloads

        store = open_results(ctx.params.get("db"), "read_only")
        try:
            return [w.name for w in list_workloads(store) if w.name.startswith(incomplete)]
        finally:
            store.close()
    except Exception:  # noqa: BLE001 - completion never fails: no names where the database cannot be read
        return []


def complete_toml(incomplete: str) -> list[str]:
    """Completion of a TOML file's path (``--space``)."""
    return _files(incomplete, (".toml",))


def complete_json(incomplete: str) -> list[str]:
    """Completion of a JSON file's path (``import``)."""
    return _files(incomplete, (".json",))


Db = Annotated[Optional[str], typer.Option("--db", metavar="URL",
                                           rich_help_panel=OUTPUT,
                                           help="SQLAlchemy URL of the results database (default: "
                                                "$AUTOTUNE_DB, else a SQLite file in the user data dir).")]
Kernel = Annotated[str, typer.Option("--kernel", metavar="KERNEL", autocompletion=complete_kernel, rich_help_panel=PROBLEM,
                                     help="A catalog kernel (autotune kernels) or the path of a kernel file (.toml).")]
DType = Annotated[str, typer.Option("--dtype", metavar="DTYPE", autocompletion=complete_dtype, rich_help_panel=PROBLEM,
                                    help=f"Element type: {', '.join(DTYPES)}.")]
Device = Annotated[int, typer.Option("--device", "-d", parser=parse_int, metavar="ORDINAL", rich_help_panel=MEASUREMENT,
                                     autocompletion=complete_ordinal,
                                     help="CUDA device ordinal.")]
SpaceFile = Annotated[Optional[str], typer.Option("--space", metavar="FILE", autocompletion=complete_toml,
                                                  rich_help_panel=SEARCH,
                                                  help="Search-space TOML file "
                                                  "(default: configs/<kernel>.toml).")]
StrategyOptionArg = Annotated[Optional[list[str]], typer.Option(
    "--strategy-option", metavar="KEY=VALUE", rich_help_panel=SEARCH,
    help="An option of the strategy, repeatable (tpe_local, the default, and tpe: startup=N, local=F, start=NAME; "
         "gp: startup=N; transfer: queue=N, shapes=N, then=NAME); the docs' 'The search loop' page lists them "
         "all.")]


def parse_strategy_options(values: list[str] | None) -> dict[str, str]:
    """``--strategy-option KEY=VALUE`` values as ``{KEY: VALUE}`` (the values as text: the
    strategy's options parse and check them, :func:`autotune.search.strategies.check_strategy_options`).

    Raises:
        InvalidInputError: a value without ``=`` or without a key, or a key given twice (naming it).
    """
    from autotune.errors import InvalidInputError
    from autotune.kernel.arguments import shown

    given: dict[str, str] = {}
    for value in values or ():
        key, sep, text = value.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInputError(f"--strategy-option {shown(value)} is not allowed; give KEY=VALUE "
                                    "(e.g. startup=20)")
        if key in given:
            raise InvalidInputError(f"--strategy-option {shown(value)} is not allowed; {key} is given twice")
        given[key] = text.strip()
    return given


Repeats = Annotated[int, typer.Option(parser=parse_int, metavar="N", rich_help_panel=MEASUREMENT,
                                      help="Timed samples per config (>= 20; median of these).")]
TopK = Annotated[int, typer.Option("--top-k", parser=parse_int, metavar="N", rich_help_panel=MEASUREMENT,
                                   help="Fastest configs re-timed interleaved after the trials.")]
Rounds = Annotated[int, typer.Option(parser=parse_int, metavar="N", rich_help_panel=MEASUREMENT,
                                     help="Rounds of that re-timing.")]
Ci = Annotated[float, typer.Option("--ci", parser=parse_float, metavar="FRACTION", rich_help_panel=MEASUREMENT,
                                   help="Certified timing: sample each config until half the 95% CI of its "
                                        "median is within this fraction of it (0.01: 1%), or --ci-floor-us; "
                                        "0: a fixed --repeats samples.")]
CiFloor = Annotated[float, typer.Option("--ci-floor-us", parser=parse_float, metavar="US", rich_help_panel=MEASUREMENT,
                                        help="The absolute floor of that half-width, µs.")]
MinSamples = Annotated[int, typer.Option("--min-samples", parser=parse_int, metavar="N", rich_help_panel=MEASUREMENT,
                                         help="Fewest samples of a config with --ci.")]
MaxSamples = Annotated[int, typer.Option("--max-samples", parser=parse_int, metavar="N", rich_help_panel=MEASUREMENT,
                                         help="Most samples of a config with --ci, precise or not.")]
Objective = Annotated[str, typer.Option("--objective", metavar="WHAT", rich_help_panel=SEARCH,
                                        autocompletion=complete_objective,
                                        help="What is minimised: time (per launch), energy (J per launch, NVML's "
                                             "energy counter), edp (energy x time), or time,energy: both "
                                             "together, a Pareto front (strategy nsga2; best shows it, "
                                             "report plots it).")]
Energy = Annotated[bool, typer.Option("--energy", rich_help_panel=MEASUREMENT,
                                      help="Meter J per launch with --objective time too (adds ~0.2 s per config).")]


KernelRef = Annotated[Optional[str], typer.Option(
    "--kernel", metavar="KERNEL", autocompletion=complete_kernel, rich_help_panel=PROBLEM,
    help="A catalog kernel or a kernel file (path/to/kernel.toml); default: all.")]

def fail(exc: AutotuneError) -> typer.Exit:
    err.print(f"error: {exc}", markup=False, soft_wrap=True)
    return typer.Exit(EXIT_ERROR)


_on_interrupt: contextvars.ContextVar[str] = contextvars.ContextVar("on_interrupt", default="")


def on_interrupt(text: str) -> None:
    """What the running command says it kept if SIGINT or SIGTERM stops it from now on
    (``"interrupted: <text>"``): true at every point it may be stopped, e.g. an import says
    ``nothing was imported`` until its one transaction is committed."""
    _on_interrupt.set(text)


def handle_errors(command=None, *, interrupted: str = ""):
    """Run a command, turning library errors into one ``error:`` line and their exit code,
    and SIGINT (Ctrl-C) or SIGTERM into exit 130 or 143 with ``interrupted`` and what the
    command kept (``interrupted``: the command's own words, e.g. ``"trials so far are stored"``;
    a command may say otherwise as it goes, :func:`on_interrupt`). Both signals are handled
    while the command runs even where the process inherited them ignored
    (:mod:`autotune.base.signals`). Use as ``@handle_errors`` or
    ``@handle_errors(interrupted="...")``."""
    if command is None:
        return functools.partial(handle_errors, interrupted=interrupted)

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        token = _on_interrupt.set(interrupted)
        try:
            with stop.handling():
                try:
                    return command(*args, **kwargs)
                except KeyboardInterrupt:
                    name = {signal.SIGTERM: " (SIGTERM)"}.get(stop.signal_number(), "")
                    kept = _on_interrupt.get()
                    err.print(f"interrupted{name}{': ' + kept if kept else ''}", markup=False, soft_wrap=True)
                    raise typer.Exit(stop.exit_code()) from None
                except AutotuneError as exc:
                    raise fail(exc) from None
        finally:
            _on_interrupt.reset(token)

    return wrapper
