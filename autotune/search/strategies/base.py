"""The contract of a search strategy: propose valid configs in batches, learn from their times.

A :class:`Strategy` is a pure proposer: it knows nothing of GPUs, databases or Optuna's stored
studies, so a replay of a recorded table can drive it on the CPU (thousands of ask/tell calls),
and the search loop (:class:`autotune.search.tuner.Tuner`) drives the same object on a GPU.

- ``ask(k)`` returns up to ``k`` distinct configs, every one VALID (it satisfies the space's
  constraints) and neither told nor asked before; ``[]`` once the space is exhausted.
- ``tell(config, ms)`` gives a config's median time per launch in ms, or ``None`` for a
  config that failed (compile error, over the device's limits, wrong result, crash...). A
  config never asked (another worker's, an earlier run's) may be told too.
- ``enqueue(configs)`` puts configs to propose first, in order (the kernel's default, the
  bests of nearby shapes), like Optuna's ``Study.enqueue_trial``; invalid or known ones are skipped.
- ``history``, given at construction: :class:`Known` observations; those of this problem
  (``distance == 0``) are told (never proposed again), those of other shapes are prior
  knowledge that only a strategy using it (``transfer``) reads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace

__all__ = ["Known", "Strategy", "known_of"]


@dataclass(frozen=True)
class Known:
    """One observation known before a search: ``config`` took ``ms`` (median ms per launch;
    ``None``: it failed) on a problem at ``distance`` from this one (0: this problem; else
    the lookup ladder's shape distance, :mod:`autotune.runtime.lookup`); ``shape`` names that
    problem (e.g. its dims), so that observations of one shape can be told apart."""

    config: Config
    ms: float | None
    distance: float = 0.0
    shape: object = None


def known_of(history: Iterable) -> list[Known]:
    """``history`` items as :class:`Known`: each a ``Known``, a ``(config, ms)`` pair (this
    problem) or a ``(config, ms, distance)`` triple."""
    return [h if isinstance(h, Known) else Known(*h) for h in history]


class Strategy(ABC):
    """Base of every strategy (module doc for the contract). Subclasses write :meth:`_propose`
    (and may hook :meth:`_asked`, :meth:`_observe`).

    Attributes:
        space: the :class:`~autotune.kernel.space.SearchSpace` searched.
        told: every config told so far (history of this problem included), its ms or ``None``.
        pending: configs asked and not told yet.
    """

    name = "strategy"

    def __init__(self, space: SearchSpace, seed: int | None = None, history: Iterable = ()) -> None:
        self.space, self.seed = space, seed
        self.told: dict[Config, float | None] = {}
        self.pending: set[Config] = set()
        self._queue: list[Config] = []
        self.prior: list[Known] = []
        for k in known_of(history):
            if k.distance == 0:
                self.tell(k.config, k.ms)
            else:
                self.prior.append(k)

    def known(self, config: Config) -> bool:
        """Whether ``config`` was told or is asked and not yet told."""
        return config in self.told or config in self.pending

    def enqueue(self, configs: Iterable[Config], first: bool = False) -> None:
        """Propose ``configs`` before anything else, in order (``first``: before those queued
        already); a config that breaks the constraints or is known is skipped."""
        new = [c for c in configs if not self.space.violations(c) and not self.known(c) and c not in self._queue]
        self._queue = new + self._queue if first else self._queue + new

    def ask(self, k: int) -> list[Config]:
        """Up to ``k`` valid configs, distinct, neither told nor pending: the queue first,
        then the strategy's own proposals; ``[]`` when the space is exhausted."""
        out: list[Config] = []
        while self._queue and len(out) < k:
            config = self._queue.pop(0)
            if not self.known(config):
                self.pending.add(config)
                self._asked(config)
                out.append(config)
        if len(out) < k:
            for config in self._propose(k - len(out)):
                if self.known(config) or self.space.violations(config):  # the contract, kept here once
                    raise AssertionError(f"{self.name} proposed {config.key}, known or invalid")
                self.pending.add(config)
                out.append(config)
        return out

    def tell(self, config: Config, ms: float | None) -> None:
        """``config`` took ``ms`` (median ms per launch), or failed (``None``)."""
        self.pending.discard(config)
        if config in self.told:
            return
        self.told[config] = ms
        self._observe(config, ms)

    @property
    def best(self) -> tuple[Config, float] | None:
        """The fastest config told and its ms, or ``None``."""
        return min(((c, ms) for c, ms in self.told.items() if ms is not None), key=lambda p: (p[1], p[0]),
                   default=None)

    def nearest_unknown(self, near: dict[str, int], also: set[Config] = frozenset()) -> Config | None:
        """A valid config close to ``near`` (ordinal distance per macro,
        :meth:`~autotune.kernel.space.SearchSpace.iter_configs`) that is not known nor in ``also``."""
        return next((c for c in self.space.iter_configs(near=near) if not self.known(c) and c not in also), None)

    @abstractmethod
    def _propose(self, k: int) -> list[Config]:
        """Up to ``k`` new configs (valid, distinct, not :meth:`known`); fewer or none when the
        space runs out."""

    def _asked(self, config: Config) -> None:
        """Hook: ``config`` was proposed from the queue (a model records it as in flight)."""

    def _observe(self, config: Config, ms: float | None) -> None:
        """Hook: ``config`` was told."""
