"""What the database holds of workloads, as plain values (no SQLAlchemy): the name rule, the
counts a recording writes, the problems of a workload, and a tuning's results.

A workload is a named recording of a program's launches (``autotune.record("NAME")``,
``AUTOTUNE_RECORD=NAME``): per problem (device model, kernel, dims, dtype) the number of calls
and the GPU time of the sampled ones. :mod:`autotune.store.workloads` reads and writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from autotune.errors import InvalidInputError
from autotune.kernel.problem import ProblemFields, ProblemKey
from autotune.measure.device import DeviceInfo

__all__ = ["MAX_NAME", "check_name", "CallCount", "RecordedProblem", "WorkloadSummary",
           "ProblemResult", "TuningRecord", "device_model", "merged", "recorded_device"]

MAX_NAME = 100
"""Most characters of a workload's name."""


def check_name(name: object, what: str = "record name") -> str:
    """``name`` if it can name a workload: a string of 1 to :data:`MAX_NAME` printable
    characters, not starting or ending with a space.

    Raises:
        InvalidInputError: one line naming the value (its ``repr``) and what is allowed.
    """
    allowed = f"give 1 to {MAX_NAME} printable characters, e.g. 'training-run'"
    if not isinstance(name, str):
        raise InvalidInputError(f"{what} {name!r} is not allowed; {allowed}")
    if not name or not name.strip():
        raise InvalidInputError(f"{what} {name!r} is empty; {allowed}")
    if len(name) > MAX_NAME:
        raise InvalidInputError(f"{what} {name[:20]!r}... is {len(name)} characters long; {allowed}")
    if not name.isprintable() or name != name.strip():
        raise InvalidInputError(f"{what} {name!r} holds characters that are not printable or spaces at its ends; "
                                f"{allowed}")
    return name


def device_model(info: DeviceInfo) -> DeviceInfo:
    """``info`` with only its model's identity (name, compute capability, SMs, memory, driver,
    CUDA): what a workload's records and a tuning keep of a device."""
    return DeviceInfo(info.name, info.compute_capability, info.sm_count, info.total_memory, info.driver_version,
                      info.cuda_version)


@dataclass(frozen=True)
class CallCount(ProblemFields):
    """What a recording counted for one problem since its last batch: ``calls`` launches, of
    which ``sampled`` were timed, taking ``sampled_ms`` of GPU time in all (ms).

    ``problem_key`` is the problem, its ``kernel_ref`` what resolves the kernel again (its
    catalog name or kernel file path; ``""`` for a kernel built in Python, which a workload
    cannot tune)."""

    device: DeviceInfo
    problem_key: ProblemKey
    calls: int
    sampled: int = 0
    sampled_ms: float = 0.0


@dataclass(frozen=True)
class RecordedProblem(CallCount):
    """One problem of a workload, its counts summed over every recording process (``runs``).

    Attributes:
        device: the device model it ran on.
        problem_key: the problem, with its kernel's identity when it was recorded and its
            ``kernel_ref`` (catalog name or kernel file path; ``""``: built in Python); its
            fields read through it (``kernel``, ``dims``, ``dtype``, ``label``, ``ident``...).
        calls: launches recorded; ``sampled`` of them timed, ``sampled_ms`` in all (ms).
    """

    runs: int = 1

    @property
    def ms_per_call(self) -> float | None:
        """Mean GPU time of a sampled call, ms (``None``: none was sampled)."""
        return self.sampled_ms / self.sampled if self.sampled else None

    @property
    def gpu_ms(self) -> float | None:
        """GPU time of every recorded call, ms: ``calls`` x :attr:`ms_per_call`."""
        per = self.ms_per_call
        return None if per is None else per * self.calls


@dataclass(frozen=True)
class WorkloadSummary:
    """One workload as ``autotune workloads`` lists it: its problems, calls and sampled GPU
    time (ms; ``None`` where no call was sampled), the device models, the recording
    processes, and when it was last recorded."""

    name: str
    problems: int
    calls: int
    gpu_ms: float | None
    devices: tuple[str, ...]
    runs: int
    recorded_at: datetime | None


@dataclass
class ProblemResult(ProblemFields):
    """What a tuning did to one problem (a row of ``autotune_workload_results``).

    Attributes:
        problem_key: the problem (its fields read through it: ``kernel``, ``dims``, ``label``...).
        status: ``pending``, ``tuned``, ``skipped``, ``failed`` or ``interrupted``
            (:data:`autotune.store.models.RESULT_STATUSES`).
        reason: why it failed or was skipped (one line), or a note.
        strategy: the search strategy it used (``transfer``, ``tpe``, ...).
        budget_s: seconds of GPU time it was given; ``spent_s`` what it used.
        trials: configs its search measured (this tuning, all runs).
        config_key: the config the runtime now picks for it.
        default_ms, tuned_ms: GPU time per call measured at the default config and at that
            one (ms), interleaved in one re-timing; ``None``: not measured.
    """

    problem_key: ProblemKey
    status: str = "pending"
    reason: str | None = None
    strategy: str | None = None
    budget_s: float = 0.0
    spent_s: float = 0.0
    trials: int = 0
    gpu_ordinal: int | None = None
    config_key: str | None = None
    default_ms: float | None = None
    tuned_ms: float | None = None


@dataclass
class TuningRecord:
    """One tuning of a workload on one device model, with a result per problem."""

    id: int
    workload: str
    device: DeviceInfo
    budget_s: float
    gpus: int
    status: str
    wall_s: float
    started_at: datetime | None = None
    finished_at: datetime | None = None
    results: list[ProblemResult] = field(default_factory=list)

    @property
    def spent_s(self) -> float:
        """GPU seconds its problems used so far (all runs)."""
        return sum(r.spent_s for r in self.results)


def merged(problems: list[RecordedProblem]) -> list[RecordedProblem]:
    """``problems`` with the counts of one problem recorded on several device models summed
    (the device of the one with most GPU time kept), largest GPU time first."""
    out: dict[tuple, RecordedProblem] = {}
    for p in problems:
        have = out.get(p.ident)
        if have is None:
            out[p.ident] = p
            continue
        keep = have if (have.gpu_ms or 0.0) >= (p.gpu_ms or 0.0) else p
        out[p.ident] = replace(keep, calls=have.calls + p.calls, sampled=have.sampled + p.sampled,
                               sampled_ms=have.sampled_ms + p.sampled_ms, runs=max(have.runs, p.runs))
    return sorted(out.values(), key=lambda p: (p.gpu_ms is None, -(p.gpu_ms or 0.0), -p.calls, p.label))


def recorded_device(problems: list[RecordedProblem]) -> DeviceInfo:
    """The device model most of the recorded GPU time ran on (by calls where nothing was timed).

    Raises:
        InvalidInputError: nothing was recorded.
    """
    if not problems:
        raise InvalidInputError("the workload holds no launches")
    time: dict[DeviceInfo, tuple[float, int]] = {}
    for p in problems:
        ms, calls = time.get(p.device, (0.0, 0))
        time[p.device] = (ms + (p.gpu_ms or 0.0), calls + p.calls)
    return max(time, key=lambda d: (time[d], d.name))
