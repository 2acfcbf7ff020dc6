"""What every command shares: consoles, option types, shape parsing, errors -> exit codes."""

from __future__ import annotations

import contextvars
import functools
import os
import signal
import sys
from types import SimpleNamespace
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from autotune.errors import AutotuneError, InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dims import MAX_DIM
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
"""Exit code of every error the user can act on: bad input, no GPU/PyCUDA/nvcc, a database
that cannot be used, nothing tuned for the key (each says so in one ``error:`` line)."""
EXIT_INTERRUPTED = 130
"""Exit code after SIGINT (Ctrl-C); SIGTERM exits 143 (128 + the signal's number)."""


def open_store(db: str | None, **options):
    """The results database, through the one door (:func:`autotune.store.opening.open_store`),
    imported here: the CLI imports SQLAlchemy only when a command opens its store (a search
    does so while its measuring child starts)."""
    from autotune.store.opening import open_store as door

    return door(db, **options)


def open_existing(db: str | None):
    """The results database for ``export`` and ``report``, refused where it does not exist
    (:func:`autotune.store.opening.open_existing`): a failing command creates none."""
    from autotune.store.opening import open_existing as door

    return door(db)


def open_reader(db: str | None):
    """The results database for reading best configs only (:func:`autotune.store.opening.open_reader`:
    a missing one is not created)."""
    from autotune.store.opening import open_reader as door

    return door(db)


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


Db = Annotated[Optional[str], typer.Option("--db", metavar="URL",
                                           help="SQLAlchemy URL of the results database (default: "
                                                "$AUTOTUNE_DB, else a SQLite file in the user data dir).")]
Kernel = Annotated[str, typer.Option("--kernel", metavar="KERNEL",
                                     help="A catalog kernel (autotune kernels) or the path of a kernel file (.toml).")]
Dims = Annotated[Optional[list[str]], typer.Option("--dims", metavar="NAME=N",
                                                   help="The kernel's dims: name=value (repeatable or "
                                                        "comma-separated), e.g. --dims n=1048576.")]
Size = Annotated[Optional[int], typer.Option("--size", parser=parse_int, metavar="N",
                                             help="Every dim of the kernel (rows = cols; M = N = K).")]
Rows = Annotated[Optional[int], typer.Option("--rows", parser=parse_int, metavar="N", help="Input rows (with --cols).")]
Cols = Annotated[Optional[int], typer.Option("--cols", parser=parse_int, metavar="N",
                                             help="Input columns (with --rows).")]
M = Annotated[Optional[int], typer.Option("--m", parser=parse_int, metavar="N",
                                          help="Matmul kernels: rows of A and C (with --n and --k).")]
N = Annotated[Optional[int], typer.Option("--n", parser=parse_int, metavar="N",
                                          help="Matmul kernels: columns of B and C (with --m and --k).")]
K = Annotated[Optional[int], typer.Option("--k", parser=parse_int, metavar="N",
                                          help="Matmul kernels: columns of A, rows of B (with --m and --n).")]
DType = Annotated[str, typer.Option("--dtype", metavar="DTYPE", help=f"Element type: {', '.join(DTYPES)}.")]
Device = Annotated[int, typer.Option("--device", "-d", parser=parse_int, metavar="ORDINAL",
                                     help="CUDA device ordinal.")]
SpaceFile = Annotated[Optional[str], typer.Option("--space", metavar="FILE", help="Search-space TOML file "
                                                  "(default: configs/<kernel>.toml).")]
Repeats = Annotated[int, typer.Option(parser=parse_int, metavar="N",
                                      help="Timed samples per config (>= 20; median of these).")]
TopK = Annotated[int, typer.Option("--top-k", parser=parse_int, metavar="N",
                                   help="Fastest configs re-timed interleaved after the trials.")]
Rounds = Annotated[int, typer.Option(parser=parse_int, metavar="N", help="Rounds of that re-timing.")]


def parse_dims(kernel, dims_option: list[str] | None, size: int | None = None, rows: int | None = None,
               cols: int | None = None, m: int | None = None, n: int | None = None,
               k: int | None = None) -> dict[str, int]:
    """The named dims of the command line for ``kernel`` (a :class:`~autotune.kernel.model.Kernel`).

    ``--dims name=value`` (repeatable, or comma-separated) names any of the kernel's dims;
    ``--rows --cols --m --n --k`` are sugar setting the dim of that name; ``--size N`` sets
    every dim not otherwise given.

    Raises:
        InvalidInputError: a malformed ``--dims``, a dim the kernel does not have, a value
            out of range, a dim given twice, or one missing; naming the flag and what is allowed.
    """
    allowed = ", ".join(kernel.dims)
    given: dict[str, int] = {}
    for item in (p.strip() for opt in dims_option or () for p in opt.split(",")):
        name, sep, value = item.partition("=")
        if not sep:
            raise InvalidInputError(f"--dims {item!r} is not allowed; give name=value with a name of {allowed}")
        name = name.strip()
        if not name.isidentifier() or not name.isascii():
            raise InvalidInputError(f"--dims {item!r} is not allowed; give name=value with a name of {allowed}")
        if name in given:
            raise InvalidInputError(f"dim {name} is given twice (--dims {name}={given[name]} and {name}={value.strip()}); "
                                    "give each dim once")
        given[name] = _dim_value(f"--dims {name}", value.strip())
    for flag, value in (("rows", rows), ("cols", cols), ("m", m), ("n", n), ("k", k)):
        if value is None:
            continue
        if flag not in kernel.dims:
            raise InvalidInputError(f"--{flag} is not a dim of kernel {kernel.name}; it takes {allowed}")
        if flag in given:
            raise InvalidInputError(f"dim {flag} is given twice (--{flag} and --dims)")
        given[flag] = _dim_value(f"--{flag}", value)
    unknown = sorted(set(given) - set(kernel.dims))
    if unknown:
        raise InvalidInputError(f"--dims {unknown[0]} is not a dim of kernel {kernel.name}; it takes {allowed}")
    if size is not None:
        side = _dim_value("--size", size)
        if set(kernel.dims) <= set(given):
            raise InvalidInputError(f"--size {side} sets no dim: the other options give every dim of kernel "
                                    f"{kernel.name} ({allowed}); give either --size or those, not both")
        given = {**{d: side for d in kernel.dims}, **given}
    missing = [d for d in kernel.dims if d not in given]
    if missing:
        raise InvalidInputError(f"dim {missing[0]} is missing; kernel {kernel.name} takes {allowed}: give --dims "
                                + ",".join(f"{d}=N" for d in kernel.dims) + " or --size N")
    return {d: given[d] for d in kernel.dims}


def _dim_value(flag: str, value) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{flag} {value!r} is not an integer") from None
    if not 1 <= n <= MAX_DIM:
        raise InvalidInputError(f"{flag} {n} is not allowed; give an integer 1..{MAX_DIM}")
    return n


KernelRef = Annotated[Optional[str], typer.Option(
    "--kernel", metavar="KERNEL", help="A catalog kernel or a kernel file (path/to/kernel.toml); default: all.")]

SUGAR = ("rows", "cols", "m", "n", "k")
"""Dims with an option of their own (``--rows`` ...): the catalog's transposes and matrix products."""


def problem_dims(kernel: Any | None, dims: list[str] | None, size: int | None, rows: int | None, cols: int | None,
                 m: int | None = None, n: int | None = None, k: int | None = None) -> list[dict[str, int]]:
    """The dims a filtering command (best, list, export) asks for: those of ``kernel``
    (:func:`parse_dims`), or, without a kernel, every distinct dims of the catalog kernels that
    the sugar options fit (``--dims`` alone: exactly those names and values, any kernel).

    Raises:
        InvalidInputError: the options fit no kernel (the message of the first that refused for
            another reason than a dimension it does not have).
    """
    if kernel is not None:
        return [parse_dims(kernel, dims, size, rows, cols, m, n, k)]
    if dims:
        names = tuple(dict.fromkeys(item.split("=")[0].strip() for text in dims for item in text.split(",")))
        return [parse_dims(SimpleNamespace(name="(any)", dims=names), dims, size, rows, cols, m, n, k)]
    shapes: list[dict[str, int]] = []
    errors: list[InvalidInputError] = []
    for kernel in KERNELS.values():
        try:
            shape = parse_dims(kernel, None, size, rows, cols, m, n, k)
        except InvalidInputError as exc:
            errors.append(exc)
            continue
        if shape not in shapes:
            shapes.append(shape)
    if not shapes:
        raise next((e for e in errors if "is not a dim of" not in str(e)), errors[0])
    return shapes


def shape_args(shape: dict[str, int]) -> str:
    """The command-line options of ``shape``: ``--rows R --cols C``, or ``--dims n=N``."""
    if all(name in SUGAR for name in shape):
        return " ".join(f"--{name} {value}" for name, value in shape.items())
    return "--dims " + ",".join(f"{name}={value}" for name, value in shape.items())


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
