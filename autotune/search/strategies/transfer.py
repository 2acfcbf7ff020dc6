"""``transfer``: the best configs of the nearest tuned shapes of the kernel, tried here only
while what they measure here beats what plain search measures beside them.

Configs fast at a nearby shape are often fast here (the premise of the lookup ladder,
:mod:`autotune.runtime.lookup`), but not always: matmul_warp's bests at 2048^3 and
3333x2222x1111 are 2.4-3.5 times slower than the optimum at 1024^3, slower than most configs
there (rank correlation of the two tables: about 0). Distance alone cannot tell these apart, so
the prior has to earn its place with measurements here, and random search's expected best
(what the methodology score P calls 0) leaves room for very few configs spent on a wrong one.

The plain search is ``tpe`` (option ``then``, the strategy issue 35's replay of transfer
measured; not the default strategy ``tpe_local``), built through the registry and told every config measured here (the prior's
included); the other shapes' times never enter its model (no warm start). Transfer decides,
slot by slot, whether a config comes from the prior's queue or from the plain search:

1. The queue: the best configs of the :data:`SHAPES` nearest shapes (the history's
   observations of other shapes, by the ladder's distance), at most :data:`QUEUE` of them
   valid in this space: shape ``i`` (0 = the nearest)'s ``r``-th best at key ``r (i + 1) + i``
   (ties: the nearer shape first), so the nearest shape's bests come about twice as often as
   the next one's: its best, its second best, the next shape's best, ...
2. Control first: no queued config is proposed before :data:`PROBE` configs of the plain
   search (*controls*: every config measured here that is not queued, the kernel's default
   included where it is not a prior config) are asked. Until the verdict (step 3), at most
   :data:`FIRST` prior configs are asked or measured (the default counts where it is queued).
   So where the optimum is one of the nearest shape's two bests, it is measured within
   ``PROBE + 2`` configs (5), the default first or not, at batch 1 and in a first batch of 16.
3. The verdict, from the configs measured here: once at least one prior config and
   :data:`PROBE` controls are measured, the prior is *trusted* if its best time here is at most
   ``1 + SLACK`` times the controls' best (:data:`SLACK`), else *dropped* for the rest of the
   search. A trusted prior takes every slot until its queue is done. A prior config that does
   not *pay* (within :data:`PAYS` of the best time measured here when it was asked) is a miss
   of its shape; after :data:`PATIENCE` misses in a row, the rest of that shape's queue is dropped.
4. Every other slot goes to the plain search; once a trusted prior's queue is done, to local
   search around the best configs measured, the prior's that paid among them (``bandit``,
   :mod:`autotune.search.strategies.bandit`, told every config too).

So a prior that misleads costs at most :data:`FIRST` configs, measured after :data:`PROBE`
controls (where a config wasted costs less against random search than at the start); one
dropped before any of its configs is asked (batch 1, the default measured first and the
prior's best) leaves the plain search measuring exactly what it measures alone. Options
(``strategy_options``): ``queue``, ``shapes``, ``probe``, ``slack``, ``then``. Measured with
``benchmarks/search_replay.py --ours transfer`` (benchmarks/results/2026-11-27_cpu_search_replay_transfer.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies.base import Known, Strategy

__all__ = ["Transfer", "QUEUE", "SHAPES", "PROBE", "FIRST", "SLACK", "PAYS", "PATIENCE", "nearest_bests"]

QUEUE = 8
"""Most configs queued from the nearest shapes' bests."""
SHAPES = 4
"""Nearest shapes whose bests are queued."""
PROBE = 3
"""Controls (the plain search's configs) asked before any prior config, and measured before the verdict."""
FIRST = 2
"""Most prior configs asked or measured before the verdict."""
SLACK = 0.05
"""The prior is trusted when its best here is at most (1 + SLACK) times the controls' best (0 dropped
matmul_warp 3333x2222x1111's good prior in about 1 run of 5: the best of 3 random configs there
beats its default, the nearest shape's best, 1 time in 5)."""
PAYS = 0.02
"""A prior config pays when its time is at most (1 + PAYS) times the best measured here when it was asked."""
PATIENCE = 2
"""Misses in a row of one shape's prior configs before the rest of that shape's queue is dropped."""

OPEN, TRUSTED, DROPPED = "open", "trusted", "dropped"


def _by_shape(prior: Iterable[Known]) -> list[list[Known]]:
    """The ok observations grouped by shape, nearest shape first, each fastest first."""
    shapes: dict[tuple, list[Known]] = {}
    for k in prior:
        if k.ms is not None and k.ms > 0:
            shapes.setdefault((k.distance, str(k.shape)), []).append(k)
    return [sorted(group, key=lambda k: (k.ms, k.config)) for _, group in sorted(shapes.items())]


def _queue(prior: Iterable[Known], space: SearchSpace, limit: int, shapes: int) -> list[tuple[Config, int]]:
    """(config, shape index) of the queue (module doc, step 1): valid in ``space``, no repeats."""
    keyed = []
    for i, group in enumerate(_by_shape(prior)[:shapes]):
        valid: list[Config] = []  # r counts the shape's configs valid here
        for k in group:
            config = Config(space.kernel, k.config.macros)
            if len(valid) < limit and config not in valid and not space.violations(config):
                valid.append(config)
        keyed += [(r * (i + 1) + i, i, r, config) for r, config in enumerate(valid)]
    out: list[tuple[Config, int]] = []
    for *_, i, _, config in sorted(keyed, key=lambda t: t[:3]):
        if len(out) < limit and config not in dict(out):
            out.append((config, i))
    return out


def nearest_bests(prior: Iterable[Known], space: SearchSpace, limit: int = QUEUE, shapes: int = SHAPES
                  ) -> list[Config]:
    """The configs transfer queues (module doc, step 1), in order: valid in ``space``, without
    repeats, at most ``limit``, from the ``shapes`` nearest shapes of ``prior`` (other shapes'
    :class:`~autotune.search.strategies.base.Known` observations; failed ones are skipped)."""
    return [c for c, _ in _queue(prior, space, limit, shapes)]


class Transfer(Strategy):
    """The ``transfer`` strategy (module doc). ``ask``/``tell`` as every :class:`Strategy`.

    Its options (``strategy_options``): ``queue`` (:data:`QUEUE`), ``shapes`` (:data:`SHAPES`),
    ``probe`` (:data:`PROBE`), ``slack`` (:data:`SLACK`), ``then`` (the registry's).

    Args:
        then: ``then(space, seed)`` -> the plain search (a :class:`Strategy` with no history);
            the registry gives the default strategy. ``None``: ``bandit``.

    Attributes (besides the base's):
        verdict: ``"open"`` (not yet decided), ``"trusted"`` or ``"dropped"`` (step 3).
        plain: the plain search, told every config told here.
        local: the ``bandit`` search after a trusted prior (step 4), told every config too.
        from_prior: the configs it asked from the prior's queue, in order.
    """

    name = "transfer"

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = (), *, queue: int = QUEUE,
                 shapes: int = SHAPES, probe: int = PROBE, slack: float = SLACK,
                 then: Callable[[SearchSpace, int | None], Strategy] | None = None) -> None:
        if then is None:
            from autotune.search.strategies.bandit import Bandit

            then = Bandit
        self.plain: Strategy = then(space, seed)
        from autotune.search.strategies.bandit import Bandit

        self.local: Strategy = Bandit(space, seed)
        self.probe, self.slack = probe, slack
        self.verdict = OPEN
        self._prior_queue: list[tuple[Config, int]] = []
        self._shape_of: dict[Config, int] = {}
        self._asked_at: dict[Config, float] = {}  # prior config asked -> best ms here when asked
        self._misses: dict[int, int] = {}
        self.from_prior: list[Config] = []
        super().__init__(space, seed, history)
        self._prior_queue = _queue(self.prior, space, queue, shapes)
        self._shape_of = dict(self._prior_queue)
        self._judge()

    @property
    def prior_left(self) -> list[Config]:
        """The prior configs still to propose (empty once done or dropped)."""
        if self.verdict == DROPPED:
            return []
        return [c for c, _ in self._prior_queue if not self.known(c)]

    def _counts(self) -> tuple[int, int]:
        """(controls known, prior configs known): told or asked."""
        known = [*self.told, *self.pending]
        prior = sum(1 for c in known if c in self._shape_of)
        return len(known) - prior, prior

    def _best(self, prior: bool) -> tuple[int, float]:
        """(configs measured, best ms) of the prior's configs (``prior``) or of the controls."""
        times = [ms for c, ms in self.told.items() if (c in self._shape_of) == prior]
        return len(times), min((ms for ms in times if ms is not None), default=math.inf)

    def _judge(self) -> None:
        """Step 3 of the module doc: the verdict once both sides are measured."""
        if self.verdict != OPEN:
            return
        n_prior, best_prior = self._best(True)
        n_control, best_control = self._best(False)
        if n_prior and n_control >= self.probe:
            self.verdict = TRUSTED if best_prior <= best_control * (1 + self.slack) else DROPPED

    def _next_prior(self, taken: set[Config]) -> Config | None:
        while self._prior_queue:
            config, shape = self._prior_queue[0]
            if (self.known(config) or self.plain.known(config) or config in taken
                    or self._misses.get(shape, 0) >= PATIENCE):
                self._prior_queue.pop(0)
                continue
            return config
        return None

    def _propose(self, k: int) -> list[Config]:
        controls, priors = self._counts()
        slots: list[str] = []
        for _ in range(k):  # which slot is the prior's (module doc, steps 2-4)
            take = (self.verdict != DROPPED and controls >= self.probe
                    and (self.verdict == TRUSTED or priors < FIRST))
            slots.append("prior" if take else "plain")
            priors, controls = (priors + 1, controls) if take else (priors, controls + 1)
        best = self.best
        best_ms = best[1] if best else math.inf
        out: list[Config] = []
        i = 0
        while i < len(slots):
            run = 1
            while i + run < len(slots) and slots[i + run] == slots[i]:
                run += 1
            if slots[i] == "prior":
                mine: list[Config] = []
                while len(mine) < run and (config := self._next_prior({*out, *mine})) is not None:
                    self._prior_queue.pop(0)
                    mine.append(config)
                    self._asked_at[config] = best_ms
                if mine:
                    self._hold(mine, None)
                    out += mine
                    self.from_prior += mine
                run_left = run - len(mine)  # the queue ran out: the plain search fills the slots
            else:
                run_left = run
            if run_left:
                search = self.local if self.verdict == TRUSTED and not self.prior_left else self.plain
                got = search.ask(run_left)
                self._hold(got, search)
                out += got
            i += run
        return out

    def _hold(self, configs: list[Config], source: Strategy | None) -> None:
        """``configs`` are asked (from ``source``, or from the prior): every other search holds
        them in flight (asked through its queue), so that none proposes them again."""
        for search in (self.plain, self.local):
            new = [c for c in configs if not search.known(c)] if search is not source else []
            if new:
                search.enqueue(new, first=True)
                got = search.ask(len(new))
                if got != new:
                    raise AssertionError(f"transfer: {search.name} returned {got} for {new}")

    def _asked(self, config: Config) -> None:
        """A config queued by the search loop (the kernel's default) is asked: the plain
        searches hold it in flight too."""
        self._hold([config], None)

    def tell(self, config: Config, ms: float | None) -> None:
        """``config`` took ``ms`` (median ms per launch), or failed (``None``); the plain searches are told too."""
        self.plain.tell(config, ms)
        self.local.tell(config, ms)
        super().tell(config, ms)

    def _observe(self, config: Config, ms: float | None) -> None:
        best_then = self._asked_at.pop(config, None)
        if best_then is not None:
            shape = self._shape_of[config]
            pays = ms is not None and ms <= best_then * (1 + PAYS)
            self._misses[shape] = 0 if pays else self._misses.get(shape, 0) + 1
        self._judge()
