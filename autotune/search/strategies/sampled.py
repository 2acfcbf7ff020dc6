"""Any Optuna sampler as a strategy: an in-memory study over the macros' positions.

Each macro is an integer parameter ``0 .. len(values) - 1`` (its ordinal: the position of the
value in the space's list, which is sorted), so TPE, GP and CMA-ES see the order of the
values, not unordered categories. The study lives in memory (Optuna's ``InMemoryStorage``):
no database, so a replay drives thousands of ask/tell calls on the CPU.

A proposal the sampler makes that breaks the constraints, or that is known already, costs
nothing: its in-memory trial is failed (Optuna's TPE and GP then ignore it) and the strategy
proposes instead the nearest valid unknown config (each macro tried in order of its ordinal
distance from the proposal: :meth:`autotune.kernel.space.SearchSpace.iter_configs` with
``near``), enqueued into the in-memory study as a fixed trial, so the model sees what is
measured. A config told without having been asked (history, another worker's) is added as a
finished trial.

A failed config (compile error, over the device's limits, wrong result, crash) is told to the
model as :data:`FAILED_PENALTY` times the slowest time told so far, so that the model ranks it
with the worst and steers away from where configs fail (a failed Optuna trial would be left
out of the model, which would keep proposing its neighbours). Before any time is known, a
failure is a failed in-memory trial.

Over several objectives (``objectives=2``: time and energy, a Pareto front), the in-memory study
has that many directions, each config is told a tuple of values, and a failed config counts
as :data:`FAILED_PENALTY` times the worst of each value told so far.

With ``local`` above 0 (``tpe:local=F``), once ``local_after`` configs are told (``tpe``: its
``startup``, so the climb starts from the best of the random start), a share ``F`` of the
proposals are instead one-macro
neighbours of the best config told so far (one macro to another of its values; the nearest
ordinals first, ties in random order), the step of a first-improvement hill climber; they are
enqueued into the study as fixed trials, so the model learns from them too: a hybrid of TPE
and a hill climber (the measurements behind it: benchmarks/README.md, "The search strategies'
evidence").

With ``start`` other than ``"sampler"``, while fewer than ``start_until`` configs are told (``tpe``:
its ``startup``; at batch 16 that is the whole first batch, asked before any is measured), the
proposals come from a start design over the VALID configs instead of the sampler (whose random
start draws each macro's ordinal on its own and solves an invalid draw to its nearest valid
config, which crowds the start onto the constraints' boundaries): ``"random"``, uniform over the
valid unknown configs; ``"spread"``, Mitchell's best-candidate sampling (Mitchell, "Spectrally
optimal sampling for distribution ray tracing", SIGGRAPH 1991), each proposal the one of
:data:`SPREAD_CANDIDATES` uniform valid candidates farthest (Euclidean, over the macros'
ordinals scaled to 0..1) from every config told, pending or proposed, a space-filling design
over the valid configs; ``"latin"``, the candidate whose macro values are the least covered so
far (each macro's values covered evenly across the start, a Latin hypercube's property, drawn
from valid configs only); ``"blend"``, of the least covered candidates the farthest. The
design's configs are enqueued into the study as fixed trials, so the model learns from them.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable
from dataclasses import replace

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies.base import Strategy
from autotune.search.strategies.traits import StrategyOption

__all__ = ["Sampled", "FAILED_PENALTY", "SPREAD_CANDIDATES", "START_DESIGNS", "TPE_OPTIONS", "TPE_LOCAL_OPTIONS",
           "GP_OPTIONS", "NSGA2_OPTIONS", "tpe", "tpe_local", "gp", "cmaes", "nsga2"]

FAILED_PENALTY = 2.0
"""A failed config counts, in the model, as this many times the slowest config told so far."""

START_DESIGNS = ("sampler", "random", "spread", "latin", "blend")
"""The values of ``start`` (module doc): the sampler's own start, or a design over the valid configs."""

SPREAD_CANDIDATES = 24
"""Uniform valid candidates drawn per proposal of a ``spread`` or ``latin`` start design."""

ENUMERATE_RAW = 100_000
"""A space of at most this many raw combinations is listed whole for the start design's uniform
draws (a valid config list built once per space); a larger one is drawn from by rejection
(:data:`autotune.search.strategies.simple.RAW_TRIES` raw combinations, then the nearest valid
config), so that proposing stays cheap on a space like matmul_warp's 22,944 valid configs of
1.3 million combinations."""


class Sampled(Strategy):
    """A strategy over ``sampler`` (an ``optuna.samplers.BaseSampler``), see the module doc.

    Args:
        local: the share (0..1) of proposals that are one-macro neighbours of the best config
            told so far instead of the sampler's (0: the sampler alone).
        local_after: configs told (history, the default and measured ones) before the first
            neighbour is proposed.
        start: the start design, one of :data:`START_DESIGNS` (module doc); ``"sampler"``: none.
        start_until: configs told before the design gives way to the sampler.
        centres: the local share's neighbours are those of this many best configs told, in turn.
        local_first: a batch lists its local proposals before the sampler's.

    Raises:
        ValueError: ``local`` outside 0..1 or ``start`` not one of :data:`START_DESIGNS` (the
            registry's option check says it first, as one ``error:`` line).
    """

    def __init__(self, space: SearchSpace, sampler, seed: int | None = None, history: Iterable = (),
                 name: str | None = None, objectives: int = 1, local: float = 0.0, local_after: int = 0,
                 start: str = "sampler", start_until: int = 0, centres: int = 1,
                 local_first: bool = False) -> None:
        import optuna

        if not 0.0 <= local <= 1.0:
            raise ValueError(f"local={local} is not allowed; give a share from 0 to 1")
        if start not in START_DESIGNS:
            raise ValueError(f"start={start!r} is not allowed; give one of {', '.join(START_DESIGNS)}")
        self._start, self._start_until = start, start_until
        self._local_first = local_first
        self._centres = max(1, centres)  # best configs whose neighbours the local share spreads over
        self._listed: list[Config] | None = None  # the valid configs (a start design's uniform draws)

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        self.name = name or type(sampler).__name__
        self.objectives = objectives
        self._values = {n: v for n, v in space.params}
        self._dists = {n: optuna.distributions.IntDistribution(0, len(v) - 1) for n, v in space.params}
        self._study = optuna.create_study(sampler=sampler, directions=["minimize"] * objectives)
        self._trials: dict[Config, object] = {}  # asked, in flight in the in-memory study
        self._local, self._proposed = local, 0  # share of proposals from the best's neighbours; proposals so far
        self._local_after = local_after  # configs told before the first local proposal
        self._rng = random.Random(seed)
        super().__init__(space, seed, history)

    def _ordinals(self, config: Config) -> dict[str, int]:
        return {n: self._values[n].index(v) for n, v in config.macros}

    def _fixed(self, config: Config):
        """An in-memory trial holding ``config`` (enqueued, then asked)."""
        self._study.enqueue_trial(self._ordinals(config))
        return self._ask()

    def _ask(self):
        with warnings.catch_warnings():  # e.g. TPE's multivariate mode, "experimental"
            warnings.simplefilter("ignore")
            return self._study.ask(self._dists)

    def _neighbours(self, also: list[Config]) -> list[Config]:
        """The valid one-macro neighbours of the best config told, neither known nor in ``also``:
        the nearest ordinals first (1 step, then 2...), each distance's in random order. With
        ``centres`` above 1, those of the ``centres`` best configs told, taken in turn (the
        best's first neighbour, the second best's first, ...), each once."""
        ranked = sorted(((ms, c) for c, ms in self.told.items() if ms is not None), key=lambda p: (p[0], p[1]))
        lists = [self._neighbours_of(c, also) for _, c in ranked[:self._centres]]
        out: dict[Config, None] = {}
        for i in range(max(map(len, lists), default=0)):
            out.update((ns[i], None) for ns in lists if i < len(ns))
        return list(out)

    def _neighbours_of(self, centre: Config, also: list[Config]) -> list[Config]:
        values, taken = centre.as_dict(), set(also)
        out = []
        for name, options in self.space.params:
            at = options.index(values[name])
            for i, v in enumerate(options):
                if i != at:
                    c = Config.of(self.space.kernel, {**values, name: v})
                    if not self.known(c) and c not in taken and not self.space.violations(c):
                        out.append((abs(i - at), self._rng.random(), c))
        return [c for _, _, c in sorted(out, key=lambda t: t[:2])]

    def _uniform(self, also: set[Config], solve: bool = True) -> Config | None:
        """A valid config, neither known nor in ``also``, uniform over those (see :data:`ENUMERATE_RAW`);
        in a space drawn from by rejection, ``None`` where no draw was valid and not ``solve``."""
        from autotune.search.strategies.simple import RAW_TRIES, draw_unknown

        if self.space.raw_size <= ENUMERATE_RAW:
            if self._listed is None:
                self._listed = self.space.configs()
            for _ in range(RAW_TRIES):
                config = self._rng.choice(self._listed) if self._listed else None
                if config is None or not (self.known(config) or config in also):
                    return config
            left = [c for c in self._listed if not self.known(c) and c not in also]  # a space nearly spent
            return self._rng.choice(left) if left else None
        return draw_unknown(self, self._rng, also, solve)

    def _scaled(self, config: Config) -> list[float]:
        return [i / max(1, len(self._values[n]) - 1) for n, i in self._ordinals(config).items()]

    def _designed(self, k: int) -> list[Config]:
        """Up to ``k`` configs of the start design (module doc)."""
        out: list[Config] = []
        seen = [*self.told, *self.pending]
        if self._start == "random":
            while len(out) < k and (c := self._uniform(set(out))) is not None:
                out.append(c)
            return out
        points = [self._scaled(c) for c in seen if not self.space.violations(c)]
        counts: dict[tuple[str, object], int] = {}
        for c in seen:
            for pair in c.macros:
                counts[pair] = counts.get(pair, 0) + 1
        while len(out) < k:
            taken = set(out)
            pool: list[Config] = []
            for _ in range(SPREAD_CANDIDATES):  # a rejected draw is dropped, not solved: solving is dear
                c = self._uniform(taken | set(pool), solve=False)
                if c is not None:
                    pool.append(c)
            if not pool and (c := self._uniform(taken)) is not None:
                pool.append(c)
            if not pool:
                break
            def gap(c: Config) -> float:
                x = self._scaled(c)
                return min((sum((a - b) ** 2 for a, b in zip(x, p)) for p in points), default=0.0)

            def cover(c: Config) -> int:
                return sum(counts.get(pair, 0) for pair in c.macros)

            if self._start == "spread":
                pick = max(pool, key=gap)
            elif self._start == "latin":
                pick = min(pool, key=cover)
            else:  # blend: the least covered, the farthest of those
                least = min(map(cover, pool))
                pick = max((c for c in pool if cover(c) == least), key=gap)
            out.append(pick)
            points.append(self._scaled(pick))
            for pair in pick.macros:
                counts[pair] = counts.get(pair, 0) + 1
        return out

    def _propose(self, k: int) -> list[Config]:
        from optuna.trial import TrialState

        if self._start != "sampler" and len(self.told) < self._start_until:
            out = self._designed(k)
            for config in out:
                self._trials[config] = self._fixed(config)
            return out
        out: list[Config] = []
        local: list[Config] | None = None  # the best's neighbours, found once per call
        climbed: set[Config] = set()  # the local ones of out
        while len(out) < k:
            if len(self.told) >= self._local_after:
                self._proposed += 1
            if self._proposed and int(self._proposed * self._local) > int((self._proposed - 1) * self._local):
                if local is None:
                    local = self._neighbours(out)
                local = [c for c in local if c not in out]
                if local:
                    config = local.pop(0)
                    self._trials[config] = self._fixed(config)
                    out.append(config)
                    climbed.add(config)
                    continue
                self._proposed -= 1  # none left (or no best yet): the model's, and the next is local
            trial = self._ask()
            point = {n: self._values[n][i] for n, i in trial.params.items()}
            config = Config.of(self.space.kernel, point)
            if self.known(config) or config in out or self.space.violations(config):
                self._study.tell(trial, state=TrialState.FAIL)  # not measured, not an observation
                config = self.nearest_unknown(point, set(out))
                if config is None:
                    break
                trial = self._fixed(config)
            self._trials[config] = trial
            out.append(config)
        if self._local_first:  # a batch's local proposals first: measured first, and first cut by a budget
            out = [c for c in out if c in climbed] + [c for c in out if c not in climbed]
        return out

    def _asked(self, config: Config) -> None:
        self._trials[config] = self._fixed(config)

    def _value(self, ms) -> list[float] | None:
        """What the model is told for a config of ``ms`` (a value, or a tuple of one per
        objective; ``None``: failed; see the module doc), one value per objective; ``None``:
        a failed trial."""
        if ms is not None:
            return [float(v) for v in ms] if isinstance(ms, (tuple, list)) else [ms]
        told = [t if isinstance(t, (tuple, list)) else (t,) for t in self.told.values() if t is not None]
        if not told:
            return None
        return [FAILED_PENALTY * max(t[i] for t in told) for i in range(len(told[0]))]

    def _observe(self, config: Config, ms: float | None) -> None:
        import optuna
        from optuna.trial import TrialState

        value = self._value(ms)
        trial = self._trials.pop(config, None)
        if trial is not None:
            if value is None:
                self._study.tell(trial, state=TrialState.FAIL)
            else:
                self._study.tell(trial, value if self.objectives > 1 else value[0])
            return
        if self.space.violations(config):  # a config of an older space (a resumed study): not in the model
            return
        state = TrialState.FAIL if value is None else TrialState.COMPLETE
        self._study.add_trial(optuna.trial.create_trial(state=state, values=value, params=self._ordinals(config),
                                                        distributions=self._dists))


# The built-ins over Optuna's samplers (registered by :mod:`autotune.search.strategies.builtin`):
# each factory ``factory(space, seed, history, **options)`` and the options its traits declare.

STARTUP = StrategyOption("startup", 10, low=1, high=100_000,
                         doc="configs proposed at random before the model proposes (Optuna's n_startup_trials)")
CANDIDATES = StrategyOption("candidates", 24, low=1, high=10_000,
                            doc="configs TPE draws from its model of the good ones per proposal, keeping the "
                                "one of best expected improvement (Optuna's n_ei_candidates)")
LOCAL = StrategyOption("local", 0.0, low=0.0, high=1.0,
                       doc="share of the proposals that are one-macro neighbours of the best config so far "
                           "(a hill climber's step) instead of the model's")
START = StrategyOption("start", "sampler", choices=START_DESIGNS,
                       doc="the first configs, while fewer than startup are told: the sampler's own random "
                           "start (sampler), or a design over the valid configs: uniform (random), "
                           "space-filling (spread), each macro's values covered evenly (latin), the "
                           "farthest of the least covered (blend)")
CENTRES = StrategyOption("centres", 1, low=1, high=1000,
                         doc="the local share's neighbours are those of this many best configs so far, "
                             "taken in turn (1: the best's only)")
LOCAL_FIRST = StrategyOption("local_first", False, doc="a batch lists its local proposals (the best's "
                                                       "neighbours) before the model's, so they are measured first")
POPULATION = StrategyOption("population", 10, low=2, high=10_000,
                            doc="configs per generation of NSGA-II (Optuna's population_size); the first "
                                "generation is random, so keep it well under --trials")

TPE_OPTIONS = (STARTUP, CANDIDATES, LOCAL, START, CENTRES, LOCAL_FIRST)
"""The options of ``tpe``."""
TPE_LOCAL_OPTIONS = (replace(STARTUP, default=5), CANDIDATES, replace(LOCAL, default=0.5),
                     replace(START, default="blend"), CENTRES, LOCAL_FIRST)
"""The options of ``tpe_local``: ``tpe``'s, with a start of 5 from the ``blend`` design and half
of the proposals local."""
GP_OPTIONS = (STARTUP,)
"""The options of ``gp``."""
NSGA2_OPTIONS = (POPULATION,)
"""The options of ``nsga2``."""


def tpe(space: SearchSpace, seed: int | None, history: Iterable, startup: int = 10, candidates: int = 24,
        local: float = 0.0, start: str = "sampler", centres: int = 1, local_first: bool = False) -> Strategy:
    """Optuna's TPESampler (Bergstra et al., NeurIPS 2011), multivariate (Falkner et al., 2018),
    in its constant-liar mode: configs asked and not yet told count as bad, so a batch spreads;
    with ``local``, that share of the proposals are neighbours of the best so far (module doc)."""
    import optuna

    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True, n_startup_trials=startup,
                                         n_ei_candidates=candidates)
    return Sampled(space, sampler, seed, history, name="tpe", local=local, local_after=startup, start=start,
                   start_until=startup, centres=centres, local_first=local_first)


def tpe_local(space: SearchSpace, seed: int | None, history: Iterable, startup: int = 5, candidates: int = 24,
              local: float = 0.5, start: str = "blend", centres: int = 1, local_first: bool = False) -> Strategy:
    """:func:`tpe` with a start of 5 from the ``blend`` design over the valid configs (at batch
    16: the whole first batch), then half of its proposals one-macro neighbours of the best
    config so far (a hill climber's step, after Helion's pattern search): the default strategy
    (:data:`~autotune.search.strategies.registry.DEFAULT_STRATEGY`)."""
    return tpe(space, seed, history, startup=startup, candidates=candidates, local=local, start=start,
               centres=centres, local_first=local_first)


def gp(space: SearchSpace, seed: int | None, history: Iterable, startup: int = 10) -> Strategy:
    """Optuna's GPSampler: Bayesian optimisation with a Gaussian process and log expected
    improvement (needs PyTorch: ``pip install torch``; not in an extra, being large)."""
    import optuna

    sampler = optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False, n_startup_trials=startup)
    return Sampled(space, sampler, seed, history, name="gp")


def cmaes(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    """Optuna's CmaEsSampler: CMA-ES (Hansen, 2016) with margin for integer parameters
    (Hamano et al., GECCO 2022); needs the ``cmaes`` package (``pip install 'cuda-autotune[strategies]'``)."""
    import optuna

    with warnings.catch_warnings():  # with_margin is "experimental" in Optuna's words
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.CmaEsSampler(seed=seed, with_margin=True, warn_independent_sampling=False)
    return Sampled(space, sampler, seed, history, name="cmaes")


def nsga2(space: SearchSpace, seed: int | None, history: Iterable, population: int = 10,
          objectives: int = 1) -> Strategy:
    """Optuna's NSGAIISampler (Deb et al., IEEE TEC 2002): a genetic search whose survivors are
    ranked by non-domination and crowding distance, over ``objectives`` values minimised together
    (2, time and energy: a Pareto front; 1: a plain genetic search of the time)."""
    import optuna

    sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=population)
    return Sampled(space, sampler, seed, history, name="nsga2", objectives=objectives)
