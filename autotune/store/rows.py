"""Row-level helpers of :class:`autotune.store.repository.Store`'s transactions: finding or
creating device and kernel rows, the best of a key, the conditions of a key, imported results
and bench runs. Each takes the open session of one Store transaction; nothing here commits,
and nothing outside :mod:`autotune.store` calls it (the Store is the only writer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from autotune.errors import StoreError, TrialFailed
from autotune.measure.device import DeviceInfo
from autotune.measure.measurement import Measurement
from autotune.store.key import TuningKey, dims_key
from autotune.store.models import BenchRow, BenchRun, Best, Device, Kernel, Search, Trial, utcnow
from autotune.store.records import ImportedResult

__all__ = ["check_trial", "device_row", "kernel_row", "search_row", "best_key", "update_best", "key_filter",
           "search_key_filter", "add_imported", "add_key_trials", "add_bench_run", "BENCH_ROW_FIELDS"]

BENCH_ROW_FIELDS = ("name", "kind", "median_ms", "gbps", "pct_memcpy", "config_key", "source", "registers",
                    "shared_bytes", "occupancy", "note", "gflops")
"""The figures of one bench line (:class:`~autotune.store.models.BenchRow` columns)."""


def check_trial(status: str, measurement: Measurement | None, reason: str | None) -> None:
    """Raise ValueError unless the status, measurement and reason of a trial fit together."""
    if status == "ok":
        if measurement is None:
            raise ValueError("an ok trial needs its measurement")
    elif status in TrialFailed.STATUSES:
        if not reason:
            raise ValueError(f"a {status} trial needs a reason")
        if measurement is not None:
            raise ValueError(f"a {status} trial has no measurement")
    else:
        raise ValueError(f"unknown trial status {status!r}; allowed: ok, {', '.join(TrialFailed.STATUSES)}")


def device_row(session: Session, info: DeviceInfo | Mapping[str, Any]) -> Device:
    """The device row of ``info``'s identity (its model: not the UUID), created if new; ``info``
    is a DeviceInfo or a mapping of the identity columns."""
    names = ("name", "compute_capability", "sm_count", "total_memory", "driver_version", "cuda_version")
    identity = {n: info[n] for n in names} if isinstance(info, Mapping) else {n: getattr(info, n) for n in names}
    row = session.scalars(select(Device).filter_by(**identity)).one_or_none()
    if row is None:
        row = Device(**identity)
        session.add(row)
    return row


def kernel_row(session: Session, name: str, source_hash: str, spec_hash: str) -> Kernel:
    """The kernel row of ``(name, source_hash, spec_hash)``, created if new."""
    row = session.scalars(select(Kernel).filter_by(name=name, source_hash=source_hash, spec_hash=spec_hash)
                          ).one_or_none()
    if row is None:
        row = Kernel(name=name, source_hash=source_hash, spec_hash=spec_hash)
        session.add(row)
    return row


def search_row(session: Session, search_id: int) -> Search:
    """The search ``search_id``.

    Raises:
        StoreError: there is none.
    """
    search = session.get(Search, search_id)
    if search is None:
        raise StoreError(f"no search with id {search_id} in the results database")
    return search


def best_key(search: Search) -> dict:
    """The columns of the best row of ``search``'s key."""
    return {"device_id": search.device_id, "kernel_id": search.kernel_id, "dims": search.dims, "dtype": search.dtype,
            "nvcc_version": search.nvcc_version, "compile_flags": search.compile_flags}


def update_best(session: Session, search: Search, trial: Trial, force: bool = False) -> bool:
    """Point the search key's best at ``trial`` if there is none, ``trial`` is faster (lower
    median time), or ``force`` (a re-timing chose it); a new best forgets an earlier
    re-timing's figures. Returns whether ``trial`` became the best."""
    key = best_key(search)
    # FOR UPDATE: a concurrent writer of the same key (PostgreSQL) waits here and then reads
    # the newer best, instead of overwriting it (SQLite: BEGIN IMMEDIATE serialises already)
    best = session.scalars(select(Best).filter_by(**key).with_for_update()).one_or_none()
    if best is None:
        session.add(Best(trial=trial, **key))
        return True
    if force or trial.median_ms < best.trial.median_ms:
        best.trial = trial
        best.updated_at = utcnow()
        best.pooled_median_ms = best.spread = best.rounds = best.tie_group = best.certificate = None
        return True
    return False


def key_filter(key: TuningKey) -> tuple:
    """Conditions on the Device and Kernel rows for ``key``'s device identity and kernel."""
    d = key.device
    return (
        Device.name == d.name, Device.compute_capability == d.compute_capability,
        Device.sm_count == d.sm_count, Device.total_memory == d.total_memory,
        Device.driver_version == d.driver_version, Device.cuda_version == d.cuda_version,
        Kernel.name == key.kernel, Kernel.source_hash == key.source_hash, Kernel.spec_hash == key.spec_hash,
    )


def search_key_filter(key: TuningKey) -> tuple:
    """Conditions on a Search row for ``key``'s dims, dtype and toolchain."""
    return (Search.dims == key.dims_key, Search.dtype == key.dtype, Search.nvcc_version == key.nvcc_version,
            Search.compile_flags == key.compile_flags)


def add_imported(session: Session, item: ImportedResult, study_name: str, sampler: str) -> str:
    """Record one imported result as a finished search with one ``ok`` trial; returns
    ``"duplicate"`` (the key already has an ok trial of that config: nothing written), ``"best"``
    (it became the key's best, with its re-timing figures) or ``"kept"``."""
    device = device_row(session, item.device)
    kernel = kernel_row(session, item.kernel, item.source_hash, item.spec_hash)
    session.flush()
    shape = {"dims": dims_key(item.dims), "dtype": item.dtype, "nvcc_version": item.nvcc_version,
             "compile_flags": item.compile_flags}
    duplicate = session.scalars(
        select(Trial.id).join(Search, Trial.search_id == Search.id)
        .where(Search.device_id == device.id, Search.kernel_id == kernel.id,
               *(getattr(Search, k) == v for k, v in shape.items()),
               Trial.status == "ok", Trial.config_key == item.config.key).limit(1)).first()
    if duplicate is not None:
        return "duplicate"
    search = Search(device=device, kernel=kernel, **shape, study_name=study_name, sampler=sampler, seed=None,
                    memcpy_gbps=item.memcpy_gbps, copy_gbps=item.copy_gbps, l2_mode=item.l2_mode,
                    started_at=item.tuned_at, finished_at=item.tuned_at, status="finished", gpu_uuid=item.gpu_uuid)
    trial = Trial(search=search, number=0, config_key=item.config.key, macros=item.config.as_dict(), status="ok",
                  reason=None, created_at=item.tuned_at, **item.measurement)
    session.add_all([search, trial])
    session.flush()
    if not update_best(session, search, trial):
        return "kept"
    best = session.scalars(select(Best).filter_by(**best_key(search))).one()
    best.updated_at = item.tuned_at
    best.pooled_median_ms, best.spread, best.rounds = item.pooled_median_ms, item.spread, item.rounds
    best.tie_group = list(item.tie_group) if item.tie_group is not None else None
    best.certificate = dict(item.certificate) if item.certificate is not None else None
    session.flush()
    return "best"


def add_key_trials(session: Session, key: Mapping[str, Any], trials: Sequence[Any], study_name: str
                   ) -> tuple[int, int, bool]:
    """Store ``trials`` (each with ``config``, ``status``, ``reason``, ``phases``, ``created_at``
    and the mapping ``measured`` of trial columns) of one key (a T4 file's key: ``device``,
    ``kernel``, ``source_hash``, ``spec_hash``, ``dims``, ``dtype``, ``nvcc_version``,
    ``compile_flags``) as one finished search of ``study_name``, but those whose config and
    status the key holds already (or given twice); returns ``(stored, skipped, became best)``."""
    device = device_row(session, key["device"])
    kernel = kernel_row(session, key["kernel"], key["source_hash"], key["spec_hash"])
    session.flush()
    shape = {"dims": dims_key(key["dims"]), "dtype": key["dtype"], "nvcc_version": key["nvcc_version"],
             "compile_flags": key["compile_flags"]}
    stored = set(session.execute(
        select(Trial.config_key, Trial.status).join(Search, Trial.search_id == Search.id)
        .where(Search.device_id == device.id, Search.kernel_id == kernel.id,
               *(getattr(Search, f) == v for f, v in shape.items()))).all())
    fresh = []
    for t in trials:  # one pass: a result given twice in the file is stored once
        if (t.config.key, t.status) not in stored:
            stored.add((t.config.key, t.status))
            fresh.append(t)
    if not fresh:
        return 0, len(trials), False
    stamps = [t.created_at for t in fresh]
    search = Search(device=device, kernel=kernel, **shape, study_name=study_name, sampler="import", seed=None,
                    started_at=min(stamps), finished_at=max(stamps), status="finished")
    session.add(search)
    became = False
    for number, t in enumerate(fresh):
        trial = Trial(search=search, number=number, config_key=t.config.key, macros=t.config.as_dict(),
                      status=t.status, reason=t.reason, phases=t.phases, created_at=t.created_at, **t.measured)
        session.add(trial)
        session.flush()
        if t.status == "ok":
            became = update_best(session, search, trial) or became
    return len(fresh), len(trials) - len(fresh), became


def add_bench_run(session: Session, device: DeviceInfo, dims: str, dtype: str, nvcc_version: str,
                  memcpy_gbps: float | None, l2_mode: str, lines: Sequence[Any]) -> BenchRun:
    """A bench run row and one row per line (each line a mapping, or an object with attributes,
    of :data:`BENCH_ROW_FIELDS`; missing ones are ``None``)."""
    def figures(line: Any) -> dict[str, Any]:
        get = line.get if isinstance(line, Mapping) else (lambda name, default: getattr(line, name, default))
        return {name: get(name, None) for name in BENCH_ROW_FIELDS}

    run = BenchRun(device=device_row(session, device), dims=dims, dtype=dtype, nvcc_version=nvcc_version,
                   memcpy_gbps=memcpy_gbps, l2_mode=l2_mode)
    run.lines = [BenchRow(position=i, **figures(line)) for i, line in enumerate(lines)]
    session.add(run)
    session.flush()
    return run
