"""What tuning a problem is expected to gain: the fraction of its GPU time it would save.

A heuristic of this project, from what the database holds:

* the runtime picks this problem's own tuned config already (the lookup's ``exact`` rung):
  nothing to gain, 0;
* else, where the kernel has tuned shapes of this dtype on this device model: the median,
  over the :data:`SHAPES` nearest of them, of ``1 - best / default``, each shape's best time
  against the time its search measured for the kernel's default config (every study
  measures the default first); with none of those: :data:`PRIOR_GAIN`;
* a problem the runtime answers from other shapes' or another device's tuned results
  (``dispatch``, ``nearest_shape``, ``same_arch``) gains :data:`REUSED_FACTOR` of that: part
  of the gain is had already (or the guess may be worse than the default, as measured of
  ``nearest_shape``: the search finds out).
"""

from __future__ import annotations

import statistics
from collections.abc import Collection
from typing import TYPE_CHECKING

from autotune.kernel.dims import shape_distance
from autotune.store import stale

if TYPE_CHECKING:
    from autotune.store.key import TuningKey
    from autotune.store.repository import Store

__all__ = ["PRIOR_GAIN", "REUSED_FACTOR", "SHAPES", "observed_gains", "expected_gain"]

PRIOR_GAIN = 0.15
"""Gain assumed where no shape of the kernel is tuned on this device model: 15 %."""
REUSED_FACTOR = 0.5
"""Share of the gain left where the runtime uses a tuned config of another shape or device."""
SHAPES = 8
"""Nearest tuned shapes whose gains are read."""


def observed_gains(store: Store, key: TuningKey, partial: Collection = ()) -> tuple[list[float], bool]:
    """``1 - best / default`` of the :data:`SHAPES` tuned shapes of ``key``'s kernel and dtype
    nearest to its dims on its device model (fresh results only; each clipped to 0..0.95;
    shapes without a measured default left out; shapes of ``partial``, dims whose search was
    cut and is resumed, left out too: their best is not a search's result), and whether any
    other shape is tuned there (a ``transfer`` search has something to start from)."""
    problem = key.problem
    kernel = problem.kernel if problem is not None else None
    found = [r for r in store.find_best(kernel=key.kernel, dtype=key.dtype, source_hash=key.source_hash,
                                        spec_hash=key.spec_hash)
             if r.device_name == key.device.name and r.dims != key.dims and r.dims not in partial
             and [n for n, _ in r.dims] == [n for n, _ in key.dims]]
    if kernel is not None:
        found = stale.partition(found, {kernel.name: kernel}, key.nvcc_version).current
    found.sort(key=lambda r: shape_distance(r.dims, key.dims))
    default = kernel.default_config() if kernel is not None else None
    gains = []
    for r in found[:SHAPES]:
        times = [t.median_ms for t in store.key_trials(key.at(r.dims))
                 if t.status == "ok" and t.config == default and t.median_ms]
        if times and r.median_ms:
            gains.append(min(0.95, max(0.0, 1.0 - r.median_ms / min(times))))
    return gains, bool(found)


def expected_gain(rung: str, observed: list[float]) -> tuple[float, str]:
    """The expected gain of a problem answered at ``rung`` today, given ``observed`` gains of
    the kernel's tuned shapes, and a few words saying where it comes from."""
    if rung == "exact":
        return 0.0, "tuned already"
    if observed:
        base, why = statistics.median(observed), f"median of {len(observed)} tuned shape{'s' * (len(observed) > 1)}"
    else:
        base, why = PRIOR_GAIN, "assumed: no shape tuned here"
    if rung in ("dispatch", "nearest_shape", "same_arch"):
        return base * REUSED_FACTOR, f"{why}, x{REUSED_FACTOR:g} ({rung})"
    return base, why
