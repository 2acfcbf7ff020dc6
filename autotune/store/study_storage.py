"""Optuna's study storage in the results database: its RDB storage with heartbeats, a search's
trial started and ended in one transaction each, and the failing of trials whose process died
before their first heartbeat.

Optuna (``optuna.storages.RDBStorage``) keeps its own tables (``studies``, ``trials``, ...) beside
autotune's in the same database; :meth:`autotune.store.repository.Store.optuna_storage` opens it
under the schema lock. Optuna is imported only here, and only when a search asks.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from autotune.errors import StoreError
from autotune.store import locking, schema

if TYPE_CHECKING:
    import optuna

    from autotune.store.key import TuningKey

__all__ = ["Studies", "HEARTBEAT_S", "GRACE_S", "NOT_MEASURED", "rdb_storage", "fail_trials_dead_before_heartbeat",
           "advisory_key", "stored_study_name", "start_trial", "end_trial", "check_distributions"]

HEARTBEAT_S = 5
"""Seconds between heartbeats of a running Optuna trial."""
GRACE_S = 20
"""Seconds without heartbeat after which a RUNNING trial counts as dead."""
NOT_MEASURED = ("ok", "interrupted", "lost", "duplicate", "compile_deadline")
"""Statuses (user attribute ``status``) of FAIL trials that did not measure their config: cut by
a signal, lost with the database or the measuring process, a claim given up (``duplicate``),
``ok`` but failed by heartbeat before Optuna was told, or never compiled: its nvcc run was
stopped at the search's compile deadline (``compile_deadline``; autotune's trial row says
``timeout``), so a later search of the study may try it again."""


def rdb_storage(url: str, *, sqlite: bool) -> optuna.storages.RDBStorage:
    """Optuna's RDB storage of the database at ``url`` (``sqlite``: a SQLite database).

    Trials send a heartbeat every :data:`HEARTBEAT_S` seconds; a RUNNING trial whose process
    died (no heartbeat for :data:`GRACE_S` seconds) is failed by the next search of the study
    (Optuna's ``fail_stale_trials``). SQLite waits up to
    :data:`autotune.store.locking.SESSION_BUSY_TIMEOUT_S` for locks, in real transactions
    (:func:`autotune.store.locking.configure_sqlite`). A heartbeat that fails on a lost database
    is dropped: Optuna beats in a thread of its own, where it would print a traceback (the
    search's next write says what failed).

    Two caches spare the cost of opening: a :class:`~autotune.store.repository.Store` keeps the
    storage it opened (one a store, for its searches), and the head of Optuna's schema is read
    once a process (:func:`_optuna_head`), for the several stores one process may open (a
    workload's problems, a test's fresh databases).

    Raises:
        RuntimeError: Optuna's tables are of another Optuna version (Optuna's own error).
    """
    import optuna

    kwargs: dict[str, Any] = {"connect_args": {"timeout": locking.SESSION_BUSY_TIMEOUT_S}} if sqlite else {}
    with warnings.catch_warnings():  # the heartbeat is "experimental" in Optuna's words
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)

        def opened(check: bool) -> optuna.storages.RDBStorage:
            return optuna.storages.RDBStorage(url, engine_kwargs=kwargs, heartbeat_interval=HEARTBEAT_S,
                                              grace_period=GRACE_S, skip_compatibility_check=not check)

        # Optuna's check of its tables' version reads its migration scripts (about 0.1 s of CPU)
        # each time a storage is opened; their head is read once a process (_optuna_head), and
        # only tables of another version are opened again with Optuna's check, for its error
        storage = opened(check=False)
        if storage.get_current_version() != _optuna_head(storage):
            storage.engine.dispose()
            storage = opened(check=True)
    if sqlite:
        locking.configure_sqlite(storage.engine, own_tables=False)
        storage.engine.dispose()  # connections opened before the listeners go
    beat = storage.record_heartbeat

    def record_heartbeat(trial_id: int) -> None:
        try:
            beat(trial_id)
        except Exception as exc:  # noqa: BLE001
            if not locking.is_database_error(exc):
                raise

    storage.record_heartbeat = record_heartbeat
    return storage


_HEADS: dict[str, str] = {}
"""Optuna's version -> the head revision of its table schema (:func:`_optuna_head`)."""


def _optuna_head(storage: optuna.storages.RDBStorage) -> str:
    """The head revision of Optuna's table schema: what ``storage.get_head_version()`` says (it
    parses Optuna's migration scripts), read once a process for the Optuna imported."""
    import optuna

    if optuna.__version__ not in _HEADS:
        _HEADS[optuna.__version__] = storage.get_head_version()
    return _HEADS[optuna.__version__]


def stored_study_name(storage: optuna.storages.BaseStorage, key: TuningKey) -> str:
    """The name under which ``storage`` holds ``key``'s study: its
    :attr:`~autotune.store.key.TuningKey.study_name`, or the
    :attr:`~autotune.store.key.TuningKey.legacy_study_name` of a study made by autotune < 0.4.0
    where only that one exists (so that such a study resumes, its trials read as before). A key
    with neither gets the new name."""
    for name in (key.study_name, key.legacy_study_name):
        try:
            storage.get_study_id_from_name(name)
        except KeyError:
            continue
        return name
    return key.study_name


class _Sessions(Protocol):
    """What :func:`fail_trials_dead_before_heartbeat` needs of the store
    (:class:`autotune.store.repository.Store`, which imports this module)."""

    def errors(self) -> AbstractContextManager[None]: ...

    def trials_without_heartbeat(self, study_id: int) -> list[int]: ...


def fail_trials_dead_before_heartbeat(store: _Sessions, storage: optuna.storages.RDBStorage,
                                      study_name: str) -> list[int]:
    """Fail the RUNNING trials of Optuna study ``study_name`` (in ``storage``, from
    :meth:`~autotune.store.repository.Store.optuna_storage`; read through ``store``) that never
    sent a heartbeat and started more than :data:`GRACE_S` seconds ago; returns their Optuna
    trial ids.

    A trial of this version is written with its first heartbeat (:func:`start_trial`). One
    written by an earlier version, or by Optuna's ``create_new_trial`` (another writer on the
    study), may have been cut between its creation and that first write: a RUNNING trial
    without heartbeat, which Optuna's own stale-trial check (``fail_stale_trials``) skips
    forever; :class:`autotune.search.tuner.Tuner` calls this beside it.
    """
    import datetime

    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    with store.errors():
        sid = storage.get_study_id_from_name(study_name)
    ids = store.trials_without_heartbeat(sid)
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=GRACE_S)  # Optuna keeps local time
    failed = []
    with store.errors():
        for trial_id in ids:
            started = storage.get_trial(trial_id).datetime_start
            if started is not None and started < cutoff:
                try:
                    storage.set_trial_state_values(trial_id, TrialState.FAIL)
                    failed.append(trial_id)
                except UpdateFinishedTrialError:  # another process failed or finished it first
                    pass
    return failed


@contextmanager
def _transaction(storage: optuna.storages.RDBStorage) -> Iterator[Any]:
    """One transaction on the session Optuna's own storage methods use (its engine, with
    :func:`rdb_storage`'s SQLite set-up: ``BEGIN IMMEDIATE``, the busy waits): commits at the
    end, rolls back whole on any error, which is raised as it came (the caller's
    ``Store.errors()`` names a database error)."""
    session = storage.scoped_session()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def start_trial(storage: optuna.storages.RDBStorage, study_id: int, params: dict[str, Any],
                distributions: dict[str, Any]) -> tuple[int, int]:
    """Write a RUNNING trial of Optuna study ``study_id`` holding ``params`` (each parameter's
    value; its distribution from ``distributions``), with its first heartbeat, in one
    transaction; returns ``(trial id, number)``.

    The rows are those Optuna's ``create_new_trial`` (with a RUNNING template trial) and
    ``record_heartbeat`` write, in Optuna's own models, so Optuna reads the trial back as its
    own: a ``trials`` row numbered by the study's trials before it, one ``trial_params`` row a
    parameter, one ``trial_heartbeats`` row. Optuna writes them in two transactions of some 30
    statements for a 13-macro config (each parameter's distribution is looked up again), while
    SQLite's one write lock is held, and every process on the study waits for it; here they
    are one transaction of a few inserts. The distributions are checked against the study's
    once a search (:func:`check_distributions`).

    Raises:
        KeyError: no such study.
        sqlalchemy.exc.SQLAlchemyError: the database refused it (nothing was written).
    """
    import datetime

    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models
    from optuna.trial import TrialState

    with _transaction(storage) as session:
        # the study's row locked first, as Optuna does: numbering counts the trials before this
        # one, which on PostgreSQL a concurrent uncommitted claim would not show (two trials of
        # one number; a search reads trials by number)
        models.StudyModel.find_or_raise_by_id(study_id, session, for_update=True)
        trial = models.TrialModel(study_id=study_id, number=None, state=TrialState.RUNNING,
                                  datetime_start=datetime.datetime.now())
        session.add(trial)
        session.flush()  # its id
        trial_id = trial.trial_id
        session.add_all([models.TrialParamModel(trial_id=trial_id, param_name=name,
                                                param_value=distributions[name].to_internal_repr(value),
                                                distribution_json=distribution_to_json(distributions[name]))
                         for name, value in params.items()])
        session.add(models.TrialHeartbeatModel(trial_id=trial_id))
        number = trial.number = trial.count_past_trials(session)
    return trial_id, number


def end_trial(storage: optuna.storages.RDBStorage, trial_id: int, state: Any, values: list[float] | None = None,
              attrs: dict[str, Any] | None = None) -> None:
    """End RUNNING trial ``trial_id`` in one transaction: its user attributes ``attrs`` (set,
    or replaced), its ``values`` (one per objective), its ``state`` (``TrialState.COMPLETE`` or
    ``FAIL``) and its completion time; as Optuna's ``set_trial_user_attr`` (once an attribute)
    and ``set_trial_state_values`` would, in one write instead of one each.

    A trial that another process judged dead meanwhile (failed with no ``status`` attribute:
    Optuna's ``fail_stale_trials`` or :func:`fail_trials_dead_before_heartbeat`, when its
    heartbeats came later than :data:`GRACE_S`, e.g. on a host whose cores were all busy) is
    ended all the same: its owner was alive, and what it measured replaces the verdict.

    Raises:
        KeyError: no such trial.
        optuna.exceptions.UpdateFinishedTrialError: the trial had ended otherwise (completed,
            or failed with a status): nothing was written.
        sqlalchemy.exc.SQLAlchemyError: the database refused it (nothing was written).
    """
    import datetime
    import json

    from optuna.storages._rdb import models
    from optuna.trial import TrialState

    with _transaction(storage) as session:
        trial = models.TrialModel.find_or_raise_by_id(trial_id, session, for_update=True)
        held = {a.key: a for a in session.query(models.TrialUserAttributeModel)
                .filter(models.TrialUserAttributeModel.trial_id == trial_id)}
        if not (trial.state == TrialState.FAIL and "status" not in held):  # judged dead elsewhere: ours to end
            storage.check_trial_is_updatable(trial_id, trial.state)
        for key, value in (attrs or {}).items():
            if key in held:
                held[key].value_json = json.dumps(value)
            else:
                session.add(models.TrialUserAttributeModel(trial_id=trial_id, key=key, value_json=json.dumps(value)))
        for objective, value in enumerate(values or ()):
            stored, kind = models.TrialValueModel.value_to_stored_repr(value)
            session.add(models.TrialValueModel(trial_id=trial_id, objective=objective, value=stored, value_type=kind))
        trial.state = state
        trial.datetime_complete = datetime.datetime.now()


def check_distributions(storage: optuna.storages.RDBStorage, study_id: int, distributions: dict[str, Any]) -> None:
    """Check ``distributions`` against those study ``study_id`` holds for the same parameter
    names (its first trial's), as Optuna checks each parameter it writes
    (``check_distribution_compatibility``); :func:`start_trial` relies on this check, made
    once a search.

    Raises:
        ValueError: another kind of distribution, or other choices (Optuna's own error).
    """
    from optuna.distributions import check_distribution_compatibility, json_to_distribution
    from optuna.storages._rdb import models

    with _transaction(storage) as session:
        for name, distribution in distributions.items():
            held = (session.query(models.TrialParamModel).join(models.TrialModel)
                    .filter(models.TrialModel.study_id == study_id, models.TrialParamModel.param_name == name).first())
            if held is not None:
                check_distribution_compatibility(json_to_distribution(held.distribution_json), distribution)


def advisory_key(name: str) -> int:
    """A signed 64-bit key for ``name`` (PostgreSQL's advisory locks take one bigint)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


class Studies:
    """The Store's door to Optuna's study storage on its database (a mixin:
    :class:`~autotune.store.repository.Store` gives ``engine``, ``url``, ``errors()`` and
    ``session()``)."""

    url: str
    engine: Any
    errors: Callable[..., AbstractContextManager[None]]
    _masked: Callable[[str], str]

    if TYPE_CHECKING:
        @property
        def _safe_url(self) -> str: ...

    _optuna: Any = None  # the storage, once opened (optuna_storage)

    def dispose_optuna(self, *, close: bool = True) -> None:
        """Drop the pooled connections of Optuna's storage, where it was opened
        (``Store.close``; ``close=False`` in a forked child: ``Store.after_fork``)."""
        if self._optuna is not None:
            self._optuna.engine.dispose(close=close)

    def optuna_storage(self) -> optuna.storages.RDBStorage:
        """Optuna's RDB storage on the same database (its tables created under
        :func:`autotune.store.schema.init_lock` if missing), opened once a store: every study
        of the store's process shares it (Optuna's storage is thread-safe), so a search's
        studies (its own and its companion shapes') do not create and check Optuna's tables
        again, each under the lock that the workers of several GPUs take in turn. Optuna is
        imported before the lock is taken.

        Trials send a heartbeat (:data:`HEARTBEAT_S`); see :func:`rdb_storage`.
        """
        import optuna  # noqa: F401  (its import outside the lock the other processes wait on)

        storage = self._optuna
        if storage is not None:
            return storage
        with self.errors("cannot open Optuna's storage in"):
            try:
                with schema.init_lock(self.engine):
                    storage = rdb_storage(self.url, sqlite=self.engine.dialect.name == "sqlite")
            except RuntimeError as exc:  # Optuna's tables of another Optuna version
                raise StoreError(self._masked(f"Optuna's storage in {self._safe_url}: {schema.one_line(exc)}")) from exc
        self._optuna = storage
        return storage

    def study_name(self, key: TuningKey, storage: optuna.storages.RDBStorage | None = None) -> str:
        """The name of ``key``'s Optuna study in this database: its ``study_name``, or the
        ``legacy_study_name`` of a study made by autotune < 0.4.0 (:func:`stored_study_name`).

        Raises:
            StoreError: the database cannot be read.
        """
        storage = storage or self.optuna_storage()
        with self.errors():
            return stored_study_name(storage, key)

    def fail_trials_dead_before_heartbeat(self, storage: optuna.storages.RDBStorage, study_name: str) -> list[int]:
        """Fail the RUNNING trials of study ``study_name`` that died before their first heartbeat
        (:func:`fail_trials_dead_before_heartbeat`); their Optuna ids."""
        return fail_trials_dead_before_heartbeat(self, storage, study_name)  # type: ignore[arg-type]

    @contextmanager
    def claim_lock(self, name: str) -> Iterator[None]:
        """Hold a lock named ``name`` (a study and a config) against every process on this
        database for the block: PostgreSQL's session advisory lock on a connection of its own,
        released on exit or when the process dies (its connection closes). SQLite needs none
        (it writes one transaction at a time): nothing is held.

        Raises:
            StoreError: the database cannot be used.
        """
        with locking.advisory_lock(self.engine, advisory_key(name), self.errors):
            yield
