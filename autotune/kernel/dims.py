"""A problem's shape: the kernel's named dimensions, in the kernel's declared order.

``dims`` are ``((name, value), ...)`` pairs, e.g. ``(("rows", 8192), ("cols", 8192))`` or
``(("m", 4096), ("n", 4096), ("k", 4096))``. Stored as :func:`dims_key` text
(``rows=8192,cols=8192``) and shown as :func:`format_shape` (``8192x8192``).
"""

from __future__ import annotations

import math

import operator
from collections.abc import Mapping, Sequence

from autotune.errors import InvalidInputError

__all__ = ["Dims", "MAX_DIM", "make_dims", "dims_key", "parse_dims_key", "format_shape", "shape_distance"]

Dims = tuple[tuple[str, int], ...]
MAX_DIM = 2**31 - 1
"""Largest value of one dimension (CUDA grid x limit; 32-bit signed index arguments)."""


def make_dims(names: Sequence[str], value: Mapping[str, int] | Sequence[int] | Dims, what: str = "kernel") -> Dims:
    """``value`` (a mapping by name, ``(name, value)`` pairs, or values in ``names`` order) as
    dims pairs in ``names`` order.

    Raises:
        InvalidInputError: missing or unknown names, wrong count, or a value not an integer
            in ``1 .. MAX_DIM``; the message names the value and what is allowed.
    """
    want = f"{', '.join(names)}"
    if not isinstance(value, Mapping) and len(value) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        value = dict(value)  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(names))
        missing = [n for n in names if n not in value]
        if unknown or missing:
            bad = f"unknown dim {unknown[0]!r}" if unknown else f"dim {missing[0]!r} is missing"
            raise InvalidInputError(f"{bad}; {what} takes {want}")
        values = [value[n] for n in names]
    else:
        values = list(value)
        if len(values) != len(names):
            raise InvalidInputError(f"shape {tuple(values)!r} is not allowed; {what} takes ({want})")
    out = []
    for name, v in zip(names, values):
        try:
            n = operator.index(v)
        except TypeError:
            n = 0
        if isinstance(v, bool) or not 1 <= n <= MAX_DIM:
            raise InvalidInputError(f"{name}={v!r} is not allowed; give an integer 1..{MAX_DIM}")
        out.append((name, n))
    return tuple(out)


def dims_key(dims: Dims) -> str:
    """``rows=8192,cols=8192``: the stored text form."""
    return ",".join(f"{n}={v}" for n, v in dims)


def parse_dims_key(text: str) -> Dims:
    """Inverse of :func:`dims_key`.

    Raises:
        ValueError: not of the form ``name=int,...``.
    """
    pairs = []
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{text!r} is not name=value,...")
        pairs.append((name.strip(), int(value)))
    return tuple(pairs)


def format_shape(dims: Dims) -> str:
    """``8192x8192``: the values joined by ``x``."""
    return "x".join(str(v) for _, v in dims)


class NamedDims:
    """Views of a ``dims`` attribute (``(name, value)`` pairs, declared order) for the
    dataclasses that carry one (the tuning key, stored records)."""

    dims: Dims

    @property
    def shape(self) -> tuple[int, ...]:
        """The dims' values in declared order, e.g. ``(8192, 8192)`` or ``(4096, 4096, 4096)``."""
        return tuple(value for _, value in self.dims)

    @property
    def dims_key(self) -> str:
        """The dims' text form, e.g. ``rows=8192,cols=8192`` (:func:`dims_key`)."""
        return dims_key(self.dims)

    @property
    def display(self) -> str:
        """The dims' display form, e.g. ``8192x8192`` (:func:`format_shape`)."""
        return format_shape(self.dims)

    def dim(self, name: str) -> int:
        """The value of dimension ``name``.

        Raises:
            KeyError: there is no such dimension.
        """
        for n, value in self.dims:
            if n == name:
                return value
        raise KeyError(f"no dimension {name!r}; the dims are {', '.join(n for n, _ in self.dims)}")


def shape_distance(tuned, want) -> float:
    """The ladder's distance between two shapes of one kernel (same dims names), ``(name,
    value)`` pairs: ``sqrt(sum of ln(tuned/want)^2)``, rounded so equal ratios tie exactly."""
    have = dict(tuned)
    return round(math.sqrt(sum(math.log(have[name] / value) ** 2 for name, value in want)), 9)
