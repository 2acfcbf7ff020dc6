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

As in a search over several GPUs (:mod:`autotune.search.workers`): workers start with SIGINT
and SIGTERM blocked and unblock them once their handlers are in place; the parent passes a
signal on to every worker (each stops its search, its measured trials stored, and reports its
problem ``interrupted``), waits for them, stores their results and re-raises. A worker that
dies without a word fails its problem (``worker died``) and takes no other; the others go on.
A parent killed without a word (SIGKILL) takes its workers with it (Linux ``PR_SET_PDEATHSIG``:
:func:`autotune.base.signals.die_with_parent`; elsewhere a worker ends at its next job), so no
orphan goes on measuring; the next ``autotune tune`` resumes what they were tuning.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Sequence

from autotune.base import signals as stop
from autotune.measure import benchmark

__all__ = ["run_pool", "JOIN_S"]

JOIN_S = 60
"""Seconds the parent waits for interrupted workers before killing them."""


def run_pool(scheduler, ordinals: Sequence[int], save: Callable, on_progress: Callable | None) -> None:
    """Run the scheduler's jobs on one worker per GPU of ``ordinals`` until none is left;
    ``save(result)`` stores each result as it comes. The GPU benchmark is
    :func:`autotune.measure.benchmark.open_benchmark` as it is when this is called (tests
    replace it).

    Raises:
        KeyboardInterrupt: after every worker stopped and their results were saved.
    """
    from autotune.workload.schedule import Progress, handed_out

    from autotune.measure.pipeline import workers

    host = workers()
    compilers = max(1, host // len(ordinals)) if host else 0  # the host's cores shared, as a search's workers do
    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    inboxes = {o: context.Queue() for o in ordinals}
    procs: dict[int, multiprocessing.Process] = {}
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

    def take(event) -> None:
        ordinal, result = event
        job = jobs.pop(ordinal, None)
        if job is None:
            return
        result = scheduler.done(job, result)
        with stop.shielded():
            save(result)
        if on_progress is not None:
            on_progress(Progress("done", ordinal, result, job.budget_s, scheduler.left, job.round))

    with stop.deferred():
        try:
            for o in ordinals:
                procs[o] = context.Process(target=_worker, args=(o, inboxes[o], events, benchmark.open_benchmark,
                                                                 compilers, os.getpid()),
                                           daemon=False)  # not daemonic: its jobs measure in a child of their own
                with stop.blocked():
                    procs[o].start()
            for o in ordinals:
                hand_out(o)
            while jobs:
                stop.check()
                try:
                    event = events.get(timeout=0.2)
                except queue.Empty:
                    for o, proc in procs.items():
                        if o in jobs and proc.exitcode is not None:  # died without a word
                            from dataclasses import replace

                            job = jobs[o]
                            take((o, replace(job.result, status="failed", gpu_ordinal=o,
                                             reason=f"the GPU {o} worker died (exit code {proc.exitcode})")))
                    continue
                take(event)
                if event[1].status == "interrupted":
                    raise KeyboardInterrupt
                waiting = [event[0], *idle]
                idle.clear()
                for o in waiting:
                    hand_out(o)
            for o in idle:
                inboxes[o].put(None)
        except KeyboardInterrupt:
            _stop(procs, events, take, stop.signal_number() or signal.SIGINT)
            raise
        except BaseException:
            for proc in procs.values():
                if proc.is_alive():
                    proc.kill()
            raise
    for proc in procs.values():
        proc.join(JOIN_S)


def _stop(procs, events, take, signum: int) -> None:
    """``signum`` to every live worker (killed past :data:`JOIN_S`), then their last reports taken in."""
    stop.stop_workers(procs.values(), signum, JOIN_S)
    while True:
        try:
            take(events.get(timeout=0.5))
        except queue.Empty:
            break


def _worker(ordinal: int, inbox, events, open_benchmark, compilers: int, parent: int) -> None:
    """Body of one GPU's worker: run each job sent until ``None`` (or a signal: the job in
    flight ends ``interrupted`` and is reported; or the end of its ``parent``), compiling on
    ``compilers`` threads (its share of the host's: N full-size nvcc pools on one host made
    the measuring processes wait for the CPU, issue 37)."""
    from autotune import settings
    from autotune.search.study import quiet_optuna
    from autotune.workload.job import run_job

    stop.die_with_parent(parent)
    settings.COMPILE_WORKERS.set(str(compilers))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet_optuna()  # the parent shows the progress
    try:
        with stop.deferred():
            stop.unblock()
            while True:
                try:
                    job = inbox.get(timeout=0.2)
                except queue.Empty:
                    stop.check()  # a signal while waiting: stop
                    if os.getppid() != parent:  # the parent is gone (where nothing killed this worker with it)
                        return
                    continue
                if job is None:
                    return
                result = run_job(job, ordinal, open_benchmark, precheck=False)
                events.put((ordinal, result))
                if result.status == "interrupted":
                    return
    except KeyboardInterrupt:  # a signal between two jobs: nothing in flight
        return
