"""The search loop: Optuna proposes configs, the benchmark measures them, the store records.

One Optuna study per :class:`~autotune.store.key.TuningKey`, kept in Optuna's RDB storage in the
results database, so ``resume=True`` continues it. The kernel's default config is measured
first in every study (:mod:`autotune.search.proposals`). ``Study.optimize`` runs an objective in
which a proposed config that breaks the space's constraints is told PRUNED without
being measured; a config already measured in the study is told its earlier outcome
without being measured again; neither counts against ``n_trials``, which is the number of
configs measured. A config that fails (compile error, over the device's
limits, wrong result) is recorded with its reason and told FAIL. Only verified, timed
trials are COMPLETE, so only they can become the best.

After the trials, the ``top_k`` fastest configs of the study are re-timed interleaved over
``rounds`` rounds and the winner is chosen by :func:`autotune.search.winner.choose` (ties inside the
measured spread are broken by a fixed rule), so identical searches crown the same config
(:mod:`autotune.search.retiming`).

The benchmark is injected: any ``measure(config) -> Measurement`` that raises
:class:`~autotune.errors.TrialFailed` for a failed config, and optionally
``retime(configs, rounds) -> list[Retiming]`` (the real ones are
:meth:`autotune.measure.benchmark.Benchmark.measure` and ``.retime``; tests pass a fake timer).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from autotune.kernel.config import Config
from autotune.errors import InvalidInputError, StoreError, TrialFailed
from autotune.store.key import TuningKey
from autotune.store.study_labels import label_study
from autotune.kernel.dims import format_shape
from autotune.measure.measurement import Measurement
from autotune.measure.nvml import clock_warning
from autotune.base import signals as stop
from autotune.search import proposals, retiming
from autotune.search.outcome import SearchResult, TrialOutcome
from autotune.kernel.space import SearchSpace

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported when a search opens it
    from autotune.store.repository import Store

__all__ = ["SAMPLERS", "search", "open_study"]

SAMPLERS = ("tpe", "random", "grid")
"""Samplers offered: Optuna's TPESampler (default) and RandomSampler, and ``grid``: every
valid config not yet measured in the study, in order, queued one at a time with
``Study.enqueue_trial`` (unlike Optuna's GridSampler this skips constraint-breaking points
and, on resume, still measures a config whose trial was interrupted)."""

Measure = Callable[[Config], Measurement]
Retime = retiming.Retime


def _sampler(name: str, space: SearchSpace, seed: int | None):
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name in ("random", "grid"):
        return optuna.samplers.RandomSampler(seed=seed)
    raise InvalidInputError(f"unknown sampler {name!r}; allowed: {', '.join(SAMPLERS)}")


def _open_study(store: Store, key: TuningKey, sampler, resume: bool, storage=None):
    import optuna

    with store.errors():  # DuplicatedStudyError is raised from the database's IntegrityError
        try:
            return optuna.create_study(study_name=key.study_name, storage=storage or store.optuna_storage(),
                                       sampler=sampler, direction="minimize", load_if_exists=resume)
        except optuna.exceptions.DuplicatedStudyError:
            raise InvalidInputError(
                f"a study for {key.kernel} {format_shape(key.dims)} {key.dtype} on {key.device.name} exists "
                "already; pass --resume to continue it") from None


def open_study(store: Store, key: TuningKey, *, resume: bool) -> None:
    """Create the key's Optuna study (or, with ``resume``, keep the existing one), so that
    several workers can then all join it with ``search(..., resume=True)``.

    Raises:
        InvalidInputError: the study exists and ``resume`` is false.
    """
    _open_study(store, key, None, resume)


class _Failed(Exception):
    """Raised out of the objective so that Optuna marks the trial FAIL (and goes on)."""


def search(key: TuningKey, space: SearchSpace, measure: Measure, store: Store, *,
           n_trials: int, timeout: float | None = None, seed: int | None = None,
           sampler: str = "tpe", resume: bool = False, memcpy_gbps: float | None = None,
           copy_gbps: float | None = None, l2_mode: str | None = None,
           clocks: Callable[[], dict | None] | None = None, retime: Retime | None = None,
           top_k: int = 5, rounds: int = 5,
           on_trial: Callable[[TrialOutcome, SearchResult], None] | None = None,
           part: tuple[int, int] = (0, 1)) -> SearchResult:
    """Search ``space`` for the config of lowest median time per launch for ``key``.

    Args:
        n_trials: configs to measure (>= 1; fewer when the space runs out): a proposal of a
            config measured before or breaking the constraints is not measured and not counted.
        timeout: seconds after which no new trial starts (``None``: no limit).
        seed: sampler seed, for reproducible proposals.
        sampler: one of :data:`SAMPLERS`.
        resume: continue the key's existing study instead of refusing to touch it.
        memcpy_gbps, copy_gbps: the memcpy and bound-kernel figures measured for this run, GB/s.
        l2_mode: how timing treated L2 (``single`` or ``rotating``), stored with the run.
        clocks: reads the GPU clocks (:func:`autotune.measure.nvml.clock_state`), at start and end.
        retime: re-times configs interleaved; ``None`` skips the re-timing phase.
        top_k, rounds: how many of the fastest configs to re-time, in how many rounds.
        on_trial: called after every trial (for progress bars).
        part: ``(i, n)``: this search is worker ``i`` of ``n`` filling the study at once (one
            per GPU, :mod:`autotune.search.workers`): a grid walks its share of the space first
            (:class:`~autotune.search.proposals.Unmeasured`), and only worker 0 queues the
            kernel's default, so that the workers measure disjoint configs.

    Raises:
        InvalidInputError: bad ``n_trials``/``timeout``/``sampler``, a ``grid`` over more than
            :data:`~autotune.search.proposals.GRID_LIMIT` valid configs, or the study exists and
            ``resume`` is false.
        StoreError: the database cannot be used; one that fails mid-search (a server gone,
            a lock held past :data:`autotune.store.locking.LOCK_WAIT_S`) stops it, the
            message saying how many trials of this run are stored and which was lost.
        KeyboardInterrupt: on SIGINT or SIGTERM (:mod:`autotune.base.signals`; handled while
            the search runs, in the main thread), re-raised after Optuna failed the trial in
            flight and the search was marked ``interrupted``; the trials before it are stored.
            A signal cuts a measurement or the re-timing at once; one that comes during a
            database write is acted on as the write ends.
    """
    if n_trials < 1:
        raise InvalidInputError(f"--trials {n_trials} is not allowed; give 1 or more")
    if timeout is not None and timeout <= 0:
        raise InvalidInputError(f"--timeout {timeout:g} is not allowed; give a positive number of seconds")
    if top_k < 1 or rounds < 1:
        raise InvalidInputError(f"--top-k {top_k} and --rounds {rounds}: give 1 or more of each")
    if sampler == "grid":
        proposals.check_grid(space)
    with stop.deferred():  # SIGINT/SIGTERM: acted on in measurements and between trials, never lost
        return _search(key, space, measure, store, n_trials=n_trials, timeout=timeout, seed=seed, sampler=sampler,
                       resume=resume, memcpy_gbps=memcpy_gbps, copy_gbps=copy_gbps, l2_mode=l2_mode, clocks=clocks,
                       retime=retime, top_k=top_k, rounds=rounds, on_trial=on_trial, part=part)


def _search(key: TuningKey, space: SearchSpace, measure: Measure, store: Store, *, n_trials: int,
            timeout: float | None, seed: int | None, sampler: str, resume: bool, memcpy_gbps: float | None,
            copy_gbps: float | None, l2_mode: str | None, clocks: Callable[[], dict | None] | None,
            retime: Retime | None, top_k: int, rounds: int,
            on_trial: Callable[[TrialOutcome, SearchResult], None] | None, part: tuple[int, int]) -> SearchResult:
    from autotune.store.study_storage import HEARTBEAT_S

    storage = store.optuna_storage()
    study = label_study(_open_study(store, key, _sampler(sampler, space, seed), resume, storage), key, sampler,
                        store.errors)
    store.fail_trials_dead_before_heartbeat(storage, key.study_name)
    start_clocks = clocks() if clocks else None
    search_id = store.start_search(key, study_name=key.study_name, sampler=sampler, seed=seed,
                                   memcpy_gbps=memcpy_gbps, copy_gbps=copy_gbps, l2_mode=l2_mode,
                                   clocks=start_clocks)
    result = SearchResult(key, search_id)
    flight: dict = {}  # the trial (or re-timing) in flight, for saying what a lost database lost
    default = proposals.default_config(key.kernel, space)
    try:
        with store.errors():
            seen = _earlier_trials(study, key.kernel, result)
            unmeasured = proposals.Unmeasured(space, seen, part, last=default if part[0] else None)
            fallback = unmeasured if sampler == "grid" else proposals.Shuffled(space, seen, seed)
            # the default first, in every study that lacks it; a grid then goes in the space's
            # order, one config queued at a time (a large grid starts at once)
            proposals.enqueue(study, [default] if default and part[0] == 0 else [], seen)
            if sampler == "grid":
                _queue_next(study, unmeasured, seen, shared=part[1] > 1)
    except StoreError:
        with stop.shielded(), contextlib.suppress(StoreError):
            store.finish_search(search_id, "failed")
        raise
    idle = [0]  # proposals in a row that measured nothing
    # when the last check for trials dead before their first heartbeat ran: such a trial is failed
    # only GRACE_S after it started, so checking once a heartbeat interval (not every trial, a
    # read and a write lock each time) delays that by at most HEARTBEAT_S
    checked = [time.monotonic()]

    def objective(trial) -> float:
        try:
            stop.check()  # a signal that came while Optuna or the store was writing
            if time.monotonic() - checked[0] >= HEARTBEAT_S:  # beside Optuna's stale-trial check
                store.fail_trials_dead_before_heartbeat(storage, key.study_name)
                checked[0] = time.monotonic()
            config = Config.of(key.kernel, {n: trial.suggest_categorical(n, list(v)) for n, v in space.params})
            if config not in seen:  # another process on the study (another GPU) may have measured it since
                seen.update({c: o for c, o in _earlier_trials(study, key.kernel, result).items() if c not in seen})
            flight.clear()
            flight.update(number=trial.number, config=config)
            outcome = _run_trial(trial.number, config, space, seen, measure, store, search_id, flight)
        except KeyboardInterrupt:
            trial.set_user_attr("status", "interrupted")
            result.stopped = "interrupted"
            raise
        _annotate(trial, outcome)
        if outcome.status == "ok":
            result.measured[config] = outcome.measurement.median_ms
        result.outcomes.append(outcome)
        flight.clear()
        if on_trial is not None:
            on_trial(outcome, result)
        return _value(outcome, result)

    def after_trial(study, _trial) -> None:
        """Stop at ``n_trials`` measured or an exhausted space; after :data:`proposals.MAX_IDLE`
        proposals in a row that measured nothing, queue an unmeasured config (grid: the next)."""
        if not result.outcomes:
            return
        idle[0] = idle[0] + 1 if result.outcomes[-1].status in ("constraint", "duplicate") else 0
        if result.measured_count >= n_trials:
            result.stopped = "trials"
            study.stop()
        elif unmeasured.peek() is None:
            result.stopped = "exhausted"
            study.stop()
        elif sampler == "grid":
            _queue_next(study, unmeasured, seen, shared=part[1] > 1)
        elif idle[0] >= proposals.MAX_IDLE:
            proposals.enqueue(study, [fallback.peek()], seen)
            idle[0] = 0

    status = "failed"
    try:
        with store.errors():  # Optuna's storage errors too: one StoreError line
            if unmeasured.peek() is None:
                result.stopped = "exhausted"
            else:
                result.stopped = "timeout"  # unless a callback says otherwise
                study.optimize(objective, n_trials=None, timeout=timeout, catch=(_Failed,), callbacks=[after_trial])
            stop.check()  # a signal during the last trial's bookkeeping stops before the re-timing
            flight.clear()
            if retime is not None and result.measured:
                flight["retime"] = True
                result.decision = retiming.decide(key, store, result, retime, top_k, rounds)
                flight.clear()
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        result.stopped = "interrupted"
        raise
    except StoreError as exc:  # the database went away (or stayed locked) mid-search
        raise StoreError(f"{exc}; {_what_was_kept(result, flight)}") from exc.__cause__ or exc
    finally:
        with stop.shielded():
            end_clocks = clocks() if clocks else None
            result.clock_warning = clock_warning(start_clocks, end_clocks)
            try:
                store.finish_search(search_id, status, clocks=end_clocks, clock_warning=result.clock_warning)
            except StoreError as exc:
                if status == "finished":  # every trial and the winner are stored; only the row's end is not
                    raise StoreError(f"{exc}; the search ran to its end and every trial of it is stored, but "
                                     f"its search row {search_id} stays 'running'") from exc.__cause__ or exc
                # else an error or an interrupt is on its way out already; the row stays 'running'
    return result


def _what_was_kept(result: SearchResult, flight: dict) -> str:
    """One clause for a search that lost its database: what this run stored, what it lost,
    and how to go on."""
    stored = sum(o.status not in ("constraint", "duplicate") for o in result.outcomes) + bool(flight.get("stored"))
    text = f"the search stopped: {stored} trial{'s' if stored != 1 else ''} of this run stored"
    if flight.get("retime"):
        text += "; lost: the re-timing (the key's best is the fastest single measurement)"
    elif "number" in flight and not flight.get("stored"):
        what = "measured, not stored" if flight.get("measured") else "not measured"
        text += f"; lost: trial {flight['number']} ({flight['config'].key}), {what}"
    return (text + f"; search row {result.search_id} stays 'running'; run the same search with --resume "
                   "(resume=True) to go on, measuring only what is missing")


def _queue_next(study, walk: proposals.Unmeasured, seen: dict, shared: bool) -> None:
    """Queue the grid's next unmeasured config. ``shared`` (other workers on the study): past
    the configs in flight in their trials (taken from the queue, or their share walked to the
    end), which their trials measure, so that no config is measured twice at once."""
    held = proposals.taken(study, running=shared)  # read once: the walk may skip many configs
    while (config := walk.peek()) is not None:
        if proposals.enqueue(study, [config], seen, held=held) or not shared:
            return
        walk.skip()


def _earlier_trials(study, kernel: str, result: SearchResult) -> dict[Config, TrialOutcome]:
    """Configs the study already measured (ok or failed), keyed by config."""
    from optuna.trial import TrialState

    seen: dict[Config, TrialOutcome] = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        status = t.user_attrs.get("status")
        if status is None or status in ("interrupted", "duplicate") or t.user_attrs.get("duplicate_of") is not None:
            continue
        config = Config.of(kernel, t.params)
        seen.setdefault(config, TrialOutcome(t.number, config, status, reason=t.user_attrs.get("reason")))
        if status == "ok":
            result.measured[config] = t.value
    return seen


def _run_trial(number: int, config: Config, space: SearchSpace, seen: dict[Config, TrialOutcome],
               measure: Measure, store: Store, search_id: int, flight: dict) -> TrialOutcome:
    broken = space.violations(config)
    if broken:
        return TrialOutcome(number, config, "constraint", reason="breaks " + "; ".join(broken))
    if config in seen:
        earlier = seen[config]
        return TrialOutcome(number, config, "duplicate", duplicate_of=earlier.number,
                            reason=f"measured in trial {earlier.number} ({earlier.status})")
    try:
        with stop.interruptible():  # a signal fails the trial in flight at once (nothing is half-written)
            m = measure(config)
    except TrialFailed as failure:
        flight["measured"] = True
        spent = dict(failure.phases or {})
        started = time.perf_counter()
        store.record_trial(search_id, number, config, status=failure.status, reason=failure.reason, phases=spent)
        outcome = TrialOutcome(number, config, failure.status, reason=failure.reason, phases=spent)
    else:
        flight["measured"] = True
        spent = dict(m.phases or {})
        started = time.perf_counter()
        early = getattr(m, "early_stop", None)  # a note: timed until clearly slower than the best so far
        store.record_trial(search_id, number, config, status="ok", measurement=m, phases=spent, reason=early)
        outcome = TrialOutcome(number, config, "ok", measurement=m, reason=early, phases=spent)
    spent["store"] = (time.perf_counter() - started) * 1e3  # the whole write, its commit included
    flight["stored"] = True
    seen[config] = outcome
    return outcome


def _annotate(trial, outcome: TrialOutcome) -> None:
    """The outcome as the trial's user attributes, each one a transaction of Optuna's: a
    duplicate gets only ``status`` and ``duplicate_of`` (its reason says no more than these)."""
    trial.set_user_attr("status", outcome.status)
    if outcome.reason and outcome.duplicate_of is None:
        trial.set_user_attr("reason", outcome.reason)
    if outcome.duplicate_of is not None:
        trial.set_user_attr("duplicate_of", outcome.duplicate_of)


def _value(outcome: TrialOutcome, result: SearchResult) -> float:
    """The objective value Optuna records: median ms; PRUNED for a constraint; FAIL for failures."""
    import optuna

    if outcome.status == "ok":
        return outcome.measurement.median_ms
    if outcome.status == "duplicate" and outcome.config in result.measured:
        return result.measured[outcome.config]
    if outcome.status == "constraint":
        raise optuna.TrialPruned(outcome.reason)
    raise _Failed(outcome.reason)
