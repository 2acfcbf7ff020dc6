"""Which problem of a workload's tuning comes next, with which budget; what progress is told.

:class:`Scheduler` hands the problems out largest expected saving first, each with its share
of what is left of the budget (:func:`autotune.workload.budget.allocate`, applied again at
each hand-out, so what one problem does not use goes to the next ones), to one GPU or to the
workers of several (:mod:`autotune.workload.pool`). A problem's job names the problems after
it of the same kernel and dtype (``Job.also``): its search measures every config at their
shapes too, so each compile serves every shape of the kernel.

Once every problem is handed out, what the first round leaves (problems end under their
share: a space measured whole, a trial cap, a search ended early) is spent in further rounds:
while at least :data:`MIN_ROUND_S` of the budget is neither spent nor handed out, a GPU that
goes idle gets a resumed search (:class:`~autotune.workload.job.Job` ``round`` > 1: its study
resumes, no config is measured twice) of the problem whose expected gain per second is
largest (:func:`gain_per_s`), its share of what is left by :func:`~autotune.workload.budget.allocate`
over those rates. Not given one: a problem not worth a search, in flight, failed, whose search
measured its space whole (its search's word, or its trials as many as the space's valid
configs), whose last further round measured no config, or whose trials reached the tuning's cap. A further round that
fails keeps the problem's earlier result (its seconds and trials counted) and ends its rounds. Every share is taken out
of what is left, so the rounds never give more than the budget: it is exceeded only by what a
search's last config (and its final re-timing) takes past its deadline. The problems a small
budget cannot search are still measured (their default against their stored config): the
searches' shares leave what those take (:data:`MEASURE_ONLY_S`, then the median measured), so
that they do not overrun it (evidence: ``benchmarks/README.md``, "Evidence behind the code's constants").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from autotune.kernel.problem import ProblemKey
from autotune.search.options import SearchOptions
from autotune.search.strategies.registry import DEFAULT_STRATEGY
from autotune.store.workload_records import ProblemResult
from autotune.workload.budget import FLOOR_S, allocate
from autotune.workload.job import Job
from autotune.workload.plan import PlanRow

__all__ = ["DONE", "MIN_ROUND_S", "Progress", "Round", "Scheduler", "gain_per_s", "handed_out"]

DONE = ("tuned", "skipped", "failed")
"""Result statuses a resumed tuning does not run again."""
MIN_ROUND_S = 5.0
"""Fewest seconds a further round is given: a search's start and re-timings
(:data:`autotune.workload.job.OVERHEAD_S`) and a second of search; less is left unspent."""
MEASURE_ONLY_S = 2.0
"""Seconds a problem given no search (measured only: its default against its stored config)
is expected to take until one has been measured in this tuning: its measuring process's start
and one interleaved re-timing. The shares of the searches leave this much per such problem
(then the median of those measured), so that a small budget spread over many problems is not
exceeded by the problems it cannot search."""


@dataclass
class Progress:
    """What ``on_progress`` is told: ``event`` is ``start`` (a problem handed to GPU
    ``ordinal`` with ``budget_s``) or ``done`` (its ``result``); ``left``: problems not done;
    ``round``: 1, or a further round's number (module doc)."""

    event: str
    ordinal: int
    result: ProblemResult
    budget_s: float
    left: int
    round: int = 1

def handed_out(job: Job, ordinal: int) -> ProblemResult:
    """The row of ``job``'s problem as it is handed to GPU ``ordinal``: ``running``, with its
    budget and strategy (stored before the job runs, so a tuning killed meanwhile knows which
    problem it cut: :func:`autotune.store.workloads.open_tuning`; its trials and seconds so far
    are kept, what the cut search stored is added to them). A further round's budget is added
    to what the problem was given (``Job.granted_s``)."""
    return replace(job.result, status="running", gpu_ordinal=ordinal, budget_s=job.granted_s, strategy=job.strategy,
                   reason=None)


@dataclass(frozen=True)
class Round:
    """A further round's job as it ended: the problem's ``label``, its ``round`` (2, 3, ...),
    the seconds it was given (``budget_s``) and took (``spent_s``), and the trials it measured."""

    label: str
    round: int
    budget_s: float
    spent_s: float
    trials: int


def gain_per_s(row: PlanRow, result: ProblemResult) -> float:
    """The expected gain per second of more search of ``row``'s problem: its expected saving
    (:attr:`PlanRow.saving_ms`, the plan's :func:`~autotune.workload.gain.expected_gain` times its
    recorded GPU time) over the seconds it has had (at least one): a search finds most of
    what it finds early, so the next seconds are worth most where fewest were spent."""
    return row.saving_ms / max(1.0, result.spent_s)


def _same_kernel(row: PlanRow, other: PlanRow) -> bool:
    """``row`` is another shape of ``other``'s kernel (the same source and spec) and dtype."""
    a, b = ProblemKey.of(row.problem), ProblemKey.of(other.problem)
    return a != b and a.at(b.dims) == b  # one identity value: only the dims differ


class Scheduler:
    """Hands out the problems of a tuning (module doc): ``next()`` gives the next
    :class:`~autotune.workload.job.Job` (or ``None``), ``done(job, result)`` takes its
    result back; ``left`` counts the problems not done; ``rounds`` lists the further rounds
    ended. Each job carries the searches' ``options`` and, beside them, ``db``: the results
    database's URL the tuning opened."""

    def __init__(self, rows: Sequence[PlanRow], results: dict[tuple, ProblemResult], budget_s: float,
                 options: SearchOptions, db: str) -> None:
        self.budget_s, self.options, self.db = budget_s, options, db
        self.results = results
        self.todo = [r for r in rows if r.problem is not None and results[r.recorded.ident].status not in DONE]
        self.rows = {r.recorded.ident: r for r in rows if r.problem is not None}
        self.flight: dict[int, float] = {}  # job index -> its budget
        self.running: dict[int, tuple] = {}  # job index -> its problem's identity
        self.closed: set[tuple] = set()  # no further round: measured whole, or a further round failed
        self.rounds: list[Round] = []
        self._next = 0
        self._index = len(self.todo)  # further rounds' job indices
        self._round: dict[tuple, int] = {}  # problem -> its last round handed out
        self._measured_only: list[float] = []  # seconds each measured-only job of this tuning took

    def left_s(self) -> float:
        """Seconds of budget neither spent nor handed out."""
        spent = sum(r.spent_s for r in self.results.values() if r.status != "pending")
        return max(0.0, self.budget_s - spent - sum(self.flight.values()))

    def measure_only_s(self) -> float:
        """Seconds a measured-only job is expected to take (:data:`MEASURE_ONLY_S`, then the
        median of this tuning's)."""
        import statistics

        return statistics.median(self._measured_only) if self._measured_only else MEASURE_ONLY_S

    def next(self) -> Job | None:
        if self._next >= len(self.todo):
            return self._further()
        rest = self.todo[self._next:]
        savings = [r.saving_ms if r.tunable else 0.0 for r in rest]
        left, cost, reserve = self.left_s(), self.measure_only_s(), 0.0
        for _ in range(len(rest) + 1):  # the shares leave what the problems they leave out will take to measure
            # a share under MIN_ROUND_S would not start a search (it overruns it): that problem is measured only
            shares = [x if x >= MIN_ROUND_S else 0.0 for x in allocate(savings, max(0.0, left - reserve))]
            wanted = cost * sum(1 for share in shares if share <= 0)
            if wanted == reserve:
                break
            reserve = wanted
        row, budget = rest[0], shares[0]
        index = self._next
        self._next += 1
        self.flight[index] = budget if budget > 0 else cost
        self.running[index] = row.recorded.ident
        result = self.results[row.recorded.ident]
        also = tuple(r.problem.ref for r in rest[1:] if budget > 0 and r.tunable and _same_kernel(r, row))
        return Job(index, row.problem.ref, budget, row.strategy if budget > 0 else None, self.options, self.db, result,
                   also)

    def _worth_more(self, ident: tuple) -> bool:
        """Whether a further round of problem ``ident`` could measure anything (module doc)."""
        row, result = self.rows.get(ident), self.results[ident]
        return (row is not None and row.tunable and result.status in ("tuned", "skipped") and ident not in self.closed
                and ident not in self.running.values() and result.trials < self.options.trials
                and not self._counted_whole(row, result))

    def _counted_whole(self, row: PlanRow, result: ProblemResult) -> bool:
        """Whether the problem's trials cover every valid config of its space: a tuning resumed
        after its first round knows so without a search's word (:attr:`~autotune.workload.job.JobResult.whole` is
        not stored)."""
        from autotune.errors import AutotuneError

        if not result.trials:
            return False
        try:
            valid = row.problem.kernel.space(self.options.space).count_within(result.trials)
        except AutotuneError:
            return False
        return valid is not None and valid <= result.trials

    def _further(self) -> Job | None:
        """A further round's job (module doc), or ``None``: too little budget left, or no
        problem worth one now."""
        left = self.left_s()
        if left < MIN_ROUND_S:
            return None
        worth = sorted((i for i in self.results if self._worth_more(i)),
                       key=lambda i: -gain_per_s(self.rows[i], self.results[i]))
        if not worth:
            return None
        shares = allocate([gain_per_s(self.rows[i], self.results[i]) for i in worth], left, FLOOR_S)
        ident, budget = worth[0], shares[0]
        if budget < MIN_ROUND_S:
            return None
        row, index = self.rows[ident], self._index
        self._index += 1
        self._round[ident] = self._round.get(ident, 1) + 1
        self.flight[index], self.running[index] = budget, ident
        return Job(index, row.problem.ref, budget, row.strategy or DEFAULT_STRATEGY, self.options, self.db,
                   self.results[ident], round=self._round[ident])

    def done(self, job: Job, result: ProblemResult) -> ProblemResult:
        """Take ``job``'s ``result`` back; returns the problem's row to store: ``result``, or,
        where a further round failed, its earlier round's result with every round's seconds,
        trials and budget (a search that ran before keeps its answer; no round follows)."""
        self.flight.pop(job.index, None)
        self.running.pop(job.index, None)
        if job.round == 1 and job.budget_s <= 0 and result.status != "failed":
            self._measured_only.append(max(0.0, result.spent_s - job.result.spent_s))
        if getattr(result, "whole", False) or (job.round > 1 and result.trials == job.result.trials):
            self.closed.add(result.ident)  # measured whole, or a further round that measured nothing
        if job.round > 1 and result.status == "failed":
            self.closed.add(result.ident)
            result = replace(job.result, spent_s=result.spent_s, trials=result.trials, budget_s=result.budget_s,
                             reason=f"its round {job.round} failed ({result.reason}); the result before it is kept")
        self.results[result.ident] = result
        if job.round > 1:
            took = max(0.0, result.spent_s - job.result.spent_s)
            self.rounds.append(Round(result.label, job.round, job.budget_s, took, result.trials - job.result.trials))
        return result

    @property
    def left(self) -> int:
        return len(self.todo) - self._next + len(self.flight)
