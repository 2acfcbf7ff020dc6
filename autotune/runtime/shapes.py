"""A kernel's dims read from the shapes of the arrays a launch is given.

Each dim is solved from an array argument whose shape names it bare (``array = ["rows",
"cols"]`` names ``rows`` at axis 0 and ``cols`` at axis 1); an axis written as an expression
(``"n * 2"``, ``"cdiv(n, 4)"``) names no dim, but is checked once the dims are known. A dim that
no shape names must be given (``dims=`` of :func:`autotune.launcher`). When two arrays give a
dim different values, or an array's shape does not fit the solved dims, the error names them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autotune.errors import InvalidInputError
from autotune.kernel.dims import Dims, make_dims
from autotune.kernel.model import Kernel

__all__ = ["DimSolver"]


class DimSolver:
    """Solves ``kernel``'s dims from its arrays' shapes.

    Args:
        kernel: the kernel; ``given``: values of dims that no array's shape names (or that
            the caller fixes), by name.

    Raises:
        InvalidInputError: a dim is named by no array's shape and not given, or ``given``
            names an unknown dim.
    """

    def __init__(self, kernel: Kernel, given: Mapping[str, int] | None = None) -> None:
        self.kernel = kernel
        self.given = dict(given or {})
        unknown = sorted(set(self.given) - set(kernel.dims))
        if unknown:
            raise InvalidInputError(f"dims={self.given} names {unknown[0]!r}; {kernel.name} takes "
                                    f"{', '.join(kernel.dims)}")
        self.sources: dict[str, list[tuple[int, int]]] = {d: [] for d in kernel.dims if d not in self.given}
        self.names = [a.name for a in kernel.arrays]
        for i, a in enumerate(kernel.arrays):
            for axis, e in enumerate(a.shape):
                if str(e).strip() in self.sources:
                    self.sources[str(e).strip()].append((i, axis))
        unsolved = [d for d, where in self.sources.items() if not where]
        if unsolved:
            shapes = "; ".join(f"{a.name} [{', '.join(map(str, a.shape))}]" for a in kernel.arrays)
            raise InvalidInputError(f"{kernel.name}: dim{'s' if len(unsolved) > 1 else ''} {', '.join(unsolved)} "
                                    f"{'are' if len(unsolved) > 1 else 'is'} named by no array's shape ({shapes}); "
                                    f"give {'them' if len(unsolved) > 1 else 'it'}: dims={{{unsolved[0]!r}: ...}}")

    def solve(self, shapes: Sequence[tuple[int, ...]]) -> Dims:
        """The dims of a launch on arrays of ``shapes`` (one per array argument, in order).

        Raises:
            InvalidInputError: an array has the wrong number of dimensions, arrays disagree on
                a dim (naming each value and where it came from), or a value is out of range.
        """
        arrays = self.kernel.arrays
        for a, shape in zip(arrays, shapes):
            if len(shape) != len(a.shape):
                raise InvalidInputError(f"{a.name} has {len(shape)} dimensions {tuple(shape)}; {self.kernel.name} "
                                        f"takes {len(a.shape)}: [{', '.join(map(str, a.shape))}]")
        values, disagree = dict(self.given), []
        for dim, where in self.sources.items():
            seen = {(i, axis): shapes[i][axis] for i, axis in where}
            values[dim] = next(iter(seen.values()))
            if len(set(seen.values())) > 1:
                disagree.append(f"{dim} = " + ", ".join(f"{v} ({self.names[i]} axis {axis})"
                                                        for (i, axis), v in seen.items()))
        if disagree:
            raise InvalidInputError(f"{self.kernel.name}: the arrays disagree on {'; '.join(disagree)}")
        return make_dims(self.kernel.dims, values, f"kernel {self.kernel.name}")

    def check(self, dims: Dims, shapes: Sequence[tuple[int, ...]], expected: Sequence[tuple[int, ...]]) -> None:
        """Raise :class:`InvalidInputError` naming the first array whose shape is not ``expected``
        for ``dims`` (an axis written as an expression of the dims)."""
        for a, shape, want in zip(self.kernel.arrays, shapes, expected):
            if tuple(shape) != tuple(want):
                at = ", ".join(f"{n}={v}" for n, v in dims)
                raise InvalidInputError(f"{a.name} must be {'x'.join(map(str, want))} ([{', '.join(map(str, a.shape))}]"
                                        f" at {at}), not {'x'.join(map(str, shape))}")
