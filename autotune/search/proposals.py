"""What a search measures besides its strategy's own proposals, and the walk of a space.

- The kernel's default config (:func:`default_config`) is measured first in every study that
  has not measured it, so a stored best is never slower than the default beyond the noise: a
  short search cannot miss it (:class:`autotune.search.tuner.Tuner` queues it).
- A grid (:class:`autotune.search.strategies.simple.Grid`) walks the valid configs in the
  space's order, lazily (:class:`Unmeasured`: a space of 10^8 raw combinations starts
  measuring at once), and refuses a space of more than :data:`GRID_LIMIT` valid configs
  (:func:`check_grid`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace

__all__ = ["GRID_LIMIT", "Unmeasured", "check_grid", "default_config"]

GRID_LIMIT = 100_000
"""Most valid configs a grid search (``autotune sweep``) measures; a larger space is refused."""

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
