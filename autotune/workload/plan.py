"""``autotune plan NAME``: per problem of a workload, what the runtime picks today and what
tuning it is expected to save, and the budget each would get.

For each problem (a kernel, its dims and dtype; the counts of every device model it was
recorded on summed) the plan gives its calls and share of the recorded GPU time, the rung and
config of the lookup ladder on the device (:func:`autotune.lookup`), the expected gain
(:mod:`autotune.workload.gain`), the expected GPU time saved (recorded GPU time x gain), the
strategy its search would use (``transfer`` where the kernel has tuned shapes on this device
model, else the default strategy, ``tpe``) and its budget (:func:`autotune.workload.budget.allocate`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from autotune.search.strategies.registry import DEFAULT_STRATEGY
from autotune.kernel.problem import Problem
from autotune.measure.device import DeviceInfo
from autotune.store.workload_records import RecordedProblem, device_model, merged, recorded_device
from autotune.workload.budget import allocate
from autotune.workload.gain import PRIOR_GAIN, expected_gain, observed_gains

if TYPE_CHECKING:
    from autotune.runtime.lookup import LaunchConfig
    from autotune.store.repository import Store

__all__ = ["PlanRow", "WorkloadPlan", "make_plan", "plan_rows", "merged", "recorded_device", "rebudget"]


@dataclass(frozen=True)
class PlanRow:
    """One problem of a plan.

    Attributes:
        recorded: what was recorded of it (calls, sampled GPU time; summed over device models).
        problem: the problem resolved today (``None``: its kernel cannot be found; ``note`` says why).
        share: its part of the workload's recorded GPU time, 0..1 (``None``: never timed).
        chosen: the `LaunchConfig` the runtime picks today.
        gain: the fraction of its GPU time tuning is expected to save, 0..1; ``gain_why`` says
            where the figure comes from.
        saving_ms: expected GPU time saved over the recorded calls, ms.
        budget_s: seconds of GPU time its search gets (0: not searched, only measured).
        strategy: its search's strategy (``transfer`` or the default, ``tpe``; ``None``: not searched).
        note: why it is not searched, where it is not.
    """

    recorded: RecordedProblem
    problem: Problem | None
    share: float | None
    chosen: LaunchConfig | None
    gain: float
    gain_why: str
    saving_ms: float
    budget_s: float = 0.0
    strategy: str | None = None
    note: str = ""

    @property
    def label(self) -> str:
        return self.recorded.label

    @property
    def tunable(self) -> bool:
        """Whether a search of it is worth running (resolved, a gain to expect)."""
        return self.problem is not None and self.gain > 0 and self.saving_ms > 0


@dataclass(frozen=True)
class WorkloadPlan:
    """A workload's plan on one device model: its rows, largest expected saving first."""

    name: str
    device: DeviceInfo
    budget_s: float
    rows: tuple[PlanRow, ...] = field(default_factory=tuple)

    @property
    def gpu_ms(self) -> float:
        """The recorded GPU time of every problem, ms (problems never timed count 0)."""
        return sum(r.recorded.gpu_ms or 0.0 for r in self.rows)

    @property
    def saving_ms(self) -> float:
        """The expected GPU time saved, ms."""
        return sum(r.saving_ms for r in self.rows)


def _resolve(p: RecordedProblem) -> tuple[Problem | None, str]:
    """The problem as today's kernel file or catalog has it, or ``None`` and why not
    (:meth:`autotune.kernel.problem.ProblemKey.resolve`, the rule the bundle uses too)."""
    found = p.problem_key.resolve()
    if found.problem is None:
        return None, found.why
    return found.problem, "its kernel changed since it was recorded: the current one is tuned" if found.changed else ""


def plan_rows(store: Store, problems: list[RecordedProblem], device: DeviceInfo, db: str | None,
              resumed: Collection[tuple] = ()) -> list[PlanRow]:
    """A row per problem (budgets 0: :func:`rebudget` sets them), largest expected saving first.
    A problem of ``resumed`` (identities whose search a signal or a kill interrupted) is planned
    as it was before that search began: the best its partial study stored does not make it
    ``exact``, nor count as a tuned shape's gain for the others (:func:`~autotune.workload.gain.observed_gains`),
    and its search goes on: its expected gain is at least :data:`~autotune.workload.gain.PRIOR_GAIN`.

    Raises:
        GPUUnavailableError: no nvcc (the key of a lookup holds its version).
        StoreError: the database cannot be read.
    """
    from autotune.measure.toolchain import Toolchain
    from autotune.runtime.lookup import lookup
    from autotune.store.key import TuningKey

    toolchain = Toolchain.of(device.arch)
    total = sum(p.gpu_ms or 0.0 for p in problems)
    rows = []
    for p in problems:
        share = (p.gpu_ms / total) if p.gpu_ms is not None and total > 0 else None
        problem, note = _resolve(p)
        if problem is None:
            rows.append(PlanRow(p, None, share, None, 0.0, "", 0.0, note=note))
            continue
        chosen = lookup(problem, device=device, db=db)
        key = TuningKey.of(problem, device, toolchain)
        again = p.ident in resumed
        partial = {dims for kernel, dims, dtype in resumed if kernel == p.kernel and dtype == p.dtype}
        observed, transfer = ([], False) if chosen.rung == "exact" and not again else \
            observed_gains(store, key, partial)
        gain, why = expected_gain("default" if again else chosen.rung, observed)
        if again and gain < PRIOR_GAIN:  # its search goes on, whatever other shapes' partial results say
            gain, why = PRIOR_GAIN, f"its cut search resumed (at least the assumed {PRIOR_GAIN:.0%})"
        saving = (p.gpu_ms or 0.0) * gain
        if again:
            note = note or "its interrupted search is resumed"
        elif chosen.rung == "exact":
            note = note or "tuned already: measured only"
        elif p.gpu_ms is None:
            note = note or "no call was timed (a graph capture?): no saving to expect"
        rows.append(PlanRow(p, problem, share, chosen, gain, why, saving,
                            strategy=("transfer" if transfer else DEFAULT_STRATEGY) if saving > 0 else None, note=note))
    return sorted(rows, key=lambda r: (-r.saving_ms, -(r.recorded.gpu_ms or 0.0), r.label))


def rebudget(rows: list[PlanRow], budget_s: float) -> list[PlanRow]:
    """``rows`` with their budgets out of ``budget_s`` (:func:`autotune.workload.budget.allocate`)."""
    shares = allocate([r.saving_ms if r.tunable else 0.0 for r in rows], budget_s)
    return [replace(r, budget_s=s, strategy=r.strategy if s > 0 else None,
                    note=r.note or ("" if s > 0 or not r.tunable else "no budget left: measured only"))
            for r, s in zip(rows, shares)]


def make_plan(name: str, *, budget_s: float, device: DeviceInfo | None = None, db: str | None = None,
              store: Store | None = None) -> WorkloadPlan:
    """The plan of workload ``name`` on ``device`` (default: the device model it was recorded
    on, most GPU time first) for a budget of ``budget_s`` seconds of GPU time.

    Raises:
        MissingWorkload: no workload ``name`` (one line naming the recorded ones).
        InvalidInputError: a bad name.
        GPUUnavailableError: no nvcc.
        StoreError: the database cannot be read.
    """
    from autotune.store.opening import open_reader
    from autotune.store.workloads import workload_problems

    opened = store is None
    store = store or open_reader(db)
    try:
        problems = merged(workload_problems(store, name))
        target = device_model(device) if device is not None else recorded_device(problems)
        rows = rebudget(plan_rows(store, problems, target, store.url), budget_s)
    finally:
        if opened:
            store.close()
    return WorkloadPlan(name, target, budget_s, tuple(rows))
