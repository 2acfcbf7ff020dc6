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

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from autotune.errors import AutotuneError, StoreError
from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo
from autotune.measure.measurement import Decision, Measurement
from autotune.store import locking, rows
from autotune.store.key import Dims, TuningKey, dims_key
from autotune.store.location import default_url
from autotune.store.models import SEARCH_STATUSES, Best, Device, Kernel, Search, Trial, utcnow
from autotune.store.records import (CERTIFIED, MEASURED, BestRecord, ImportedResult, TrialRecord, certificate,
                                    trial_record)
from autotune.store.queries import Reads
from autotune.store.study_storage import Studies
from . import schema

__all__ = ["Store", "TrialRecord", "BestRecord", "ImportedResult", "default_url"]

T = TypeVar("T")


class Store(Reads, Studies):
    """The results database at ``url``, a URL the door resolved and checked: its writes here,
    its reads in :class:`~autotune.store.queries.Reads`, Optuna's study storage in
    :class:`~autotune.store.study_storage.Studies`.

    Built by the one door only, :func:`autotune.store.opening.open_results` (which resolves the
    URL once with :func:`~autotune.store.urls.resolve_url` and, for a writable opening, refuses
    another application's database before anything is written:
    :func:`~autotune.store.urls.refuse_foreign`); ``tests/store/test_opening.py`` checks that nothing
    else constructs one.

    With ``upgrade`` (the default) the schema is migrated to the newest revision at once, so
    a new, empty database just works; ``read_only``: nothing is created, migrated or written,
    and ``upgrade=False`` then takes the schema as found (a newer one is not refused).

    Raises:
        StoreError: the URL is invalid, or the database cannot be opened or migrated.
    """

    def __init__(self, url: str, *, upgrade: bool = True, read_only: bool = False) -> None:
        self.url: str = url
        self.backup: str | None = None
        self.read_only = read_only
        self.schema_state: str | None = None
        if read_only:
            schema.check_sqlite_path(self.url, read_only=True)
            self._open_read_only(judge=upgrade)
            return
        schema.check_sqlite_path(self.url)
        try:
            self.engine: Engine = create_engine(self.url)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"invalid database URL {self._safe_url!r}: {schema.one_line(exc)}") from exc
        if self.engine.dialect.name == "sqlite":
            locking.configure_sqlite(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if upgrade:
            self.backup = locking.retrying(self._prepare)

    def _prepare(self) -> str | None:
        with self.errors("cannot open"):
            with schema.init_lock(self.engine):
                return schema.prepare(self.engine)

    def _open_read_only(self, judge: bool = True) -> None:
        """Open for reading only (``read_only=True``): no migration, lock file, backup or write;
        :attr:`schema_state` says what was found.

        SQLite: ``mode=ro``, and ``immutable`` where the file and its folder are not the
        caller's own to write and no WAL files exist (a read-only mount, another user's
        file: :func:`autotune.store.schema.read_only_engine`). PostgreSQL: every
        transaction ``READ ONLY``. A SQLite file that does not exist is not created:
        ``schema_state`` is ``"missing"`` (queries then fail with :class:`StoreError`). The
        revision is read without importing Alembic (:func:`autotune.store.schema.state`): a
        process's first lookup pays for no migration machinery. ``judge`` false (``upgrade=False``:
        the schema taken as found, what ``autotune db current`` prints): the revision is not
        judged, a newer one is not refused (``schema_state`` stays ``None``).
        """
        try:
            self.engine, self.schema_state = schema.read_only_engine(self.url)
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"invalid database URL {self._safe_url!r}: {schema.one_line(exc)}") from exc
        if self.engine.dialect.name == "sqlite":
            locking.configure_sqlite(self.engine, own_tables=False, read_only=True)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if self.schema_state is None and judge:
            with self.errors():
                self.schema_state = locking.retrying(lambda: schema.state(self.engine))

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
            found = locking.database_error_in(exc)
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
        """Close the pooled connections, Optuna's storage's too (SQLite then folds its WAL into
        the database file)."""
        self.engine.dispose()
        self.dispose_optuna()

    def after_fork(self) -> None:
        """In a child process forked while this store was open: drop the pooled connections,
        which are the parent's, without closing them (closing one here could end the parent's
        session), so that the child opens its own (SQLAlchemy's recipe for ``os.fork``:
        ``dispose(close=False)``)."""
        self.engine.dispose(close=False)
        self.dispose_optuna(close=False)

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

    def transaction(self, work: Callable[[Session], T]) -> T:
        """``work(session)`` in one transaction (:meth:`session`), run again whole while a
        concurrent writer refuses it (:func:`autotune.store.locking.retrying`: SQLite locked, for
        up to ``LOCK_WAIT_S`` seconds in short attempts): the door for a write of another
        package that is not a method here (a T4 import). ``work`` must start afresh each time
        (what it counted in a refused attempt was rolled back).

        Raises:
            StoreError: a database error, or still refused at the end of the retries.
        """
        def attempt() -> T:
            with self.session() as session:
                return work(session)

        return locking.retrying(attempt)

    def upgrade(self, revision: str = "head") -> str | None:
        """Migrate autotune's tables to ``revision`` (Optuna's tables are left alone); a SQLite
        file at an older revision is backed up first, as when it is opened
        (:func:`autotune.store.schema.prepare`).

        Returns:
            The path of that backup (also kept in :attr:`backup`), else ``None``.

        Raises:
            StoreError: the database cannot be opened, is newer than this code, or the backup
                or a migration fails.
        """
        def attempt() -> str | None:
            with self.errors("cannot migrate"):
                with schema.init_lock(self.engine):
                    return schema.prepare(self.engine, revision)

        made = locking.retrying(attempt)
        if made is not None:
            self.backup = made
        return made

    def current_revision(self) -> str | None:
        """The Alembic revision of autotune's tables; ``None`` for a database never migrated.

        Raises:
            StoreError: the database cannot be read.
        """
        return locking.retrying(lambda: schema.current_revision(self.engine))

    @locking.retry_when_locked
    def start_search(
        self, key: TuningKey, *, study_name: str, sampler: str, seed: int | None, memcpy_gbps: float | None,
        copy_gbps: float | None = None, l2_mode: str | None = None, clocks: dict | None = None,
        objective: str = "time",
    ) -> int:
        """Record the start of a search for ``key`` (status ``running``) on the physical GPU
        ``key.device`` (its UUID, ordinal and PCI bus id are kept); returns its id.

        ``memcpy_gbps`` and ``copy_gbps`` are the device-to-device memcpy and the copy_row
        bound measured for it (GB/s); ``l2_mode`` how timing treated L2; ``clocks`` the GPU
        clocks at the start (:func:`autotune.measure.nvml.clock_state`); ``objective`` what it
        minimises (``time``, ``energy`` or ``edp``).
        """
        with self.session() as session:
            search = Search(
                device=rows.device_row(session, key.device),
                kernel=rows.kernel_row(session, key.kernel, key.source_hash, key.spec_hash),
                dims=key.dims_key, dtype=key.dtype, nvcc_version=key.nvcc_version,
                compile_flags=key.compile_flags, study_name=study_name, sampler=sampler,
                seed=seed, memcpy_gbps=memcpy_gbps, copy_gbps=copy_gbps, l2_mode=l2_mode,
                clocks_start=clocks, status="running", gpu_uuid=key.device.uuid,
                gpu_ordinal=key.device.ordinal, gpu_pci_bus_id=key.device.pci_bus_id, objective=objective,
            )
            session.add(search)
            session.flush()
            return search.id

    @locking.retry_when_locked
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

    @locking.retry_when_locked
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
            values = {name: getattr(measurement, name, None) for name in MEASURED + CERTIFIED} if measurement else {}
            if values.get("samples") == 0:
                values["samples"] = None  # 0: unknown
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

    @locking.retry_when_locked
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
            best.certificate = certificate(decision)

    @locking.retry_when_locked
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

    def add_key_trials(self, keys: Sequence[tuple[Mapping[str, Any], Sequence[Any]]], *,
                       study_name: str) -> list[tuple[int, int, bool]]:
        """Store each key's trials in one transaction (:func:`autotune.store.rows.add_key_trials`:
        a T4 file's import), run again whole while a concurrent writer refuses it
        (:meth:`transaction`); returns ``(stored, skipped, became best)`` of each key, in order."""
        return self.transaction(lambda session: [rows.add_key_trials(session, key, trials, study_name)
                                                 for key, trials in keys])

    @locking.retry_when_locked
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


def _rollback(session: Session) -> None:
    """Roll back, where the connection still allows it (a lost server does not)."""
    try:
        session.rollback()
    except SQLAlchemyError:
        pass
