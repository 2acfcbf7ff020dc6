"""One trial of a search: a config measured, recorded in autotune's tables and told to the
key's stored Optuna study; a failure is data with its reason, a signal fails the trial in
flight and is re-raised (:mod:`autotune.base.signals`)."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autotune.errors import TrialFailed
from autotune.kernel.config import Config
from autotune.measure.measurement import Measurement
from autotune.base import signals as stop
from autotune.search.outcome import SAME_BINARY, SearchResult, TrialOutcome
from autotune.search.study import StoredStudy

if TYPE_CHECKING:
    from autotune.store.repository import Store

__all__ = ["Claim", "claim", "give_up", "run_trial", "settle", "what_was_kept"]


@dataclass(frozen=True)
class Claim:
    """A config claimed as a new RUNNING trial of the study (:meth:`StoredStudy.start`): its
    trial's id and number, and ``built``, what the compile pool made of it
    (:meth:`autotune.measure.pipeline.Ahead.built`; ``None`` where unknown)."""

    config: Config
    trial_id: int
    number: int
    built: object = None


def claim(study: StoredStudy, config: Config, built: object = None) -> Claim | None:
    """Claim ``config`` (``built``: what its build made of it) as a new trial of ``study``;
    ``None`` where another process on the study claimed it first (:meth:`StoredStudy.start`).

    Raises:
        KeyboardInterrupt: a signal that came while the store was writing (nothing claimed).
        StoreError: the database failed.
    """
    stop.check()  # a signal that came while the store was writing
    claimed = study.start(config)
    return None if claimed is None else Claim(config, *claimed, built=built)


def settle(study: StoredStudy, claimed: Claim, measure: Callable[[Config], Measurement], store: Store,
           search_id: int, flight: dict, *, built=None, same_as: TrialOutcome | None = None) -> TrialOutcome:
    """Measure the ``claimed`` config and store it as its trial in search ``search_id``
    (:func:`run_trial`'s second half: ``measure`` may also read a measurement sent earlier).
    On any error the trial is failed (``interrupted`` or ``lost``) before it is raised."""
    config, number = claimed.config, claimed.number
    flight.clear()
    flight.update(number=number, config=config)
    try:
        if same_as is not None:
            outcome = _same(config, same_as, store, search_id, number, flight)
        else:
            outcome = _measure(config, _or_failure(measure, built), store, search_id, number, flight)
            if built is not None and built.identity and outcome.status == "ok":
                outcome = dataclasses.replace(outcome, cubin=built.identity)
        study.finish(claimed.trial_id, outcome)
    except BaseException as exc:  # a signal, a lost database, a measuring process that could not go on
        give_up(study, claimed, exc)
        raise
    flight.clear()
    return outcome


def give_up(study: StoredStudy, claimed: Claim, exc: BaseException) -> None:
    """Fail ``claimed``'s trial, cut by ``exc`` (``interrupted`` for a signal, else ``lost``),
    whatever the database does meanwhile (it may be the fault)."""
    with stop.shielded(), contextlib.suppress(Exception):
        study.abandon(claimed.trial_id, "interrupted" if isinstance(exc, KeyboardInterrupt) else "lost")


def run_trial(study: StoredStudy, config: Config, measure: Callable[[Config], Measurement], store: Store,
              search_id: int, flight: dict, *, built=None, same_as: TrialOutcome | None = None
              ) -> TrialOutcome | None:
    """Measure ``config`` as a new trial of ``study`` and store it in search ``search_id``
    (:func:`claim`, then :func:`settle`); ``None`` (nothing measured) where another process on
    the study claimed it first (:meth:`StoredStudy.start`).

    ``built``: what the compile pool made of it (:class:`autotune.measure.pipeline.Built`): its
    failure is recorded without measuring (refused before nvcc, a compile error, the compile
    deadline), its identity kept with the outcome. ``same_as``: an ``ok`` outcome of the same
    binary: recorded with that measurement, not measured (:data:`~autotune.search.outcome.SAME_BINARY`).

    ``flight`` is filled with what is in flight (``number``, ``config``, then ``measured`` and
    ``stored``) so that a lost database can say what it lost; cleared when the trial is told.

    Raises:
        KeyboardInterrupt: a signal during the measurement; the trial is failed (``interrupted``) first.
        StoreError: the database failed.
    """
    claimed = claim(study, config)
    if claimed is None:
        return None
    return settle(study, claimed, measure, store, search_id, flight, built=built, same_as=same_as)


def _or_failure(measure, built):
    """``measure``, or where the pool's build failed (``built.failure``) a stand-in that
    raises that failure without measuring."""
    failure = getattr(built, "failure", None)
    if failure is None:
        return measure

    def failed(config: Config) -> Measurement:
        raise TrialFailed(failure.status, failure.reason)
    return failed


def _same(config: Config, same_as: TrialOutcome, store: Store, search_id: int, number: int,
          flight: dict) -> TrialOutcome:
    """Store ``config`` as trial ``number``, an ``ok`` with ``same_as``'s measurement: the same binary."""
    flight["measured"] = True
    reason = f"{SAME_BINARY} {same_as.number} ({same_as.config.key}): measured once"
    started = time.perf_counter()
    store.record_trial(search_id, number, config, status="ok", measurement=same_as.measurement, phases={},
                       reason=reason)
    spent = {"store": (time.perf_counter() - started) * 1e3}
    flight["stored"] = True
    return TrialOutcome(number, config, "ok", measurement=same_as.measurement, reason=reason, phases=spent,
                        cubin=same_as.cubin, same_as=same_as.number)


def _measure(config: Config, measure, store: Store, search_id: int, number: int, flight: dict) -> TrialOutcome:
    """Measure ``config`` and store it as trial ``number`` of search ``search_id``."""
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
    return outcome


def what_was_kept(result: SearchResult, flight: dict) -> str:
    """One clause for a search that lost its database: what this run stored, what it lost,
    and how to go on."""
    stored = len(result.outcomes) + bool(flight.get("stored"))
    text = f"the search stopped: {stored} trial{'s' if stored != 1 else ''} of this run stored"
    if flight.get("retime"):
        text += "; lost: the re-timing (the key's best is the fastest single measurement)"
    elif "number" in flight and not flight.get("stored"):
        what = ("measured, not stored" if flight.get("measured") else
                "its measurement cut, not stored" if flight.get("measuring") else "not measured")
        text += f"; lost: trial {flight['number']} ({flight['config'].key}), {what}"
    return (text + f"; search row {result.search_id} stays 'running'; run the same search with --resume "
                   "(resume=True) to go on, measuring only what is missing")
