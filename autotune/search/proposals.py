"""What a search measures besides the sampler's own proposals, and how it knows it is done.

- The kernel's default config is queued first in every study that has not measured it
  (``Study.enqueue_trial``), so a stored best is never slower than the default beyond the
  noise: a short TPE search cannot miss it.
- ``grid`` queues, after the default, the first valid config not measured in the space's
  order, one at a time (after each trial the next), and refuses a space of more than
  :data:`GRID_LIMIT` valid configs at once.
- A sampler that keeps proposing configs already measured (or breaking the constraints) costs
  no measurement, but could spin for ever on a nearly measured space: after
  :data:`MAX_IDLE` such proposals in a row the search queues an unmeasured config itself: a
  random one (seeded, :class:`Shuffled`) where the space has at most :data:`GRID_LIMIT` valid
  configs, else the first in the space's order; when there is none the space is exhausted.
  (In a tightly constrained space, such as matmul_warp's 22,944 valid of 1.3 million
  combinations, TPE and random mostly propose constraint breakers: the search then behaves
  like a random search over the valid configs, not like a walk from the space's first corner.)

Nothing here enumerates a whole space up front: :class:`Unmeasured` walks
:meth:`~autotune.kernel.space.SearchSpace.iter_configs` lazily, so a space of 10^8 raw
combinations starts measuring at once.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace

__all__ = ["GRID_LIMIT", "MAX_IDLE", "Shuffled", "Unmeasured", "check_grid", "default_config", "enqueue"]

GRID_LIMIT = 100_000
"""Most valid configs a grid search (``autotune sweep``) measures; a larger space is refused."""

MAX_IDLE = 20
"""Proposals in a row that measure nothing (repeats, constraint breakers) after which the
search picks the next unmeasured config itself."""


def check_grid(space: SearchSpace) -> int:
    """The number of valid configs of ``space``, for a grid search over all of them; counts
    no further than :data:`GRID_LIMIT` + 1.

    Raises:
        InvalidInputError: more than :data:`GRID_LIMIT` valid configs (naming the raw size).
    """
    count = space.count(GRID_LIMIT)
    if count > GRID_LIMIT:
        where = f" in {space.path}" if space.path else ""
        raise InvalidInputError(
            f"the space{where} has more than {GRID_LIMIT:,} valid configs ({space.raw_size:,} combinations before "
            f"its constraints); a sweep measures at most {GRID_LIMIT:,}: use search (tpe or random) or narrow "
            "the space")
    return count


def default_config(kernel: str, space: SearchSpace) -> Config | None:
    """The default config of the kernel called ``kernel`` if ``space`` holds it, else ``None``."""
    from autotune.kernel.catalog import get_kernel

    try:
        config = get_kernel(kernel).default_config()
    except InvalidInputError:  # a kernel of another process, not loaded here
        return None
    return None if space.violations(config) else config


def enqueue(study, configs: Iterable[Config], seen: Mapping[Config, object]) -> int:
    """Queue (``Study.enqueue_trial``) each of ``configs`` the study has neither measured
    (``seen``) nor queued yet, in order; returns how many were queued."""
    from optuna.trial import TrialState

    queued = {tuple(sorted(t.system_attrs.get("fixed_params", {}).items()))
              for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))}
    n = 0
    for config in configs:
        if config not in seen and config.macros not in queued:
            study.enqueue_trial(config.as_dict())
            queued.add(config.macros)
            n += 1
    return n


class Unmeasured:
    """The valid configs of ``space`` not in ``seen`` (which only grows), in the space's order,
    walked lazily: :meth:`peek` costs, over a whole search, one walk of the space at most."""

    def __init__(self, space: SearchSpace, seen: Mapping[Config, object]) -> None:
        self._configs = space.iter_configs()
        self._seen = seen
        self._next: Config | None = None

    def peek(self) -> Config | None:
        """The first valid config not measured yet (``None``: every valid config is measured)."""
        while self._next is None or self._next in self._seen:
            self._next = next(self._configs, None)
            if self._next is None:
                return None
        return self._next


class Shuffled:
    """The valid configs of ``space`` not in ``seen``, in a random order fixed by ``seed``
    (the space is enumerated once, at the first :meth:`peek`); a space of more than
    :data:`GRID_LIMIT` valid configs is walked in its own order instead (:class:`Unmeasured`)."""

    def __init__(self, space: SearchSpace, seen: Mapping[Config, object], seed: int | None) -> None:
        self._space, self._seen, self._seed = space, seen, seed
        self._order: list[Config] | None = None
        self._walk: Unmeasured | None = None

    def peek(self) -> Config | None:
        """An unmeasured valid config (``None``: every valid config is measured)."""
        if self._order is None and self._walk is None:
            if self._space.count(GRID_LIMIT) > GRID_LIMIT:
                self._walk = Unmeasured(self._space, self._seen)
            else:
                self._order = self._space.configs()
                random.Random(self._seed).shuffle(self._order)
                self._order.reverse()  # popped from the end
        if self._walk is not None:
            return self._walk.peek()
        while self._order and self._order[-1] in self._seen:
            self._order.pop()
        return self._order[-1] if self._order else None
