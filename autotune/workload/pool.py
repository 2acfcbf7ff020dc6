"""A workload's problems tuned on several GPUs at once: one worker process per GPU, each
taking the next problem as it finishes one.

The parent holds the :class:`~autotune.workload.tune.Scheduler` (which problem comes next,
with which budget) and the results database's writes; each worker (a ``spawn``ed process:
nothing CUDA is inherited) runs :func:`autotune.workload.job.run_job` on its GPU for each
job it is sent, and sends back the result. So N GPUs tune N problems at a time: the
workload is tuned about N times sooner where it has several problems worth a search. A GPU
the scheduler has nothing for waits while others run: what their problems leave of the
budget may give it a further round (:class:`~autotune.workload.schedule.Scheduler`); once
none is in flight, every worker is told to end.

The processes are :class:`autotune.measure.gpu_pool.GpuPool`'s, as a search's over several
GPUs are (:mod:`autotune.search.workers`): workers start with SIGINT and SIGTERM blocked and
unblock them once their handlers are in place; the parent passes a signal on to every worker
(each stops its search, its measured trials stored, and reports its problem ``interrupted``),
waits for them, stores their results and re-raises. A worker that dies without a word fails its
problem (``worker died``) and takes no other; the others go on. A parent killed without a word
(SIGKILL) takes its workers with it (Linux ``PR_SET_PDEATHSIG``; elsewhere a worker ends at its
next job), so no orphan goes on measuring; the next ``autotune tune`` resumes what they were
tuning. What is this module's own: the scheduler's job hand-out, a queue of jobs per worker.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Sequence
from dataclasses import replace

from autotune.base import signals as stop
from autotune.measure import benchmark
from autotune.measure.gpu_pool import Died, GpuPool, Worker

__all__ = ["run_pool"]


def run_pool(scheduler, ordinals: Sequence[int], save: Callable, on_progress: Callable | None) -> None:
    """Run the scheduler's jobs on one worker per GPU of ``ordinals`` (the processes, their
    signals and their deaths: :class:`autotune.measure.gpu_pool.GpuPool`) until none is left;
    ``save(result)`` stores each result as it comes. The GPU benchmark is
    :func:`autotune.measure.benchmark.open_benchmark` as it is when this is called (tests
    replace it).

    Raises:
        KeyboardInterrupt: after every worker stopped and their results were saved.
    """
    from autotune.workload.schedule import Progress, handed_out

    pool = GpuPool(ordinals)
    inboxes = {o: pool.context.Queue() for o in ordinals}
    jobs: dict[int, object] = {}  # ordinal -> its job in flight
    idle: list[int] = []  # GPUs with nothing to do now: a job still in flight may leave budget for them

    def hand_out(ordinal: int) -> None:
        job = scheduler.next()
        if job is None:
            idle.append(ordinal)
            return
        with stop.shielded():
            save(handed_out(job, ordinal))
        jobs[ordinal] = job
        inboxes[ordinal].put(job)
        if on_progress is not None:
            on_progress(Progress("start", ordinal, job.result, job.budget_s, scheduler.left, job.round))

    def take(ordinal: int, result) -> None:
        job = jobs.pop(ordinal, None)
        if job is None:
            return
        if isinstance(result, Died):  # its job fails; it takes no other
            result = replace(job.result, status="failed", gpu_ordinal=ordinal,
                             reason=f"the GPU {ordinal} worker died (exit code {result.exitcode})")
        result = scheduler.done(job, result)
        with stop.shielded():
            save(result)
        if on_progress is not None:
            on_progress(Progress("done", ordinal, result, job.budget_s, scheduler.left, job.round))

    def args(_i: int, ordinal: int) -> tuple:
        return inboxes[ordinal], benchmark.open_benchmark

    with pool.running(_worker, args, last=take):
        for o in ordinals:
            hand_out(o)
        while jobs:
            got = pool.next_event(owes=lambda o: o in jobs)
            if got is None:
                continue
            ordinal, result = got
            take(ordinal, result)
            if isinstance(result, Died):
                continue
            if result.status == "interrupted":
                raise KeyboardInterrupt
            waiting = [ordinal, *idle]
            idle.clear()
            for o in waiting:
                hand_out(o)
        for o in idle:
            inboxes[o].put(None)


def _worker(worker: Worker, inbox, open_benchmark) -> None:
    """Body of one GPU's worker (:class:`autotune.measure.gpu_pool.GpuPool` starts it, its
    signals handled, its share of the host's compile workers set): run each job sent until
    ``None`` (or a signal: the job in flight ends ``interrupted`` and is reported; or the end
    of its parent)."""
    from autotune.search.study import quiet_optuna
    from autotune.workload.job import run_job

    quiet_optuna()  # the parent shows the progress
    while True:
        try:
            job = inbox.get(timeout=0.2)
        except queue.Empty:
            stop.check()  # a signal while waiting: stop (nothing in flight)
            if worker.orphaned():  # where nothing killed this worker with its parent
                return
            continue
        if job is None:
            return
        result = run_job(job, worker.ordinal, open_benchmark, precheck=False)
        worker.send(result)
        if result.status == "interrupted":
            return
