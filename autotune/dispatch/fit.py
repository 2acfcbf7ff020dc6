"""A dispatch: the config to launch a shape nobody tuned with, learned from every stored trial.

For one kernel, dtype and device model, a dispatch holds a few configs (at most
:data:`MAX_CONFIGS`, the kernel's default always the first) and a rule over the dims that picks
one of them. It is learned from the trials of every tuned shape, not only each shape's best:
a config measured at several shapes is evidence of how it does across them.

The method, in five steps (:func:`build_dispatch`):

1. **Regret tables.** For each tuned shape ``s`` and each config ``c`` measured there, the log
   regret ``R[s][c] = ln(T[s][c] / B[s])``: its median time against the fastest measured at
   ``s`` (0 for the shape's best). A config not measured at ``s`` counts as the worst config
   measured there (no evidence is never taken as good evidence); one that failed there (a
   compile error, out of resources, a wrong result) as :data:`FAILED_REGRET`. ``tune-shapes``'
   dense matrix (:mod:`autotune.search.shapes`) measures each shape's winner and runner-up at
   every tuned shape, so the guess is rarely needed. The rule reads these regrets with the
   **noise floor** added to every config but the default: ``ln(1 + max(MARGIN, floor / T[s][0]))
   - ln(1 + MARGIN)``, ``T[s][0]`` the default's time at ``s``, so a config leaves the default only
   where it saves more than ``floor`` ms there as well as more than 1 %. Microsecond kernels need
   it: a transpose of a few µs drifts by tens of percent over runs of consecutive trials whatever
   the config, so a 20 % gain there is as often noise as not (``benchmarks/README.md``,
   "Evidence behind the code's constants").
   Cross-validation picks the floor among :data:`FLOORS` (step 4).
2. **Configs.** The default first, then, greedily, a set cover: the config within :data:`COVER`
   (2 %) of the best at the most tuned shapes not yet covered (ties: the larger gain below);
   once every shape is covered (or none covers another), the config that lowers the sum over the
   tuned shapes of the best regret among the chosen ones the most, until :data:`MAX_CONFIGS`
   (10, Helion's ahead-of-time bound) or until none lowers it by more than the noise
   (:data:`MARGIN`): the greedy algorithm of facility location, within ``1 - 1/e`` of the best
   such set (Cornuejols, Fisher and Nemhauser, Management Science 23(8), 1977; Nemhauser,
   Wolsey and Fisher, Math. Programming 14, 1978).
3. **Rules** (:data:`RULES`), each picking one of those configs for a shape:

   * ``knn``: distance-weighted k nearest neighbours (Dudani, IEEE Trans. SMC 6(4), 1976) over
     the tuned shapes, by the lookup ladder's log distance ``sqrt(sum over dims of ln(d/d')^2)``.
     The default is left only where the stored evidence says another config is faster: the
     candidates are the configs measured faster than the default at every one of the ``k``
     nearest tuned shapes by more than the noise (``R[s][c] < R[s][default] - ln(1 + MARGIN)``);
     among them the one of the least score ``sum w_s R[s][c]`` over those shapes, ``w_s = 1 /
     (distance + EPS)``, wins; no candidate: the default. Neighbours at equal distance (within
     1e-9) go in the shapes' order: the larger volume, then the larger dims in the kernel's
     order (the ladder's tie rule); equal scores (within 1e-12) to the config listed first.
   * ``tree``: a decision tree over the dims' logs, their products and ratios, fit to regret,
     each leaf answering a config no slower than the default at its shapes
     (:mod:`autotune.dispatch.tree`; Helion's ahead-of-time heuristic is the anchor).
   * ``nearest``: the config of least regret at the nearest tuned shape.
4. **The rule kept** (:mod:`autotune.dispatch.crossval`): knn's ``k`` among :data:`KS`, the tree's depth among :data:`DEPTHS`, or
   nearest, and the noise floor among :data:`FLOORS`, by leave-one-shape-out cross-validation
   over the tuned shapes (Stone, J. R. Stat. Soc. B 36(2), 1974): each shape's measured log regret
   under the dispatch learned from the others (its configs chosen again without it). The fewest
   shapes where that pick is slower than the shape's default beyond the noise wins (the default
   is what a shape nobody tuned gets without a dispatch: never below it comes first), then the
   least mean regret; ties to the lower floor, then in :data:`RULES`' order (knn, the rule before
   the others, first).
5. **Uncertain regions.** Where a tuned shape, held out, got a config slower than its default
   beyond the noise, the region around it answers the default or its safe config, and
   :meth:`Dispatch.pick` says so (``uncertain``; ``lookup``'s note): for knn and nearest, any
   shape whose nearest tuned shapes (the ``k`` the rule weighs) include such a shape gets the
   default (its other configs' regrets there are raised to the default's plus the margin, so the
   C header's ``select`` answers the same with the same code); a tree's leaf holding one, or one
   whose held-out regret went beyond :data:`~autotune.dispatch.tree.UNCERTAIN`, answers the
   leaf's minimax config (:func:`~autotune.dispatch.tree.mark_uncertain`).

The same arithmetic runs in the C header's ``select`` (:mod:`autotune.report.header`), from the
same numbers (the regret table and the thresholds are written with ``repr``, which reads back
exactly), and a bundle carries the same numbers (:mod:`autotune.dispatch.codec`).

Everything here is a pure function of plain values: no database, no GPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from autotune.dispatch.tables import (FAILED_REGRET, Shape, ShapeTable, distance as _distance, shape_order,
                                      tables_from_trials)
from autotune.dispatch import crossval
from autotune.dispatch.rules import COVER, RULES, argmin, choose, cover, floor_extra, nearest, regret_matrix
from autotune.dispatch.tree import Node, describe, fit_tree, leaf_of, mark_uncertain
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config

__all__ = ["MAX_CONFIGS", "MARGIN", "EPS", "KS", "COVER", "RULES", "DEPTHS", "FLOORS", "Dispatch", "build_dispatch",
           "fit_trials"]

MAX_CONFIGS = 10
"""Most configs a dispatch holds (the default included)."""
MARGIN = 0.01
"""The noise: the default is left only where another config's score is lower by more than
``ln(1 + MARGIN)`` (1 %), and a config joins the set only if it lowers the total regret by more."""
EPS = 0.1
"""Added to the log distance in the neighbours' weights ``1 / (distance + EPS)``: a shape 10 %
away weighs half as much as one at the same place."""
KS = (1, 2, 3, 4)
"""Neighbour counts tried; cross-validation picks one."""
DEPTHS = (1, 2, 3)
"""Tree depths tried."""
FLOORS = (0.0, 0.00025, 0.0005, 0.001, 0.002, 0.004)
"""Noise floors tried, ms (module doc, step 1): what a config must save over the default at a
tuned shape, besides :data:`MARGIN`, for its gain to count; cross-validation picks one (0 to 4 us:
beyond what a kernel of tens of microseconds drifts, far below what a matrix product gains)."""


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
        k: neighbours the ``knn`` rule weighs.
        eps: added to a distance in a neighbour's weight.
        margin: relative margin by which a config must beat the default (0.01 = 1 %).
        cv_regret: the mean held-out log regret of each rule tried (cross-validation), by name
            (``"knn k=2"``, ``"tree depth=1"``, ``"nearest"``).
        figures: ``figures[s][c]``: ``(gbps, gflops, pct_memcpy)`` of its trial there (``None``s
            where not measured or without such objectives), for notes.
        kind: the rule: ``"knn"``, ``"tree"`` or ``"nearest"`` (module doc, step 3).
        nodes: the tree's nodes (:class:`~autotune.dispatch.tree.Node`, root first) for ``"tree"``.
        floor: the noise floor, ms, in ``regrets`` (module doc, step 1).
        unsafe: indices of the tuned shapes where, held out, the rule's pick was slower than the
            default (module doc, step 5): for knn and nearest, a shape whose nearest tuned shapes
            include one gets the default, and :meth:`pick` says it is uncertain.
        cv_below: per rule tried (as ``cv_regret``), the tuned shapes where, held out, its pick
            was slower than the default beyond the noise.
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
    cv_regret: Mapping[str, float] = field(default_factory=dict, compare=False)
    figures: tuple[tuple[tuple[float | None, float | None, float | None], ...], ...] = field(default=(),
                                                                                             compare=False)
    kind: str = "knn"
    nodes: tuple[Node, ...] = ()
    floor: float = 0.0
    unsafe: tuple[int, ...] = ()
    cv_below: Mapping[str, int] = field(default_factory=dict, compare=False)

    @property
    def margin_log(self) -> float:
        """``ln(1 + margin)``: the margin in the scores' log units."""
        return math.log1p(self.margin)

    def pick(self, shape: Sequence[int]) -> tuple[int, int, bool]:
        """``(config index, index of the nearest tuned shape, uncertain)`` for ``shape`` (values
        in the kernel's dims order; below 1 counts as 1); ``(0, -1, False)`` without tuned
        shapes. ``uncertain``: the shape is in a region whose held-out evidence is uncertain, where
        the rule answers the default (knn, nearest) or the tree's leaf its minimax config (module
        doc, step 5)."""
        if len(shape) != len(self.dims):
            raise InvalidInputError(f"shape {tuple(shape)} has {len(shape)} dims; {self.kernel} takes "
                                    f"{', '.join(self.dims)}")
        if not self.shapes:
            return 0, -1, False
        distances = [_distance(shape, s) for s in self.shapes]
        if self.kind == "tree":
            leaf = leaf_of(self.nodes, shape)
            return leaf.config, nearest(distances, 1)[0], leaf.uncertain
        if self.kind == "nearest":
            near = nearest(distances, 1)[0]
            return argmin(self.regrets[near]), near, near in self.unsafe
        config, near = choose(distances, self.regrets, self.k, self.eps, self.margin_log)
        return config, near, bool(self.unsafe) and any(s in self.unsafe for s in nearest(distances, self.k))

    def choose(self, shape: Sequence[int]) -> tuple[int, int]:
        """``(config index, index of the nearest tuned shape)`` for ``shape`` (:meth:`pick`)."""
        return self.pick(shape)[:2]

    def config_for(self, shape: Sequence[int]) -> Config:
        """The config the rule picks for ``shape``."""
        return self.configs[self.pick(shape)[0]]

    def rule(self) -> str:
        """The rule in one line, e.g. for ``autotune dispatch``."""
        us = f"{1000 * self.floor:g} us"
        floor = f" and by {us}" if self.floor else ""
        unsafe = (f"; near the {len(self.unsafe)} tuned shape{'s' if len(self.unsafe) > 1 else ''} where, held out, "
                  f"it was slower than the default ({', '.join('x'.join(map(str, self.shapes[s])) for s in self.unsafe)}"
                  f"): the default" if self.unsafe else "")
        if self.kind == "tree":
            return (f"a decision tree over the dims' logs: {describe(self.nodes, self.dims)}; each leaf the config "
                    f"of least regret at its tuned shapes never slower than the default there by more than "
                    f"{100 * self.margin:g} %"
                    f"{', a config counting as faster only where it saves more than ' + us if self.floor else ''}")
        if self.kind == "nearest":
            return ("the config of least regret at the nearest tuned shape by log distance sqrt(sum ln(d/d')^2)"
                    f"{', the default unless another saves more than ' + us + ' there' if self.floor else ''}{unsafe}")
        return (f"the {self.k} nearest tuned shape{'s' if self.k > 1 else ''} by log distance "
                f"sqrt(sum ln(d/d')^2); among the configs faster than the default by more than "
                f"{100 * self.margin:g} %{floor} at each of them, the least log regret there weighted 1/(distance + "
                f"{self.eps:g}); none: the default{unsafe}")


def build_dispatch(tables: Sequence[ShapeTable], default: Config, dims: Sequence[str], *,
                   max_configs: int = MAX_CONFIGS, margin: float = MARGIN, ks: Sequence[int] = KS,
                   eps: float = EPS, rules: Sequence[str] = RULES, depths: Sequence[int] = DEPTHS,
                   floors: Sequence[float] = FLOORS) -> Dispatch:
    """Learn a dispatch from the tables of the tuned shapes (module doc).

    Args:
        tables: one per tuned shape (:func:`tables_from_trials`); may be empty (then the
            dispatch always answers the default).
        default: the kernel's default config (always ``configs[0]``).
        dims: the kernel's dim names.
        max_configs: most configs, >= 1.
        margin: the noise, relative (0.01 = 1 %).
        ks: neighbour counts the ``knn`` rule is tried with.
        eps: see :data:`EPS`.
        rules: the rules tried (of :data:`RULES`); cross-validation keeps one.
        depths: the tree depths tried.
        floors: the noise floors tried, ms (module doc, step 1).

    Raises:
        InvalidInputError: ``max_configs`` below 1, no ``ks``, a rule not in :data:`RULES`, two
            tables of one shape, a table whose shape has another number of dims, or no floors or
            a negative one.
    """
    import numpy as np

    if max_configs < 1 or not ks or any(k < 1 for k in ks) or not depths or any(d < 1 for d in depths):
        raise InvalidInputError(f"max_configs {max_configs}, ks {tuple(ks)} and depths {tuple(depths)} are not "
                                "allowed; give >= 1")
    if not floors or any(not f >= 0 for f in floors):
        raise InvalidInputError(f"floors {tuple(floors)} are not allowed; give one or more times >= 0 ms")
    if not rules or any(r not in RULES for r in rules):
        raise InvalidInputError(f"rules {tuple(rules)} are not allowed; allowed: {', '.join(RULES)}")
    shapes = [t.shape for t in tables]
    if len(set(shapes)) != len(shapes) or any(len(s) != len(dims) for s in shapes):
        raise InvalidInputError(f"tables of {default.kernel} must be of distinct shapes of {len(dims)} dims")
    order = {s: i for i, s in enumerate(shape_order(shapes))}
    tables = sorted(tables, key=lambda t: order[t.shape])
    shapes = [t.shape for t in tables]
    pool = [default] + sorted({c for t in tables for c in t.times} - {default}, key=lambda c: c.key)
    measured = regret_matrix(tables, pool)
    dist = np.array([[_distance(a, b) for b in shapes] for a in shapes]).reshape(len(shapes), len(shapes))
    margin_log = math.log1p(margin)
    candidates = crossval.candidates(rules, ks, depths, len(tables))
    default_ms = [t.ms(default) for t in tables]
    tried: list[tuple] = []  # per distinct floor: (floor, rule matrix, {candidate: held-out log regrets}, evidence)
    for floor in floors:
        extra = floor_extra(default_ms, floor, margin)
        if any(extra == floor_extra(default_ms, f, margin) for f, *_ in tried):
            continue  # the same regrets as a lower floor's: the same rules
        matrix = measured.copy()
        matrix[:, 1:] += np.array(extra).reshape(len(tables), 1)
        values, evidence = crossval.cross_validate(matrix, dist, shapes, candidates, eps, margin_log, max_configs,
                                                   measured)
        tried.append((floor, matrix, values, evidence))
    f, candidate = crossval.select(tried, candidates)
    floor, matrix, values, evidence = tried[f]
    kind, param = candidate
    cv = {c: sum(v) / len(v) for c, v in values.items()}
    below = {c: sum(math.isinf(v) for v in e) for c, e in evidence.items()}
    chosen = cover(matrix, list(range(len(tables))), max_configs, margin_log)
    regrets = matrix[:, chosen] if len(tables) else np.zeros((0, len(chosen)))
    nodes: tuple[Node, ...] = ()
    unsafe: tuple[int, ...] = ()
    if kind == "tree":
        nodes = fit_tree(shapes, regrets, param, margin_log)
        if (kind, param) in evidence:
            nodes = mark_uncertain(nodes, shapes, regrets, evidence[(kind, param)], margin_log)
    elif (kind, param) in evidence:  # step 5: the default near the shapes where, held out, the rule lost to it
        unsafe = tuple(s for s, v in enumerate(evidence[(kind, param)]) if math.isinf(v))
        for s in unsafe:
            regrets[s, 1:] = np.maximum(regrets[s, 1:], regrets[s, 0] + margin_log)
    k = param if kind == "knn" else 1
    return Dispatch(default.kernel, tuple(dims), tuple(shapes), tuple(pool[c] for c in chosen),
                    tuple(tuple(float(v) for v in row) for row in regrets),
                    tuple(tuple(t.ms(pool[c]) for c in chosen) for t in tables), k, eps, margin,
                    {crossval.rule_name(c): v for c, v in cv.items()},
                    tuple(tuple(t.figures.get(pool[c], (None, None, None)) for c in chosen) for t in tables),
                    kind, nodes, floor, unsafe, {crossval.rule_name(c): v for c, v in below.items()})


def fit_trials(trials: Iterable, default: Config, dims: Sequence[str], tunables: Iterable[str]) -> Dispatch:
    """The dispatch of a kernel's stored trials at its tuned shapes (of one device model, dtype and
    toolchain, as the store supplies them: :meth:`~autotune.store.reader.ResultsReader.shape_trials`),
    of configs setting exactly ``tunables``: what ``lookup``'s rung and a bundle both fit."""
    names = set(tunables)
    kept = [t for t in trials if {n for n, _ in t.config.macros} == names]
    return build_dispatch(tables_from_trials(kept), default, dims)

