"""A dispatch: the config to launch a shape nobody tuned with, learned from every stored trial.

For one kernel, dtype and device model, a dispatch holds a few configs (at most
:data:`MAX_CONFIGS`, the kernel's default always the first) and a rule over the dims that picks
one of them. It is learned from the trials of every tuned shape, not only each shape's best:
a config measured at several shapes is evidence of how it does across them.

The method, in four steps (:func:`build_dispatch`):

1. **Regret tables.** For each tuned shape ``s`` and each config ``c`` measured there, the log
   regret ``R[s][c] = ln(T[s][c] / B[s])``: its median time against the fastest measured at
   ``s`` (0 for the shape's best). A config not measured at ``s`` counts as the worst config
   measured there (no evidence is never taken as good evidence); one that failed there (a
   compile error, out of resources, a wrong result) as :data:`FAILED_REGRET`.
2. **Configs.** The default first, then, greedily, the config that lowers the sum over the
   tuned shapes of the best regret among the chosen ones the most, until :data:`MAX_CONFIGS`
   or until no config lowers it by more than the noise (:data:`MARGIN`): the greedy algorithm
   of facility location, within ``1 - 1/e`` of the best such set (Cornuejols, Fisher and
   Nemhauser, Management Science 23(8), 1977; Nemhauser, Wolsey and Fisher, Math. Programming
   14, 1978). Helion's ahead-of-time autotuning fits a decision tree to a few configs in the
   same spirit; here the set is chosen for what it covers, and the rule below picks from it.
3. **Rule.** Distance-weighted k nearest neighbours (Dudani, IEEE Trans. SMC 6(4), 1976) over
   the tuned shapes, by the lookup ladder's log distance ``sqrt(sum over dims of ln(d/d')^2)``.
   The default is left only where the stored evidence says another config is faster: the
   candidates are the configs measured faster than the default at every one of the ``k``
   nearest tuned shapes by more than the noise (``R[s][c] < R[s][default] - ln(1 + MARGIN)``);
   among them the one of the least score ``sum w_s R[s][c]`` over those shapes, ``w_s = 1 /
   (distance + EPS)``, wins; no candidate: the default. Neighbours at equal distance (within
   1e-9) go in the shapes' order: the larger volume, then the larger dims in the kernel's order
   (the ladder's tie rule); equal scores (within 1e-12) to the config listed first. (The first
   version of this rule, scored on the benchmark's recorded trials before this one, left the
   default where the winner's weighted score beat the default's by more than the margin; it
   went below the default at 7 of 20 held-out transpose shapes: ``benchmarks/README.md``.)
4. **k.** Chosen among :data:`KS` by leave-one-shape-out cross-validation over the tuned shapes
   (Stone, J. R. Stat. Soc. B 36(2), 1974): each shape's regret under the dispatch learned from
   the others; the least mean wins, ties to the smaller ``k``.

The same arithmetic runs in the C header's ``select`` (:mod:`autotune.report.header`), from the
same numbers (the regret table is written with ``repr``, which reads back exactly).

Held-out regret (:func:`evaluate`, :func:`leave_one_out`, :func:`summarize`): a shape's time
with the config a dispatch learned without it picks, against the shape's own best
(``time / best - 1``), from stored trials only; beside it the regret of today's
``nearest_shape`` rung (the best config of the nearest other tuned shape) and of the default.
:func:`next_shapes` says which shapes to tune next so that a dispatch covers a range.

Everything here is a pure function of plain values: no database, no GPU.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config

__all__ = ["MAX_CONFIGS", "MARGIN", "NOISE", "EPS", "KS", "FAILED_REGRET", "Dispatch", "HeldOut", "ShapeTable",
           "Summary", "build_dispatch", "evaluate", "leave_one_out", "next_shapes", "nearest_shape_config",
           "regret", "regret_weights", "shape_order", "summarize", "tables_from_trials", "log_grid"]

MAX_CONFIGS = 8
"""Most configs a dispatch holds (the default included)."""
MARGIN = 0.01
"""The noise: the default is left only where another config's score is lower by more than
``ln(1 + MARGIN)`` (1 %), and a config joins the set only if it lowers the total regret by more."""
NOISE = 0.01
"""A held-out shape counts as below the default when the dispatch's config is more than this
much slower than the default there (1 %, the measurement's noise)."""
EPS = 0.1
"""Added to the log distance in the neighbours' weights ``1 / (distance + EPS)``: a shape 10 %
away weighs half as much as one at the same place."""
KS = (1, 2, 3, 4)
"""Neighbour counts tried; cross-validation picks one."""
FAILED_REGRET = 10.0
"""The log regret of a config that failed at a shape (e^10: never picked near it)."""
_TIE = 1e-9
_SCORE_TIE = 1e-12

Shape = tuple[int, ...]


# --- the stored evidence ------------------------------------------------------------------


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


def _distance(a: Sequence[int], b: Sequence[int]) -> float:
    """The log distance of two shapes (values below 1 count as 1), as the header computes it."""
    total = 0.0
    for x, y in zip(a, b):
        r = math.log(max(x, 1) / max(y, 1))
        total += r * r
    return math.sqrt(total)


def _nearest(distances: Sequence[float], k: int) -> list[int]:
    """Indices of the ``k`` smallest distances: equal ones (within 1e-9) in index order. The C
    header runs the same selection."""
    used = [False] * len(distances)
    out = []
    for _ in range(min(k, len(distances))):
        pick = -1
        for i, d in enumerate(distances):
            if not used[i] and (pick < 0 or d < distances[pick] - _TIE):
                pick = i
        used[pick] = True
        out.append(pick)
    return out


def _choose(distances: Sequence[float], rows: Sequence[Sequence[float]], k: int, eps: float,
            margin_log: float) -> tuple[int, int]:
    """The rule (module doc, step 3): ``(config index, nearest shape index)``; ``rows[s][c]``
    is the log regret of config ``c`` at shape ``s``."""
    near = _nearest(distances, k)
    if not near:
        return 0, -1
    n_configs = len(rows[near[0]])
    scores = [0.0] * n_configs
    for s in near:
        w = 1.0 / (distances[s] + eps)
        for c in range(n_configs):
            scores[c] += w * rows[s][c]
    best = 0
    for c in range(1, n_configs):
        beats = True  # faster than the default at every one of the nearest tuned shapes, beyond the noise
        for s in near:
            if not rows[s][c] < rows[s][0] - margin_log:
                beats = False
        if beats and (best == 0 or scores[c] < scores[best] - _SCORE_TIE):
            best = c
    return best, near[0]


# --- the dispatch -------------------------------------------------------------------------


@dataclass(frozen=True)
class Dispatch:
    """A kernel's dispatch for one dtype and device model (module doc).

    Attributes:
        kernel: the kernel's name.
        dims: its dim names, in order.
        shapes: the tuned shapes, in the ladder's tie order (:func:`shape_order`).
        configs: the configs it picks from; ``configs[0]`` is the kernel's default.
        regrets: ``regrets[s][c]``: the log regret of ``configs[c]`` at ``shapes[s]`` the rule
            uses (module doc, step 1).
        times: ``times[s][c]``: its median time there, ms (``None``: not measured; ``inf``: failed).
        k: neighbours the rule weighs.
        eps: added to a distance in a neighbour's weight.
        margin: relative margin by which a config must beat the default's score (0.01 = 1 %).
        cv_regret: the mean held-out log regret of each ``k`` tried (cross-validation), ``{k: value}``.
        figures: ``figures[s][c]``: ``(gbps, gflops, pct_memcpy)`` of its trial there (``None``s
            where not measured or without such objectives), for notes.
    """

    kernel: str
    dims: tuple[str, ...]
    shapes: tuple[Shape, ...]
    configs: tuple[Config, ...]
    regrets: tuple[tuple[float, ...], ...]
    times: tuple[tuple[float | None, ...], ...]
    k: int = 1
    eps: float = EPS
    margin: float = MARGIN
    cv_regret: Mapping[int, float] = field(default_factory=dict, compare=False)
    figures: tuple[tuple[tuple[float | None, float | None, float | None], ...], ...] = field(default=(),
                                                                                             compare=False)

    @property
    def margin_log(self) -> float:
        """``ln(1 + margin)``: the margin in the scores' log units."""
        return math.log1p(self.margin)

    def choose(self, shape: Sequence[int]) -> tuple[int, int]:
        """``(config index, index of the nearest tuned shape)`` for ``shape`` (values in the
        kernel's dims order; below 1 counts as 1); ``(0, -1)`` without tuned shapes."""
        if len(shape) != len(self.dims):
            raise InvalidInputError(f"shape {tuple(shape)} has {len(shape)} dims; {self.kernel} takes "
                                    f"{', '.join(self.dims)}")
        distances = [_distance(shape, s) for s in self.shapes]
        return _choose(distances, self.regrets, self.k, self.eps, self.margin_log)

    def config_for(self, shape: Sequence[int]) -> Config:
        """The config the rule picks for ``shape``."""
        return self.configs[self.choose(shape)[0]]

    def rule(self) -> str:
        """The rule in one line, e.g. for ``autotune dispatch``."""
        return (f"the {self.k} nearest tuned shape{'s' if self.k > 1 else ''} by log distance "
                f"sqrt(sum ln(d/d')^2); among the configs faster than the default by more than "
                f"{100 * self.margin:g} % at each of them, the least log regret there weighted 1/(distance + "
                f"{self.eps:g}); none: the default")


def build_dispatch(tables: Sequence[ShapeTable], default: Config, dims: Sequence[str], *,
                   max_configs: int = MAX_CONFIGS, margin: float = MARGIN, ks: Sequence[int] = KS,
                   eps: float = EPS) -> Dispatch:
    """Learn a dispatch from the tables of the tuned shapes (module doc).

    Args:
        tables: one per tuned shape (:func:`tables_from_trials`); may be empty (then the
            dispatch always answers the default).
        default: the kernel's default config (always ``configs[0]``).
        dims: the kernel's dim names.
        max_configs: most configs, >= 1.
        margin: the noise, relative (0.01 = 1 %).
        ks: neighbour counts to choose from by cross-validation.
        eps: see :data:`EPS`.

    Raises:
        InvalidInputError: ``max_configs`` below 1, no ``ks``, two tables of one shape, or a
            table whose shape has another number of dims.
    """
    import numpy as np

    if max_configs < 1 or not ks or any(k < 1 for k in ks):
        raise InvalidInputError(f"max_configs {max_configs} and ks {tuple(ks)} are not allowed; give >= 1")
    shapes = [t.shape for t in tables]
    if len(set(shapes)) != len(shapes) or any(len(s) != len(dims) for s in shapes):
        raise InvalidInputError(f"tables of {default.kernel} must be of distinct shapes of {len(dims)} dims")
    order = {s: i for i, s in enumerate(shape_order(shapes))}
    tables = sorted(tables, key=lambda t: order[t.shape])
    pool = [default] + sorted({c for t in tables for c in t.times} - {default}, key=lambda c: c.key)
    matrix = _regret_matrix(tables, pool)
    dist = np.array([[_distance(a.shape, b.shape) for b in tables] for a in tables]).reshape(len(tables), len(tables))
    margin_log = math.log1p(margin)
    cv: dict[int, float] = {}
    usable = [k for k in sorted(set(ks)) if k < len(tables)] or [min(ks)]
    if len(tables) >= 2:
        for k in usable:
            cv[k] = float(np.mean([_held_out_regret(matrix, dist, i, k, eps, margin, max_configs)
                                   for i in range(len(tables))]))
        k = min(cv, key=lambda k: (round(cv[k], 12), k))
    else:
        k = usable[0]
    chosen = _greedy(matrix, list(range(len(tables))), max_configs, margin_log)
    return Dispatch(default.kernel, tuple(dims), tuple(t.shape for t in tables), tuple(pool[c] for c in chosen),
                    tuple(tuple(float(matrix[s, c]) for c in chosen) for s in range(len(tables))),
                    tuple(tuple(t.ms(pool[c]) for c in chosen) for t in tables), k, eps, margin, cv,
                    tuple(tuple(t.figures.get(pool[c], (None, None, None)) for c in chosen) for t in tables))


def _regret_matrix(tables: Sequence[ShapeTable], pool: Sequence[Config]):
    """``R[s][c]`` of step 1 (module doc) as a NumPy array, shapes by configs."""
    import numpy as np

    out = np.empty((len(tables), len(pool)))
    for s, t in enumerate(tables):
        best = t.best_ms
        row = [t.ms(c) for c in pool]
        known = [math.log(ms / best) for ms in row if ms is not None and not math.isinf(ms)]
        worst = max(known)
        out[s] = [worst if ms is None else FAILED_REGRET if math.isinf(ms) else math.log(ms / best) for ms in row]
    return out


def _greedy(matrix, rows: Sequence[int], max_configs: int, margin_log: float) -> list[int]:
    """Step 2 (module doc) over ``rows`` of the regret matrix: column indices, 0 (the default) first."""
    import numpy as np

    sub = matrix[rows]
    chosen = [0]
    current = sub[:, 0].copy()
    while len(chosen) < max_configs and sub.shape[1] > len(chosen):
        gains = np.clip(current[:, None] - sub, 0.0, None).sum(axis=0)
        gains[chosen] = -1.0
        best = int(np.argmax(gains))
        if not gains[best] > margin_log:
            break
        chosen.append(best)
        current = np.minimum(current, sub[:, best])
    return chosen


def _held_out_regret(matrix, dist, i: int, k: int, eps: float, margin: float, max_configs: int) -> float:
    """The log regret at tuned shape ``i`` of the dispatch learned from the others (step 4)."""
    others = [s for s in range(matrix.shape[0]) if s != i]
    chosen = _greedy(matrix, others, max_configs, math.log1p(margin))
    rows = [[float(matrix[s, c]) for c in chosen] for s in others]
    pick, _ = _choose([float(dist[i, s]) for s in others], rows, k, eps, math.log1p(margin))
    return float(matrix[i, chosen[pick]])


# --- held-out regret ----------------------------------------------------------------------


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


# --- which shapes to tune -----------------------------------------------------------------


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
