"""``transfer``: what was measured at other shapes of the kernel, used for a new shape.

Configs fast at a nearby shape tend to be fast here (the premise of the lookup ladder,
:mod:`autotune.runtime.lookup`). So the strategy

1. queues the best configs of the nearest tuned shapes (the history's observations of other
   shapes, nearest first by the ladder's distance): each shape's best in turn, then each one's
   second best, ..., at most :data:`QUEUE` configs valid in this space; then
2. proposes with TPE (as ``tpe``) whose in-memory study is warm-started with those shapes'
   trials (at most :data:`PRIOR_TRIALS`, nearest shapes first), each one's time taken
   relative to its shape's best, ``log(ms / best)``; this shape's own times are told
   relative to its first measured config (the kernel's default, which the search measures
   first), ``log(ms / first)``. TPE ranks observations (the better ``gamma`` fraction against
   the rest), so the scales need only agree roughly: prior configs near their shape's best
   rank among the good ones until this shape's own measurements outnumber them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies.base import Known
from autotune.search.strategies.sampled import Sampled

__all__ = ["Transfer", "QUEUE", "PRIOR_TRIALS", "nearest_bests"]

QUEUE = 8
"""Most configs queued from the nearest shapes' bests."""
SHAPES = 4
"""Nearest shapes whose bests are queued."""
PRIOR_TRIALS = 400
"""Most other shapes' trials warm-starting the model."""


def _by_shape(prior: Iterable[Known]) -> list[list[Known]]:
    """The ok observations grouped by shape, nearest shape first, each fastest first."""
    shapes: dict[tuple, list[Known]] = {}
    for k in prior:
        if k.ms is not None and k.ms > 0:
            shapes.setdefault((k.distance, str(k.shape)), []).append(k)
    return [sorted(group, key=lambda k: (k.ms, k.config)) for _, group in sorted(shapes.items())]


def nearest_bests(prior: Iterable[Known], space: SearchSpace, limit: int = QUEUE,
                  shapes: int = SHAPES) -> list[Config]:
    """Configs to measure first (module doc, step 1), valid in ``space``, without repeats: at most
    ``limit``, from the ``shapes`` nearest shapes."""
    groups = _by_shape(prior)[:shapes]
    out: list[Config] = []
    for rank in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if rank < len(group) and len(out) < limit:
                config = Config(space.kernel, group[rank].config.macros)
                if config not in out and not space.violations(config):
                    out.append(config)
    return out


class Transfer(Sampled):
    """Transfer from other shapes (module doc). Its options (``strategy_options``): ``queue``
    (:data:`QUEUE`), ``shapes`` (:data:`SHAPES`), ``prior_trials`` (:data:`PRIOR_TRIALS`) and
    ``startup`` (TPE's random proposals before its model, Optuna's ``n_startup_trials``)."""

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = (), *, queue: int = QUEUE,
                 shapes: int = SHAPES, prior_trials: int = PRIOR_TRIALS, startup: int = 10) -> None:
        import optuna

        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True,
                                             n_startup_trials=startup)
        self._anchor: float | None = None
        self._prior_trials = prior_trials
        super().__init__(space, sampler, seed, history, name="transfer")
        self._warm_start()
        self.enqueue(nearest_bests(self.prior, space, queue, shapes))

    def _warm_start(self) -> None:
        import optuna

        added = 0
        for group in _by_shape(self.prior):
            best = group[0].ms
            for k in group:
                config = Config(self.space.kernel, k.config.macros)
                if added >= self._prior_trials or self.space.violations(config):
                    continue
                self._study.add_trial(optuna.trial.create_trial(value=math.log(k.ms / best),
                                                                params=self._ordinals(config),
                                                                distributions=self._dists))
                added += 1

    def _value(self, ms: float | None) -> float | None:
        value = super()._value(ms)  # ms, or the failure's penalty in ms
        if value is None or value <= 0:
            return value
        self._anchor = self._anchor or value
        return math.log(value / self._anchor)
