"""The results database: searches, every trial, and the best config of each tuning key.

One SQLAlchemy URL holds both autotune's tables (``autotune_*``, migrated by Alembic with
the version table ``autotune_alembic_version``) and Optuna's study storage
(:meth:`Store.optuna_storage`). The default is a SQLite file in the user data directory;
``AUTOTUNE_DB`` or an explicit URL selects another database.

Every public method runs in its own transaction and raises
:class:`autotune.errors.StoreError` when the database cannot be opened, migrated, read or
written. Optuna is imported only by :meth:`Store.optuna_storage`.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from autotune.errors import AutotuneError, StoreError
from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo
from autotune.search import stop
from autotune.measure.measurement import Measurement
from autotune.search.winner import Decision
from autotune.store import best_sql, rows
from autotune.store.key import Dims, TuningKey, dims_key
from autotune.store.location import default_url
from autotune.store.models import SEARCH_STATUSES, Best, Device, Kernel, Search, Trial, utcnow
from autotune.store.records import MEASURED, BestRecord, ImportedResult, TrialRecord, best_from_row, trial_record
from . import schema

if TYPE_CHECKING:
    import optuna

__all__ = ["Store", "TrialRecord", "BestRecord", "ImportedResult", "default_url"]

HEARTBEAT_S = 5
"""Seconds between heartbeats of a running Optuna trial."""
GRACE_S = 20
"""Seconds without heartbeat after which a RUNNING trial counts as dead."""
LOCK_WAIT_S = 60.0
"""Seconds a retried transaction of ours goes on being retried while SQLite stays locked by
another writer (then: :class:`StoreError` saying so)."""
BUSY_TIMEOUT_S = 1.0
"""SQLite: seconds one attempt of a retried transaction waits for the lock inside SQLite, where
no signal is acted on, before the retry loop (which acts on one) tries again."""
SESSION_BUSY_TIMEOUT_S = 30.0
"""SQLite: seconds a transaction not retried (:meth:`Store.session` used directly, Optuna's
own) waits for the lock."""
RETRIES = 5
"""Attempts of a transaction refused by a concurrent writer on PostgreSQL: a deadlock, a
serialisation failure, or a unique key another process inserted first."""
_LOCK_WORDS = ("locked", "busy")
_CONFLICT_WORDS = ("deadlock", "could not serialize", "unique constraint", "duplicate key")

_attempt = threading.local()  # .short: inside a retried attempt (short SQLite busy wait)


def _conflict(exc: StoreError) -> str | None:
    """``"locked"`` (SQLite locked or busy), ``"conflict"`` (PostgreSQL deadlock, serialisation
    failure, a unique key inserted first by another process) or ``None`` (not retried)."""
    cause = exc.__cause__
    if not isinstance(cause, (OperationalError, IntegrityError)):
        return None
    text = str(cause).lower()
    if any(word in text for word in _LOCK_WORDS):
        return "locked"
    return "conflict" if any(word in text for word in _CONFLICT_WORDS) else None


def _retrying(attempt):
    """``attempt()`` (one transaction), re-run while a concurrent writer refuses it: SQLite
    locked or busy, for up to :data:`LOCK_WAIT_S` seconds (each attempt waiting
    :data:`BUSY_TIMEOUT_S` inside SQLite); on PostgreSQL a deadlock, serialisation failure or
    unique key inserted first (the next attempt finds the row), up to :data:`RETRIES`
    attempts. Safe because a refused transaction was rolled back whole. The backoff between
    attempts is where SIGINT/SIGTERM stop a search (:func:`autotune.search.stop.sleep`).

    Raises:
        StoreError: not a conflict, or still refused at the end (saying how long it tried).
    """
    started = time.monotonic()
    for n in itertools.count(1):
        before, _attempt.short = getattr(_attempt, "short", False), True
        try:
            return attempt()
        except StoreError as exc:
            kind, waited = _conflict(exc), time.monotonic() - started
            if kind is None:
                raise
            if (kind == "locked" and waited >= LOCK_WAIT_S) or (kind == "conflict" and n >= RETRIES):
                raise StoreError(f"{exc} (still refused after {n} attempts in {waited:.0f} s)") from exc.__cause__
        finally:
            _attempt.short = before
        stop.sleep(min(0.05 * 2**n, 0.5) * (1 + random.random()))


def _retry_when_locked(method):
    """Run a one-transaction method under :func:`_retrying`."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        return _retrying(lambda: method(self, *args, **kwargs))

    return wrapper


def _database_error_in(exc: BaseException) -> BaseException | None:
    """``exc`` if it is a database error, else the first one it was raised while handling
    (Optuna, failing to record a failed trial on a lost database, raises an UnboundLocalError
    of its own from there), else ``None``."""
    seen = 0
    while exc is not None and seen < 8:
        if _is_database_error(exc):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _is_database_error(exc: BaseException) -> bool:
    """An error of the database or its driver (as SQLAlchemy or Optuna's storage raise it)."""
    if isinstance(exc, (SQLAlchemyError, sqlite3.Error)):
        return True
    module = type(exc).__module__ or ""
    return type(exc).__name__ == "StorageInternalError" or module.startswith(("psycopg", "psycopg2"))


class Store:
    """The results database at ``url`` (``None``: ``$AUTOTUNE_DB``, else :func:`default_url`).

    With ``upgrade`` (the default) the schema is migrated to the newest revision at once, so
    a new, empty database just works.

    Raises:
        StoreError: the URL is invalid, or the database cannot be opened or migrated.
    """

    def __init__(self, url: str | None = None, *, upgrade: bool = True, read_only: bool = False) -> None:
        self.url: str = url or os.environ.get("AUTOTUNE_DB") or default_url(create=not read_only)
        self.backup: str | None = None
        self.read_only = read_only
        self.schema_state: str | None = None
        if read_only:
            schema.check_sqlite_path(self.url, read_only=True)
            self._open_read_only()
            return
        schema.check_sqlite_path(self.url)
        try:
            self.engine: Engine = create_engine(self.url)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"invalid database URL {self._safe_url!r}: {schema.one_line(exc)}") from exc
        if self.engine.dialect.name == "sqlite":
            _configure_sqlite(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if upgrade:
            self.backup = _retrying(self._prepare)

    def _prepare(self) -> str | None:
        with self.errors("cannot open"):
            with schema.init_lock(self.engine):
                return schema.prepare(self.engine)

    def _open_read_only(self) -> None:
        """Open for reading only (``read_only=True``): no migration, lock file, backup or write;
        :attr:`schema_state` says what was found.

        SQLite: ``mode=ro``, and ``immutable`` where the file and its folder are not the
        caller's own to write and no WAL files exist (a read-only mount, another user's
        file: :func:`autotune.store.schema.read_only_engine`). PostgreSQL: every
        transaction ``READ ONLY``. A SQLite file that does not exist is not created:
        ``schema_state`` is ``"missing"`` (queries then fail with :class:`StoreError`). The
        revision is read without importing Alembic (:func:`autotune.store.schema.state`): a
        process's first lookup pays for no migration machinery.
        """
        try:
            self.engine, self.schema_state = schema.read_only_engine(self.url)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"invalid database URL {self._safe_url!r}: {schema.one_line(exc)}") from exc
        if self.engine.dialect.name == "sqlite":
            _configure_sqlite(self.engine, own_tables=False, read_only=True)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if self.schema_state is None:
            with self.errors():
                self.schema_state = _retrying(lambda: schema.state(self.engine))

    @contextmanager
    def errors(self, what: str = "") -> Iterator[None]:
        """Turn a database error raised in the block (by SQLAlchemy, the driver, or Optuna's
        storage) into one :class:`StoreError` line naming the database, password masked;
        ``what`` prefixes it (e.g. ``"cannot open"``); where it is given (opening, migrating:
        the blocks that take the SQLite lock file), a failure to take that file is one too."""
        try:
            yield
        except AutotuneError:  # ours (a StoreError already, or bad input found inside the block)
            raise
        except OSError as exc:
            if not what:  # a measurement's, or another OSError that is not the database's
                raise
            raise StoreError(self._masked(f"{what} the results database {self._safe_url}: "
                                          f"{exc.strerror or exc} ({exc.filename or 'lock file'})")) from exc
        except Exception as exc:
            found = _database_error_in(exc)
            if found is None:
                raise
            cause = found.__cause__ if type(found).__name__ == "StorageInternalError" and found.__cause__ else found
            prefix = f"{what} the results database" if what else "results database"
            raise StoreError(self._masked(f"{prefix} {self._safe_url}: {schema.one_line(cause)}")) from cause

    def _masked(self, text: str) -> str:
        """``text`` with the URL's password, wherever it appears, replaced by ``***``."""
        try:
            password = make_url(self.url).password
        except SQLAlchemyError:
            return text
        return text.replace(str(password), "***") if password else text

    def close(self) -> None:
        """Close the pooled connections (SQLite then folds its WAL into the database file)."""
        self.engine.dispose()

    def __repr__(self) -> str:
        return f"Store({self._safe_url!r})"

    @property
    def safe_url(self) -> str:
        """The URL with its password masked (as given where it cannot be parsed): safe to print."""
        return self._safe_url

    @property
    def _safe_url(self) -> str:
        try:
            return make_url(self.url).render_as_string(hide_password=True)
        except SQLAlchemyError:
            return self.url

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: commits when the block ends, rolls back when it raises.

        Don't call Optuna inside the block: on SQLite the transaction holds the write lock.

        Raises:
            StoreError: any database error (the original is chained as ``__cause__``).
        """
        session = self._sessions()
        try:
            yield session
            session.commit()
        except SQLAlchemyError as exc:
            _rollback(session)
            raise StoreError(self._masked(f"results database {self._safe_url}: {schema.one_line(exc)}")) from exc
        except BaseException:
            _rollback(session)
            raise
        finally:
            try:
                session.close()
            except SQLAlchemyError:  # the connection is gone already
                pass

    def upgrade(self, revision: str = "head") -> None:
        """Migrate autotune's tables to ``revision`` (Optuna's tables are left alone).

        Raises:
            StoreError: the database cannot be opened, is newer than this code, or a
                migration fails.
        """
        def attempt() -> None:
            with self.errors("cannot migrate"):
                with schema.init_lock(self.engine):
                    schema.upgrade(self.engine, revision)

        _retrying(attempt)

    def current_revision(self) -> str | None:
        """The Alembic revision of autotune's tables; ``None`` for a database never migrated.

        Raises:
            StoreError: the database cannot be read.
        """
        return _retrying(lambda: schema.current_revision(self.engine))

    def optuna_storage(self) -> optuna.storages.RDBStorage:
        """Optuna's RDB storage on the same database (its tables created under
        :func:`autotune.store.schema.init_lock` if missing).

        Trials send a heartbeat every :data:`HEARTBEAT_S` seconds; a RUNNING trial whose
        process died (no heartbeat for :data:`GRACE_S` seconds) is failed by the next
        search of the study. SQLite waits up to 30 s for locks.
        """
        with self.errors("cannot open Optuna's storage in"):
            try:
                with schema.init_lock(self.engine):
                    return self._optuna_storage()
            except RuntimeError as exc:  # Optuna's tables of another Optuna version
                raise StoreError(self._masked(f"Optuna's storage in {self._safe_url}: {schema.one_line(exc)}")) from exc

    def _optuna_storage(self) -> optuna.storages.RDBStorage:
        import optuna

        kwargs: dict[str, Any] = {}
        if self.engine.dialect.name == "sqlite":
            kwargs["connect_args"] = {"timeout": SESSION_BUSY_TIMEOUT_S}
        with warnings.catch_warnings():  # the heartbeat is "experimental" in Optuna's words
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = optuna.storages.RDBStorage(self.url, engine_kwargs=kwargs, heartbeat_interval=HEARTBEAT_S,
                                                 grace_period=GRACE_S)
        if self.engine.dialect.name == "sqlite":
            _configure_sqlite(storage.engine, own_tables=False)
            storage.engine.dispose()  # connections opened before the listeners go
        beat = storage.record_heartbeat

        def record_heartbeat(trial_id: int) -> None:
            """Optuna beats in a thread of its own, where a lost database would print a
            traceback: a missed beat is dropped (the search's next write says what failed)."""
            try:
                beat(trial_id)
            except Exception as exc:  # noqa: BLE001
                if not _is_database_error(exc):
                    raise

        storage.record_heartbeat = record_heartbeat
        return storage

    def fail_trials_dead_before_heartbeat(self, storage: optuna.storages.RDBStorage, study_name: str) -> list[int]:
        """Fail the RUNNING trials of Optuna study ``study_name`` (in ``storage``, from
        :meth:`optuna_storage`) that never sent a heartbeat and started more than
        :data:`GRACE_S` seconds ago; returns their Optuna trial ids.

        A live trial writes its first heartbeat as it starts. A process killed between
        creating its trial and that first write leaves a RUNNING trial without heartbeat,
        which Optuna's own stale-trial check (``fail_stale_trials``, run as each trial
        starts) skips forever; :func:`autotune.tuner.search` calls this beside it.
        """
        import datetime

        import sqlalchemy as sa
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        stmt = sa.text("SELECT t.trial_id FROM trials t LEFT JOIN trial_heartbeats h ON h.trial_id = t.trial_id "
                       "WHERE t.study_id = :sid AND t.state = 'RUNNING' AND h.trial_id IS NULL")
        with self.errors():
            sid = storage.get_study_id_from_name(study_name)
        with self.session() as session:
            ids = session.execute(stmt, {"sid": sid}).scalars().all()
        cutoff = datetime.datetime.now() - datetime.timedelta(seconds=GRACE_S)  # Optuna keeps local time
        failed = []
        with self.errors():
            for trial_id in ids:
                started = storage.get_trial(trial_id).datetime_start
                if started is not None and started < cutoff:
                    try:
                        storage.set_trial_state_values(trial_id, TrialState.FAIL)
                        failed.append(trial_id)
                    except UpdateFinishedTrialError:  # another process failed or finished it first
                        pass
        return failed

    @_retry_when_locked
    def start_search(
        self, key: TuningKey, *, study_name: str, sampler: str, seed: int | None, memcpy_gbps: float | None,
        copy_gbps: float | None = None, l2_mode: str | None = None, clocks: dict | None = None,
    ) -> int:
        """Record the start of a search for ``key`` (status ``running``) on the physical GPU
        ``key.device`` (its UUID, ordinal and PCI bus id are kept); returns its id.

        ``memcpy_gbps`` and ``copy_gbps`` are the device-to-device memcpy and the copy_row
        bound measured for it (GB/s); ``l2_mode`` how timing treated L2; ``clocks`` the GPU
        clocks at the start (:func:`autotune.measure.nvml.clock_state`).
        """
        with self.session() as session:
            search = Search(
                device=rows.device_row(session, key.device),
                kernel=rows.kernel_row(session, key.kernel, key.source_hash, key.spec_hash),
                dims=key.dims_key, dtype=key.dtype, nvcc_version=key.nvcc_version,
                compile_flags=key.compile_flags, study_name=study_name, sampler=sampler,
                seed=seed, memcpy_gbps=memcpy_gbps, copy_gbps=copy_gbps, l2_mode=l2_mode,
                clocks_start=clocks, status="running", gpu_uuid=key.device.uuid,
                gpu_ordinal=key.device.ordinal, gpu_pci_bus_id=key.device.pci_bus_id,
            )
            session.add(search)
            session.flush()
            return search.id

    @_retry_when_locked
    def finish_search(self, search_id: int, status: str, *, clocks: dict | None = None,
                      clock_warning: str | None = None) -> None:
        """Mark a search ``finished``, ``interrupted`` or ``failed``, stamp its end time, and
        keep the clocks at the end and the warning if they moved.

        Raises:
            ValueError: ``status`` is not one of those.
            StoreError: there is no such search.
        """
        if status not in SEARCH_STATUSES or status == "running":
            raise ValueError(f"unknown final search status {status!r}; allowed: {', '.join(SEARCH_STATUSES[1:])}")
        with self.session() as session:
            search = rows.search_row(session, search_id)
            search.status = status
            search.finished_at = utcnow()
            search.clocks_end = clocks
            search.clock_warning = clock_warning

    @_retry_when_locked
    def record_trial(
        self, search_id: int, number: int, config: Config, *, status: str,
        measurement: Measurement | None = None, reason: str | None = None,
        phases: Mapping[str, float] | None = None,
    ) -> TrialRecord:
        """Store trial ``number`` of a search; an ``ok`` trial that beats the key's best
        (lower median time, or no best yet) becomes the best in the same transaction.

        ``phases`` (ms per phase; default: the measurement's) is stored with ``store`` added:
        the milliseconds of this write up to its commit (the commit itself is not in it).

        Raises:
            ValueError: unknown ``status``; ``ok`` without a measurement; a failed status
                without a reason or with a measurement; ``config`` of another kernel.
            StoreError: there is no such search, or the database cannot be written.
        """
        rows.check_trial(status, measurement, reason)
        started = time.perf_counter()
        with self.session() as session:
            search = rows.search_row(session, search_id)
            if config.kernel != search.kernel.name:
                raise ValueError(f"config {config} is not of the search's kernel {search.kernel.name!r}")
            values = {name: getattr(measurement, name) for name in MEASURED} if measurement else {}
            trial = Trial(
                search_id=search_id, number=number, config_key=config.key, macros=config.as_dict(),
                status=status, reason=reason, **values,
            )
            session.add(trial)
            session.flush()
            if status == "ok":
                rows.update_best(session, search, trial)
            given = phases if phases is not None else measurement.phases if measurement else None
            trial.phases = {**(given or {}), "store": (time.perf_counter() - started) * 1e3}
            return trial_record(trial, search.kernel.name)

    @_retry_when_locked
    def set_winner(self, key: TuningKey, decision: Decision, rounds: int) -> None:
        """Make the winner of a re-timing the key's best, with its pooled figures and tie group.

        The best points at the latest ``ok`` trial of the winner's config.

        Raises:
            StoreError: the key has no ``ok`` trial of that config.
        """
        with self.session() as session:
            trial = session.scalars(
                select(Trial).join(Search, Trial.search_id == Search.id)
                .join(Device, Search.device_id == Device.id).join(Kernel, Search.kernel_id == Kernel.id)
                .where(*rows.key_filter(key), *rows.search_key_filter(key), Trial.status == "ok",
                       Trial.config_key == decision.winner.config.key)
                .order_by(Trial.id.desc()).limit(1)).one_or_none()
            if trial is None:
                raise StoreError(f"no ok trial of {decision.winner.config} for this key")
            search = trial.search
            rows.update_best(session, search, trial, force=True)
            best = session.scalars(select(Best).filter_by(**rows.best_key(search))).one()
            best.pooled_median_ms = decision.winner.pooled_median_ms
            best.spread = decision.winner.spread
            best.rounds = rounds
            best.tie_group = [{"config": r.config.key, "pooled_median_ms": r.pooled_median_ms,
                               "spread": r.spread} for r in decision.tie_group]

    @_retry_when_locked
    def best(self, key: TuningKey) -> BestRecord | None:
        """The best stored config of exactly ``key``, or ``None``."""
        found = self._bests(*best_sql.select_best(best_sql.key_columns(key)))
        return found[0] if found else None

    def _bests(self, sql: str, params: Mapping[str, Any]) -> list[BestRecord]:
        """The records of the best rows :mod:`autotune.store.best_sql` selects."""
        with self.session() as session:
            return [best_from_row(row) for row in session.execute(text(sql), params).mappings()]

    @_retry_when_locked
    def key_trials(self, key: TuningKey) -> list[TrialRecord]:
        """Every trial of every search of exactly ``key`` (a resumed study has several),
        in the order they were stored."""
        stmt = (
            select(Trial, Kernel.name).join(Search, Trial.search_id == Search.id)
            .join(Kernel, Search.kernel_id == Kernel.id).join(Device, Search.device_id == Device.id)
            .where(*rows.key_filter(key), *rows.search_key_filter(key))
            .order_by(Trial.id)
        )
        with self.session() as session:
            return [trial_record(trial, name) for trial, name in session.execute(stmt)]

    @_retry_when_locked
    def find_best(
        self, *, kernel: str | None = None, dims: Mapping[str, int] | Dims | str | None = None,
        dtype: str | None = None, device_name: str | None = None, source_hash: str | None = None,
        spec_hash: str | None = None,
    ) -> list[BestRecord]:
        """Best configs matching every filter given, sorted by device name, kernel, dims (by
        their values), dtype.

        Args:
            kernel: the kernel's name (every source and spec of it).
            dims: exactly these dims: a mapping or :data:`~autotune.store.key.Dims` in the kernel's
                declared order, or their text form (``"rows=8192,cols=8192"``).
            device_name: a case-insensitive substring of the device's name.
        """
        filters = best_sql.filter_columns(kernel=kernel, dims=dims, dtype=dtype, source_hash=source_hash,
                                          spec_hash=spec_hash)
        return best_sql.sorted_bests(self._bests(*best_sql.select_best(filters, device_name)))

    @_retry_when_locked
    def trials(self, search_id: int) -> list[TrialRecord]:
        """Every trial of a search, in trial-number order (empty for an unknown search)."""
        stmt = (
            select(Trial, Kernel.name).join(Search, Trial.search_id == Search.id)
            .join(Kernel, Search.kernel_id == Kernel.id)
            .where(Trial.search_id == search_id).order_by(Trial.number, Trial.id)
        )
        with self.session() as session:
            return [trial_record(trial, name) for trial, name in session.execute(stmt)]

    @_retry_when_locked
    def add_imported(self, results: Sequence[ImportedResult], *, study_name: str,
                     sampler: str = "import") -> list[str]:
        """Record imported results in one transaction, each as a finished search (``study_name``,
        ``sampler``, started and finished when it was tuned) with one ``ok`` trial, which becomes
        its key's best where there is none or it is faster (with its re-timing figures). A result
        whose key already has an ``ok`` trial of the same config is skipped as a duplicate.

        Returns:
            What became of each result, in order: ``"best"`` (recorded, now its key's best),
            ``"kept"`` (recorded, not the best) or ``"duplicate"`` (skipped).
        """
        with self.session() as session:
            return [rows.add_imported(session, item, study_name, sampler) for item in results]

    @_retry_when_locked
    def save_bench_run(self, device: DeviceInfo, dims: Mapping[str, int] | Dims | str, dtype: str,
                       nvcc_version: str, memcpy_gbps: float | None, l2_mode: str, lines: Sequence[Any]) -> int:
        """Store one ``autotune bench`` run and its lines (mappings or objects with the fields of
        :data:`autotune.store.rows.BENCH_ROW_FIELDS`, in table order); returns the run's id.

        ``dims``: the benched problem's named dims (or their text form); ``memcpy_gbps``: the
        run's device memcpy (``None`` where there is no memcpy line).
        """
        if not isinstance(dims, str):
            dims = dims_key(tuple(dims.items()) if isinstance(dims, Mapping) else dims)
        with self.session() as session:
            return rows.add_bench_run(session, device, dims, dtype, nvcc_version, memcpy_gbps, l2_mode, lines).id


def _configure_sqlite(engine: Engine, *, own_tables: bool = True, read_only: bool = False) -> None:
    """Wait for locks (:data:`BUSY_TIMEOUT_S` inside a retried attempt, else
    :data:`SESSION_BUSY_TIMEOUT_S`), and real transactions: SQLAlchemy emits ``BEGIN
    IMMEDIATE`` itself, so a read-then-write holds the write lock from its start. SQLite
    answers a deferred transaction that turns into a writer while another process writes
    with "database is locked" at once, without waiting; under several processes that failed
    Optuna's writes too, so its engine gets the same. ``own_tables``: also foreign keys on
    and WAL (autotune's engine; Optuna's tables are left as Optuna defines them). Both
    engines, where the file is in WAL mode: ``synchronous=NORMAL``, so a commit waits for no
    fsync (a trial is some 20 commits, most of them Optuna's): in WAL mode a committed
    transaction still survives a killed process (SIGKILL loses at most the trial in flight);
    only a power loss or OS crash may roll back the last commits, never corrupt the file.
    ``read_only``: plain ``BEGIN`` (a reader takes no write lock) and no pragma that writes."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # pysqlite must not emit BEGIN itself
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={int(1000 * SESSION_BUSY_TIMEOUT_S)}")
            if own_tables:
                cursor.execute("PRAGMA foreign_keys=ON")
                cursor.execute("PRAGMA journal_mode=WAL")
            if not read_only and str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                cursor.execute("PRAGMA synchronous=NORMAL")  # see above: WAL only
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        if own_tables:  # ours: a retried attempt waits briefly inside SQLite, then the retry loop
            wait = BUSY_TIMEOUT_S if getattr(_attempt, "short", False) else SESSION_BUSY_TIMEOUT_S
            connection.exec_driver_sql(f"PRAGMA busy_timeout={int(1000 * wait)}")
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def _rollback(session: Session) -> None:
    """Roll back, where the connection still allows it (a lost server does not)."""
    try:
        session.rollback()
    except SQLAlchemyError:
        pass
