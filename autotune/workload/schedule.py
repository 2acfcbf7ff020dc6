"""Which problem of a workload's tuning comes next, with which budget; what progress is told.

:class:`Scheduler` hands the problems out largest expected saving first, each with its share
of what is left of the budget (:func:`autotune.workload.budget.allocate`, applied again at
each hand-out, so what one problem does not use goes to the next ones), to one GPU or to the
workers of several (:mod:`autotune.workload.pool`). A problem's job names the problems after
it of the same kernel and dtype (``Job.also``): its search measures every config at their
shapes too, so each compile serves every shape of the kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from autotune.search.options import SearchOptions
from autotune.store.workload_records import ProblemResult
from autotune.workload.budget import allocate
from autotune.workload.job import Job
from autotune.workload.plan import PlanRow

__all__ = ["DONE", "Progress", "Scheduler", "handed_out"]

DONE = ("tuned", "skipped", "failed")
"""Result statuses a resumed tuning does not run again."""


@dataclass
class Progress:
    """What ``on_progress`` is told: ``event`` is ``start`` (a problem handed to GPU
    ``ordinal`` with ``budget_s``) or ``done`` (its ``result``); ``left``: problems not done."""

    event: str
    ordinal: int
    result: ProblemResult
    budget_s: float
    left: int

def handed_out(job: Job, ordinal: int) -> ProblemResult:
    """The row of ``job``'s problem as it is handed to GPU ``ordinal``: ``running``, with its
    budget and strategy (stored before the job runs, so a tuning killed meanwhile knows which
    problem it cut: :func:`autotune.store.workloads.open_tuning`)."""
    return replace(job.result, status="running", gpu_ordinal=ordinal, budget_s=job.budget_s, strategy=job.strategy,
                   reason=None)


def _same_kernel(row: PlanRow, other: PlanRow) -> bool:
    """``row`` is another shape of ``other``'s kernel (the same source and spec) and dtype."""
    a, b = row.problem, other.problem
    return (a.kernel.name, a.kernel.source_hash, a.kernel.spec_hash, a.dtype) == \
        (b.kernel.name, b.kernel.source_hash, b.kernel.spec_hash, b.dtype) and a.dims != b.dims


class Scheduler:
    """Hands out the problems of a tuning (module doc): ``next()`` gives the next
    :class:`~autotune.workload.job.Job` (or ``None``), ``done(job, result)`` takes its
    result back; ``left`` counts the problems not done."""

    def __init__(self, rows: Sequence[PlanRow], results: dict[tuple, ProblemResult], budget_s: float,
                 options: SearchOptions) -> None:
        self.budget_s, self.options = budget_s, options
        self.results = results
        self.todo = [r for r in rows if r.problem is not None and results[r.recorded.ident].status not in DONE]
        self.flight: dict[int, float] = {}  # job index -> its budget
        self._next = 0

    def left_s(self) -> float:
        """Seconds of budget neither spent nor handed out."""
        spent = sum(r.spent_s for r in self.results.values() if r.status != "pending")
        return max(0.0, self.budget_s - spent - sum(self.flight.values()))

    def next(self) -> Job | None:
        if self._next >= len(self.todo):
            return None
        rest = self.todo[self._next:]
        shares = allocate([r.saving_ms if r.tunable else 0.0 for r in rest], self.left_s())
        row, budget = rest[0], shares[0]
        index = self._next
        self._next += 1
        self.flight[index] = budget
        result = self.results[row.recorded.ident]
        also = tuple(r.problem.ref for r in rest[1:] if budget > 0 and r.tunable and _same_kernel(r, row))
        return Job(index, row.problem.ref, budget, row.strategy if budget > 0 else None, self.options, result, also)

    def done(self, job: Job, result: ProblemResult) -> None:
        self.flight.pop(job.index, None)
        self.results[result.ident] = result

    @property
    def left(self) -> int:
        return len(self.todo) - self._next + len(self.flight)
