"""Workloads in the results database: recorded calls written in batches, workloads listed
and read back per problem, and the tunings of a workload with a result per problem.

Every function takes an open :class:`~autotune.store.repository.Store` and runs one
transaction (retried while a concurrent writer holds the database:
:func:`autotune.store.locking.retrying`), so a batch of a recording is stored whole or not
at all, and two programs recording into one database at once both keep every batch.

A tuning names the process running it and that process beats a heartbeat
(:mod:`autotune.store.leases`, :func:`beat_tuning`), so a tuning left ``running`` by a process
killed without a word is told from one running now: :func:`open_tuning` resumes the first
(what its searches stored counted, :func:`_recover`) and refuses the second (:class:`TuningBusy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import func, select, update

from autotune.errors import AutotuneError, InvalidInputError
from autotune.kernel.problem import ProblemKey
from autotune.measure.device import DeviceInfo
from autotune.store import leases, locking, rows
from autotune.store.key import dims_key, parse_dims_key
from autotune.store.leases import Owner
from autotune.store.models import (TUNING_STATUSES, Device, Kernel, Search, Trial, Workload, WorkloadCalls,
                                   WorkloadResult, WorkloadTuning, utcnow)
from autotune.store.workload_records import (CallCount, ProblemResult, RecordedProblem, TuningRecord,
                                             WorkloadSummary, check_name, device_model)

__all__ = ["write_batch", "list_workloads", "workload_problems", "open_tuning", "save_result", "beat_tuning",
           "finish_tuning", "latest_tuning", "MissingWorkload", "TuningBusy"]


class MissingWorkload(InvalidInputError):
    """No workload of that name is recorded in the database."""


class TuningBusy(AutotuneError):
    """The tuning to resume is running now, in a process that is alive."""


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


def _workload(session, name: str, lock: bool = False) -> Workload:
    query = select(Workload).filter_by(name=name)
    found = session.scalars(query.with_for_update() if lock else query).one_or_none()
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
            return [RecordedProblem(device_model(d), ProblemKey(k, src, spec, parse_dims_key(dims), dtype, ref),
                                    int(calls), int(sampled), float(ms), int(runs))
                    for d, k, src, spec, ref, dims, dtype, calls, sampled, ms, runs in found]

    problems = locking.retrying(attempt)
    return sorted(problems, key=lambda p: (p.gpu_ms is None, -(p.gpu_ms or 0.0), -p.calls, p.label, p.device.name))


def _tuning_record(session, t: WorkloadTuning) -> TuningRecord:
    results = session.scalars(select(WorkloadResult).filter_by(tuning_id=t.id).order_by(WorkloadResult.id)).all()
    return TuningRecord(t.id, t.workload.name, device_model(t.device), t.budget_s, t.gpus, t.status, t.wall_s,
                        t.started_at, t.finished_at,
                        [ProblemResult(_stored(r), r.status, r.reason, r.strategy, r.budget_s, r.spent_s, r.trials,
                                       r.gpu_ordinal, r.config_key, r.default_ms, r.tuned_ms) for r in results])


def _stored(row: WorkloadCalls | WorkloadResult) -> ProblemKey:
    """The stored problem of a workload's row: its kernel row, dims, dtype and kernel_ref."""
    k = row.kernel
    return ProblemKey(k.name, k.source_hash, k.spec_hash, parse_dims_key(row.dims), row.dtype, row.kernel_ref)


def open_tuning(store, name: str, device: DeviceInfo, budget_s: float, gpus: int,
                problems: Sequence[ProblemResult], *, owner: Owner) -> tuple[TuningRecord, bool]:
    """The tuning of workload ``name`` on ``device``'s model to run now, held by ``owner``
    (this process: :meth:`autotune.store.leases.Owner.mine`): the last one not finished,
    resumed (its budget set to ``budget_s``, problems it lacks added as ``pending``), else a
    new one with every problem of ``problems`` ``pending``. Returns it and whether it was
    resumed.

    A tuning still ``running`` whose process is gone (:func:`autotune.store.leases.gone`:
    killed without a word) is resumed as an interrupted one: each problem it was tuning
    becomes ``interrupted`` with the trials and seconds its search stored, and that search's
    row ``interrupted`` (:func:`_recover`). Two processes opening one tuning at once take
    turns (the workload's row is locked: ``FOR UPDATE`` on PostgreSQL, SQLite's one writer).

    Raises:
        MissingWorkload: no workload ``name``.
        TuningBusy: that tuning is running now in a live process (one line naming it).
    """
    model = device_model(device)

    def attempt() -> tuple[TuningRecord, bool]:
        with store.session() as session:
            w = _workload(session, name, lock=True)
            d = rows.device_row(session, model)
            session.flush()
            t = session.scalars(select(WorkloadTuning).filter_by(workload_id=w.id, device_id=d.id)
                                .where(WorkloadTuning.status != "finished")
                                .order_by(WorkloadTuning.id.desc()).limit(1)).one_or_none()
            resumed = t is not None
            now = utcnow()
            if t is None:
                t = WorkloadTuning(workload=w, device=d, budget_s=budget_s, gpus=gpus, status="running", wall_s=0.0)
                session.add(t)
            else:
                if t.status == "running":
                    why = leases.gone(t.owner_host, t.owner_pid, t.owner_token, t.heartbeat_at, now)
                    if why is None:
                        beat = (now - t.heartbeat_at).total_seconds()
                        raise TuningBusy(f"workload {name!r} is being tuned on {model.name} now, by process "
                                         f"{t.owner_pid} on {t.owner_host} (its last heartbeat {beat:.0f} s ago); "
                                         "wait for it to end, or stop it (Ctrl-C keeps what it measured) and run "
                                         "this command again to resume it")
                    _recover(session, t, why)
                t.budget_s, t.gpus, t.status = budget_s, gpus, "running"
            t.owner_host, t.owner_pid, t.owner_token, t.heartbeat_at = owner.host, owner.pid, owner.token, now
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


def _recover(session, t: WorkloadTuning, why: str) -> None:
    """Tuning ``t`` was left ``running`` by a process that is gone (``why``): each problem it
    was tuning (``running``; in a tuning stored before schema 0010, a ``pending`` one whose
    key was searched since the tuning began) is interrupted (:func:`_interrupt`)."""
    legacy = t.owner_host is None
    cut = session.scalars(select(WorkloadResult).filter_by(tuning_id=t.id).where(
        WorkloadResult.status.in_(("running", "pending") if legacy else ("running",)))).all()
    for r in cut:
        _interrupt(session, t, r, f"its tuning stopped without a word ({why})")


def _interrupt(session, t: WorkloadTuning, r: WorkloadResult, what: str) -> None:
    """Result ``r`` of tuning ``t``, whose search was cut where no one could store its result
    (``what`` happened), becomes ``interrupted``, its trials and seconds counting what its
    searches stored: the trials of its key's searches begun on its GPU since it was handed out
    (its ``updated_at``; a ``pending`` one: since the tuning began), and the time from then to
    the last of them. The searches still ``running`` that its job began (of its key, or of the
    tuning's other problems measured alongside it on its GPU) become ``interrupted``; its next
    search resumes their study. A ``pending`` one whose key was not searched is left as it is."""
    since = r.updated_at if r.status == "running" else t.started_at
    keys = {(x.kernel_id, x.dims, x.dtype) for x in session.scalars(select(WorkloadResult).filter_by(tuning_id=t.id))}
    since_then = select(Search).filter_by(device_id=t.device_id).where(Search.started_at >= since)
    begun = [s for s in session.scalars(since_then) if (s.kernel_id, s.dims, s.dtype) in keys
             and (r.gpu_ordinal is None or s.gpu_ordinal is None or s.gpu_ordinal == r.gpu_ordinal)]
    searches = [s for s in begun if (s.kernel_id, s.dims, s.dtype) == (r.kernel_id, r.dims, r.dtype)]
    if r.status == "pending" and not searches:
        return
    trials, last = 0, None
    if searches:
        trials, last = session.execute(select(func.count(Trial.id), func.max(Trial.created_at))
                                       .where(Trial.search_id.in_([s.id for s in searches]))).one()
    end = max([x for x in (last, *(s.finished_at for s in searches), *(s.started_at for s in searches))
               if x is not None], default=since)
    r.trials += trials or 0
    r.spent_s += max(0.0, (end - since).total_seconds())
    r.status = "interrupted"
    r.reason = f"{what}; the {trials or 0} trials its search stored are kept and its search is resumed"
    for s in begun:
        if s.status == "running":
            s.status, s.finished_at = "interrupted", end


def _result_row(tuning_id: int, kernel: Kernel, r: ProblemResult) -> WorkloadResult:
    return WorkloadResult(tuning_id=tuning_id, kernel=kernel, kernel_ref=r.kernel_ref, dims=dims_key(r.dims),
                          dtype=r.dtype, **_result_values(r))


def _result_values(r: ProblemResult) -> dict:
    return {"status": r.status, "reason": r.reason, "strategy": r.strategy, "budget_s": r.budget_s,
            "spent_s": r.spent_s, "trials": r.trials, "gpu_ordinal": r.gpu_ordinal, "config_key": r.config_key,
            "default_ms": r.default_ms, "tuned_ms": r.tuned_ms}


def save_result(store, tuning_id: int, result: ProblemResult) -> None:
    """Store what tuning ``tuning_id`` did to one problem (replacing its row). A result
    ``running`` (handed to a GPU now) stamps its row's ``updated_at``: the searches of its key
    begun since are its own (:func:`_recover`)."""
    def attempt() -> None:
        with store.session() as session:
            k = rows.kernel_row(session, result.kernel, result.source_hash, result.spec_hash)
            session.flush()
            row = session.scalars(select(WorkloadResult).filter_by(tuning_id=tuning_id, kernel_id=k.id,
                                                                   dims=dims_key(result.dims), dtype=result.dtype)
                                  ).one_or_none()
            if row is None:
                row = _result_row(tuning_id, k, result)
                session.add(row)
            else:
                for column, value in _result_values(result).items():
                    setattr(row, column, value)
            if result.status == "running":
                row.updated_at = utcnow()

    locking.retrying(attempt)


def beat_tuning(store, tuning_id: int, token: str, wall_s: float) -> bool:
    """One heartbeat of tuning ``tuning_id``, held by the run ``token``: its ``heartbeat_at``
    now, its wall time ``wall_s`` (all runs, s). One attempt, not retried (a beat missed is a
    beat missed). Returns ``False`` where the tuning is no longer this run's (another process
    took it over, judging this one gone) or no longer ``running``.

    Raises:
        StoreError: the database cannot be written.
    """
    with store.session() as session:
        done = session.execute(update(WorkloadTuning).where(
            WorkloadTuning.id == tuning_id, WorkloadTuning.owner_token == token, WorkloadTuning.status == "running")
            .values(heartbeat_at=utcnow(), wall_s=wall_s))
        return done.rowcount == 1


def finish_tuning(store, tuning_id: int, status: str, wall_s: float, *, token: str | None = None) -> None:
    """Mark tuning ``tuning_id`` ``finished``, ``interrupted`` or ``failed``, its wall time
    ``wall_s`` (all its runs, s). A problem still ``running`` (its result never came back)
    becomes ``interrupted`` with what its search stored (:func:`_interrupt`). With ``token``:
    only while the run ``token`` holds it (a tuning another process took over is left to that
    one).

    Raises:
        ValueError: another status.
    """
    if status not in TUNING_STATUSES or status == "running":
        raise ValueError(f"unknown final tuning status {status!r}; allowed: {', '.join(TUNING_STATUSES[1:])}")

    def attempt() -> None:
        with store.session() as session:
            t = session.get(WorkloadTuning, tuning_id)
            if token is not None and t.owner_token != token:
                return
            t.status, t.wall_s = status, wall_s
            t.finished_at = utcnow() if status == "finished" else None
            for r in session.scalars(select(WorkloadResult).filter_by(tuning_id=tuning_id, status="running")).all():
                _interrupt(session, t, r, "its tuning stopped while it ran")

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
