"""Step 4 of the dispatch (:mod:`autotune.dispatch.fit`): the rule and the noise floor kept, by
leave-one-shape-out cross-validation over the tuned shapes (Stone, J. R. Stat. Soc. B 36(2),
1974): the rules tried, each tuned shape's held-out regret under each, and the choice among
them (the one-standard-error rule).

Pure functions of plain values: no database, no GPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autotune.dispatch.rules import RULES, SCORE_TIE, argmin, choose, cover, nearest
from autotune.dispatch.tree import fit_trees, leaf_of

__all__ = ["candidates", "cross_validate", "select", "rule_name"]


def select(tried, candidates) -> tuple[int, tuple[str, int]]:
    """Step 4 (module doc): ``(index into tried, candidate)``. Among the (floor, rule) pairs whose
    held-out picks are slower than the default at the fewest tuned shapes, the least mean regret
    is the best; the kept pair is the one of the highest floor within one standard error of that
    mean (the one-standard-error rule: Breiman, Friedman, Olshen and Stone, Classification and
    Regression Trees, 1984, 3.4.3), then of the least mean, then the first in ``candidates``. A
    minimum over some 50 pairs cross-validated on a dozen shapes is optimistic; the rule that
    asks more of a config before it leaves the default is kept where the evidence cannot tell
    them apart. Below two shapes (no cross-validation): the lowest floor and the first rule."""
    import statistics

    scored = []
    for f, (_, _, values, evidence) in enumerate(tried):
        for j, c in enumerate(candidates):
            if c in values:
                v = values[c]
                below = sum(math.isinf(e) for e in evidence[c])
                se = statistics.stdev(v) / math.sqrt(len(v))
                scored.append((below, round(sum(v) / len(v), 12), se, f, j))
    if not scored:
        return 0, candidates[0]
    fewest = min(s[0] for s in scored)
    scored = [s for s in scored if s[0] == fewest]
    best = min(scored, key=lambda s: (s[1], s[3], s[4]))
    within = [s for s in scored if s[1] <= best[1] + best[2] + SCORE_TIE]
    _, _, _, f, j = min(within, key=lambda s: (-s[3], s[1], s[4]))
    return f, candidates[j]


def rule_name(candidate: tuple[str, int]) -> str:
    kind, param = candidate
    return f"knn k={param}" if kind == "knn" else f"tree depth={param}" if kind == "tree" else kind


def candidates(rules: Sequence[str], ks: Sequence[int], depths: Sequence[int], n: int) -> list[tuple[str, int]]:
    """The rules tried, in the order ties go: the ``knn`` ks that fit (``k`` below the number of
    shapes, else the least), the trees' depths, ``nearest``."""
    out: list[tuple[str, int]] = []
    for rule in RULES:
        if rule not in rules:
            continue
        if rule == "knn":
            out += [("knn", k) for k in (sorted(k for k in set(ks) if k < n) or [min(ks)])]
        elif rule == "tree":
            out += [("tree", d) for d in sorted(set(depths))]
        else:
            out.append(("nearest", 1))
    return out


def cross_validate(matrix, dist, shapes, candidates, eps: float, margin_log: float, max_configs: int,
                    truth=None):
    """Step 4 (module doc): ``({candidate: per shape, its held-out log regret}, {candidate: per
    shape, the held-out evidence of :func:`~autotune.dispatch.tree.mark_uncertain`})``; empty below
    two shapes. ``matrix``: the regrets the rule reads; ``truth``: the measured ones a pick is
    scored on (``None``: ``matrix``)."""
    truth = matrix if truth is None else truth
    n = matrix.shape[0]
    if n < 2:
        return {}, {}
    values = {c: [0.0] * n for c in candidates}
    evidence = {c: [0.0] * n for c in candidates}
    for i in range(n):
        others = [s for s in range(n) if s != i]
        chosen = cover(matrix, others, max_configs, margin_log)
        sub = matrix[others][:, chosen]
        rows = [[float(v) for v in row] for row in sub]
        distances = [float(dist[i, s]) for s in others]
        depths = [param for kind, param in candidates if kind == "tree"]
        trees = fit_trees([shapes[s] for s in others], sub, depths, margin_log) if depths else {}
        for kind, param in candidates:
            if kind == "knn":
                pick, _ = choose(distances, rows, param, eps, margin_log)
            elif kind == "nearest":
                pick = argmin(rows[nearest(distances, 1)[0]])
            else:
                pick = leaf_of(trees[param], shapes[i]).config
            value = float(truth[i, chosen[pick]])
            values[(kind, param)][i] = value
            below = value - float(truth[i, 0]) > margin_log
            evidence[(kind, param)][i] = math.inf if below else value
    return values, evidence
