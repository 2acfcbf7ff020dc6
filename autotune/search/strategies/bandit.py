"""``bandit``: local search around the best configs so far, a cheap additive model and random
sampling, each proposal slot given to the one of the three that paid off lately.

Sources (ideas, no code taken): Helion's pattern search (local moves, one parameter at a
time, around the best configs), OpenTuner's AUC bandit meta-technique (Ansel et al., PACT
2014: each proposal goes to the technique that found improvements lately, with an exploration
bonus; here a UCB1 score, Auer et al. 2002, over a sliding window), pyATF's and Kernel Tuner's
first-improvement hill climbers (greedy_ils, mls), and Helion's LFBO for proposing from a
model among sampled candidates (here a far cheaper additive model of log-times).

The three sub-strategies ("arms"):

- ``local``: unmeasured neighbours of the best configs measured so far. A neighbour of a
  config changes one macro by one step of its (sorted) value list; then one macro to any
  other value (nearest steps first); then two macros by one step each (spaces whose
  constraints couple macros, e.g. ``(WM // TM) * (WN // TN) == 32``, have few valid
  one-macro moves). Candidates of the best config come first, then those of the next best
  ones (:data:`CENTRES`); among equals, the model's prediction decides, then the seed.
- ``model``: among random valid configs and random 2-3-macro mutations of the best configs
  (:data:`POOL`), the one with the lowest predicted log-time. The model is additive: the
  mean log-time of the configs measured, plus for each macro value the shrunk mean residual
  of the measured configs that hold it (a failed config counts as twice the slowest time).
- ``random``: a uniform valid config (raw draws against the constraints, else the nearest
  valid config to a random point).

Batches are diverse by construction: a batch of ``k`` gives the best config at most ``k/2``
of its neighbours, the next ``k/4``, ... (every config proposed once; no constant liar).
An arm is rewarded 1 for a config that beats the best known when it was proposed. Without
any measurement (no default measured first), the first configs are random.

The kernel's default is not proposed by the strategy: the search loop measures it first
(:class:`autotune.search.tuner.Tuner`), so local search starts from it.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Iterable

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies.base import Strategy

__all__ = ["Bandit", "CENTRES", "POOL", "WINDOW"]

CENTRES = 8
"""Best configs whose neighbourhoods the local arm searches (the best first)."""
POOL = 24
"""Candidates the model arm ranks per proposal (a quarter random, the rest mutations)."""
WINDOW = 24
"""Most recent outcomes of each arm that its score counts."""
EXPLORE = 0.5
"""Weight of the UCB exploration bonus."""
RAW_TRIES = 64
"""Raw random combinations tried for a valid unknown config before solving a random point."""
_PRIORS = {"model": (1.0, 2.0), "local": (1.0, 2.0), "random": (1.0, 2.0)}
"""Pseudo-(rewards, uses) of each arm before any outcome (equal); ties go to the earlier arm."""
_SHRINK = 2.0
"""Pseudo-count shrinking a macro value's mean residual towards 0 (few observations: no effect)."""


class Bandit(Strategy):
    """The ``bandit`` strategy (module doc). ``ask``/``tell`` as every :class:`Strategy`.

    Attributes (besides the base's):
        arm_of: the arm that proposed each config still awaited (queued configs: none).
    """

    name = "bandit"

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = ()) -> None:
        self._rng = random.Random(seed)
        self._names = [n for n, _ in space.params]
        self._values = [tuple(v) for _, v in space.params]
        domains = space.domains()
        self._domains = [tuple(d) if d else tuple(v) for d, v in zip(domains, self._values)]
        self._index = [{v: i for i, v in enumerate(vals)} for vals in self._values]
        self._outcomes = {arm: deque(maxlen=WINDOW) for arm in _PRIORS}
        self.arm_of: dict[Config, tuple[str, float]] = {}
        self._neighbours: dict[Config, list[tuple[int, Config]]] = {}
        self._valid: dict[Config, bool] = {}
        self._sum = 0.0
        self._effects: list[dict[int, list[float]]] = [dict() for _ in self._names]
        self._logs: dict[Config, float] = {}
        self._worst = 0.0
        super().__init__(space, seed, history)

    # -- the model ------------------------------------------------------------------------------

    def _observe(self, config: Config, ms: float | None) -> None:
        arm = self.arm_of.pop(config, None)
        if arm is not None:
            name, best_then = arm
            self._outcomes[name].append(1.0 if ms is not None and ms < best_then else 0.0)
        if self.space.violations(config):  # a config of an older space: not a model point
            return
        if ms is not None and ms > 0:
            value = math.log(ms)
            self._worst = max(self._worst, value)
        else:
            value = self._worst + math.log(2.0) if self._logs else None
        if value is None:
            return
        self._logs[config] = value
        self._refit()

    def _refit(self) -> None:
        """The additive model of the times told (module doc): per macro value, the residuals' sum and count."""
        n = len(self._logs)
        self._sum = sum(self._logs.values())
        mean = self._sum / n
        self._effects = [dict() for _ in self._names]
        for config, value in self._logs.items():
            for i, (_, v) in enumerate(config.macros):
                cell = self._effects[i].setdefault(v, [0.0, 0.0])
                cell[0] += value - mean
                cell[1] += 1.0

    def _predict(self, config: Config) -> float:
        """Predicted log-time of ``config`` less the mean (lower is faster); 0 with no data."""
        out = 0.0
        for i, (_, v) in enumerate(config.macros):
            cell = self._effects[i].get(v)
            if cell is not None:
                out += cell[0] / (cell[1] + _SHRINK)
        return out

    # -- proposing ------------------------------------------------------------------------------

    def _ok(self, config: Config) -> bool:
        valid = self._valid.get(config)
        if valid is None:
            valid = self._valid[config] = not self.space.violations(config)
        return valid

    def _config(self, values: list[int]) -> Config:
        return Config(self.space.kernel, tuple(zip(self._names, values)))

    def _ranked(self) -> list[Config]:
        return sorted((c for c, ms in self.told.items() if ms is not None and c in self._logs),
                      key=lambda c: (self.told[c], c.key))

    def _neighbourhood(self, centre: Config) -> list[tuple[int, Config]]:
        """(tier, config) of every valid neighbour of ``centre``: tier 0 one step of one macro,
        1 one macro to another value, 2 one step of two macros; built once per centre."""
        got = self._neighbours.get(centre)
        if got is not None:
            return got
        base = [v for _, v in centre.macros]
        pos = [self._index[i].get(v) for i, v in enumerate(base)]
        out: list[tuple[int, Config]] = []
        seen: set[Config] = {centre}

        def add(tier: int, values: list[int]) -> None:
            c = self._config(values)
            if c not in seen:
                seen.add(c)
                if self._ok(c):
                    out.append((tier, c))

        steps = []
        for i, vals in enumerate(self._values):
            if pos[i] is None:
                continue
            for d in (-1, 1):
                if 0 <= pos[i] + d < len(vals):
                    steps.append((i, vals[pos[i] + d]))
                    add(0, base[:i] + [vals[pos[i] + d]] + base[i + 1:])
        for i, vals in enumerate(self._values):
            if pos[i] is None:
                continue
            for j in sorted(range(len(vals)), key=lambda j: abs(j - pos[i])):
                if abs(j - pos[i]) > 1:
                    add(1, base[:i] + [vals[j]] + base[i + 1:])
        for a in range(len(steps)):
            for b in range(a + 1, len(steps)):
                (i, vi), (j, vj) = steps[a], steps[b]
                if i != j:
                    values = list(base)
                    values[i], values[j] = vi, vj
                    add(2, values)
        self._neighbours[centre] = out
        return out

    def _local(self, k: int, taken: set[Config]) -> list[Config]:
        """Up to ``k`` neighbours of the best configs: the best gives at most ``ceil(k/2)``,
        the next ``ceil(k/4)``, ... (at least 1 each), the nearest tiers first."""
        candidates = []
        for rank, centre in enumerate(self._ranked()[:CENTRES]):
            cap = max(1, math.ceil(k / 2 ** (rank + 1)))
            mine = [(tier + rank, self._predict(c), self._rng.random(), c) for tier, c in self._neighbourhood(centre)
                    if not self.known(c) and c not in taken]
            mine.sort(key=lambda t: t[:3])
            candidates += mine[:cap]
        candidates.sort(key=lambda t: t[:3])
        out: list[Config] = []
        for *_, c in candidates:
            if len(out) == k:
                break
            if c not in out:
                out.append(c)
        return out

    def _draw(self, taken: set[Config]) -> Config | None:
        """A random valid config neither known nor in ``taken`` (``None``: none found)."""
        point: list[int] = []
        for _ in range(RAW_TRIES):
            point = [self._rng.choice(d) for d in self._domains]
            c = self._config(point)
            if not self.known(c) and c not in taken and self._ok(c):
                return c
        return self.nearest_unknown(dict(zip(self._names, point)), taken)

    def _mutant(self, taken: set[Config]) -> Config | None:
        """A valid unknown config 2-3 macros away from one of the best configs, or ``None``."""
        ranked = self._ranked()[:CENTRES]
        if not ranked:
            return None
        for _ in range(8):
            base = [v for _, v in self._rng.choice(ranked).macros]
            for i in self._rng.sample(range(len(base)), min(len(base), self._rng.choice((2, 3)))):
                base[i] = self._rng.choice(self._domains[i])
            c = self._config(base)
            if not self.known(c) and c not in taken and self._ok(c):
                return c
        return None

    def _modelled(self, taken: set[Config]) -> Config | None:
        pool: set[Config] = set()
        for n in range(POOL):
            c = self._draw(taken | pool) if n % 4 == 0 else self._mutant(taken | pool)
            if c is not None:
                pool.add(c)
        return min(pool, key=lambda c: (self._predict(c), self._rng.random()), default=None)

    def _scores(self, extra: dict[str, int]) -> dict[str, float]:
        total = sum(len(o) + _PRIORS[a][1] + extra[a] for a, o in self._outcomes.items())
        out = {}
        for arm, outcomes in self._outcomes.items():
            reward, uses = _PRIORS[arm]
            reward += sum(outcomes)
            uses += len(outcomes) + extra[arm]
            out[arm] = reward / uses + EXPLORE * math.sqrt(math.log(total) / uses)
        return out

    def _propose(self, k: int) -> list[Config]:
        out: list[Config] = []
        taken: set[Config] = set()
        best = self.best
        best_ms = best[1] if best else math.inf
        if not self._logs:  # nothing measured: random configs
            while len(out) < k and (c := self._draw(taken)) is not None:
                out.append(c)
                taken.add(c)
                self.arm_of[c] = ("random", best_ms)
            return out
        extra = {arm: 0 for arm in _PRIORS}
        local: list[Config] | None = None
        while len(out) < k:
            scores = self._scores(extra)
            order = sorted(scores, key=lambda a: (-scores[a], list(_PRIORS).index(a)))
            c = None
            for arm in order:
                if arm == "local":
                    if local is None:  # the whole batch's share at once: distinct centres
                        local = self._local(k, taken)
                    while local and (local[0] in taken):
                        local.pop(0)
                    c = local.pop(0) if local else None
                elif arm == "model":
                    c = self._modelled(taken)
                else:
                    c = self._draw(taken)
                if c is not None:
                    break
            if c is None:
                break
            extra[arm] += 1
            out.append(c)
            taken.add(c)
            self.arm_of[c] = (arm, best_ms)
        return out
