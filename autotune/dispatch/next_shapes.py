"""Which shapes to tune next so that a dispatch covers a range of dims: farthest points in log
space over a grid of candidates, weighted by the held-out regret of the tuned shapes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autotune.dispatch.tables import Shape
from autotune.errors import InvalidInputError

__all__ = ["log_grid", "next_shapes"]


def log_grid(ranges: Sequence[tuple[int, int]], multiple: int = 1, points: int = 4096) -> list[Shape]:
    """Candidate shapes over ``ranges`` (``(low, high)`` per dim): in each dim ``G`` values at
    the centres of ``G`` equal bins of ``[ln low, ln high]``, ``G = floor(points ** (1 / dims))``
    (at most 64), each rounded to a multiple of ``multiple`` within the range; every combination.

    Raises:
        InvalidInputError: a range with ``low < 1`` or ``low > high``, or ``multiple < 1``.
    """
    if multiple < 1 or any(not 1 <= lo <= hi for lo, hi in ranges):
        raise InvalidInputError(f"ranges {list(ranges)} (multiple {multiple}) are not allowed; give 1 <= low <= high")
    levels = max(1, min(64, int(points ** (1 / len(ranges)) + 1e-9)))
    axes = []
    for lo, hi in ranges:
        values = []
        for i in range(levels):
            v = _round(lo * (hi / lo) ** ((i + 0.5) / levels), lo, hi, multiple)
            if v not in values:
                values.append(v)
        axes.append(values)
    import itertools

    return [tuple(p) for p in itertools.product(*axes)]


def _round(value: float, lo: int, hi: int, multiple: int) -> int:
    """``value`` rounded to the nearest multiple of ``multiple`` within ``[lo, hi]`` (to the
    nearest integer there if no multiple lies inside)."""
    first, last = -(-lo // multiple) * multiple, hi // multiple * multiple
    if first > last:
        return min(hi, max(lo, round(value)))
    return min(last, max(first, round(value / multiple) * multiple))


def next_shapes(ranges: Sequence[tuple[int, int]], tuned: Sequence[Shape], count: int, *,
                weights: Mapping[Shape, float] | None = None, multiple: int = 1) -> list[Shape]:
    """The ``count`` shapes to tune next so that a dispatch covers ``ranges``.

    Farthest-point sampling over :func:`log_grid`'s candidates (Gonzalez, Theor. Comput. Sci. 38,
    1985): each new shape is the candidate farthest, by log distance, from every shape tuned or
    picked, where the range's edge counts as a shape at twice a candidate's distance to it
    (so the points keep off the edges, as the centres of equal cells do: in one dim, 3 points
    land at 1/6, 1/2 and 5/6 of the log range). Each candidate's distance to its nearest tuned
    shape is multiplied by ``1 + weight`` of that shape: give the held-out regrets of the tuned
    shapes (:func:`leave_one_out`) as ``weights`` and the new shapes go where the dispatch is far
    from its evidence and did worst. Without tuned shapes the first is the candidate nearest the
    centre of the range.

    Raises:
        InvalidInputError: bad ranges (:func:`log_grid`), or a negative ``count``.
    """
    import numpy as np

    if count < 0:
        raise InvalidInputError(f"count {count} is not allowed; give 0 or more")
    taken = set(tuned)
    candidates = [c for c in log_grid(ranges, multiple) if c not in taken]
    if not candidates or count == 0:
        return []
    weights = weights or {}
    points = np.log(np.maximum(np.array(candidates, dtype=float), 1.0))
    lo, hi = np.log([r[0] for r in ranges]), np.log([r[1] for r in ranges])
    open_dims = hi > lo
    edge = (2.0 * np.minimum(points - lo, hi - points)[:, open_dims].min(axis=1) if open_dims.any()
            else np.full(len(candidates), np.inf))
    nearest = np.full(len(candidates), np.inf)  # distance to the nearest tuned or picked shape, times its boost
    free = np.ones(len(candidates), dtype=bool)

    def add(shape: Sequence[int], boost: float) -> None:
        d = np.sqrt(((points - np.log(np.maximum(np.array(shape, dtype=float), 1.0))) ** 2).sum(axis=1))
        np.minimum(nearest, np.round(d, 9) * boost, out=nearest)

    for t in tuned:
        add(t, 1.0 + max(0.0, weights.get(t, 0.0)))
    out: list[Shape] = []
    while len(out) < count and free.any():
        if not np.isfinite(nearest).any():  # nothing tuned yet: the centre of the range
            centre = (lo + hi) / 2
            score = -np.round(np.sqrt(((points - centre) ** 2).sum(axis=1)), 9)
        else:
            score = np.round(np.minimum(nearest, edge), 9)
        score[~free] = -np.inf
        pick = int(np.argmax(score))  # ties: the first candidate, the smaller values
        free[pick] = False
        out.append(candidates[pick])
        add(candidates[pick], 1.0)
    return out
