"""The dispatch's primitives (:mod:`autotune.dispatch.fit`, steps 1 to 3): the regret matrix and
its noise floor, the set cover of configs, and the picks of the ``knn`` and ``nearest`` rules.
The C header's ``select`` (:mod:`autotune.report.header`) runs the same picks with the same ties.

Pure functions of plain values: no database, no GPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autotune.dispatch.tables import FAILED_REGRET, ShapeTable
from autotune.kernel.config import Config

__all__ = ["COVER", "RULES", "TIE", "SCORE_TIE", "nearest", "choose", "argmin", "regret_matrix", "floor_extra",
           "cover"]

COVER = math.log1p(0.02)
"""A config covers a tuned shape where its log regret there is within this (2 %) of the best."""
RULES = ("knn", "tree", "nearest")
"""The rules cross-validation chooses from (:mod:`autotune.dispatch.fit`, step 3); ties go in this order."""
TIE = 1e-9
"""Distances within this are equal (the nearer in the shapes' order first)."""
SCORE_TIE = 1e-12
"""Scores within this are equal (the config listed first)."""


def nearest(distances: Sequence[float], k: int) -> list[int]:
    """Indices of the ``k`` smallest distances: equal ones (within 1e-9) in index order. The C
    header runs the same selection."""
    used = [False] * len(distances)
    out = []
    for _ in range(min(k, len(distances))):
        pick = -1
        for i, d in enumerate(distances):
            if not used[i] and (pick < 0 or d < distances[pick] - TIE):
                pick = i
        used[pick] = True
        out.append(pick)
    return out


def choose(distances: Sequence[float], rows: Sequence[Sequence[float]], k: int, eps: float,
            margin_log: float) -> tuple[int, int]:
    """The rule (module doc, step 3): ``(config index, nearest shape index)``; ``rows[s][c]``
    is the log regret of config ``c`` at shape ``s``."""
    near = nearest(distances, k)
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
        if beats and (best == 0 or scores[c] < scores[best] - SCORE_TIE):
            best = c
    return best, near[0]


def argmin(row: Sequence[float]) -> int:
    """The index of the least value, ties to the first (the C header's loop)."""
    best = 0
    for c in range(1, len(row)):
        if row[c] < row[best] - SCORE_TIE:
            best = c
    return best


def regret_matrix(tables: Sequence[ShapeTable], pool: Sequence[Config]):
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


def floor_extra(default_ms: Sequence[float | None], floor: float, margin: float) -> list[float]:
    """Per tuned shape, what the noise floor adds to a config's log regret but the default's
    (module doc, step 1): ``ln(1 + max(margin, floor / T0)) - ln(1 + margin)``, 0 where the
    default was not measured or failed (no time to set the floor against)."""
    return [math.log1p(max(margin, floor / ms)) - math.log1p(margin)
            if ms is not None and 0 < ms < math.inf and floor > 0 else 0.0 for ms in default_ms]


def cover(matrix, rows: Sequence[int], max_configs: int, margin_log: float) -> list[int]:
    """Step 2 (module doc) over ``rows`` of the regret matrix: column indices, 0 (the default) first."""
    import numpy as np

    sub = matrix[list(rows)]
    chosen = [0]
    current = sub[:, 0].copy()
    covers = sub <= COVER
    covered = covers[:, 0].copy()
    while len(chosen) < max_configs and sub.shape[1] > len(chosen):
        gains = np.clip(current[:, None] - sub, 0.0, None).sum(axis=0)
        gains[chosen] = -1.0
        counts = covers[~covered].sum(axis=0)
        counts[chosen] = -1
        if counts.max() > 0:  # set cover first: most shapes newly within COVER of their best, then the gain
            best = int(np.lexsort((-gains, -counts))[0])
        else:
            best = int(np.argmax(gains))
            if not gains[best] > margin_log:
                break
        chosen.append(best)
        current = np.minimum(current, sub[:, best])
        covered |= covers[:, best]
    return chosen
