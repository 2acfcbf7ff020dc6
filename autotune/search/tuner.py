"""The search loop: a strategy proposes batches of configs, the benchmark measures, the store records.

:class:`Tuner` runs one search of one key (:class:`~autotune.store.key.TuningKey`) with one
:class:`~autotune.search.options.SearchOptions`:

1. It opens the key's Optuna study (:mod:`autotune.search.study`; ``resume`` continues it),
   reads what the study measured already, and builds the strategy
   (:func:`autotune.search.strategies.make_strategy`, with ``options.strategy_options``) with
   that history (a strategy whose traits say ``needs_prior``, e.g. ``transfer``: also the trials
   of the kernel's other shapes on this device model, one read of the store). The loop asks
   the strategy's :class:`~autotune.search.strategies.traits.Traits`, never its name.
2. The kernel's default config is queued first in every study that lacks it, so the stored
   best is never slower than the default beyond the noise; then the configs of
   ``options.queue`` (a dispatch's configs, from ``autotune tune-shapes``).
3. The strategy proposes ``batch`` configs at once (ask), always valid and new: a constraint
   breaker or a repeat never costs a trial. Each batch goes to ``prefetch`` (the compile pool
   on every core, :mod:`autotune.measure.pipeline`) a batch ahead of the GPU: while the GPU
   measures the configs of one batch, the next one compiles. Of the configs proposed, the
   first whose build has ended is measured next (``Instruments.ready``; the default first).
4. Each config is a trial of the stored study (RUNNING while measured, then COMPLETE or FAIL
   with its reason: failures are data, never the best) and a row of autotune's tables; the
   strategy is told its median ms (or ``None``) as it ends. Before a config is measured, what
   the compile pool made of it is read (``Instruments.built``): a config refused before nvcc,
   failed to compile or cut at the compile deadline is recorded failed without measuring, and
   one whose binary (cubin and launch geometry) an earlier ``ok`` trial measured is recorded
   with that measurement, not measured again (:data:`~autotune.search.outcome.SAME_BINARY`:
   it costs no trial of ``trials``, is never re-timed nor the winner). The loop
   (:mod:`autotune.search.trial_loop`) claims the next config while the GPU measures one.
5. After ``trials`` configs measured (or the timeout, or an exhausted space), the ``top_k``
   fastest are re-timed interleaved over ``rounds`` rounds and the winner stored
   (:mod:`autotune.search.retiming`).

The benchmark is injected (:class:`~autotune.search.instruments.Instruments`): any
``measure(config) -> Measurement`` that raises :class:`~autotune.errors.TrialFailed` for a
failed config (the real one is
:meth:`autotune.measure.benchmark.Benchmark.measure`; tests pass a fake timer).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from autotune.errors import StoreError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.measure.nvml import clock_warning
from autotune.base import signals as stop
from autotune.store.study_labels import label_study
from autotune.search import proposals, retiming
from autotune.search.companions import Companion, CompanionSearch
from autotune.search.options import SearchOptions
from autotune.search.outcome import SearchResult, TrialOutcome
from autotune.search.study import StoredStudy
from autotune.search.instruments import Instruments, Measure
from autotune.search.trials import what_was_kept
from autotune.search.trial_loop import TrialLoop
from autotune.store.key import TuningKey

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported when a search opens it
    from autotune.search.strategies import Strategy
    from autotune.store.repository import Store

__all__ = ["Tuner", "search"]

class Tuner(TrialLoop):
    """One search (module doc). ``part=(i, n)``: worker ``i`` of ``n`` filling one study at
    once (one per GPU, :mod:`autotune.search.workers`): only worker 0 queues the default and a
    strategy whose traits say ``partitions`` (``grid``) walks its share of the space first.
    Every search skips configs another process on the study (a worker of another GPU, a search
    on another host) has measured or is measuring, and tells its strategy what they measured; a
    config is measured only by the process whose trial claimed it first
    (:meth:`StoredStudy.start`), so no two processes measure one config.
    ``on_trial(outcome, result)`` is called after every trial. ``companions``: other shapes of
    the kernel and dtype, each config measured ok here is measured at each of them too, as a
    trial of its own study, and each gets its own winner (:mod:`autotune.search.companions`;
    ``result.companions`` holds their results). ``budget``: the configs the
    workers of one search may still measure, shared (:class:`~autotune.search.workers.SharedBudget`:
    ``take()`` before each trial, ``False`` when none is left; ``give_back()``; ``left()``):
    a worker measures while any is left, so the faster GPU measures more and all end together.

    Raises (from :meth:`run`):
        InvalidInputError: an ``in_order`` strategy (``grid``) over more than
            :data:`~autotune.search.proposals.GRID_LIMIT` valid configs; the study exists and
            ``resume`` is false; a strategy whose package is missing.
        StoreError: the database cannot be used; one that fails mid-search stops it, the
            message saying how many trials of this run are stored and which was lost.
        KeyboardInterrupt: on SIGINT or SIGTERM (:mod:`autotune.base.signals`), after the trial
            in flight was failed and the search marked ``interrupted``; earlier trials are stored.
    """

    def __init__(self, key: TuningKey, space: SearchSpace, store: Store, options: SearchOptions,
                 instruments: Instruments, *, on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None,
                 part: tuple[int, int] = (0, 1), early: tuple[Strategy, list[Config]] | None = None,
                 budget=None, companions: Sequence[Companion] = ()) -> None:
        if options.traits.in_order:  # it walks the whole space
            proposals.check_grid(space)
        self.key, self.space, self.store, self.options, self.tools = key, space, store, options, instruments
        self.on_trial, self.part, self.budget = on_trial, part, budget
        self.batch = options.batch_size()
        self.result: SearchResult | None = None
        self.strategy: Strategy | None = None
        self.seen: dict[Config, TrialOutcome] = {}  # measured in the study (ok or failed), by any worker
        self.binaries: dict[str, TrialOutcome] = {}  # a binary's identity: the ok trial that measured it
        self.flight: dict = {}  # the trial (or re-timing) in flight, for saying what a lost database lost
        self._checked = 0.0  # when trials dead before their first heartbeat were last looked for
        self._early = early  # (strategy, its first batch) from early(), handed to prefetch already
        self.others = [CompanionSearch(c, store, space, options) for c in companions]

    @staticmethod
    def early(kernel: str, space: SearchSpace, options: SearchOptions, part: tuple[int, int] = (0, 1),
              fresh: bool | None = None) -> tuple[Strategy, list[Config]] | None:
        """The strategy and its first batch (the default first, worker 0's), for a search that
        can propose before its study is open: a new study (``fresh``: it holds no trial yet;
        ``None``: a search alone, not ``resume``), with a strategy that reads nothing from the
        store (its traits: not ``needs_prior``) and does not walk in order (not ``in_order``:
        that order is known anyway). So the first batch compiles while the measuring child
        starts; pass the pair as ``early``. The
        workers of several GPUs pass ``fresh`` (their parent created the study). ``None`` for
        other searches."""
        from autotune.search.strategies import make_strategy

        if fresh is None:
            fresh = not options.resume and part == (0, 1)
        if not fresh or options.traits.needs_prior or options.traits.in_order:
            return None
        strategy = make_strategy(options.strategy, space, options.seed, options=options.strategy_options,
                                 objectives=len(options.objectives))
        default = proposals.default_config(kernel, space)
        if part[0] == 0:  # worker 0's, as in _strategy: the configs asked for, then the default first
            strategy.enqueue([Config(space.kernel, c.macros) for c in options.queue], first=True)
        if default is not None and part[0] == 0:
            strategy.enqueue([default], first=True)
        return strategy, strategy.ask(options.batch_size())

    def run(self) -> SearchResult:
        """Search; returns the :class:`~autotune.search.outcome.SearchResult` (raises: class doc)."""
        with stop.deferred():  # SIGINT/SIGTERM: acted on in measurements and between trials, never lost
            return self._run()

    def _run(self) -> SearchResult:
        study = StoredStudy(self.store, self.key, self.space, resume=self.options.resume,
                            objective=self.options.objective)
        try:
            label_study(study.study, self.key, self.options.strategy_name, self.store.errors,  # optuna-dashboard
                        strategy_options=dict(self.options.strategy_options))
            with self.store.errors():
                study.fail_stale()
            self._checked = time.monotonic()
            return self._search(study)
        finally:
            study.close()

    def _search(self, study: StoredStudy) -> SearchResult:
        tools, store = self.tools, self.store
        start_clocks = tools.clocks() if tools.clocks else None
        search_id = store.start_search(self.key, study_name=study.name, sampler=self.options.strategy_name,
                                       seed=self.options.seed, memcpy_gbps=tools.memcpy_gbps,
                                       copy_gbps=tools.copy_gbps, l2_mode=tools.l2_mode, clocks=start_clocks,
                                       objective=self.options.objective)
        result = self.result = SearchResult(self.key, search_id)
        status = "failed"
        try:
            with store.errors():  # Optuna's storage errors too: one StoreError line
                for other in self.others:
                    other.begin(tools.memcpy_gbps, tools.copy_gbps, tools.l2_mode)
                result.companions = [c.result for c in self.others]
                self.seen = study.measured(result)
                for outcome in self.seen.values():
                    self._remember(outcome)
                self.strategy = self._strategy()
                self._loop(study)
                study.fail_stale()  # also at the end: a short search may never reach a heartbeat interval
                stop.check()  # a signal during the last trial's bookkeeping stops before the re-timing
                self.flight.clear()
                if tools.retime is not None and result.measured:
                    self.flight["retime"] = True
                    result.decision = retiming.decide(self.key, store, result, tools.retime, self.options.retime,
                                                      self.options.objective)
                    self.flight.clear()
                for other in self.others:  # each other shape's own winner
                    other.decide()
            status = "finished"
        except KeyboardInterrupt:
            status = result.stopped = "interrupted"
            raise
        except StoreError as exc:  # the database went away (or stayed locked) mid-search
            raise StoreError(f"{exc}; {what_was_kept(result, self.flight)}") from exc.__cause__ or exc
        finally:
            for other in self.others:
                other.close(status)
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
        from autotune.search.strategies import make_strategy

        if self._early is not None:  # proposed before the study was open: a new study
            strategy = self._early[0]
            for c in self.seen:  # nothing, unless another process filled the new study meanwhile
                strategy.tell(c, self._told(c))
            return strategy
        history = [(c, self._told(c)) for c in self.seen]
        if self.options.traits.needs_prior:
            from autotune.search.prior import other_shapes

            history += other_shapes(self.store, self.key)
        default = proposals.default_config(self.key.kernel, self.space)
        first = self.part[0] == 0
        strategy = make_strategy(self.options.strategy, self.space, self.options.seed, history,
                                 options=self.options.strategy_options, part=self.part,  # its share, if it partitions
                                 last=None if first else default, objectives=len(self.options.objectives))
        if first:  # the configs asked for (options.queue) before the strategy's own, after the default
            strategy.enqueue([Config(self.space.kernel, c.macros) for c in self.options.queue], first=True)
        if default is not None and first:
            strategy.enqueue([default], first=True)  # the default first, in every study that lacks it
        return strategy

    def _told(self, config: Config):
        """What the strategy is told of a config measured before: its ms (or objective's
        value), a Pareto search's ``(ms, J)``; ``None`` where it failed."""
        if config in self.result.same_binary:
            return self.result.same_binary[config]
        if self.options.pareto:
            return self.result.scores.get(config)
        return self.result.measured.get(config)

    def _remember(self, outcome: TrialOutcome) -> None:
        """Keep the identity of the binary an ``ok`` trial measured (the first one of each), where
        this search holds its measurement: a trial another process measured (read from the
        study) names its binary but not its figures, so a twin of it is measured here."""
        if outcome.status == "ok" and outcome.cubin and outcome.same_as is None and outcome.measurement is not None:
            self.binaries.setdefault(outcome.cubin, outcome)

    def _built(self, config: Config):
        """What the compile pool made of ``config`` (waiting for its build; a signal cuts the
        wait); ``None`` where unknown."""
        if self.tools.built is None:
            return None
        with stop.interruptible():
            return self.tools.built(config)


def search(key: TuningKey, space: SearchSpace, measure: Measure, store: Store, options: SearchOptions | None = None,
           *, on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None, part: tuple[int, int] = (0, 1),
           **instruments) -> SearchResult:
    """One search with ``measure`` (``Tuner(...).run()``); ``instruments``: the other fields of
    :class:`~autotune.search.instruments.Instruments` (``retime``, ``clocks``, ``prefetch``...).

    Raises:
        See :class:`Tuner`.
    """
    tools = Instruments(measure, **instruments)
    return Tuner(key, space, store, options or SearchOptions(), tools, on_trial=on_trial, part=part).run()
