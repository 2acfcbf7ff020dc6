"""The search loop: a strategy proposes batches of configs, the benchmark measures, the store records.

:class:`Tuner` runs one search of one key (:class:`~autotune.store.key.TuningKey`) with one
:class:`~autotune.search.options.SearchOptions`:

1. It opens the key's Optuna study (:mod:`autotune.search.study`; ``resume`` continues it),
   reads what the study measured already, and builds the strategy
   (:func:`autotune.search.strategies.make_strategy`) with that history (``transfer``: also
   the trials of the kernel's other shapes on this device model, one read of the store).
2. The kernel's default config is queued first in every study that lacks it, so the stored
   best is never slower than the default beyond the noise.
3. The strategy proposes ``batch`` configs at once (ask), always valid and new: a constraint
   breaker or a repeat never costs a trial. Each batch goes to ``prefetch`` (the compile pool
   on every core, :mod:`autotune.measure.pipeline`) a batch ahead of the GPU: while the GPU
   measures the configs of one batch, the next one compiles.
4. Each config is a trial of the stored study (RUNNING while measured, then COMPLETE or FAIL
   with its reason: failures are data, never the best) and a row of autotune's tables; the
   strategy is told its median ms (or ``None``) as it ends.
5. After ``trials`` configs measured (or the timeout, or an exhausted space), the ``top_k``
   fastest are re-timed interleaved over ``rounds`` rounds and the winner stored
   (:mod:`autotune.search.retiming`).

The benchmark is injected (:class:`Instruments`): any ``measure(config) -> Measurement`` that
raises :class:`~autotune.errors.TrialFailed` for a failed config (the real one is
:meth:`autotune.measure.benchmark.Benchmark.measure`; tests pass a fake timer).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autotune.errors import StoreError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.measure.measurement import Measurement
from autotune.measure.nvml import clock_warning
from autotune.search import proposals, retiming, stop
from autotune.search.options import SearchOptions
from autotune.search.outcome import SearchResult, TrialOutcome
from autotune.search.study import StoredStudy
from autotune.search.trials import run_trial
from autotune.store.key import TuningKey

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported when a search opens it
    from autotune.search.strategies import Strategy
    from autotune.store.repository import Store

__all__ = ["Instruments", "Tuner", "search"]

Measure = Callable[[Config], Measurement]


@dataclass(frozen=True)
class Instruments:
    """What a search measures with, injected.

    Attributes:
        measure: ``measure(config) -> Measurement``; raises ``TrialFailed`` for a failed config.
        retime: ``retime(configs, rounds) -> list[Retiming]``; ``None`` skips the re-timing.
        clocks: reads the GPU clocks (:func:`autotune.measure.nvml.clock_state`), at start and end.
        prefetch: called with each batch as it is proposed, before any config of it is
            measured (the compile pool); ``None``: nothing ahead.
        memcpy_gbps, copy_gbps: the memcpy and bound-kernel figures of this run, GB/s.
        l2_mode: how timing treated L2 (``single`` or ``rotating``), stored with the run.
    """

    measure: Measure
    retime: retiming.Retime | None = None
    clocks: Callable[[], dict | None] | None = None
    prefetch: Callable[[list[Config]], None] | None = None
    memcpy_gbps: float | None = None
    copy_gbps: float | None = None
    l2_mode: str | None = None


class Tuner:
    """One search (module doc). ``part=(i, n)``: worker ``i`` of ``n`` filling one study at
    once (one per GPU, :mod:`autotune.search.workers`): only worker 0 queues the default, a
    grid walks its share of the space first, and every worker skips configs another has
    measured or is measuring. ``on_trial(outcome, result)`` is called after every trial.

    Raises (from :meth:`run`):
        InvalidInputError: a ``grid`` over more than :data:`~autotune.search.proposals.GRID_LIMIT`
            valid configs; the study exists and ``resume`` is false; a strategy whose package is missing.
        StoreError: the database cannot be used; one that fails mid-search stops it, the
            message saying how many trials of this run are stored and which was lost.
        KeyboardInterrupt: on SIGINT or SIGTERM (:mod:`autotune.search.stop`), after the trial
            in flight was failed and the search marked ``interrupted``; earlier trials are stored.
    """

    def __init__(self, key: TuningKey, space: SearchSpace, store: Store, options: SearchOptions,
                 instruments: Instruments, *, on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None,
                 part: tuple[int, int] = (0, 1)) -> None:
        if options.strategy == "grid":
            proposals.check_grid(space)
        self.key, self.space, self.store, self.options, self.tools = key, space, store, options, instruments
        self.on_trial, self.part = on_trial, part
        self.batch = options.batch_size()
        self.result: SearchResult | None = None
        self.strategy: Strategy | None = None
        self.seen: dict[Config, TrialOutcome] = {}  # measured in the study (ok or failed), by any worker
        self.flight: dict = {}  # the trial (or re-timing) in flight, for saying what a lost database lost
        self._checked = 0.0  # when trials dead before their first heartbeat were last looked for

    def run(self) -> SearchResult:
        """Search; returns the :class:`~autotune.search.outcome.SearchResult` (raises: class doc)."""
        with stop.deferred():  # SIGINT/SIGTERM: acted on in measurements and between trials, never lost
            return self._run()

    def _run(self) -> SearchResult:
        study = StoredStudy(self.store, self.key, self.space, resume=self.options.resume)
        try:
            with self.store.errors():
                study.fail_stale()
            self._checked = time.monotonic()
            return self._search(study)
        finally:
            study.close()

    def _search(self, study: StoredStudy) -> SearchResult:
        tools, store = self.tools, self.store
        start_clocks = tools.clocks() if tools.clocks else None
        search_id = store.start_search(self.key, study_name=self.key.study_name, sampler=self.options.strategy_name,
                                       seed=self.options.seed, memcpy_gbps=tools.memcpy_gbps,
                                       copy_gbps=tools.copy_gbps, l2_mode=tools.l2_mode, clocks=start_clocks)
        result = self.result = SearchResult(self.key, search_id)
        status = "failed"
        try:
            with store.errors():  # Optuna's storage errors too: one StoreError line
                self.seen = study.measured(result)
                self.strategy = self._strategy()
                self._loop(study)
                stop.check()  # a signal during the last trial's bookkeeping stops before the re-timing
                self.flight.clear()
                if tools.retime is not None and result.measured:
                    self.flight["retime"] = True
                    result.decision = retiming.decide(self.key, store, result, tools.retime, self.options.top_k,
                                                      self.options.rounds)
                    self.flight.clear()
            status = "finished"
        except KeyboardInterrupt:
            status = result.stopped = "interrupted"
            raise
        except StoreError as exc:  # the database went away (or stayed locked) mid-search
            raise StoreError(f"{exc}; {_what_was_kept(result, self.flight)}") from exc.__cause__ or exc
        finally:
            with stop.shielded():
                end_clocks = tools.clocks() if tools.clocks else None
                result.clock_warning = clock_warning(start_clocks, end_clocks)
                try:
                    store.finish_search(search_id, status, clocks=end_clocks, clock_warning=result.clock_warning)
                except StoreError as exc:
                    if status == "finished":  # every trial and the winner are stored; only the row's end is not
                        raise StoreError(f"{exc}; the search ran to its end and every trial of it is stored, but "
                                         f"its search row {search_id} stays 'running'") from exc.__cause__ or exc
        return result

    def _strategy(self) -> Strategy:
        from autotune.search.strategies import make_strategy, needs_prior
        from autotune.search.strategies.simple import Grid

        history = [(c, self.result.measured.get(c)) for c in self.seen]
        if needs_prior(self.options.strategy):
            from autotune.search.prior import other_shapes

            history += other_shapes(self.store, self.key)
        default = proposals.default_config(self.key.kernel, self.space)
        first = self.part[0] == 0
        if self.options.strategy == "grid" and self.part[1] > 1:
            strategy = Grid(self.space, self.options.seed, history, part=self.part,
                            last=None if first else default)
        else:
            strategy = make_strategy(self.options.strategy, self.space, self.options.seed, history)
        if default is not None and first:
            strategy.enqueue([default], first=True)  # the default first, in every study that lacks it
        return strategy

    def _loop(self, study: StoredStudy) -> None:
        """Measure batches until ``trials`` configs are measured, the timeout, or the end of the space."""
        result, options = self.result, self.options
        deadline = None if options.timeout is None else time.monotonic() + options.timeout
        shared = self.part[1] > 1
        pending: deque[Config] = deque()
        while True:
            if result.measured_count >= options.trials:
                result.stopped = "trials"
                return
            if deadline is not None and time.monotonic() >= deadline:
                result.stopped = "timeout"
                return
            stop.check()
            busy = self._refresh(study) if shared else set()
            self._top_up(pending)
            if not pending:
                result.stopped = "exhausted"
                return
            config = pending.popleft()
            if config in self.seen or config in busy:  # another worker measured it, or measures it now
                continue
            self._check_dead(study)
            outcome = run_trial(study, config, self.tools.measure, self.store, result.search_id, self.flight)
            self.seen[config] = outcome
            result.outcomes.append(outcome)
            if outcome.status == "ok":
                result.measured[config] = outcome.measurement.median_ms
            self.strategy.tell(config, outcome.measurement.median_ms if outcome.status == "ok" else None)
            if self.on_trial is not None:
                self.on_trial(outcome, result)

    def _top_up(self, pending: deque) -> None:
        """Ask the strategy for batches until a whole batch waits behind the one measured now
        (at most the configs still to measure), and hand each to ``prefetch``."""
        room = self.options.trials - self.result.measured_count - len(pending)
        while len(pending) <= self.batch and room > 0:
            batch = self.strategy.ask(min(self.batch, room))
            if not batch:
                return
            pending.extend(batch)
            room -= len(batch)
            if self.tools.prefetch is not None:
                self.tools.prefetch(batch)

    def _refresh(self, study: StoredStudy) -> set[Config]:
        """Several workers: tell the strategy what the others measured since; returns the
        configs in flight in their trials."""
        for config, outcome in study.measured(self.result).items():
            if config not in self.seen:
                self.seen[config] = outcome
                self.strategy.tell(config, self.result.measured.get(config))
        return study.in_flight()

    def _check_dead(self, study: StoredStudy) -> None:
        """Fail trials dead before their first heartbeat once a heartbeat interval (such a trial
        is failed GRACE_S after it started, so this delays it by HEARTBEAT_S at most)."""
        from autotune.store.study_storage import HEARTBEAT_S

        if time.monotonic() - self._checked >= HEARTBEAT_S:
            self.store.fail_trials_dead_before_heartbeat(study.storage, self.key.study_name)
            self._checked = time.monotonic()


def search(key: TuningKey, space: SearchSpace, measure: Measure, store: Store, options: SearchOptions | None = None,
           *, on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None, part: tuple[int, int] = (0, 1),
           **instruments) -> SearchResult:
    """One search with ``measure`` (``Tuner(...).run()``); ``instruments``: the other fields
    of :class:`Instruments` (``retime``, ``clocks``, ``prefetch``, ...). Raises: see :class:`Tuner`."""
    tools = Instruments(measure, **instruments)
    return Tuner(key, space, store, options or SearchOptions(), tools, on_trial=on_trial, part=part).run()


def _what_was_kept(result: SearchResult, flight: dict) -> str:
    """One clause for a search that lost its database: what this run stored, what it lost,
    and how to go on."""
    stored = len(result.outcomes) + bool(flight.get("stored"))
    text = f"the search stopped: {stored} trial{'s' if stored != 1 else ''} of this run stored"
    if flight.get("retime"):
        text += "; lost: the re-timing (the key's best is the fastest single measurement)"
    elif "number" in flight and not flight.get("stored"):
        what = "measured, not stored" if flight.get("measured") else "not measured"
        text += f"; lost: trial {flight['number']} ({flight['config'].key}), {what}"
    return (text + f"; search row {result.search_id} stays 'running'; run the same search with --resume "
                   "(resume=True) to go on, measuring only what is missing")
