"""``transfer``: what was measured at other shapes of the kernel, used for a new shape, as long
as it pays here.

Configs fast at a nearby shape are often fast here (the premise of the lookup ladder,
:mod:`autotune.runtime.lookup`), but not always: matmul_warp's best at 2048^3 and 3333x2222x1111
is far from its best at 1024^3. So the prior only orders what is tried first, and this shape's
own measurements decide how long it keeps doing so:

1. the best configs of the nearest tuned shapes (the history's observations of other shapes,
   nearest first by the ladder's distance: each shape's best in turn, then each one's second
   best, ..., at most :data:`QUEUE` configs valid in this space) are proposed first, at most
   a quarter of a batch (at least one config) at a time;
2. a prior config *pays* when it is within :data:`PAYS` of the best time measured here before
   it was told (or beats it); after :data:`PATIENCE` prior configs in a row that do not pay,
   the rest of the queue is dropped;
3. every other slot, and all of them once the queue is done or dropped, goes to the default
   strategy, ``bandit`` (:mod:`autotune.search.strategies.bandit`), which is told every config
   measured, the prior's included: local search then starts from a prior config that paid.

The other shapes' times never enter the model (no warm start): a prior that misleads costs at
most :data:`PATIENCE` configs, plus the quarter-batches in flight when it is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies.bandit import Bandit
from autotune.search.strategies.base import Known

__all__ = ["Transfer", "QUEUE", "PATIENCE", "PAYS", "nearest_bests"]

QUEUE = 8
"""Most configs queued from the nearest shapes' bests."""
SHAPES = 4
"""Nearest shapes whose bests are queued."""
PATIENCE = 2
"""Prior configs in a row that do not pay before the rest of the prior is dropped."""
PAYS = 0.02
"""A prior config pays when its time is at most (1 + PAYS) times the best measured here before it."""


def _by_shape(prior: Iterable[Known]) -> list[list[Known]]:
    """The ok observations grouped by shape, nearest shape first, each fastest first."""
    shapes: dict[tuple, list[Known]] = {}
    for k in prior:
        if k.ms is not None and k.ms > 0:
            shapes.setdefault((k.distance, str(k.shape)), []).append(k)
    return [sorted(group, key=lambda k: (k.ms, k.config)) for _, group in sorted(shapes.items())]


def nearest_bests(prior: Iterable[Known], space: SearchSpace, limit: int = QUEUE, shapes: int = SHAPES
                  ) -> list[Config]:
    """Configs to measure first (module doc, step 1), valid in ``space``, without repeats: at
    most ``limit``, from the ``shapes`` nearest shapes."""
    groups = _by_shape(prior)[:shapes]
    out: list[Config] = []
    for rank in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if rank < len(group) and len(out) < limit:
                config = Config(space.kernel, group[rank].config.macros)
                if config not in out and not space.violations(config):
                    out.append(config)
    return out


class Transfer(Bandit):
    """Transfer from other shapes, kept while it pays (module doc). Its options
    (``strategy_options``): ``queue`` (:data:`QUEUE`) and ``shapes`` (:data:`SHAPES`)."""

    name = "transfer"

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = (), *, queue: int = QUEUE,
                 shapes: int = SHAPES) -> None:
        self._prior_queue: list[Config] = []
        self._from_prior: dict[Config, float] = {}  # asked from the prior -> best ms here when asked
        self.misses = 0
        super().__init__(space, seed, history)
        self.name = "transfer"
        self._prior_queue = nearest_bests(self.prior, space, queue, shapes)

    @property
    def prior_left(self) -> list[Config]:
        """The prior configs still to propose (empty once done or dropped)."""
        return [c for c in self._prior_queue if not self.known(c)]

    def _propose(self, k: int) -> list[Config]:
        out: list[Config] = []
        best = self.best
        best_ms = best[1] if best else float("inf")
        while self._prior_queue and len(out) < max(1, k // 4):
            config = self._prior_queue.pop(0)
            if not self.known(config):
                out.append(config)
                self._from_prior[config] = best_ms
        for config in out:
            self.pending.add(config)  # so that the bandit's proposals do not repeat them
        try:
            rest = super()._propose(k - len(out)) if len(out) < k else []
        finally:
            self.pending.difference_update(out)
        return out + rest

    def _observe(self, config: Config, ms: float | None) -> None:
        best_then = self._from_prior.pop(config, None)
        if best_then is not None:
            pays = ms is not None and ms <= best_then * (1 + PAYS)
            self.misses = 0 if pays else self.misses + 1
            if self.misses >= PATIENCE:
                self._prior_queue.clear()
        super()._observe(config, ms)
