"""Choosing the winner of a search from the interleaved re-timing of its top configs.

Timings of near-equal configs differ from run to run, so "the fastest" alone would change
between identical searches. The rule:

1. the fastest is the config of lowest pooled median;
2. its tie group is every config statistically tied with it. The rounds are
   interleaved, so in each round a config and the fastest ran under the same clocks and
   temperature: the ratio of their round medians is a paired observation, and from
   :data:`PAIRED_ROUNDS` rounds on a config is tied when the confidence interval of the median
   ratio over the rounds holds 1.0 (:func:`autotune.measure.timing.median_ci`,
   distribution-free order statistics: at least 95 % coverage from 6 rounds; with fewer it is
   the range of the ratios, e.g. 93.75 % for 5 rounds, 87.5 % for 4) -- the paired,
   interleaved finalist re-timing Helion credits with lower selection regret. A drift of the
   GPU's clocks between rounds moves both configs of a pair alike, so it no longer hides a
   real difference. With fewer rounds, the older rule: tied when the pooled median is within
   the measured spread, ``pooled <= fastest * (1 + max(spread_fastest, spread_config))``, the
   spread being the round-to-round range relative to the pooled median;
3. the winner is the tie-group member with the fewest threads per block, then the least
   shared memory, then the smallest config key: a fixed rule, so searches that find the
   same group pick the same config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from autotune.kernel.config import Config
from autotune.measure.measurement import Decision, Paired, Retiming
from autotune.measure.timing import median_ci

__all__ = ["choose", "pair", "PAIRED_ROUNDS"]

PAIRED_ROUNDS = 3
"""From this many rounds, ties are decided by the paired comparison (module doc, step 2)."""


def choose(retimings: Sequence[Retiming], threads: Callable[[Config], int],
           shared_bytes: Callable[[Config], int]) -> Decision:
    """Apply the rule above.

    Args:
        retimings: at least one re-timed config.
        threads: threads per block of a config.
        shared_bytes: static shared memory per block of a config, bytes.

    Raises:
        ValueError: ``retimings`` is empty.
    """
    if not retimings:
        raise ValueError("no re-timed config to choose from")
    ordered = sorted(retimings, key=lambda r: (r.pooled_median_ms, r.config.key))
    fastest = ordered[0]
    paired = tuple(pair(r, fastest) for r in ordered)
    group = tuple(r for r, p in zip(ordered, paired) if p.tied)
    winner = min(group, key=lambda r: (threads(r.config), shared_bytes(r.config), r.config.key))
    return Decision(winner, fastest, group, paired, tuple(ordered))


def pair(r: Retiming, fastest: Retiming) -> Paired:
    """``r`` against ``fastest``, round by round (module doc, step 2). Rounds beyond the shorter
    of the two are ignored; with fewer than :data:`PAIRED_ROUNDS` the tie is the spread rule's."""
    n = min(len(r.round_medians_ms), len(fastest.round_medians_ms))
    if r.config == fastest.config:
        return Paired(r.config, 1.0, 1.0, 1.0, True)
    if n == 0:
        ratio = r.pooled_median_ms / fastest.pooled_median_ms
        low = high = ratio
    else:
        ratios = np.array(r.round_medians_ms[:n]) / np.array(fastest.round_medians_ms[:n])
        ratio = float(np.median(ratios))
        low, high = median_ci(ratios)
    if n >= PAIRED_ROUNDS:
        return Paired(r.config, ratio, low, high, low <= 1.0 <= high)
    within = r.pooled_median_ms <= fastest.pooled_median_ms * (1 + max(fastest.spread, r.spread))
    return Paired(r.config, ratio, low, high, within)
