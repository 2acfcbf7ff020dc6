"""``autotune tune NAME``: spend a budget tuning a workload's problems, largest expected saving
first, on one GPU or several at once, and measure the workload before and after.

1. The plan (:mod:`autotune.workload.plan`) on the GPUs' model: per problem the rung the
   runtime takes today, the expected gain and saving, the strategy (``transfer`` where the
   kernel has tuned shapes here).
2. The tuning row (``autotune_workload_tunings``): the last one of this workload and device
   model that did not finish is resumed (its problems done stay done; an interrupted one is
   searched again, its study resumed: no trial is measured twice), else a new one. Every
   problem's search is resumed the same way, so tuning a workload again goes on from what
   its studies measured.
3. Problems are handed out largest expected saving first, each with its share of what is left
   of the budget (:func:`autotune.workload.budget.allocate`, applied again at each hand-out,
   so what one problem does not use goes to the next): on one GPU in this process, on several
   to one worker process per GPU, each taking the next problem as it finishes one
   (:mod:`autotune.workload.pool`): different problems on different GPUs at once. Each is a
   :class:`~autotune.workload.job.Job`: a search, then the default and the chosen config
   re-timed against each other. A problem whose search is not worth a budget (tuned
   already, or none left) is measured only. What the problems leave of the budget (a space
   measured whole, a search ended under its share) is spent in further rounds, each a
   resumed search of the problem whose expected gain per second is largest, until the
   budget is spent or no search could measure more
   (:class:`~autotune.workload.schedule.Scheduler`; :attr:`TuningOutcome.rounds` says what
   they spent).
4. Every result is stored as it comes (``autotune_workload_results``; a problem handed to a
   GPU is ``running`` until its result comes). SIGINT or SIGTERM stops every GPU: what was
   measured is kept, the tuning is ``interrupted`` and running the same command again
   resumes it. The tuning row names this process and a heartbeat thread keeps it fresh
   (:mod:`autotune.store.leases`): a tuning killed without a word (SIGKILL) is resumed by the
   same command as an interrupted one, the trials and seconds its cut search stored
   counted (:func:`autotune.store.workloads.open_tuning`); one running now in a live process
   is refused (:class:`~autotune.store.workloads.TuningBusy`). GPU workers die with this
   process.
5. ``max_trials`` caps each problem's trials over every run of the tuning: a resumed search
   measures what is left of it (:func:`autotune.workload.job.run_job`).

The totals: each problem's GPU time per call at the default config and at the chosen one,
weighted by its recorded calls, summed (:class:`TuningOutcome`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from autotune.base import caches
from autotune.base import signals as stop
from autotune.errors import InvalidInputError
from autotune.search.options import SearchOptions
from autotune.store.workload_records import ProblemResult, TuningRecord
from autotune.workload.job import TRIALS, run_job
from autotune.workload.plan import PlanRow, merged, plan_rows
from autotune.workload.schedule import Progress, Round, Scheduler, handed_out

__all__ = ["TuningOutcome", "tune_workload"]


@dataclass
class TuningOutcome:
    """A workload's tuning: its row (:class:`~autotune.store.workload_records.TuningRecord`,
    results included), the plan's rows, whether it was resumed, and the wall time of this run
    (s). ``calls`` maps each problem's identity to its recorded calls; ``rounds`` the further
    rounds this run ran (:class:`~autotune.workload.schedule.Round`: what the first round
    left, spent; their seconds are in their problems' ``spent_s`` too)."""

    tuning: TuningRecord
    rows: list[PlanRow]
    resumed: bool
    wall_s: float
    calls: dict[tuple, int] = field(default_factory=dict)
    rounds: list[Round] = field(default_factory=list)

    def totals(self) -> tuple[float | None, float | None]:
        """The workload's GPU time at the default configs and at the chosen ones, ms: each
        problem's measured time per call x its recorded calls, over the problems measured both
        ways (``None``: none was)."""
        both = [(r, self.calls.get(r.ident, 0)) for r in self.tuning.results
                if r.default_ms is not None and r.tuned_ms is not None]
        if not both:
            return None, None
        return sum(r.default_ms * n for r, n in both), sum(r.tuned_ms * n for r, n in both)


def _result_of(row: PlanRow) -> ProblemResult:
    stored = row.recorded.problem_key
    if row.problem is None:
        return ProblemResult(stored, status="skipped", reason=row.note)
    k = row.problem.kernel  # the kernel of today is the one tuned
    return ProblemResult(replace(stored, source_hash=k.source_hash, spec_hash=k.spec_hash))


def tune_workload(name: str, *, budget_s: float, devices: Sequence[int] = (0,), db: str | None = None,
                  options: SearchOptions | None = None, max_trials: int | None = None,
                  on_plan: Callable[[list[PlanRow], bool], None] | None = None,
                  on_progress: Callable[[Progress], None] | None = None) -> TuningOutcome:
    """Tune workload ``name`` with ``budget_s`` seconds of GPU time on the GPUs ``devices``
    (module doc).

    Args:
        devices: CUDA ordinals, one model (``[0]``, ``[0, 1]``); one worker process per GPU
            where there are several.
        db: the results database's URL (``None``: ``$AUTOTUNE_DB``, else the default): the
            workload's recording is read there and every search written there (resolved
            once: each GPU's worker is given the URL opened here).
        options: the searches' options (``repeats``, ``trial_timeout``, ``seed``, ``space``
            ...; ``trials``, ``timeout``, ``strategy`` and ``resume`` are set per problem).
        max_trials: at most this many configs measured per problem, over every run of the
            tuning (default: its budget or its space ends its search).
        on_plan: called with the plan's rows and whether the tuning is resumed, before the first search.
        on_progress: called as each problem starts and ends (:class:`Progress`).

    Raises:
        MissingWorkload: no workload ``name``.
        InvalidInputError: a bad name or devices, GPUs of several models.
        GPUUnavailableError: no GPU, CUDA backend or nvcc.
        StoreError: the database cannot be used.
        TuningBusy: this tuning is running now in another live process.
        KeyboardInterrupt: SIGINT or SIGTERM, after every GPU stopped and what was measured
            was stored (the tuning is then ``interrupted``: run it again to resume).
    """
    from autotune.kernel.arguments import check_db_arg
    from autotune.measure import device as devices_module
    from autotune.search.workers import check_one_model
    from autotune.store import leases
    from autotune.store.opening import open_reader, open_store
    from autotune.store.workloads import beat_tuning, finish_tuning, open_tuning, save_result, workload_problems

    check_db_arg(db)
    options = options or SearchOptions()
    if max_trials is not None:
        options = options.replace(trials=max_trials)  # checked as a search's trials (>= 1)
    else:
        options = options.replace(trials=TRIALS)
    ordinals = list(devices)
    if not ordinals or any(not isinstance(o, int) or isinstance(o, bool) or o < 0 for o in ordinals):
        raise InvalidInputError(f"devices {devices!r} are not allowed; give CUDA ordinals 0, 1, ...")
    started = time.monotonic()
    with stop.deferred():
        reader = open_reader(db)  # a workload that does not exist: refused, nothing created
        try:
            workload_problems(reader, name)
        finally:
            reader.close()
        infos = [devices_module.query_device(o) for o in ordinals]
        check_one_model(infos)
        store = open_store(db)
        try:
            problems = merged(workload_problems(store, name))
            rows = plan_rows(store, problems, infos[0], store.url)
            owner = leases.Owner.mine()
            tuning, resumed = open_tuning(store, name, infos[0], budget_s, len(ordinals),
                                          [_result_of(r) for r in rows], owner=owner)
            before = tuning.wall_s  # the wall time of its earlier runs
            results = {r.ident: r for r in tuning.results}
            status = "interrupted"
            beating = leases.Heartbeat(owner.token, lambda: beat_tuning(
                store, tuning.id, owner.token, before + time.monotonic() - started)).start()
            try:
                interrupted = {r.ident for r in tuning.results if r.status == "interrupted"}
                if interrupted:  # their partial bests are not what they were planned on
                    rows = plan_rows(store, problems, infos[0], store.url, resumed=interrupted)
                for r in rows:  # a kernel that cannot be loaded any more: its row says so
                    if r.problem is None and results[r.recorded.ident].status == "pending":
                        results[r.recorded.ident] = _result_of(r)
                        save_result(store, tuning.id, results[r.recorded.ident])
                if on_plan is not None:
                    on_plan(rows, resumed)
                scheduler = Scheduler(rows, results, budget_s, options, store.url)
                if len(ordinals) == 1:
                    _one_gpu(scheduler, ordinals[0], store, tuning.id, on_progress)
                else:
                    from autotune.workload.pool import run_pool

                    run_pool(scheduler, ordinals, lambda r: save_result(store, tuning.id, r), on_progress)
                status = "finished"
            finally:
                wall = time.monotonic() - started
                with stop.shielded():  # the scheduler keeps each result in ``results`` as it comes
                    beating.stop()
                    finish_tuning(store, tuning.id, status, before + wall, token=owner.token)
                    tuning = replace(tuning, results=[results[r.ident] for r in tuning.results],
                                     status=status, wall_s=before + wall)
        finally:
            store.close()
            caches.clear_cache()  # this process's lookups read the tuned configs from now on
    calls = {p.ident: p.calls for p in problems}
    return TuningOutcome(tuning, rows, resumed, wall, calls, scheduler.rounds)


def _one_gpu(scheduler: Scheduler, ordinal: int, store, tuning_id: int, on_progress) -> None:
    from autotune.store.workloads import save_result

    while True:
        stop.check()
        job = scheduler.next()
        if job is None:
            return
        with stop.shielded():
            save_result(store, tuning_id, handed_out(job, ordinal))
        if on_progress is not None:
            on_progress(Progress("start", ordinal, job.result, job.budget_s, scheduler.left, job.round))
        result = scheduler.done(job, run_job(job, ordinal))
        with stop.shielded():
            save_result(store, tuning_id, result)
        if result.status == "interrupted":
            raise KeyboardInterrupt
        if on_progress is not None:
            on_progress(Progress("done", ordinal, result, job.budget_s, scheduler.left, job.round))
