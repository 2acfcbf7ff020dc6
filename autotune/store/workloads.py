"""Workloads in the results database: recorded calls written in batches, workloads listed
and read back per problem, and the tunings of a workload with a result per problem.

Every function takes an open :class:`~autotune.store.repository.Store` and runs one
transaction (retried while a concurrent writer holds the database:
:func:`autotune.store.locking.retrying`), so a batch of a recording is stored whole or not
at all, and two programs recording into one database at once both keep every batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import func, select

from autotune.errors import InvalidInputError
from autotune.measure.device import DeviceInfo
from autotune.store import locking, rows
from autotune.store.key import dims_key, parse_dims_key
from autotune.store.models import (TUNING_STATUSES, Device, Kernel, Workload, WorkloadCalls, WorkloadResult,
                                   WorkloadTuning, utcnow)
from autotune.store.workload_records import (CallCount, ProblemResult, RecordedProblem, TuningRecord,
                                             WorkloadSummary, check_name, device_model)

__all__ = ["write_batch", "list_workloads", "workload_problems", "open_tuning", "save_result", "finish_tuning",
           "latest_tuning", "MissingWorkload"]


class MissingWorkload(InvalidInputError):
    """No workload of that name is recorded in the database."""


def _device(row: Device) -> DeviceInfo:
    return DeviceInfo(row.name, row.compute_capability, row.sm_count, row.total_memory, row.driver_version,
                      row.cuda_version)


def write_batch(store, name: str, run: str, batch: int, counts: Sequence[CallCount]) -> int:
    """Add batch ``batch`` of recording process ``run`` to workload ``name`` (created if new),
    one row per problem, in one transaction. A batch already stored (a retry after its commit
    went through) is not added again. Returns the rows added.

    Raises:
        InvalidInputError: a bad name.
        StoreError: the database cannot be written.
    """
    check_name(name)
    counts = [c for c in counts if c.calls > 0 or c.sampled > 0]
    if not counts:
        return 0

    def attempt() -> int:
        with store.session() as session:
            workload = session.scalars(select(Workload).filter_by(name=name)).one_or_none()
            if workload is None:
                workload = Workload(name=name)
                session.add(workload)
                session.flush()
            elif session.scalar(select(func.count()).select_from(WorkloadCalls)
                                .filter_by(workload_id=workload.id, run=run, batch=batch)):
                return 0
            for c in counts:
                session.add(WorkloadCalls(
                    workload=workload, run=run, batch=batch, device=rows.device_row(session, c.device),
                    kernel=rows.kernel_row(session, c.kernel, c.source_hash, c.spec_hash), kernel_ref=c.kernel_ref,
                    dims=dims_key(c.dims), dtype=c.dtype, calls=c.calls, sampled=c.sampled,
                    sampled_ms=c.sampled_ms))
                session.flush()  # a device or kernel row made for one count serves the next
            return len(counts)

    return locking.retrying(attempt)


def _workload(session, name: str) -> Workload:
    found = session.scalars(select(Workload).filter_by(name=name)).one_or_none()
    if found is None:
        names = sorted(session.scalars(select(Workload.name)))
        known = f"recorded: {', '.join(names[:10])}{', ...' if len(names) > 10 else ''}" if names else \
            "none is recorded (autotune.record(NAME) or AUTOTUNE_RECORD=NAME records one)"
        raise MissingWorkload(f"workload {name!r} does not exist; {known}")
    return found


def list_workloads(store) -> list[WorkloadSummary]:
    """Every workload, by name: its problems, calls, sampled GPU time, devices, runs (none
    where the database does not exist yet)."""
    if getattr(store, "schema_state", None) in ("missing", "empty"):
        return []

    def attempt() -> list[WorkloadSummary]:
        with store.session() as session:
            names = list(session.scalars(select(Workload.name).order_by(Workload.name)))
        out = []
        for name in names:
            problems = workload_problems(store, name)
            with store.session() as session:
                w = _workload(session, name)
                runs, last = session.execute(select(func.count(func.distinct(WorkloadCalls.run)),
                                                    func.max(WorkloadCalls.created_at))
                                             .filter_by(workload_id=w.id)).one()
            times = [p.gpu_ms for p in problems if p.gpu_ms is not None]
            out.append(WorkloadSummary(name, len(problems), sum(p.calls for p in problems),
                                       sum(times) if times else None,
                                       tuple(sorted({p.device.name for p in problems})), runs or 0, last))
        return out

    return locking.retrying(attempt)


def workload_problems(store, name: str) -> list[RecordedProblem]:
    """The problems of workload ``name``, each with its counts summed over every batch and
    process, largest sampled GPU time first (problems never sampled last, by calls).

    Raises:
        MissingWorkload: no workload ``name`` (one line naming the recorded ones).
        InvalidInputError: a bad name.
    """
    check_name(name, "workload")
    if getattr(store, "schema_state", None) in ("missing", "empty"):
        raise MissingWorkload(f"workload {name!r} does not exist; {store.safe_url} holds no recording")

    def attempt() -> list[RecordedProblem]:
        with store.session() as session:
            w = _workload(session, name)
            found = session.execute(
                select(Device, Kernel.name, Kernel.source_hash, Kernel.spec_hash, WorkloadCalls.kernel_ref,
                       WorkloadCalls.dims, WorkloadCalls.dtype, func.sum(WorkloadCalls.calls),
                       func.sum(WorkloadCalls.sampled), func.sum(WorkloadCalls.sampled_ms),
                       func.count(func.distinct(WorkloadCalls.run)))
                .join(Device, WorkloadCalls.device_id == Device.id).join(Kernel, WorkloadCalls.kernel_id == Kernel.id)
                .where(WorkloadCalls.workload_id == w.id)
                .group_by(Device.id, Kernel.id, WorkloadCalls.kernel_ref, WorkloadCalls.dims, WorkloadCalls.dtype)
            ).all()
            return [RecordedProblem(_device(d), k, src, spec, ref, parse_dims_key(dims), dtype, int(calls),
                                    int(sampled), float(ms), int(runs))
                    for d, k, src, spec, ref, dims, dtype, calls, sampled, ms, runs in found]

    problems = locking.retrying(attempt)
    return sorted(problems, key=lambda p: (p.gpu_ms is None, -(p.gpu_ms or 0.0), -p.calls, p.label, p.device.name))


def _tuning_record(session, t: WorkloadTuning) -> TuningRecord:
    results = session.scalars(select(WorkloadResult).filter_by(tuning_id=t.id).order_by(WorkloadResult.id)).all()
    return TuningRecord(t.id, t.workload.name, _device(t.device), t.budget_s, t.gpus, t.status, t.wall_s,
                        t.started_at, t.finished_at,
                        [ProblemResult(r.kernel.name, r.kernel.source_hash, r.kernel.spec_hash, r.kernel_ref,
                                       parse_dims_key(r.dims), r.dtype, r.status, r.reason, r.strategy, r.budget_s,
                                       r.spent_s, r.trials, r.gpu_ordinal, r.config_key, r.default_ms, r.tuned_ms)
                         for r in results])


def open_tuning(store, name: str, device: DeviceInfo, budget_s: float, gpus: int,
                problems: Sequence[ProblemResult]) -> tuple[TuningRecord, bool]:
    """The tuning of workload ``name`` on ``device``'s model to run now: the last one not
    finished, resumed (its budget set to ``budget_s``, problems it lacks added as
    ``pending``), else a new one with every problem of ``problems`` ``pending``. Returns it
    and whether it was resumed.

    Raises:
        MissingWorkload: no workload ``name``.
    """
    model = device_model(device)

    def attempt() -> tuple[TuningRecord, bool]:
        with store.session() as session:
            w = _workload(session, name)
            d = rows.device_row(session, model)
            session.flush()
            t = session.scalars(select(WorkloadTuning).filter_by(workload_id=w.id, device_id=d.id)
                                .where(WorkloadTuning.status != "finished")
                                .order_by(WorkloadTuning.id.desc()).limit(1)).one_or_none()
            resumed = t is not None
            if t is None:
                t = WorkloadTuning(workload=w, device=d, budget_s=budget_s, gpus=gpus, status="running", wall_s=0.0)
                session.add(t)
            else:
                t.budget_s, t.gpus, t.status = budget_s, gpus, "running"
            session.flush()
            have = {(r.kernel_id, r.dims, r.dtype) for r in
                    session.scalars(select(WorkloadResult).filter_by(tuning_id=t.id))}
            for p in problems:
                k = rows.kernel_row(session, p.kernel, p.source_hash, p.spec_hash)
                session.flush()
                if (k.id, dims_key(p.dims), p.dtype) not in have:
                    session.add(_result_row(t.id, k, replace(p, status="pending")))
            session.flush()
            return _tuning_record(session, t), resumed

    return locking.retrying(attempt)


def _result_row(tuning_id: int, kernel: Kernel, r: ProblemResult) -> WorkloadResult:
    return WorkloadResult(tuning_id=tuning_id, kernel=kernel, kernel_ref=r.kernel_ref, dims=dims_key(r.dims),
                          dtype=r.dtype, **_result_values(r))


def _result_values(r: ProblemResult) -> dict:
    return {"status": r.status, "reason": r.reason, "strategy": r.strategy, "budget_s": r.budget_s,
            "spent_s": r.spent_s, "trials": r.trials, "gpu_ordinal": r.gpu_ordinal, "config_key": r.config_key,
            "default_ms": r.default_ms, "tuned_ms": r.tuned_ms}


def save_result(store, tuning_id: int, result: ProblemResult) -> None:
    """Store what tuning ``tuning_id`` did to one problem (replacing its row)."""
    def attempt() -> None:
        with store.session() as session:
            k = rows.kernel_row(session, result.kernel, result.source_hash, result.spec_hash)
            session.flush()
            row = session.scalars(select(WorkloadResult).filter_by(tuning_id=tuning_id, kernel_id=k.id,
                                                                   dims=dims_key(result.dims), dtype=result.dtype)
                                  ).one_or_none()
            if row is None:
                session.add(_result_row(tuning_id, k, result))
            else:
                for column, value in _result_values(result).items():
                    setattr(row, column, value)

    locking.retrying(attempt)


def finish_tuning(store, tuning_id: int, status: str, wall_s: float) -> None:
    """Mark tuning ``tuning_id`` ``finished``, ``interrupted`` or ``failed``, adding ``wall_s``
    (this run's wall time, s) to its wall time.

    Raises:
        ValueError: another status.
    """
    if status not in TUNING_STATUSES or status == "running":
        raise ValueError(f"unknown final tuning status {status!r}; allowed: {', '.join(TUNING_STATUSES[1:])}")

    def attempt() -> None:
        with store.session() as session:
            t = session.get(WorkloadTuning, tuning_id)
            t.status, t.wall_s = status, t.wall_s + wall_s
            t.finished_at = utcnow() if status == "finished" else None

    locking.retrying(attempt)


def latest_tuning(store, name: str, device_name: str | None = None) -> TuningRecord | None:
    """The last tuning of workload ``name`` (on a device whose name contains ``device_name``),
    finished or not, with its results; ``None`` if it was never tuned.

    Raises:
        MissingWorkload: no workload ``name``.
    """
    def attempt() -> TuningRecord | None:
        with store.session() as session:
            w = _workload(session, name)
            query = select(WorkloadTuning).filter_by(workload_id=w.id).order_by(WorkloadTuning.id.desc())
            if device_name:
                query = query.join(Device, WorkloadTuning.device_id == Device.id).where(
                    func.lower(Device.name).contains(device_name.lower(), autoescape=True))
            t = session.scalars(query.limit(1)).one_or_none()
            return None if t is None else _tuning_record(session, t)

    return locking.retrying(attempt)
