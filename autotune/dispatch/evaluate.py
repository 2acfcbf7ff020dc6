"""Held-out regret: a shape's time with the config a dispatch learned without it picks, against
the shape's own best (``time / best - 1``), from stored trials only; beside it the regret of the
``nearest_shape`` rung (the best config of the nearest other tuned shape) and of the default.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from autotune.dispatch.fit import build_dispatch
from autotune.dispatch.tables import Shape, ShapeTable, distance as _distance, regret
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config

__all__ = ["NOISE", "HeldOut", "Summary", "best_of", "evaluate", "leave_one_out", "nearest_shape_config",
           "regret_weights", "summarize", "winners"]

NOISE = 0.01
"""A held-out shape counts as below the default when the dispatch's config is more than this
much slower than the default there (1 %, the measurement's noise)."""


@dataclass(frozen=True)
class HeldOut:
    """One held-out shape: its own best and what the dispatch, today's ``nearest_shape`` rung and
    the default give there (times in ms: ``None`` where that config was not measured at the
    shape, ``inf`` where it failed).

    Attributes:
        shape: the held-out shape.
        best_ms: its own best, ms (the fastest config measured there).
        dispatch: the config the dispatch learned without this shape picks; ``dispatch_ms`` its time.
        nearest: the best config of the nearest training shape (``nearest_shape``); ``nearest_ms``.
        nearest_shape: that training shape.
        default: the kernel's default; ``default_ms`` its time.
    """

    shape: Shape
    best_ms: float
    dispatch: Config
    dispatch_ms: float | None
    nearest: Config
    nearest_ms: float | None
    nearest_shape: Shape
    default: Config
    default_ms: float | None

    @property
    def dispatch_regret(self) -> float | None:
        """The dispatch's regret (0.02 = 2 % slower than the best; ``None``: not measured)."""
        return regret(self.dispatch_ms, self.best_ms)

    @property
    def nearest_regret(self) -> float | None:
        """``nearest_shape``'s regret."""
        return regret(self.nearest_ms, self.best_ms)

    @property
    def default_regret(self) -> float | None:
        """The default's regret."""
        return regret(self.default_ms, self.best_ms)

    def below_default(self, ms: float | None, noise: float = NOISE) -> bool | None:
        """Whether ``ms`` is slower than the default here by more than ``noise`` (``None``: one of
        them not measured)."""
        if ms is None or self.default_ms is None:
            return None
        return ms > self.default_ms * (1.0 + noise)


def nearest_shape_config(tables: Sequence[ShapeTable], shape: Sequence[int]) -> tuple[Config, Shape]:
    """Today's ``nearest_shape`` rung over ``tables``: the best config of the nearest tuned shape
    (log distance, rounded as the ladder rounds it; ties: the larger volume, then the larger
    values), and that shape.

    Raises:
        InvalidInputError: no tables.
    """
    if not tables:
        raise InvalidInputError("nearest_shape needs at least one tuned shape")
    t = min(tables, key=lambda t: (round(_distance(t.shape, shape), 9), -math.prod(t.shape),
                                   tuple(-v for v in t.shape)))
    return t.best_config, t.shape


def evaluate(train: Sequence[ShapeTable], test: Sequence[ShapeTable], default: Config, dims: Sequence[str],
             **options) -> list[HeldOut]:
    """Learn a dispatch from ``train`` and score it on every table of ``test`` (module doc);
    ``options`` go to :func:`build_dispatch`.

    Raises:
        InvalidInputError: no training table, or a test shape that is also a training shape.
    """
    if not train:
        raise InvalidInputError("a dispatch is evaluated on held-out shapes after training on one or more")
    trained = {t.shape for t in train}
    if any(t.shape in trained for t in test):
        raise InvalidInputError("a held-out shape is also a training shape")
    d = build_dispatch(train, default, dims, **options)
    out = []
    for t in test:
        pick = d.config_for(t.shape)
        near, near_shape = nearest_shape_config(train, t.shape)
        out.append(HeldOut(t.shape, t.best_ms, pick, t.ms(pick), near, t.ms(near), near_shape, default,
                           t.ms(default)))
    return out


def leave_one_out(tables: Sequence[ShapeTable], default: Config, dims: Sequence[str], **options) -> list[HeldOut]:
    """Each tuned shape held out in turn, the dispatch learned from the others (at least two shapes)."""
    return [row for i, t in enumerate(tables)
            for row in evaluate([u for j, u in enumerate(tables) if j != i], [t], default, dims, **options)]


def regret_weights(rows: Sequence[HeldOut]) -> dict[Shape, float]:
    """Each held-out shape's dispatch regret, as :func:`next_shapes` takes them (``weights``); a
    shape whose pick was not measured there, or failed, counts as the worst one measured."""
    known = [r.dispatch_regret for r in rows if r.dispatch_regret is not None and not math.isinf(r.dispatch_regret)]
    worst = max(known, default=0.0)
    return {r.shape: worst if r.dispatch_regret is None or math.isinf(r.dispatch_regret) else r.dispatch_regret
            for r in rows}


@dataclass(frozen=True)
class Summary:
    """Held-out regret of one way of choosing (the dispatch, ``nearest_shape``, the default).

    Attributes:
        shapes: held-out shapes; measured: of them, those where its config was measured.
        median, worst: of the regrets measured (0.02 = 2 %; ``None`` if none measured;
            ``inf`` where a config failed).
        below_default: measured shapes where it is slower than the default beyond the noise.
    """

    shapes: int
    measured: int
    median: float | None
    worst: float | None
    below_default: int


def summarize(rows: Sequence[HeldOut], which: str = "dispatch", noise: float = NOISE) -> Summary:
    """The :class:`Summary` of ``which`` (``"dispatch"``, ``"nearest"`` or ``"default"``) over ``rows``.

    Raises:
        InvalidInputError: another ``which``.
    """
    if which not in ("dispatch", "nearest", "default"):
        raise InvalidInputError(f"which {which!r} is not allowed; allowed: dispatch, nearest, default")
    values = [r for r in (getattr(row, f"{which}_regret") for row in rows) if r is not None]
    below = sum(bool(row.below_default(getattr(row, f"{which}_ms"), noise)) for row in rows)
    return Summary(len(rows), len(values), statistics.median(values) if values else None,
                   max(values) if values else None, below)


def winners(tables: Sequence[ShapeTable], top: int = 2) -> list[Config]:
    """The distinct ``top`` fastest configs measured at each of ``tables`` (each tuned shape's
    winner and runner-up), in the tables' order: the configs the dense matrix times everywhere."""
    out: list[Config] = []
    for t in tables:
        for c in sorted(t.times, key=lambda c: (t.times[c], c.key))[:top]:
            if c not in out:
                out.append(c)
    return out


def best_of(test: Sequence[ShapeTable], configs: Sequence[Config], default: Config, noise: float = NOISE) -> Summary:
    """The bound of choosing perfectly among ``configs``: at each of ``test``, the least regret of
    those measured there, as if a rule knew the shape's own times (``median`` and ``worst`` of
    those; ``measured``: shapes where one of them was; ``below_default``: shapes where even that
    one is slower than ``default`` beyond ``noise``). A rule picking among ``configs`` can do no
    better; the gap between it and the rule's own regret is the rule's, the rest the evidence's."""
    values: list[float] = []
    below = 0
    for t in test:
        times = [ms for ms in (t.ms(c) for c in configs) if ms is not None]
        if not times:
            continue
        ms = min(times)
        values.append(ms / t.best_ms - 1.0 if ms < math.inf else math.inf)
        d = t.ms(default)
        below += d is not None and ms > d * (1.0 + noise)
    return Summary(len(test), len(values), statistics.median(values) if values else None,
                   max(values) if values else None, below)
