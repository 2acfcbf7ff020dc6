"""One problem of a workload's tuning on one GPU: its search, then its default and chosen
configs measured against each other.

:func:`run_job` runs in the tuning's process (one GPU) or in a GPU's worker process
(:mod:`autotune.workload.pool`). A job with a budget is one search
(:func:`autotune.search.on_gpu.search_on_gpu`, what ``autotune.tune`` runs on one GPU) with
that many seconds as its timeout (less :data:`OVERHEAD_S` for starting the measuring
process and the re-timings), every config it measures measured too at the workload's other
shapes of the kernel and dtype still to tune (one compile, a trial at each: ``Job.also``),
``resume`` on (a tuning resumed continues its studies), and the
strategy of the plan (``transfer`` from the nearest tuned shapes, else the default strategy, ``tpe``). In the same
measuring process, once the search has ended, the kernel's default config and the search's
winner are re-timed interleaved over :data:`FINAL_ROUNDS` rounds (:func:`measure_pair`):
the GPU time per call the workload's totals are made of, measured, not estimated. Where the
default comes out faster than the winner by more than :data:`NOISE`, the default becomes the
key's best (what the runtime then picks), so no problem ends slower than its default. A job
without a budget only measures the default and what the runtime picks today.

The tuning's trial cap (``options.trials``: ``--max-trials``) holds per problem over every
run of the tuning: a resumed search measures what is left of it after the trials its row
counts already, and one with none left is not searched again: the key's best its earlier
runs stored is re-timed against the default as a search's winner would be.

A job of a further round (``Job.round`` > 1: the budget a workload's first round left,
:class:`autotune.workload.schedule.Scheduler`) is the same resumed search, given
``budget_s`` more seconds: its row's budget is what every round gave it, its trials and seconds
those of every round. A search that ended with no config left to propose (every valid config
of its space measured) says so (:attr:`JobResult.whole`): no round is worth giving it again.

A problem that fails (its kernel cannot load, no config of its search ran, the measuring
process cannot start) is a result with its reason; it never stops the others.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, fields, replace

from autotune.errors import AutotuneError, TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.problem import ProblemRef
from autotune.search.options import SearchOptions
from autotune.search.strategies.registry import DEFAULT_STRATEGY
from autotune.store.workload_records import ProblemResult

__all__ = ["Job", "JobResult", "run_job", "measure_pair", "OVERHEAD_S", "FINAL_ROUNDS", "NOISE", "TRIALS"]

OVERHEAD_S = 4.0
"""Seconds of a job's budget kept for its measuring process's start and the re-timings."""
FINAL_ROUNDS = 5
"""Rounds of the final re-timing of the default against the chosen config."""
NOISE = 0.01
"""Relative difference within which the default and the winner count as equally fast."""
TRIALS = 100_000
"""A job's trial limit unless the tuning gives one: its budget (the search's timeout) or its
space ends it first."""


@dataclass(frozen=True)
class Job:
    """What a GPU is asked to do for one problem: ``budget_s`` seconds of search (0: measure
    only) with ``strategy`` and ``options``, into ``db`` (the results database's URL, as the
    tuning resolved and opened it: the job's search, lookups and bests go there), and
    ``result`` the row it updates (its spent time and trials so far, for a resumed tuning);
    ``also``: the workload's other shapes of the kernel and dtype
    still to tune, each config the search measures measured at them too
    (:mod:`autotune.search.companions`), so their own searches start from it."""

    index: int
    ref: ProblemRef
    budget_s: float
    strategy: str | None
    options: SearchOptions
    db: str
    result: ProblemResult
    also: tuple[ProblemRef, ...] = ()
    round: int = 1

    @property
    def granted_s(self) -> float:
        """The seconds its row says the problem was given: this job's, plus (a further round:
        ``round`` > 1) what its earlier rounds were given."""
        return self.budget_s + (self.result.budget_s if self.round > 1 else 0.0)


@dataclass
class JobResult(ProblemResult):
    """What :func:`run_job` gives back: the problem's row (stored as a
    :class:`~autotune.store.workload_records.ProblemResult`) and ``whole``: its search ended
    with every valid config of its space measured (``exhausted``), so a further round would
    measure nothing."""

    whole: bool = False


def measure_pair(bench, default: Config, chosen: Config, rounds: int = FINAL_ROUNDS):
    """``(default Retiming, chosen Retiming, reason)`` of one interleaved re-timing of the two
    configs on ``bench`` (``bench.retime``); where one fails, each is re-timed alone, a failed
    one ``None`` with the failure as ``reason``."""
    configs = [default] if chosen == default else [default, chosen]
    try:
        timed = {r.config: r for r in bench.retime(configs, rounds)}
        return timed[default], timed[chosen], None
    except TrialFailed:
        pass
    out, reasons = {}, []
    for c in configs:
        try:
            out[c] = bench.retime([c], rounds)[0]
        except TrialFailed as failure:
            out[c] = None
            reasons.append(f"{'default' if c == default else 'chosen'} config: {failure.status}: {failure.reason}")
    return out[default], out[chosen], "; ".join(reasons) or None


def _failure_reason(outcomes) -> str:
    """Why no config of a search ran, in one line: its trials' most common status and the
    first reason of that status."""
    counted = Counter(o.status for o in outcomes)
    if not counted:
        return "no config was measured"
    status, n = counted.most_common(1)[0]
    first = next((o.reason or "").splitlines()[0][:200] for o in outcomes if o.status == status and o.reason)
    return f"no config ran: {n} of {len(outcomes)} trials {status}" + (f" (first: {first})" if first else "")


def run_job(job: Job, ordinal: int, open_benchmark=None, precheck: bool = True) -> JobResult:
    """Run ``job`` on GPU ``ordinal`` (module doc); the job's result, updated. SIGINT or
    SIGTERM (:mod:`autotune.base.signals`) end it with status ``interrupted`` (what was
    measured is stored): the caller then stops."""
    started = time.monotonic()
    row = {f.name: getattr(job.result, f.name) for f in fields(ProblemResult)}
    result = JobResult(**{**row, "gpu_ordinal": ordinal, "strategy": job.strategy, "budget_s": job.granted_s,
                          "reason": None})
    try:
        problem = job.ref.resolve()
        if job.budget_s > 0:
            _search(job, problem, ordinal, open_benchmark, precheck, result)
        else:
            _measure_only(job, problem, ordinal, open_benchmark, precheck, result)
    except AutotuneError as exc:
        result.status, result.reason = "failed", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    except KeyboardInterrupt:
        result.status, result.reason = "interrupted", "stopped by a signal; what was measured is stored"
    except Exception as exc:  # noqa: BLE001  (a driver or CUDA failure of one problem: a row, the rest go on)
        result.status, result.reason = "failed", f"{type(exc).__name__}: {exc}".splitlines()[0]
    result.spent_s += time.monotonic() - started
    return result


def _search(job: Job, problem, ordinal: int, open_benchmark, precheck: bool, result: JobResult) -> None:
    from autotune.search.on_gpu import search_on_gpu

    left = job.options.trials - job.result.trials  # the tuning's cap (TRIALS unless given), over its runs
    if left <= 0:
        _cap_reached(job, problem, ordinal, open_benchmark, precheck, result)
        return
    options = job.options.replace(timeout=max(1.0, job.budget_s - OVERHEAD_S), strategy=job.strategy or DEFAULT_STRATEGY,
                                  resume=True, trials=left)
    space = problem.kernel.space(options.space)

    def on_trial(outcome, found) -> None:  # counted as they come: an interrupted search keeps its count
        result.trials += 1

    def on_end(started, found) -> None:
        result.whole = found.stopped == "exhausted"
        winner = found.decision.winner.config if found.decision else (found.best[0] if found.best else None)
        if winner is None:
            result.status, result.reason = "failed", _failure_reason(found.outcomes)
            return
        _compare(started.bench, problem, winner, result, started.store, started.key)
        if result.status != "failed":
            result.status = "tuned"

    search_on_gpu(problem, ordinal, space, options, db=job.db, open_benchmark=open_benchmark, precheck=precheck,
                  on_trial=on_trial, on_end=on_end, also=[ref.resolve() for ref in job.also])


def _compare(bench, problem, winner: Config, result: ProblemResult, store, key) -> None:
    """Re-time the default against ``winner``; keep the default as the key's best where it is
    faster beyond :data:`NOISE`."""
    from autotune.measure.measurement import Decision

    default = problem.kernel.default_config()
    d, w, reason = measure_pair(bench, default, winner)
    result.default_ms = d.pooled_median_ms if d else None
    result.config_key, result.tuned_ms = winner.key, (w.pooled_median_ms if w else None)
    if reason:
        result.reason = reason
    if w is None:
        result.status = "failed"
        return
    if d is not None and winner != default and d.pooled_median_ms < w.pooled_median_ms * (1 - NOISE):
        store.set_winner(key, Decision(d, d, (d,)), FINAL_ROUNDS)
        result.config_key, result.tuned_ms = default.key, d.pooled_median_ms
        result.reason = (f"the default re-timed {w.pooled_median_ms / d.pooled_median_ms - 1:.1%} faster than the "
                         f"search's winner {winner.key}: kept as the best")


def _cap_reached(job: Job, problem, ordinal: int, open_benchmark, precheck: bool, result: ProblemResult) -> None:
    """A problem whose earlier runs measured the tuning's trial cap: not searched again; the
    key's best they stored is re-timed against the default (:func:`_compare`)."""
    from autotune.measure import benchmark, isolation
    from autotune.measure.toolchain import Toolchain
    from autotune.runtime.lookup import lookup
    from autotune.store.key import TuningKey
    from autotune.store.opening import open_store

    opener = open_benchmark or benchmark.open_benchmark
    store = open_store(job.db)
    try:
        with isolation.open_isolated(opener, ordinal, problem, job.options.benchmark_options(),
                                     precheck=precheck) as bench:
            chosen = lookup(problem, device=bench.device, db=job.db)
            if chosen.rung != "exact":
                result.status, result.reason = "failed", (f"no config ran in its {job.result.trials} trials "
                                                          f"(--max-trials {job.options.trials})")
                return
            key = TuningKey.of(problem, bench.device, Toolchain.of(bench.device.arch))
            _compare(bench, problem, chosen.config, result, store, key)
    finally:
        store.close()
    if result.status != "failed":
        result.status = "tuned"
        result.reason = result.reason or (f"its {job.result.trials} trials (--max-trials {job.options.trials}) were "
                                          "measured by earlier runs: their best re-timed against the default")


def _measure_only(job: Job, problem, ordinal: int, open_benchmark, precheck: bool, result: ProblemResult) -> None:
    from autotune.measure import benchmark, isolation
    from autotune.runtime.lookup import lookup

    opener = open_benchmark or benchmark.open_benchmark
    with isolation.open_isolated(opener, ordinal, problem, job.options.benchmark_options(),
                                 precheck=precheck) as bench:
        chosen = lookup(problem, device=bench.device, db=job.db)
        d, c, reason = measure_pair(bench, problem.kernel.default_config(), chosen.config)
    result.default_ms, result.tuned_ms = (d.pooled_median_ms if d else None), (c.pooled_median_ms if c else None)
    result.config_key = chosen.config.key
    result.status = "failed" if c is None else "skipped"
    result.reason = reason or result.reason or f"measured only: the runtime picks it at the {chosen.rung} rung"
