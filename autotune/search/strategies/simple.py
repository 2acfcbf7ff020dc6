"""The strategies that need no model: ``grid`` (the space's order) and ``random`` (uniform
over the valid configs)."""

from __future__ import annotations

import random
from collections.abc import Iterable

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.proposals import GRID_LIMIT, Unmeasured
from autotune.search.strategies.base import Strategy

__all__ = ["Grid", "Random", "draw_unknown", "grid", "random_configs"]

RAW_TRIES = 64
"""Raw random combinations tried for a valid unknown one (a space too large to enumerate)
before a random point is solved to its nearest valid config."""


class _Known:
    """``config in _Known(strategy)``: whether the strategy knows it (for :class:`Unmeasured`)."""

    def __init__(self, strategy: Strategy) -> None:
        self._s = strategy

    def __contains__(self, config: object) -> bool:
        return self._s.known(config)  # type: ignore[arg-type]


class Grid(Strategy):
    """Every valid config in the space's order (:meth:`~autotune.kernel.space.SearchSpace.iter_configs`),
    walked lazily (a space of 10^8 raw combinations starts at once). ``part=(i, n)``: worker
    ``i`` of ``n`` on one study walks its share first (:class:`~autotune.search.proposals.Unmeasured`),
    ``last`` after all others (another worker measures it first: the kernel's default)."""

    name = "grid"

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = (),
                 part: tuple[int, int] = (0, 1), last: Config | None = None) -> None:
        self._walk = Unmeasured(space, _Known(self), part, last=last)
        super().__init__(space, seed, history)

    def _propose(self, k: int) -> list[Config]:
        out = []
        while len(out) < k and (config := self._walk.peek()) is not None:
            out.append(config)
            self.pending.add(config)  # so that peek walks past it
        self.pending.difference_update(out)
        return out


class Random(Strategy):
    """Uniform over the valid configs not known, in an order fixed by ``seed``: a shuffle of
    the valid configs where the space holds at most :data:`~autotune.search.proposals.GRID_LIMIT`
    (enumerated once, at the first ask), else random raw combinations, a valid unknown one
    kept (:data:`RAW_TRIES` tries), else a random point solved to its nearest valid config."""

    name = "random"

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = ()) -> None:
        self._rng = random.Random(seed)
        self._order: list[Config] | None = None
        self._large = False
        super().__init__(space, seed, history)

    def _propose(self, k: int) -> list[Config]:
        if self._order is None and not self._large:
            self._large = self.space.count(GRID_LIMIT) > GRID_LIMIT
            if not self._large:  # the space keeps its list: the next strategy on it (a replay) reuses it
                listed = self.space.configs()
                self._rng.shuffle(listed)
                self._order = listed[::-1]  # popped from the end
        out: list[Config] = []
        while len(out) < k:
            config = self._next_listed() if self._order is not None else self._next_drawn(set(out))
            if config is None:
                break
            out.append(config)
        return out

    def _next_listed(self) -> Config | None:
        while self._order and self.known(self._order[-1]):
            self._order.pop()
        return self._order.pop() if self._order else None

    def _next_drawn(self, also: set[Config]) -> Config | None:
        return draw_unknown(self, self._rng, also)


def draw_unknown(strategy: Strategy, rng: random.Random, also: set[Config], solve: bool = True) -> Config | None:
    """A valid config of ``strategy``'s space, neither known to it nor in ``also``: up to
    :data:`RAW_TRIES` draws of each macro uniformly (rejection sampling); where none is valid,
    the unknown config nearest the last draw (``solve``) or ``None``."""
    space, point = strategy.space, {}
    for _ in range(RAW_TRIES):
        point = {name: rng.choice(values) for name, values in space.params}
        if space.holds(point):  # the constraints first: most draws of a large space break one
            config = Config.of(space.kernel, point)
            if not strategy.known(config) and config not in also:
                return config
    return strategy.nearest_unknown(point, also) if solve else None


def grid(space: SearchSpace, seed: int | None, history: Iterable, part: tuple[int, int] = (0, 1),
         last: Config | None = None, objectives: int = 1) -> Strategy:
    """The ``grid`` strategy's factory (its traits say ``partitions`` and ``pareto``: it reads no value)."""
    return Grid(space, seed, history, part=part, last=last)


def random_configs(space: SearchSpace, seed: int | None, history: Iterable, objectives: int = 1) -> Strategy:
    """The ``random`` strategy's factory (its traits say ``pareto``: it reads no value)."""
    return Random(space, seed, history)
