"""Every read of the results database, in one home: the Store's read queries (:class:`Reads`,
which :class:`~autotune.store.repository.Store` inherits, so ``store.best(key)`` reads here),
the report's queries (the trials of the latest search of a problem, the latest bench run, the
dims a kernel was searched or benched on; :mod:`autotune.report.data` shapes and plots them),
and the export's (:func:`export_details`, :func:`key_history`, for :mod:`autotune.interchange`).
Plain values out; SQLAlchemy stays in the store.

Every query runs in a transaction of its own (``store.session()``), retried while SQLite is
locked where it is one of the Store's, and raises :class:`~autotune.errors.StoreError` when the
database cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import json
from typing import Any

from sqlalchemy import func, select, text

from autotune.store import best_sql, locking, rows
from autotune.store.study_storage import NOT_MEASURED
from autotune.store.key import Dims, ProblemKey, TuningKey, dims_key, parse_dims_key
from autotune.store.models import Best, BenchRow, BenchRun, Device, Kernel, Search, Trial
from autotune.store.records import (BestRecord, ExportDetails, SearchIdentity, SearchTrials, StoredSearch, TrialRecord,
                                    BenchRunRows, best_from_row, trial_record)
from autotune.store.workload_records import device_model
from autotune.store.trial_sql import ShapeTrial, select_shape_trials, select_state, select_trials, shape_trial_from_row

__all__ = ["Reads", "latest_search_trials", "latest_bench_run", "tried_dims",
           "export_details", "key_history"]


class Reads:
    """The Store's read queries (a mixin: :class:`~autotune.store.repository.Store` gives
    ``session()``, ``read_only`` and ``schema_state``)."""

    read_only: bool
    schema_state: str | None

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
        return self._trials_by_key(stmt)

    @locking.retry_when_locked
    def trials_of_searches(self, study_name: str) -> dict[TuningKey, list[TrialRecord]]:
        """The trials of the searches recorded under ``study_name`` (an import's
        ``import:<file name>``), by key, as :meth:`trials_by_key` gives them."""
        stmt = (
            select(Trial, Kernel, Device, Search).join(Search, Trial.search_id == Search.id)
            .join(Kernel, Search.kernel_id == Kernel.id).join(Device, Search.device_id == Device.id)
            .where(Search.study_name == study_name).order_by(Trial.id)
        )
        return self._trials_by_key(stmt)

    def _trials_by_key(self, stmt) -> dict[TuningKey, list[TrialRecord]]:
        keys: dict[TuningKey, list[TrialRecord]] = {}
        with self.session() as session:
            for trial, k, d, s in session.execute(stmt):
                keys.setdefault(_search_key(s, d, k), []).append(trial_record(trial, k.name))
        return dict(sorted(keys.items(), key=lambda item: (item[0].device.name, item[1][0].id)))

    @locking.retry_when_locked
    def study_keys(self) -> dict[str, TuningKey]:
        """The key of each Optuna study a search used, by study name (the search rows of imports,
        ``import:<file>``, name no Optuna study of their own and are left out:
        :func:`autotune.store.study_labels.make_import_studies` names theirs)."""
        stmt = (select(Search, Kernel, Device).join(Kernel, Search.kernel_id == Kernel.id)
                .join(Device, Search.device_id == Device.id).where(Search.sampler != "import").order_by(Search.id))
        keys: dict[str, TuningKey] = {}
        with self.session() as session:
            for search, kernel, device in session.execute(stmt):
                keys.setdefault(search.study_name, _search_key(search, device, kernel))
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
    def claimed_before(self, study_id: int, trial_id: int, params: Mapping[str, float]) -> bool:
        """Whether Optuna study ``study_id`` holds a live trial of the config ``params`` (each
        parameter's internal value, as Optuna stores it) older than trial ``trial_id``: RUNNING,
        COMPLETE, or FAIL with a measured status (not one of
        :data:`~autotune.store.study_storage.NOT_MEASURED`, nor none: a trial failed by heartbeat).
        Read in a transaction of its own, after the caller's trial was committed (see
        :meth:`autotune.search.study.StoredStudy.start`)."""
        names = list(params)
        same = " OR ".join(f"(p.param_name = :n{i} AND p.param_value = :v{i})" for i in range(len(names)))
        lost = ", ".join(f":x{i}" for i in range(len(NOT_MEASURED)))
        stmt = text(
            "SELECT t.trial_id FROM trials t JOIN trial_params p ON p.trial_id = t.trial_id "
            f"WHERE t.study_id = :sid AND t.trial_id < :mine AND ({same}) AND (t.state IN ('RUNNING', 'COMPLETE') "
            "OR (t.state = 'FAIL' AND EXISTS (SELECT 1 FROM trial_user_attributes a WHERE a.trial_id = t.trial_id "
            f"AND a.key = 'status' AND a.value_json NOT IN ({lost})))) "
            "GROUP BY t.trial_id HAVING COUNT(*) = :n")
        values: dict[str, Any] = {"sid": study_id, "mine": trial_id, "n": len(names)}
        values.update({f"n{i}": name for i, name in enumerate(names)})
        values.update({f"v{i}": float(params[name]) for i, name in enumerate(names)})
        values.update({f"x{i}": json.dumps(status) for i, status in enumerate(NOT_MEASURED)})
        with locking.reading(), self.session() as session:  # a read: no write lock
            return session.execute(stmt, values).first() is not None

    def trials_without_heartbeat(self, study_id: int) -> list[int]:
        """The RUNNING trials of Optuna study ``study_id`` that never sent a heartbeat (Optuna's
        trial ids; :func:`autotune.store.study_storage.fail_trials_dead_before_heartbeat`)."""
        stmt = text("SELECT t.trial_id FROM trials t LEFT JOIN trial_heartbeats h ON h.trial_id = t.trial_id "
                    "WHERE t.study_id = :sid AND t.state = 'RUNNING' AND h.trial_id IS NULL")
        with self.session() as session:
            return list(session.execute(stmt, {"sid": study_id}).scalars().all())


def _device_filter(device: str | None) -> tuple:
    """``device``: a case-insensitive part of the device name (``None``: any)."""
    return () if device is None else (func.lower(Device.name).contains(device.lower(), autoescape=True),)


def latest_search_trials(store, kernel: str, dims: Dims, dtype: str, device: str | None = None,
                         unusable: Callable[[SearchIdentity], str | None] | None = None) -> SearchTrials | None:
    """The trials behind a heatmap: the device name and kernel row (source) of the most recent
    search of ``kernel``, ``dims`` and ``dtype`` with an ``ok`` trial (on a device whose name
    contains ``device``), and every trial of every search of that kernel row on devices of that
    name for the problem (a resumed study has several). ``None``: no such search.

    ``unusable(identity)``: why a search's results cannot be used (stale), or ``None``; each
    more recent identity it refuses is skipped (its reason in ``SearchTrials.skipped``), and the
    trials are then only those built with the chosen search's nvcc and compile flags.

    Raises:
        StoreError: the database cannot be read.
    """
    from autotune.kernel.config import Config

    where = (Kernel.name == kernel, Search.dims == dims_key(dims), Search.dtype == dtype, *_device_filter(device))
    has_ok = select(Trial.id).where(Trial.search_id == Search.id, Trial.status == "ok").exists()
    skipped: list[str] = []
    with store.session() as session:
        candidates = session.execute(
            select(Device.name, Device.compute_capability, Kernel.id, Kernel.source_hash, Kernel.spec_hash,
                   Search.nvcc_version, Search.compile_flags, Search.id)
            .select_from(Search).join(Device, Search.device_id == Device.id)
            .join(Kernel, Search.kernel_id == Kernel.id)
            .where(*where, has_ok).order_by(Search.started_at.desc(), Search.id.desc())
        ).all()
        chosen, seen = None, set()
        for *fields, search_id in candidates:
            if tuple(fields) in seen:
                continue
            seen.add(tuple(fields))
            if unusable is None:
                chosen = fields
                break
            macros = session.scalars(select(Trial.macros).where(Trial.search_id == search_id, Trial.status == "ok")
                                     .order_by(Trial.id).limit(1)).first()
            reason = unusable(SearchIdentity(*fields, Config.of(kernel, macros or {})))
            if reason is None:
                chosen = fields
                break
            skipped.append(reason)
        if chosen is None:
            return SearchTrials("", "", (), tuple(skipped)) if skipped else None
        device_name, _, kernel_id, source_hash, _, nvcc_version, compile_flags = chosen
        same_build = () if unusable is None else (Search.nvcc_version == nvcc_version,
                                                   Search.compile_flags == compile_flags)
        trials = session.execute(
            select(Trial.macros, Trial.status, Trial.gbps, Trial.gflops, Trial.median_ms, Trial.config_key)
            .join(Search, Trial.search_id == Search.id).join(Device, Search.device_id == Device.id)
            .where(Search.kernel_id == kernel_id, Device.name == device_name, Search.dims == dims_key(dims),
                   Search.dtype == dtype, *same_build)
            .order_by(Trial.id)
        ).mappings().all()
    return SearchTrials(device_name, source_hash, tuple(dict(t) for t in trials), tuple(skipped))


def latest_bench_run(store, dims: Dims, dtype: str, fields: tuple[str, ...],
                     device: str | None = None) -> BenchRunRows | None:
    """The latest bench run of ``dims`` and ``dtype`` (on a device whose name contains
    ``device``), with its rows in order, each a mapping of ``fields`` (columns of
    ``autotune_bench_rows``). ``None``: there is none.

    Raises:
        StoreError: the database cannot be read.
    """
    with store.session() as session:
        run = session.scalars(
            select(BenchRun).join(Device, BenchRun.device_id == Device.id)
            .where(BenchRun.dims == dims_key(dims), BenchRun.dtype == dtype, *_device_filter(device))
            .order_by(BenchRun.created_at.desc(), BenchRun.id.desc()).limit(1)
        ).first()
        if run is None:
            return None
        rows = session.scalars(select(BenchRow).where(BenchRow.run_id == run.id).order_by(BenchRow.position)).all()
        return BenchRunRows(run.id, run.device.name, run.dtype, run.memcpy_gbps, run.l2_mode, run.nvcc_version,
                            run.created_at, tuple({f: getattr(r, f) for f in fields} for r in rows))


def tried_dims(store, kernel: str, dtype: str, device: str | None = None) -> tuple[list[str], list[str]]:
    """The dims keys (``"rows=8192,cols=8192"``) searched with an ``ok`` trial of ``kernel`` and
    ``dtype``, and those of every bench run of ``dtype`` (on devices whose name contains ``device``).

    Raises:
        StoreError: the database cannot be read.
    """
    has_ok = select(Trial.id).where(Trial.search_id == Search.id, Trial.status == "ok").exists()
    with store.session() as session:
        searched = session.scalars(
            select(Search.dims).join(Device, Search.device_id == Device.id).join(Kernel, Search.kernel_id == Kernel.id)
            .where(Kernel.name == kernel, Search.dtype == dtype, has_ok, *_device_filter(device)).distinct()).all()
        benched = session.scalars(
            select(BenchRun.dims).join(Device, BenchRun.device_id == Device.id)
            .where(BenchRun.dtype == dtype, *_device_filter(device)).distinct()).all()
    return list(searched), list(benched)


def _search_key(s: Search, d: Device, k: Kernel) -> TuningKey:
    """The key of search ``s`` of device row ``d`` and kernel row ``k``."""
    return TuningKey(device_model(d), ProblemKey(k.name, k.source_hash, k.spec_hash, parse_dims_key(s.dims), s.dtype),
                     s.nvcc_version, s.compile_flags)


def _stored_search(search: Search) -> StoredSearch:
    return StoredSearch(_search_key(search, search.device, search.kernel), search.l2_mode)


def export_details(store, records: Sequence[BestRecord]) -> list[ExportDetails]:
    """The :class:`ExportDetails` of each stored best of ``records``, in order, in one transaction.

    Raises:
        StoreError: the database cannot be read.
    """
    out = []
    with store.session() as session:
        for record in records:
            search = session.get(Search, record.search_id)
            trial = session.get(Trial, record.trial_id)
            best = session.scalars(select(Best).where(Best.trial_id == record.trial_id).limit(1)).one_or_none()
            out.append(ExportDetails(search.device.total_memory, search.l2_mode,
                                     trial.launches if trial is not None else None,
                                     best.tie_group if best is not None else None))
    return out


def key_history(store, records: Sequence[BestRecord]) -> list[tuple[StoredSearch, list[TrialRecord]]]:
    """For each stored best of ``records``, in order, in one transaction: its search, and every
    trial of every search of its key (a resumed study has several), in stored order.

    Raises:
        StoreError: the database cannot be read.
    """
    out = []
    with store.session() as session:
        for record in records:
            best_search = session.get(Search, record.search_id)
            same_key = select(Search.id).where(
                Search.device_id == best_search.device_id, Search.kernel_id == best_search.kernel_id,
                Search.dims == best_search.dims, Search.dtype == best_search.dtype,
                Search.nvcc_version == best_search.nvcc_version, Search.compile_flags == best_search.compile_flags)
            trials = session.scalars(select(Trial).where(Trial.search_id.in_(same_key)).order_by(Trial.id))
            out.append((_stored_search(best_search), [trial_record(t, record.kernel) for t in trials]))
    return out
