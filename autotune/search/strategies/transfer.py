"""``transfer``: the best configs of the nearest tuned shapes of the kernel, tried here only
while what they measure here beats what plain search measures beside them.

Configs fast at a nearby shape are often fast here (the premise of the lookup ladder,
:mod:`autotune.runtime.lookup`), but not always: matmul_warp's bests at 2048^3 and
3333x2222x1111 are 2.4-3.5 times slower than the optimum at 1024^3, slower than most configs
there (rank correlation of the two tables: about 0), and softmax_rows_flags 1000x3001's ten
percent best configs sit, on average, at the 63rd percentile of 4096x1024. Distance alone cannot
tell these apart, so the prior has to earn its place with measurements here, and random
search's expected best (what the methodology score P calls 0) leaves room for very few configs
spent on a wrong one.

The plain search is the default strategy (option ``then``; :data:`~autotune.search.strategies.registry.DEFAULT_STRATEGY`,
``tpe_local``), built through the registry and told every config measured here (the prior's
included); the other shapes' times never enter its model (no warm start), so that once the
prior is dropped, transfer is the default search. Transfer decides, slot by slot, whether a
config comes from the prior's queue or from the plain search:

1. The queue: the best configs of the :data:`SHAPES` nearest shapes (the history's
   observations of other shapes, by the ladder's distance), at most :data:`QUEUE` of them
   valid in this space: shape ``i`` (0 = the nearest)'s ``r``-th best at key ``r (i + 1) + i``
   (ties: the nearer shape first), so the nearest shape's bests come about twice as often as
   the next one's: its best, its second best, the next shape's best, ...
2. Control first: no queued config is proposed before :data:`PROBE` configs of the plain
   search (*controls*: every config the plain search proposed, queued or not, and every
   other config measured here that is not queued, the kernel's default included where it is
   not a prior config) are asked. Until the verdict (step 3), at most
   :data:`FIRST` prior configs are asked or measured (the default counts where it is queued),
   the rest of a batch of 16 being the plain search's. So where the optimum is one of the
   nearest shape's two bests, it is measured within ``PROBE + 2`` configs (5), the default
   first or not, at batch 1 and in a first batch of 16.
3. The verdict, from the configs measured here, renewed at every config told: once at least
   one prior config and :data:`PROBE` controls are measured, the prior is *trusted* while its
   best time here is at most ``1 + SLACK`` times the controls' best (:data:`SLACK`), and
   *dropped* for the rest of the search as soon as it is not, once trusted, or, before that,
   once :data:`FIRST` of its configs (all it has, if fewer) are measured and none is: a
   nearest shape's best that is slow here does not drop its second best, the optimum on some
   tables (matmul_warp's, smem_vec 6144x3072's), before it is measured. A trusted prior takes a share
   :data:`SHARE` of the slots (every other one, its own first), interleaved with the plain search's, until
   its queue is done: the controls measured beside it keep testing it, so a prior that only
   beat a few controls by luck (softmax_rows_flags 4096x1024 at batch 1: its bests, at 1.16
   times the optimum, beat the default and two random configs in 8 runs of 20) is dropped
   once the plain search finds better, at the cost of about half the configs until then. A
   prior config that does not *pay* (within :data:`PAYS` of the best time measured here when
   it was asked) is a miss of its shape; after :data:`PATIENCE` misses in a row, the rest of
   that shape's queue is dropped.
4. Every other slot goes to the plain search, in one ``ask`` per batch (so that without a
   prior, or once it is dropped, transfer asks exactly what the plain search asks alone).

So a prior that misleads costs at most :data:`FIRST` configs before the verdict, measured
after :data:`PROBE` controls, and then at most every other config while it keeps beating the
controls' best.

Sources: seeding a search with the best configs of the nearest related problems is the
meta-learned initialisation of M. Feurer, J. T. Springenberg and F. Hutter, "Initializing
Bayesian hyperparameter optimization via meta-learning" (AAAI 2015), whose neighbours are
ordered by a distance (here the lookup ladder's shape distance,
:func:`autotune.kernel.dims.shape_distance`); weighing a related problem by how well it
does on the configs measured on this one, not by its distance alone, is the idea of
M. Feurer, B. Letham and E. Bakshy's ranking-weighted ensemble (RGPE, "Scalable meta-learning
for Bayesian optimization", arXiv:1802.02219, 2018), here reduced to one comparison of best
times against the plain search's configs measured in the same batches. Options
(``strategy_options``): ``queue``, ``shapes``, ``probe``, ``slack``, ``first``, ``share``,
``then``. How the constants were chosen, and what ``transfer`` scores: benchmarks/README.md,
"The search strategies' evidence".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies.base import Known, Strategy
from autotune.search.strategies.registry import DEFAULT_STRATEGY, make_strategy
from autotune.search.strategies.traits import StrategyOption

__all__ = ["Transfer", "QUEUE", "SHAPES", "PROBE", "FIRST", "SLACK", "SHARE", "PAYS", "PATIENCE", "OPTIONS",
           "nearest_bests", "transfer"]

QUEUE = 8
"""Most configs queued from the nearest shapes' bests."""
SHAPES = 4
"""Nearest shapes whose bests are queued."""
PROBE = 3
"""Controls (the plain search's configs) asked before any prior config, and measured before the verdict."""
FIRST = 2
"""Most prior configs asked or measured before the verdict; a prior that has not won (its best
here slower than the controls') is dropped once this many of its configs are measured."""
SLACK = 0.0
"""The prior is trusted while its best here is at most (1 + SLACK) times the controls' best. 0: while
it is at least as fast as every control measured (a larger slack kept a mediocre prior too long:
benchmarks/README.md, "The search strategies' evidence")."""
SHARE = 0.5
"""Share of the slots a trusted prior takes (the rest: the plain search's controls), until its queue is done."""
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
    ``probe`` (:data:`PROBE`), ``slack`` (:data:`SLACK`), ``first`` (:data:`FIRST`), ``share``
    (:data:`SHARE`), ``then`` (the registry's).

    Args:
        then: ``then(space, seed)`` -> the plain search (a :class:`Strategy` with no history);
            the registry gives the default strategy. ``None``: ``bandit``.

    Attributes (besides the base's):
        verdict: ``"open"`` (not yet decided), ``"trusted"`` or ``"dropped"`` (step 3).
        plain: the plain search, told every config told here.
        from_prior: the configs it asked from the prior's queue, in order.
    """

    name = "transfer"

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = (), *, queue: int = QUEUE,
                 shapes: int = SHAPES, probe: int = PROBE, slack: float = SLACK, first: int = FIRST,
                 share: float = SHARE, then: Callable[[SearchSpace, int | None], Strategy] | None = None) -> None:
        if then is None:
            from autotune.search.strategies.bandit import Bandit

            then = Bandit
        self.plain: Strategy = then(space, seed)
        self.probe, self.slack, self.first, self.share = probe, slack, first, share
        self.verdict = OPEN
        self._trusted_slots = 0  # slots decided while the prior is trusted
        self._prior_queue: list[tuple[Config, int]] = []
        self._shape_of: dict[Config, int] = {}
        self._plain_asked: set[Config] = set()  # the plain search's proposals: controls, queued or not
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
        prior = sum(1 for c in known if self._is_prior(c))
        return len(known) - prior, prior

    def _best(self, prior: bool) -> tuple[int, float]:
        """(configs measured, best ms) of the prior's configs (``prior``) or of the controls."""
        times = [ms for c, ms in self.told.items() if self._is_prior(c) == prior]
        return len(times), min((ms for ms in times if ms is not None), default=math.inf)

    def _judge(self) -> None:
        """Step 3 of the module doc: the verdict once both sides are measured, renewed at every
        config told until the prior is dropped."""
        if self.verdict == DROPPED:
            return
        n_prior, best_prior = self._best(True)
        n_control, best_control = self._best(False)
        if not n_prior or n_control < self.probe:
            return
        if best_prior <= best_control * (1 + self.slack):
            self.verdict = TRUSTED
        elif self.verdict == TRUSTED or n_prior >= self.first or not self._more_prior():
            self.verdict = DROPPED

    def _more_prior(self) -> bool:
        """Whether a prior config is left to ask or is asked and not yet measured."""
        return any(self._is_prior(c) for c in self.pending) or self._next_prior(set()) is not None

    def _is_prior(self, config: Config) -> bool:
        """A prior config: in the queue, and not a proposal of the plain search (a control)."""
        return config in self._shape_of and config not in self._plain_asked

    def _next_prior(self, taken: set[Config]) -> Config | None:
        while self._prior_queue:
            config, shape = self._prior_queue[0]
            if (self.known(config) or self.plain.known(config) or config in taken
                    or self._misses.get(shape, 0) >= PATIENCE):
                self._prior_queue.pop(0)
                continue
            return config
        return None

    def _take(self, controls: int, priors: int) -> bool:
        """Whether the next slot is the prior's (steps 2-3), given the controls and prior configs known."""
        if self.verdict == TRUSTED:  # SHARE of the slots, interleaved, the prior first: with 0.5, every other one
            n = self._trusted_slots + 1
            self._trusted_slots += 1
            return int((n + 1) * self.share) > int(n * self.share)
        return self.verdict == OPEN and controls >= self.probe and priors < self.first

    def _propose(self, k: int) -> list[Config]:
        controls, priors = self._counts()
        best = self.best
        best_ms = best[1] if best else math.inf
        slots: list[Config | None] = []  # per slot, a prior config, or None: the plain search's
        mine: list[Config] = []
        for _ in range(k):
            config = self._next_prior(set(mine)) if self._take(controls, priors) else None
            if config is None:  # the plain search's (also where the queue ran out)
                controls += 1
            else:
                self._prior_queue.pop(0)
                mine.append(config)
                self._asked_at[config] = best_ms
                priors += 1
            slots.append(config)
        if mine:
            self._hold(mine)
            self.from_prior += mine
        got = self.plain.ask(slots.count(None)) if None in slots else []  # one ask: without a prior, the plain search
        self._plain_asked.update(got)
        plain = iter(got)
        return [c for c in (s if s is not None else next(plain, None) for s in slots) if c is not None]

    def _hold(self, configs: list[Config]) -> None:
        """``configs`` are asked from the prior (or queued by the search loop): the plain search
        holds them in flight (asked through its queue), so that it does not propose them again."""
        new = [c for c in configs if not self.plain.known(c)]
        if new:
            self.plain.enqueue(new, first=True)
            got = self.plain.ask(len(new))
            if got != new:
                raise AssertionError(f"transfer: {self.plain.name} returned {got} for {new}")

    def _asked(self, config: Config) -> None:
        """A config queued by the search loop (the kernel's default) is asked: the plain search
        holds it in flight too."""
        self._hold([config])

    def tell(self, config: Config, ms: float | None) -> None:
        """``config`` took ``ms`` (median ms per launch), or failed (``None``); the plain search is told too."""
        self.plain.tell(config, ms)
        super().tell(config, ms)

    def _observe(self, config: Config, ms: float | None) -> None:
        best_then = self._asked_at.pop(config, None)
        if best_then is not None:
            shape = self._shape_of[config]
            pays = ms is not None and ms <= best_then * (1 + PAYS)
            self._misses[shape] = 0 if pays else self._misses.get(shape, 0) + 1
        self._judge()


OPTIONS = (
    StrategyOption("queue", QUEUE, low=0, high=1000, doc="most configs queued from the nearest shapes' bests"),
    StrategyOption("shapes", SHAPES, low=1, high=1000, doc="nearest shapes whose bests are queued"),
    StrategyOption("probe", PROBE, low=1, high=1000, doc="the plain search's configs measured before the prior's "
                                                         "are judged (none of the prior's is asked before them)"),
    StrategyOption("slack", SLACK, low=0.0, high=10.0, doc="the prior is kept while its best here is at most "
                                                           "1 + slack times the controls' best"),
    StrategyOption("first", FIRST, low=1, high=1000, doc="most of the prior's configs asked or measured before "
                                                         "its verdict"),
    StrategyOption("share", SHARE, low=0.0, high=1.0, doc="share of the slots a trusted prior takes, interleaved "
                                                          "with the plain search's, until its queue is done"),
    StrategyOption("then", DEFAULT_STRATEGY, choices=("tpe", "tpe_local", "bandit", "random"),
                   doc="the plain search, told every config; its configs are the prior's controls (the "
                       "default strategy)"))
"""The options of ``transfer`` (``strategy_options``), each defaulting to the constant above."""


def transfer(space: SearchSpace, seed: int | None, history: Iterable, then: str = DEFAULT_STRATEGY,
             **options: Any) -> Strategy:
    """The ``transfer`` strategy's factory: :class:`Transfer` over the plain search ``then``,
    built through the registry."""
    return Transfer(space, seed, history, then=lambda sp, sd: make_strategy(then, sp, sd), **options)
