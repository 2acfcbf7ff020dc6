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
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Engine, create_engine, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from autotune.errors import AutotuneError, StoreError
from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo
from autotune.measure.measurement import Decision, Measurement
from autotune.store import best_sql, locking, rows, study_storage
from autotune.store.key import Dims, TuningKey, dims_key, parse_dims_key
from autotune.store.location import default_url
from autotune.store.models import SEARCH_STATUSES, Best, Device, Kernel, Search, Trial, utcnow
from autotune.store.records import (CERTIFIED, MEASURED, BestRecord, ImportedResult, TrialRecord, best_from_row, certificate,
                                    trial_record)
from autotune.store.trial_sql import ShapeTrial, select_shape_trials, select_state, select_trials, shape_trial_from_row
from . import schema

if TYPE_CHECKING:
    import optuna

__all__ = ["Store", "TrialRecord", "BestRecord", "ImportedResult", "default_url"]

T = TypeVar("T")


class Store:
    """The results database at ``url``, a URL the door resolved and checked.

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
        """Close the pooled connections (SQLite then folds its WAL into the database file)."""
        self.engine.dispose()

    def after_fork(self) -> None:
        """In a child process forked while this store was open: drop the pooled connections,
        which are the parent's, without closing them (closing one here could end the parent's
        session), so that the child opens its own (SQLAlchemy's recipe for ``os.fork``:
        ``dispose(close=False)``)."""
        self.engine.dispose(close=False)

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

    def optuna_storage(self) -> optuna.storages.RDBStorage:
        """Optuna's RDB storage on the same database (its tables created under
        :func:`autotune.store.schema.init_lock` if missing).

        Trials send a heartbeat (:data:`autotune.store.study_storage.HEARTBEAT_S`); see
        :func:`autotune.store.study_storage.rdb_storage`.
        """
        with self.errors("cannot open Optuna's storage in"):
            try:
                with schema.init_lock(self.engine):
                    return study_storage.rdb_storage(self.url, sqlite=self.engine.dialect.name == "sqlite")
            except RuntimeError as exc:  # Optuna's tables of another Optuna version
                raise StoreError(self._masked(f"Optuna's storage in {self._safe_url}: {schema.one_line(exc)}")) from exc

    def fail_trials_dead_before_heartbeat(self, storage: optuna.storages.RDBStorage, study_name: str) -> list[int]:
        """Fail the RUNNING trials of study ``study_name`` that died before their first heartbeat
        (:func:`autotune.store.study_storage.fail_trials_dead_before_heartbeat`); their Optuna ids."""
        return study_storage.fail_trials_dead_before_heartbeat(self, storage, study_name)

    @locking.retry_when_locked
    def claimed_before(self, study_id: int, trial_id: int, params: Mapping[str, float]) -> bool:
        """Whether Optuna study ``study_id`` holds a live trial of the config ``params`` older
        than ``trial_id`` (:func:`autotune.store.study_storage.claimed_before`)."""
        return study_storage.claimed_before(self, study_id, trial_id, params)

    @contextmanager
    def claim_lock(self, name: str) -> Iterator[None]:
        """Hold a lock named ``name`` (a study and a config) against every process on this
        database for the block: PostgreSQL's session advisory lock on a connection of its own,
        released on exit or when the process dies (its connection closes). SQLite needs none
        (it writes one transaction at a time): nothing is held.

        Raises:
            StoreError: the database cannot be used.
        """
        if self.engine.dialect.name != "postgresql":
            yield
            return
        key = study_storage.advisory_key(name)
        with self.errors():
            connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            try:
                connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            except BaseException:
                connection.invalidate()  # never back to the pool holding (or awaiting) the lock
                connection.close()
                raise
        try:
            yield
        finally:
            try:
                connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            except BaseException:  # noqa: BLE001  (a lost database: its closing frees the lock)
                connection.invalidate()
            finally:
                connection.close()

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
    def best(self, key: TuningKey) -> BestRecord | None:
        """The best stored config of exactly ``key``, or ``None``."""
        found = self._bests(*best_sql.select_best(best_sql.key_columns(key)))
        return found[0] if found else None

    def _bests(self, sql: str, params: Mapping[str, Any]) -> list[BestRecord]:
        """The records of the best rows :mod:`autotune.store.best_sql` selects (none from a
        read-only opening of a missing database, or of one without autotune's tables)."""
        if self.read_only and self.schema_state in ("missing", "empty"):
            return []
        with self.session() as session:
            return [best_from_row(row) for row in session.execute(text(sql), params).mappings()]

    @locking.retry_when_locked
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

    @locking.retry_when_locked
    def trials_by_key(self, *, kernel: str, dims: Mapping[str, int] | Dims | str, dtype: str,
                      device_name: str | None = None) -> dict[TuningKey, list[TrialRecord]]:
        """The trials of every key of ``kernel`` at exactly ``dims`` and ``dtype`` (of a device whose
        name holds ``device_name``, case ignored), searched or imported, each key's in the order
        stored; keys sorted by device name, then by their first trial."""
        text_dims = dims if isinstance(dims, str) else dims_key(tuple(dims.items()) if isinstance(dims, Mapping) else dims)
        stmt = (
            select(Trial, Kernel, Device, Search).join(Search, Trial.search_id == Search.id)
            .join(Kernel, Search.kernel_id == Kernel.id).join(Device, Search.device_id == Device.id)
            .where(Kernel.name == kernel, Search.dims == text_dims, Search.dtype == dtype)
            .order_by(Trial.id)
        )
        if device_name:
            escaped = device_name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            stmt = stmt.where(Device.name.ilike(f"%{escaped}%", escape="\\"))
        if self.read_only and self.schema_state in ("missing", "empty"):
            return {}
        keys: dict[TuningKey, list[TrialRecord]] = {}
        with self.session() as session:
            for trial, k, d, s in session.execute(stmt):
                info = DeviceInfo(d.name, d.compute_capability, d.sm_count, d.total_memory, d.driver_version,
                                  d.cuda_version)
                key = TuningKey(info, k.name, k.source_hash, k.spec_hash, parse_dims_key(s.dims), s.dtype,
                                s.nvcc_version, s.compile_flags)
                keys.setdefault(key, []).append(trial_record(trial, k.name))
        return dict(sorted(keys.items(), key=lambda item: (item[0].device.name, item[1][0].id)))

    @locking.retry_when_locked
    def study_keys(self) -> dict[str, TuningKey]:
        """The key of each Optuna study a search used, by study name (the study names of imports,
        ``import:<file>``, name no Optuna study and are left out)."""
        stmt = (
            select(Search.study_name, Search.dims, Search.dtype, Search.nvcc_version, Search.compile_flags,
                   Kernel.name, Kernel.source_hash, Kernel.spec_hash, Device.name, Device.compute_capability,
                   Device.sm_count, Device.total_memory, Device.driver_version, Device.cuda_version)
            .join(Kernel, Search.kernel_id == Kernel.id).join(Device, Search.device_id == Device.id)
            .where(Search.sampler != "import").distinct()
        )
        keys: dict[str, TuningKey] = {}
        with self.session() as session:
            for (name, dims, dtype, nvcc, flags, kernel, source_hash, spec_hash, device, cc, sms, memory, driver,
                 cuda) in session.execute(stmt):
                info = DeviceInfo(device, cc, sms, memory, driver, cuda)
                keys.setdefault(name, TuningKey(info, kernel, source_hash, spec_hash, parse_dims_key(dims), dtype,
                                                nvcc, flags))
        return keys

    @locking.retry_when_locked
    def shape_trials(self, key: TuningKey) -> list[ShapeTrial]:
        """Every trial of ``key``'s identity (device model, kernel name and hashes, dtype, nvcc,
        compile flags) at any dims, in the order stored: what a dispatch is learned from
        (:mod:`autotune.store.trial_sql`; none from a read-only opening of a missing or empty database)."""
        if self.read_only and self.schema_state in ("missing", "empty"):
            return []
        with self.session() as session:
            sql, params = select_shape_trials(key)
            return [shape_trial_from_row(row) for row in session.execute(text(sql), params).mappings()]

    @locking.retry_when_locked
    def kernel_trials(self, kernel: str, **equal: Any) -> list[ShapeTrial]:
        """Every trial of kernel name ``kernel`` whose search's fields equal ``equal`` (the filters
        of :func:`autotune.store.trial_sql.select_trials`: device fields, hashes, dtype, nvcc,
        compile flags), any dims, in the order stored.

        Raises:
            ValueError: a filter that is not one.
        """
        if self.read_only and self.schema_state in ("missing", "empty"):
            return []
        sql, params = select_trials({"kernel": kernel, **equal})
        with self.session() as session:
            return [shape_trial_from_row(row) for row in session.execute(text(sql), params).mappings()]

    @locking.retry_when_locked
    def trials_state(self, kernel: str) -> tuple[int | None, int]:
        """``(largest trial id, number of trials)`` stored for kernel name ``kernel`` (``(None, 0)``: none)."""
        if self.read_only and self.schema_state in ("missing", "empty"):
            return None, 0
        sql, params = select_state(kernel)
        with self.session() as session:
            row = session.execute(text(sql), params).mappings().one()
            return row["last_id"], row["trial_count"]

    @locking.retry_when_locked
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

    @locking.retry_when_locked
    def study_trials(self, search_id: int) -> list[TrialRecord]:
        """Every trial of the study that search ``search_id`` wrote into: the trials of every
        search of its study name and kernel (a resumed study, the workers of several GPUs), in the
        order stored (empty for an unknown search)."""
        with self.session() as session:
            search = session.get(Search, search_id)
            if search is None:
                return []
            stmt = (
                select(Trial, Kernel.name).join(Search, Trial.search_id == Search.id)
                .join(Kernel, Search.kernel_id == Kernel.id)
                .where(Search.study_name == search.study_name, Search.kernel_id == search.kernel_id)
                .order_by(Trial.id)
            )
            return [trial_record(trial, name) for trial, name in session.execute(stmt)]

    def pareto_front(self, search_id: int) -> list[TrialRecord]:
        """The Pareto front of time and energy of the study search ``search_id`` wrote into:
        its non-dominated valid trials (ms, J per launch), fastest first, one per config
        (:func:`autotune.store.pareto.front`, derived from :meth:`study_trials`; nothing of it
        is stored). Failed trials and trials without energy are never on it.

        Raises:
            StoreError: the database cannot be read.
        """
        from autotune.store.pareto import front

        return front(self.study_trials(search_id))

    @locking.retry_when_locked
    def trials(self, search_id: int) -> list[TrialRecord]:
        """Every trial of a search, in trial-number order (empty for an unknown search)."""
        stmt = (
            select(Trial, Kernel.name).join(Search, Trial.search_id == Search.id)
            .join(Kernel, Search.kernel_id == Kernel.id)
            .where(Trial.search_id == search_id).order_by(Trial.number, Trial.id)
        )
        with self.session() as session:
            return [trial_record(trial, name) for trial, name in session.execute(stmt)]

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
