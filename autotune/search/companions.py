"""Other shapes measured alongside a search: one compile, one trial per shape.

A config's cubin does not depend on the problem's shape (the cubin cache's key holds none), so
once a search has compiled and measured a config at its own shape, measuring it at other
shapes of the same kernel and dtype costs only their verification and timing. A *companion*
is such a shape: its own :class:`~autotune.store.key.TuningKey`, its own Optuna study and
search row, its own best; the measuring process holds its buffers beside the search's
(:meth:`autotune.measure.benchmark.Benchmark.at`), so every config the search measures is a
trial of each companion's study too (those it measured already are skipped). At the end each
companion's fastest configs are re-timed interleaved and its winner stored, as the search's
own are (:mod:`autotune.search.retiming`).

The search's strategy proposes for its own shape only; a later search of a companion's shape
resumes that companion's study and starts from everything measured there (a strategy sees it
as its history), which is how ``autotune tune-shapes`` and a workload's tuning spend one
compile on every shape of a kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autotune.base import signals as stop
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search import objective as objectives
from autotune.search import retiming
from autotune.search.outcome import SearchResult
from autotune.search.study import StoredStudy
from autotune.search.trials import run_trial
from autotune.store.key import TuningKey
from autotune.store.study_labels import label_study

if TYPE_CHECKING:
    from autotune.search.options import SearchOptions
    from autotune.store.repository import Store

__all__ = ["Companion", "CompanionSearch"]


@dataclass(frozen=True)
class Companion:
    """A shape measured alongside a search: its key, ``measure(config) -> Measurement``
    (raising :class:`~autotune.errors.TrialFailed`) and ``retime(configs, rounds)`` (``None``:
    not re-timed; its best is then its fastest single measurement)."""

    key: TuningKey
    measure: Callable
    retime: Callable | None = None


class CompanionSearch:
    """One companion's study, search row and result, for the length of the search it rides on.

    Args:
        companion: the shape (:class:`Companion`).
        store, space, options: the search's (the companion's study records the same space,
            its search row the same strategy name and seed).
    """

    def __init__(self, companion: Companion, store: Store, space: SearchSpace, options: SearchOptions) -> None:
        self.companion, self.store, self.space, self.options = companion, store, space, options
        self.study: StoredStudy | None = None
        self.result: SearchResult | None = None
        self.seen: set[Config] = set()

    def begin(self, memcpy_gbps=None, copy_gbps=None, l2_mode=None) -> None:
        """Open (or create) the companion's study, read what it measured, start its search row.

        Raises:
            StoreError: the database cannot be used.
        """
        key, store, options = self.companion.key, self.store, self.options
        self.study = StoredStudy(store, key, self.space, resume=True, objective=options.objective)
        label_study(self.study.study, key, options.strategy_name, store.errors,
                    strategy_options=dict(options.strategy_options))
        search_id = store.start_search(key, study_name=self.study.name, sampler=f"{options.strategy_name} (companion)",
                                       seed=options.seed, memcpy_gbps=memcpy_gbps, copy_gbps=copy_gbps,
                                       l2_mode=l2_mode, objective=options.objective)
        self.result = SearchResult(key, search_id)
        self.seen = set(self.study.measured(self.result))

    def trial(self, config: Config, flight: dict) -> None:
        """Measure ``config`` as a trial of the companion's study, unless measured there already
        (here or by another process).

        Raises:
            KeyboardInterrupt: a signal during the measurement (the trial is failed first).
            StoreError: the database failed.
        """
        if config in self.seen or self.study is None:
            return
        outcome = run_trial(self.study, config, self.companion.measure, self.store, self.result.search_id, flight)
        self.seen.add(config)
        if outcome is None:  # another process claimed it first: measured there
            return
        self.result.outcomes.append(outcome)
        score = objectives.told(outcome.measurement, self.options.objective) if outcome.status == "ok" else None
        if isinstance(score, tuple):
            self.result.scores[config], self.result.measured[config] = score, score[0]
        elif score is not None:
            self.result.measured[config] = score

    def decide(self) -> None:
        """Re-time the companion's fastest configs and store its winner (nothing to re-time:
        nothing; no ``retime``: its best stays its fastest single measurement)."""
        if self.companion.retime is None or not self.result or not self.result.measured:
            return
        stop.check()
        self.result.decision = retiming.decide(self.companion.key, self.store, self.result, self.companion.retime,
                                               self.options.retime, self.options.objective)

    def close(self, status: str) -> None:
        """Stamp the search row ``status`` (``finished``, ``interrupted``, ``failed``) and close the study."""
        with stop.shielded():
            if self.result is not None:
                self.result.stopped = self.result.stopped if status == "finished" else status
                with contextlib.suppress(Exception):  # the database may be the fault; the search says so
                    self.store.finish_search(self.result.search_id, status)
            if self.study is not None:
                self.study.close()
                self.study = None
