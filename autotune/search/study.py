"""The key's Optuna study in the results database: the record of every config a search measured.

One study per :class:`~autotune.store.key.TuningKey` (``key.study_name``) in Optuna's RDB
storage, beside autotune's tables (:meth:`autotune.store.repository.Store.optuna_storage`), so
``resume`` continues it, several workers (one per GPU) share it and optuna-dashboard shows it.

The strategy's model lives in memory (:mod:`autotune.search.strategies`); this study only
records. A config is written as a trial when it starts measuring (RUNNING, its parameters
fixed, a heartbeat every :data:`~autotune.store.study_storage.HEARTBEAT_S` s from a thread of
this module), then told COMPLETE with its median ms, or FAIL with its status and reason as user
attributes. Proposals that break the constraints or repeat a config are never written: they
never reach this module. Each macro is a categorical parameter over its values, as searches
before strategies wrote them (``suggest_categorical``), so an old study resumes as it was: its
COMPLETE and FAIL trials are read back as measured (its PRUNED constraint breakers and
``duplicate`` trials are skipped, and so are configs cut at the compile deadline: never
compiled, a resumed search may try them again), and its WAITING trials (configs an old grid queued) stay
waiting: they are never taken.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.dims import format_shape
from autotune.kernel.space import SearchSpace
from autotune.measure.compile import COMPILE_DEADLINE
from autotune.base import signals as stop
from autotune.search import objective
from autotune.search.outcome import SearchResult, TrialOutcome
from autotune.store.key import TuningKey

if TYPE_CHECKING:
    from autotune.store.repository import Store

__all__ = ["CUT", "StoredStudy", "StudyExistsError", "open_study", "quiet_optuna"]

CUT = "compile_deadline"
"""The study's status (user attribute) of a config whose compile was stopped at the compile
deadline (autotune's trial row: ``timeout``, its reason :data:`~autotune.measure.compile.COMPILE_DEADLINE`):
one of :data:`~autotune.store.study_storage.NOT_MEASURED`, so no search counts it as measured
and a later one may claim and compile it again."""


class StudyExistsError(InvalidInputError):
    """A new search of a key whose study exists (``resume`` not given); ``key`` is the key.
    The command line answers it with the key's stored best where there is one."""

    def __init__(self, key: TuningKey) -> None:
        super().__init__(f"a study for {key.kernel} {format_shape(key.dims)} {key.dtype} on {key.device.name} exists "
                         "already; pass resume (--resume) to continue it")
        self.key = key


def open_study(store: Store, key: TuningKey, *, resume: bool, storage=None, objective: str = "time"):
    """Create the key's Optuna study, or with ``resume`` load the existing one, and return it:
    one direction (minimise), or one per objective of a Pareto search (``time,energy``: two).

    Raises:
        StudyExistsError: the study exists and ``resume`` is false.
        InvalidInputError: ``resume`` of a study of
            another number of objectives (a single objective's study resumed with
            ``time,energy``, or the reverse).
        StoreError: the database cannot be used.
    """
    import optuna

    count = len(objective.split(","))
    storage = storage or store.optuna_storage()
    with store.errors():  # DuplicatedStudyError is raised from the database's IntegrityError
        try:
            study = optuna.create_study(study_name=store.study_name(key, storage), storage=storage,
                                        directions=["minimize"] * count, load_if_exists=resume)
        except optuna.exceptions.DuplicatedStudyError:
            raise StudyExistsError(key) from None
        if len(study.directions) != count:
            raise InvalidInputError(
                f"objective {objective} is not allowed with --resume here: the study for {key.kernel} "
                f"{format_shape(key.dims)} {key.dtype} on {key.device.name} minimises {len(study.directions)} "
                f"objective(s), this search {count}; resume it with its own objective")
        return study


class StoredStudy:
    """The key's study (module doc), opened for one search; call :meth:`close` at its end."""

    def __init__(self, store: Store, key: TuningKey, space: SearchSpace, *, resume: bool,
                 objective: str = "time") -> None:
        import optuna

        self.store, self.key, self.objective = store, key, objective
        self.storage = store.optuna_storage()
        self.study = open_study(store, key, resume=resume, storage=self.storage, objective=objective)
        self.name = self.study.study_name  # the key's study_name, or its legacy name (a study of autotune < 0.4.0)
        self._study_id = self.storage.get_study_id_from_name(self.name)
        self._dists = {n: optuna.distributions.CategoricalDistribution(list(v)) for n, v in space.params}
        self._beating: set[int] = set()  # RUNNING trials of this search (a claimed one waits while another measures)
        self._read: set[int] = set()  # trials measured() returned already
        self._checked = False  # the study's distributions checked against the space's (start)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def fail_stale(self) -> None:
        """Fail the trials of dead workers: those whose heartbeat stopped (Optuna's
        ``fail_stale_trials``) and those that died before their first heartbeat."""
        import warnings

        import optuna

        with warnings.catch_warnings():  # "experimental" in Optuna's words since 2.9
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self._retried(lambda: optuna.storages.fail_stale_trials(self.study))
        self._retried(lambda: self.store.fail_trials_dead_before_heartbeat(self.storage, self.name))

    def measured(self, result: SearchResult) -> dict[Config, TrialOutcome]:
        """Configs the study holds as measured (ok or failed) in trials not returned by an
        earlier call, keyed by config; those ok go into ``result.measured`` with their
        objective's value (a Pareto study's first: the time), and into ``result.scores`` with
        every value (``(ms, J)``) in a Pareto study."""
        from optuna.trial import TrialState

        return self._measured(self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)),
                              result)

    def refresh(self, result: SearchResult) -> tuple[dict[Config, TrialOutcome], set[Config]]:
        """:meth:`measured` and :meth:`in_flight` from one read of the study (a search reads
        it before every config)."""
        from optuna.trial import TrialState

        trials = self._retried(lambda: self.study.get_trials(deepcopy=False, states=(
            TrialState.COMPLETE, TrialState.FAIL, TrialState.RUNNING)), read=True)
        running = [t for t in trials if t.state == TrialState.RUNNING]
        return (self._measured([t for t in trials if t.state != TrialState.RUNNING], result),
                {Config.of(self.key.kernel, t.params) for t in running if t.params})

    def _measured(self, trials, result: SearchResult) -> dict[Config, TrialOutcome]:
        from optuna.trial import TrialState

        seen: dict[Config, TrialOutcome] = {}
        for t in trials:
            if t.number in self._read:
                continue
            self._read.add(t.number)
            status, reason = t.user_attrs.get("status"), t.user_attrs.get("reason")
            if status in (None, "interrupted", "lost", "duplicate", CUT) or "duplicate_of" in t.user_attrs:
                continue  # not measured (CUT: never compiled, this search may try it again)
            if status == "ok" and (t.state != TrialState.COMPLETE or not t.values):
                continue  # its process died between the result and Optuna's tell (failed by heartbeat): not measured
            config = Config.of(self.key.kernel, t.params)
            same_as = t.user_attrs.get("same_binary_as")
            seen.setdefault(config, TrialOutcome(t.number, config, status, reason=reason,
                                                 cubin=t.user_attrs.get("cubin"), same_as=same_as))
            if status == "ok" and same_as is not None:  # the strategy is told its value; never re-timed
                result.same_binary.setdefault(config, tuple(t.values) if len(t.values) > 1 else t.values[0])
            elif status == "ok":
                first = t.values[0]
                result.measured[config] = min(first, result.measured.get(config, first))
                if len(t.values) > 1:
                    result.scores.setdefault(config, tuple(t.values))
        return seen

    def in_flight(self) -> set[Config]:
        """Configs in RUNNING trials (of other workers on the study)."""
        from optuna.trial import TrialState

        return {Config.of(self.key.kernel, t.params)
                for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)) if t.params}

    def start(self, config: Config) -> tuple[int, int] | None:
        """Claim ``config``: write it as a RUNNING trial and beat its heart; returns ``(trial
        id, number)``, or ``None`` where another process on the study (a worker of another
        GPU, a search on another host) claimed it first.

        A config belongs to its earliest live trial (RUNNING, or measured: COMPLETE, or FAIL
        with a measured status; not one interrupted, lost, or dead by heartbeat): once its
        trial is written, a process that finds an earlier live trial of the same config fails
        its own (status ``duplicate``, never read as measured) and measures nothing. Exact on
        both databases: SQLite writes one transaction at a time, so a trial with a smaller id
        was committed first and is seen; on PostgreSQL the claims of one config take turns
        under an advisory lock (:meth:`autotune.store.repository.Store.claim_lock`), so the
        ids of its trials follow their commits there too."""
        from autotune.store import study_storage

        if not self._checked:  # the study's distributions, once (Optuna checks them every write)
            self._retried(lambda: study_storage.check_distributions(self.storage, self._study_id, self._dists),
                          read=True)
            self._checked = True
        params = {n: self._dists[n].to_internal_repr(v) for n, v in config.as_dict().items()}
        with self.store.claim_lock(f"{self.name}\0{config.key}"):
            trial_id, number = self._retried(lambda: study_storage.start_trial(
                self.storage, self._study_id, config.as_dict(), self._dists))  # with its first heartbeat
            try:
                if self.store.claimed_before(self._study_id, trial_id, params):
                    self.abandon(trial_id, "duplicate")
                    return None
                with self._lock:
                    self._beating.add(trial_id)
            except BaseException as exc:  # a signal in a retry's backoff, a lost database: not left RUNNING
                with stop.shielded(), contextlib.suppress(Exception):
                    self.abandon(trial_id, "interrupted" if isinstance(exc, KeyboardInterrupt) else "lost")
                raise
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="optuna-heartbeat", daemon=True)
            self._thread.start()
        return trial_id, number

    def _retried(self, call, *, read: bool = False):
        """``call()``, one transaction of Optuna's storage, retried while another writer holds
        the database (:func:`autotune.store.locking.retrying`: a signal stops the backoff). A
        refused transaction wrote nothing (SQLite's lock is taken as it begins), so it is safe.
        ``read``: it only reads (:func:`autotune.store.locking.reading`: no write lock)."""
        from autotune.store import locking

        def attempt():
            with self.store.errors(), (locking.reading() if read else contextlib.nullcontext()):
                return call()
        return locking.retrying(attempt)

    def finish(self, trial_id: int, outcome: TrialOutcome) -> None:
        """Tell the trial its outcome: COMPLETE with the objective's value (the median ms, J or
        J s: :func:`autotune.search.objective.value`; a Pareto search's ms and J:
        :func:`autotune.search.objective.told`), or FAIL (also an ``ok`` trial without the
        energy its objective needs); the status (:data:`CUT` for a compile stopped at its
        deadline) and reason as user attributes, and where
        known the binary's identity (``cubin``) and the trial of the same binary measured
        before (``same_binary_as``)."""
        from optuna.trial import TrialState

        from autotune.store import study_storage

        self._stop_beating(trial_id)
        cut = outcome.status == "timeout" and (outcome.reason or "").startswith(COMPILE_DEADLINE)
        attrs = {"status": CUT if cut else outcome.status}
        if outcome.reason:
            attrs["reason"] = outcome.reason
        if outcome.cubin:
            attrs["cubin"] = outcome.cubin
        if outcome.same_as is not None:  # a trial number: 0 is one
            attrs["same_binary_as"] = outcome.same_as
        score = objective.told(outcome.measurement, self.objective) if outcome.status == "ok" else None
        values = None if score is None else list(score) if isinstance(score, tuple) else [score]
        state = TrialState.FAIL if values is None else TrialState.COMPLETE
        self._retried(lambda: study_storage.end_trial(self.storage, trial_id, state, values, attrs))  # one write

    def abandon(self, trial_id: int, status: str) -> None:
        """Fail a trial that was cut (``status``: ``interrupted`` by a signal, or ``lost``: the
        database or the measuring process failed), or never measured (``duplicate``: another
        process had claimed its config); its config counts as not measured by it."""
        from optuna.trial import TrialState

        from autotune.store import study_storage

        self._stop_beating(trial_id)
        with self.store.errors():
            study_storage.end_trial(self.storage, trial_id, TrialState.FAIL, attrs={"status": status})

    def close(self) -> None:
        """Stop the heartbeat thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _stop_beating(self, trial_id: int) -> None:
        with self._lock:
            self._beating.discard(trial_id)

    def _beat(self) -> None:
        from autotune.store.study_storage import HEARTBEAT_S

        while not self._stop.wait(HEARTBEAT_S):
            with self._lock:
                for trial_id in sorted(self._beating):
                    self.storage.record_heartbeat(trial_id)  # a lost database: dropped (study_storage)


def quiet_optuna() -> None:
    """Optuna's log to warnings and errors only (a process whose progress autotune prints:
    the workers of a workload's tuning)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
