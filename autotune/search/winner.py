"""Choosing the winner of a search from the interleaved re-timing of its top configs.

Timings of near-equal configs differ from run to run, so "the fastest" alone would change
between identical searches. The rule (issue 4):

1. the fastest is the config of lowest pooled median;
2. its tie group is every config whose pooled median is within the measured spread of it:
   ``pooled <= fastest * (1 + max(spread_fastest, spread_config))``, the spread being the
   round-to-round range relative to the pooled median;
3. the winner is the tie-group member with the fewest threads per block, then the least
   shared memory, then the smallest config key: a fixed rule, so searches that find the
   same group pick the same config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from autotune.kernel.config import Config
from autotune.measure.measurement import Decision, Retiming

__all__ = ["choose"]


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
    group = tuple(r for r in ordered
                  if r.pooled_median_ms <= fastest.pooled_median_ms * (1 + max(fastest.spread, r.spread)))
    winner = min(group, key=lambda r: (threads(r.config), shared_bytes(r.config), r.config.key))
    return Decision(winner, fastest, group)
