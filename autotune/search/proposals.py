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

import itertools
import random
from collections.abc import Iterable, Mapping

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace

__all__ = ["GRID_LIMIT", "MAX_IDLE", "Shuffled", "Unmeasured", "check_grid", "default_config", "enqueue", "taken"]

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


def taken(study, running: bool = False) -> set[tuple]:
    """The macros (``Config.macros``) of the configs queued in the study's waiting trials
    and, ``running``, of those in flight in its running trials (of any worker)."""
    from optuna.trial import TrialState

    states = (TrialState.WAITING, TrialState.RUNNING) if running else (TrialState.WAITING,)
    held = set()
    for t in study.get_trials(deepcopy=False, states=states):
        held.add(tuple(sorted(t.system_attrs.get("fixed_params", {}).items())))
        if t.state == TrialState.RUNNING:
            held.add(tuple(sorted(t.params.items())))
    return held


def enqueue(study, configs: Iterable[Config], seen: Mapping[Config, object], running: bool = False,
            held: set[tuple] | None = None) -> int:
    """Queue (``Study.enqueue_trial``) each of ``configs`` the study has neither measured
    (``seen``) nor queued yet, in order; returns how many were queued. ``running``: nor one
    in flight in a trial of another worker on the study (several GPUs: a worker's next config
    may have been taken from the queue by another; a trial left RUNNING by a dead worker
    holds its config back until Optuna's heartbeat fails it). ``held``: :func:`taken`, read
    once by a caller that tries several configs in turn (it is updated with those queued)."""
    held = taken(study, running) if held is None else held
    n = 0
    for config in configs:
        if config not in seen and config.macros not in held:
            study.enqueue_trial(config.as_dict())
            held.add(config.macros)
            n += 1
    return n


class Unmeasured:
    """The valid configs of ``space`` not in ``seen`` (which only grows), in the space's order,
    walked lazily: :meth:`peek` costs, over a whole search, one walk of the space at most.

    ``part=(i, n)``: worker ``i`` of ``n`` searching one study (several GPUs) walks its share
    first, the valid configs whose position in the space's order is ``i`` modulo ``n``, then
    the others that no worker has measured by then, from the end of the space backwards
    (forwards in a space of more than :data:`GRID_LIMIT` valid configs), so that the workers
    of a grid measure disjoint configs until their shares run out, and a worker done early
    meets the others' walks from their far end: two walks of the space at most. ``last``: a
    config walked after all others (another worker measures it first: the kernel's default)."""

    def __init__(self, space: SearchSpace, seen: Mapping[Config, object], part: tuple[int, int] = (0, 1),
                 last: Config | None = None) -> None:
        i, n = part
        if not 0 <= i < n:
            raise ValueError(f"part {part!r}: give (i, n) with 0 <= i < n")
        self._configs = space.iter_configs()
        if n > 1:
            mine = (c for k, c in enumerate(space.iter_configs()) if k % n == i and c != last)
            others = (c for k, c in enumerate(space.iter_configs()) if k % n != i and c != last)
            if space.count(GRID_LIMIT) <= GRID_LIMIT:
                others = reversed(list(others))
            self._configs = itertools.chain(mine, others, [last] if last is not None else [])
        self._seen = seen
        self._next: Config | None = None

    def skip(self) -> None:
        """Walk past the config :meth:`peek` gave (it is measured elsewhere: another worker's trial)."""
        self._next = None

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
