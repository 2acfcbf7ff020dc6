"""One trial of a search: a config measured, recorded in autotune's tables and told to the
key's stored Optuna study; a failure is data with its reason, a signal fails the trial in
flight and is re-raised (:mod:`autotune.search.stop`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from autotune.errors import StoreError, TrialFailed
from autotune.kernel.config import Config
from autotune.measure.measurement import Measurement
from autotune.search import stop
from autotune.search.outcome import TrialOutcome
from autotune.search.study import StoredStudy

if TYPE_CHECKING:
    from autotune.store.repository import Store

__all__ = ["run_trial"]


def run_trial(study: StoredStudy, config: Config, measure: Callable[[Config], Measurement], store: Store,
              search_id: int, flight: dict) -> TrialOutcome:
    """Measure ``config`` as a new trial of ``study`` and store it in search ``search_id``.

    ``flight`` is filled with what is in flight (``number``, ``config``, then ``measured`` and
    ``stored``) so that a lost database can say what it lost; cleared when the trial is told.

    Raises:
        KeyboardInterrupt: a signal during the measurement; the trial is failed (``interrupted``) first.
        StoreError: the database failed.
    """
    stop.check()  # a signal that came while the store was writing
    trial_id, number = study.start(config)
    flight.clear()
    flight.update(number=number, config=config)
    try:
        with stop.interruptible():  # a signal fails the trial in flight at once (nothing is half-written)
            m = measure(config)
    except TrialFailed as failure:
        flight["measured"] = True
        spent = dict(failure.phases or {})
        started = time.perf_counter()
        store.record_trial(search_id, number, config, status=failure.status, reason=failure.reason, phases=spent)
        outcome = TrialOutcome(number, config, failure.status, reason=failure.reason, phases=spent)
    except BaseException as exc:  # a signal, or the measuring process could not go on
        with stop.shielded(), contextlib.suppress(StoreError, Exception):
            study.abandon(trial_id, "interrupted" if isinstance(exc, KeyboardInterrupt) else "error")
        raise
    else:
        flight["measured"] = True
        spent = dict(m.phases or {})
        started = time.perf_counter()
        early = getattr(m, "early_stop", None)  # a note: timed until clearly slower than the best so far
        store.record_trial(search_id, number, config, status="ok", measurement=m, phases=spent, reason=early)
        outcome = TrialOutcome(number, config, "ok", measurement=m, reason=early, phases=spent)
    spent["store"] = (time.perf_counter() - started) * 1e3  # the whole write, its commit included
    flight["stored"] = True
    study.finish(trial_id, outcome)
    flight.clear()
    return outcome
