"""The stored evidence a dispatch is learned from: one :class:`ShapeTable` per tuned shape (what
each config measured there), the regret arithmetic, the shapes' tie order and the log distance.

A pure function of plain values: the store supplies the trials (anything with ``dims``,
``config``, ``status`` and ``median_ms``, e.g. :class:`~autotune.store.trial_sql.ShapeTrial`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from autotune.kernel.config import Config

__all__ = ["FAILED_REGRET", "Shape", "ShapeTable", "distance", "regret", "shape_order", "tables_from_trials"]

FAILED_REGRET = 10.0
"""The log regret of a config that failed at a shape (e^10: never picked near it)."""
Shape = tuple[int, ...]


@dataclass(frozen=True, eq=False)
class ShapeTable:
    """What is measured at one tuned shape.

    Attributes:
        shape: the dims' values in the kernel's order, e.g. ``(1024, 1024, 1024)``.
        times: config -> median time per launch, ms (ok trials; the median of repeats).
        failed: configs that failed there and never measured ok.
        best: the stored best (the re-timed winner) where known; else the fastest of ``times``.
        figures: config -> ``(gbps, gflops, pct_memcpy)`` of its trial (``None`` where the kernel
            has no such objective), for notes.
    """

    shape: Shape
    times: Mapping[Config, float]
    failed: frozenset[Config] = frozenset()
    best: Config | None = None
    figures: Mapping[Config, tuple[float | None, float | None, float | None]] = field(default_factory=dict)

    @property
    def best_ms(self) -> float:
        """The fastest median time measured here, ms."""
        return min(self.times.values())

    @property
    def best_config(self) -> Config:
        """The stored best where known, else the fastest measured (ties: the smaller key)."""
        if self.best is not None:
            return self.best
        return min(self.times, key=lambda c: (self.times[c], c.key))

    def ms(self, config: Config) -> float | None:
        """``config``'s time here, ms; ``inf`` if it failed here; ``None`` if never measured here."""
        if config in self.times:
            return self.times[config]
        return math.inf if config in self.failed else None


def tables_from_trials(trials: Iterable, best: Mapping[Shape, Config] | None = None) -> list[ShapeTable]:
    """The ShapeTables of stored trials (anything with ``dims``, ``config``, ``status``,
    ``median_ms`` and optionally ``gbps``, ``gflops``, ``pct_memcpy``, e.g.
    :class:`~autotune.store.trial_sql.ShapeTrial`), one per shape with an ok trial, in the
    order :func:`shape_order` gives. A config measured several times at a shape counts with the
    median of its medians. ``best``: the stored best config per shape, where known."""
    ok: dict[Shape, dict[Config, list[float]]] = {}
    bad: dict[Shape, set[Config]] = {}
    figures: dict[Shape, dict[Config, tuple]] = {}
    for t in trials:
        shape = tuple(v for _, v in t.dims)
        if t.status == "ok" and t.median_ms is not None and t.median_ms > 0:
            ok.setdefault(shape, {}).setdefault(t.config, []).append(t.median_ms)
            figures.setdefault(shape, {})[t.config] = (getattr(t, "gbps", None), getattr(t, "gflops", None),
                                                       getattr(t, "pct_memcpy", None))
        elif t.status != "ok":
            bad.setdefault(shape, set()).add(t.config)
    best = best or {}
    tables = [ShapeTable(shape, {c: statistics.median(v) for c, v in times.items()},
                         frozenset(bad.get(shape, set()) - set(times)),
                         best.get(shape) if best.get(shape) in times else None, figures.get(shape, {}))
              for shape, times in ok.items()]
    order = {s: i for i, s in enumerate(shape_order([t.shape for t in tables]))}
    return sorted(tables, key=lambda t: order[t.shape])


def shape_order(shapes: Iterable[Shape]) -> list[Shape]:
    """``shapes`` in the ladder's tie order: the larger volume (product of the dims) first, then
    the larger values in the kernel's dims order."""
    return sorted(set(shapes), key=lambda s: (-math.prod(s), tuple(-v for v in s)))


def regret(ms: float | None, best_ms: float) -> float | None:
    """``ms / best_ms - 1``: how much slower than the shape's own best (0.05 = 5 %); ``inf`` for a
    config that failed (``ms`` inf), ``None`` when not measured (``ms`` None).

    Raises:
        ValueError: ``best_ms`` is not positive.
    """
    if not best_ms > 0:
        raise ValueError(f"best_ms {best_ms!r} must be positive")
    if ms is None:
        return None
    return math.inf if math.isinf(ms) else ms / best_ms - 1.0

def distance(a: Sequence[int], b: Sequence[int]) -> float:
    """The log distance of two shapes (values below 1 count as 1), as the header computes it."""
    total = 0.0
    for x, y in zip(a, b):
        r = math.log(max(x, 1) / max(y, 1))
        total += r * r
    return math.sqrt(total)
