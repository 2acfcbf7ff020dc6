"""The problem's shape on the command line: one group of options, parsed into one value.

Every command that takes a problem's dims (search, sweep, bench, best, export, report) declares
one parameter ``shape: Shape`` and the `shape_options` decorator, which gives the command
the seven options ``--dims --size --rows --cols --m --n --k`` (in the help's "Problem" panel)
and hands the command one `Shape` built from them. The command then asks the value for
the dims of a kernel (`Shape.dims_for`), a whole problem (`Shape.problem`), or the
shapes a filter asks for (`Shape.shapes`).
"""

from __future__ import annotations

import functools
import inspect
import typing
from dataclasses import dataclass, fields
from types import SimpleNamespace
from typing import Annotated, Any, Optional

import typer

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dims import MAX_DIM

__all__ = ["Shape", "shape_options", "SUGAR", "shape_args"]

PANEL = "Problem"
SUGAR = ("rows", "cols", "m", "n", "k")
"""Dims with an option of their own (``--rows`` ...): the catalog's transposes and matrix products."""


def _parse_int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an integer") from None


def _int_option(flag: str, text: str):
    return Annotated[Optional[int], typer.Option(flag, parser=_parse_int, metavar="N", help=text,
                                                 rich_help_panel=PANEL)]


OPTIONS: dict[str, Any] = {
    "dims": Annotated[Optional[list[str]], typer.Option(
        "--dims", metavar="NAME=N", rich_help_panel=PANEL,
        help="The kernel's dims: name=value (repeatable or comma-separated), e.g. --dims n=1048576.")],
    "size": _int_option("--size", "Every dim of the kernel (rows = cols; M = N = K)."),
    "rows": _int_option("--rows", "Input rows (with --cols)."),
    "cols": _int_option("--cols", "Input columns (with --rows)."),
    "m": _int_option("--m", "Matmul kernels: rows of A and C (with --n and --k)."),
    "n": _int_option("--n", "Matmul kernels: columns of B and C (with --m and --k)."),
    "k": _int_option("--k", "Matmul kernels: columns of A, rows of B (with --m and --n)."),
}
"""The seven options, by parameter name (Typer's ``Annotated`` form)."""
DimsOption = OPTIONS["dims"]
"""``--dims`` alone (``autotune list``)."""


@dataclass(frozen=True)
class Shape:
    """The shape options as given (``None``: not given): ``dims`` the ``--dims name=value``
    items, ``size`` every dim, ``rows cols m n k`` the dim of that name."""

    dims: tuple[str, ...] | None = None
    size: int | None = None
    rows: int | None = None
    cols: int | None = None
    m: int | None = None
    n: int | None = None
    k: int | None = None

    @property
    def given(self) -> bool:
        """Whether any shape option was given."""
        return bool(self.dims) or any(getattr(self, f.name) is not None for f in fields(self) if f.name != "dims")

    def dims_for(self, kernel) -> dict[str, int]:
        """The named dims for ``kernel`` (a `Kernel`, or anything with
        ``name`` and ``dims``), in its order.

        ``--dims name=value`` names any of the kernel's dims; ``--rows --cols --m --n --k`` set
        the dim of that name; ``--size N`` sets every dim not otherwise given.

        Raises:
            InvalidInputError: a malformed ``--dims``, a dim the kernel does not have, a value
                out of range, a dim given twice, or one missing; naming the flag and what is allowed.
        """
        allowed = ", ".join(kernel.dims)
        given: dict[str, int] = {}
        for item in (p.strip() for opt in self.dims or () for p in opt.split(",")):
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or not name.isidentifier() or not name.isascii():
                raise InvalidInputError(f"--dims {item!r} is not allowed; give name=value with a name of {allowed}")
            if name in given:
                raise InvalidInputError(f"dim {name} is given twice (--dims {name}={given[name]} and "
                                        f"{name}={value.strip()}); give each dim once")
            given[name] = _dim_value(f"--dims {name}", value.strip())
        for flag in SUGAR:
            value = getattr(self, flag)
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
        if self.size is not None:
            side = _dim_value("--size", self.size)
            if set(kernel.dims) <= set(given):
                raise InvalidInputError(f"--size {side} sets no dim: the other options give every dim of kernel "
                                        f"{kernel.name} ({allowed}); give either --size or those, not both")
            given = {**{d: side for d in kernel.dims}, **given}
        missing = [d for d in kernel.dims if d not in given]
        if missing:
            raise InvalidInputError(f"dim {missing[0]} is missing; kernel {kernel.name} takes {allowed}: give --dims "
                                    + ",".join(f"{d}=N" for d in kernel.dims) + " or --size N")
        return {d: given[d] for d in kernel.dims}

    def problem(self, kernel, dtype):
        """The `Problem` of ``kernel`` (a Kernel) at these dims and ``dtype``.

        Raises:
            InvalidInputError: as `dims_for`, and a dtype the kernel does not take.
        """
        from autotune.kernel.problem import Problem

        return Problem.of(kernel, self.dims_for(kernel), dtype)

    def shapes(self, kernel=None) -> list[dict[str, int]]:
        """The dims a filtering command (best, list, export) asks for: those of ``kernel``
        (`dims_for`), or, without a kernel, every distinct dims of the catalog kernels that
        the options fit (``--dims`` alone: exactly those names and values, any kernel).

        Raises:
            InvalidInputError: the options fit no kernel (the message of the first that refused for
                another reason than a dimension it does not have).
        """
        if kernel is not None:
            return [self.dims_for(kernel)]
        if self.dims:
            names = tuple(dict.fromkeys(item.split("=")[0].strip() for text in self.dims for item in text.split(",")))
            return [self.dims_for(SimpleNamespace(name="(any)", dims=names))]
        shapes: list[dict[str, int]] = []
        errors: list[InvalidInputError] = []
        for k in KERNELS.values():
            try:
                shape = Shape(None, *(getattr(self, f.name) for f in fields(self)[1:])).dims_for(k)
            except InvalidInputError as exc:
                errors.append(exc)
                continue
            if shape not in shapes:
                shapes.append(shape)
        if not shapes:
            raise next((e for e in errors if "is not a dim of" not in str(e)), errors[0])
        return shapes


def _dim_value(flag: str, value) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{flag} {value!r} is not an integer") from None
    if not 1 <= n <= MAX_DIM:
        raise InvalidInputError(f"{flag} {n} is not allowed; give an integer 1..{MAX_DIM}")
    return n


def shape_args(shape: dict[str, int]) -> str:
    """The command-line options of ``shape``: ``--rows R --cols C``, or ``--dims n=N``."""
    if all(name in SUGAR for name in shape):
        return " ".join(f"--{name} {value}" for name, value in shape.items())
    return "--dims " + ",".join(f"{name}={value}" for name, value in shape.items())


def shape_options(command):
    """Give ``command`` the seven shape options in place of its ``shape: Shape`` parameter, and
    call it with the `Shape` they make (see module doc)."""
    signature = inspect.signature(command)
    hints = typing.get_type_hints(command, include_extras=True)
    params = []
    for p in signature.parameters.values():
        if p.name == "shape":
            params += [inspect.Parameter(name, p.kind, default=None, annotation=kind)
                       for name, kind in OPTIONS.items()]
        else:
            params.append(p.replace(annotation=hints.get(p.name, p.annotation)))

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        given = {name: kwargs.pop(name, None) for name in OPTIONS}
        if given["dims"] is not None:
            given["dims"] = tuple(given["dims"])
        return command(*args, shape=Shape(**given), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)
    wrapper.__annotations__ = {**{p.name: p.annotation for p in params}, "return": signature.return_annotation}
    return wrapper
