"""A small decision tree from a shape's features to one of a dispatch's configs, fit to regret.

Helion's ahead-of-time heuristic is the anchor: tune some shapes, time every found config at
every shape, keep a few configs, and emit a decision tree over the shape as plain code. This one
is hand-rolled (the core imports without scikit-learn) and fit to what a dispatch cares about:

* **Features** (:func:`features`): linear forms of the dims' logs with coefficients -1, 0 or 1:
  each dim, each pair's product and ratio, and the volume for three dims or more (``ln m``,
  ``ln m + ln n``, ``ln m - ln n``, ...). A feature is ``sum coef[i] * ln(max(d[i], 1))`` in dims
  order, so the C header computes it with the same operations in the same order.
* **Leaves** answer the config of the least summed log regret over their tuned shapes among the
  *safe* ones: those no slower than the default beyond the noise at any of those shapes (the
  default always is). A leaf never answers a config its own evidence says is slower.
* **Splits** (:func:`fit_tree`): greedy, each the feature and the threshold (a midpoint between two
  tuned shapes' values) that lowers the leaves' summed regret the most, ties to the first
  feature and the lower threshold; up to ``depth`` levels, a split only where it lowers the sum by
  more than ``1e-12``. Cross-validation (:mod:`autotune.dispatch.fit`) picks the depth.
* **Uncertain leaves** (:func:`mark_uncertain`): where a tuned shape of a leaf, held out, got a
  config slower than its default beyond the noise or a regret beyond :data:`UNCERTAIN`, the leaf
  answers its minimax config instead: the safe config whose worst regret over the leaf's shapes
  is least (often the default), and the rung's note says so.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["UNCERTAIN", "Node", "features", "feature_value", "fit_tree", "fit_trees", "leaf_of", "mark_uncertain",
           "describe"]

UNCERTAIN = math.log1p(0.08)
"""A held-out log regret beyond this (8 %) makes the leaf of that shape uncertain."""
_GAIN = 1e-12


@dataclass(frozen=True)
class Node:
    """One node of a tree, stored flat (the root is node 0).

    Attributes:
        coef: the feature's coefficients over the dims' logs (``()`` for a leaf).
        threshold: a shape goes left where its feature is ``<= threshold``.
        left, right: child node indices (``-1`` for a leaf).
        config: a leaf's config index into the dispatch's configs (``-1`` for a split).
        uncertain: a leaf answering its minimax config because its held-out evidence is uncertain.
    """

    coef: tuple[int, ...] = ()
    threshold: float = 0.0
    left: int = -1
    right: int = -1
    config: int = -1
    uncertain: bool = False

    @property
    def leaf(self) -> bool:
        return self.left < 0


def features(ndims: int) -> list[tuple[int, ...]]:
    """The candidate features' coefficients for ``ndims`` dims (module doc), in the order splits
    try them."""
    out = []
    for i in range(ndims):
        out.append(tuple(1 if j == i else 0 for j in range(ndims)))
    for i, j in itertools.combinations(range(ndims), 2):
        out.append(tuple(1 if t in (i, j) else 0 for t in range(ndims)))
        out.append(tuple(1 if t == i else -1 if t == j else 0 for t in range(ndims)))
    if ndims >= 3:
        out.append((1,) * ndims)
    return out


def feature_value(coef: Sequence[int], shape: Sequence[int]) -> float:
    """``sum coef[i] * ln(max(shape[i], 1))`` in dims order (the C header's arithmetic)."""
    total = 0.0
    for c, v in zip(coef, shape):
        if c:
            total += c * math.log(max(v, 1))
    return total


def leaf_of(nodes: Sequence[Node], shape: Sequence[int]) -> Node:
    """The leaf ``shape`` falls in."""
    node = nodes[0]
    while not node.leaf:
        node = nodes[node.left if feature_value(node.coef, shape) <= node.threshold else node.right]
    return node


def _leaf_config(regrets, rows: Sequence[int], margin_log: float, minimax: bool = False) -> tuple[int, float]:
    """``(config, cost)`` of a leaf over ``rows``: the safe config of least summed (or, with
    ``minimax``, worst) log regret; ties to the lower index."""
    import numpy as np

    sub = regrets[list(rows)]
    safe = (sub <= sub[:, :1] + margin_log).all(axis=0)
    cost = sub.max(axis=0) if minimax else sub.sum(axis=0)
    cost = np.where(safe, cost, np.inf)
    best = int(np.argmin(cost))
    return best, float(sub[:, best].sum())


def _split(regrets, x, rows: list[int], margin_log: float):
    """The best ``(gain, feature, threshold, left rows, right rows)`` of ``rows``, or ``None``."""
    import numpy as np

    rows_a = np.array(rows)
    sub = regrets[rows_a]
    _, here = _leaf_config(regrets, rows, margin_log)
    over = sub - sub[:, :1]  # each config's log regret over the default's, per shape
    best = None
    for f in range(x.shape[1]):
        order = np.argsort(x[rows_a, f], kind="stable")
        values = x[rows_a[order], f]
        s, o = sub[order], over[order]
        # the leaves' costs of every cut at once: left of cut i the first i + 1 shapes
        left = np.where(np.maximum.accumulate(o, axis=0) <= margin_log, np.cumsum(s, axis=0), np.inf).min(axis=1)
        right = np.where(np.maximum.accumulate(o[::-1], axis=0)[::-1] <= margin_log,
                         np.cumsum(s[::-1], axis=0)[::-1], np.inf).min(axis=1)
        gains = here - (left[:-1] + right[1:])
        gains[~(values[1:] > values[:-1])] = -np.inf
        i = int(np.argmax(gains))  # ties: the lower threshold
        if gains[i] > _GAIN and (best is None or gains[i] > best[0] + _GAIN):
            threshold = float((values[i] + values[i + 1]) / 2)
            best = (float(gains[i]), f, threshold, [int(r) for r in rows_a[order[:i + 1]]],
                    [int(r) for r in rows_a[order[i + 1:]]])
    return best


def fit_tree(shapes: Sequence[Sequence[int]], regrets, depth: int, margin_log: float) -> tuple[Node, ...]:
    """A tree of at most ``depth`` levels over ``shapes`` (the tuned shapes) and ``regrets``
    (a NumPy array, shapes by configs, column 0 the default; module doc)."""
    return fit_trees(shapes, regrets, (depth,), margin_log)[depth]


def fit_trees(shapes: Sequence[Sequence[int]], regrets, depths: Sequence[int], margin_log: float
              ) -> dict[int, tuple[Node, ...]]:
    """:func:`fit_tree` at each of ``depths``, grown once: the greedy growth of a shallower tree
    is the deeper one's, cut at its depth."""
    import numpy as np

    if not len(shapes):
        return {d: (Node(config=0),) for d in depths}
    coefs = features(len(shapes[0]))
    x = np.array([[feature_value(c, s) for c in coefs] for s in shapes], dtype=float).reshape(len(shapes), len(coefs))
    grown: list = []  # (rows, split or None, left, right), preorder

    def grow(rows: list[int], level: int) -> int:
        at = len(grown)
        grown.append(None)
        found = _split(regrets, x, rows, margin_log) if level < max(depths) and len(rows) > 1 else None
        if found is None:
            grown[at] = (rows, None, -1, -1)
        else:
            _, f, threshold, left, right = found
            li = grow(left, level + 1)
            ri = grow(right, level + 1)
            grown[at] = (rows, (coefs[f], threshold), li, ri)
        return at

    grow(list(range(len(shapes))), 0)

    def cut(depth: int) -> tuple[Node, ...]:
        nodes: list[Node | None] = []

        def emit(i: int, level: int) -> int:
            rows, split, li, ri = grown[i]
            at = len(nodes)
            nodes.append(None)
            if split is None or level >= depth:
                nodes[at] = Node(config=_leaf_config(regrets, rows, margin_log)[0])
            else:
                left = emit(li, level + 1)
                right = emit(ri, level + 1)
                nodes[at] = Node(split[0], split[1], left, right)
            return at

        emit(0, 0)
        return tuple(nodes)  # type: ignore[arg-type]

    return {d: cut(d) for d in depths}


def mark_uncertain(nodes: Sequence[Node], shapes: Sequence[Sequence[int]], regrets, held_out: Sequence[float],
                   margin_log: float) -> tuple[Node, ...]:
    """``nodes`` with each uncertain leaf (module doc) answering its minimax config.

    Args:
        shapes: the tuned shapes the tree was fit on; ``regrets`` their log regrets (shapes by configs).
        held_out: per tuned shape, the log regret over the default's of the config a dispatch fit
            without it picked there (``> margin_log``: slower than the default), or its log regret
            (beyond :data:`UNCERTAIN`: uncertain); give the larger of the two evidences.
    """
    members: dict[int, list[int]] = {}
    for s, shape in enumerate(shapes):
        node = 0
        while not nodes[node].leaf:
            n = nodes[node]
            node = n.left if feature_value(n.coef, shape) <= n.threshold else n.right
        members.setdefault(node, []).append(s)
    out = list(nodes)
    for node, rows in members.items():
        if any(held_out[s] > UNCERTAIN for s in rows):
            config, _ = _leaf_config(regrets, rows, margin_log, minimax=True)
            out[node] = Node(config=config, uncertain=True)
    return tuple(out)


def describe(nodes: Sequence[Node], dims: Sequence[str]) -> str:
    """The tree in one line, e.g. ``ln(m*n) <= 14.2 ? (config 2) : (config 1, uncertain)``."""

    def name(coef: Sequence[int]) -> str:
        up = "*".join(d for d, c in zip(dims, coef) if c > 0)
        down = "*".join(d for d, c in zip(dims, coef) if c < 0)
        return f"ln({up}{'/' + down if down else ''})"

    def text(i: int) -> str:
        n = nodes[i]
        if n.leaf:
            return f"config {n.config + 1}{', uncertain: minimax' if n.uncertain else ''}"
        return f"{name(n.coef)} <= {n.threshold:.3g} ? ({text(n.left)}) : ({text(n.right)})"

    return text(0)
