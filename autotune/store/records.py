"""Plain, frozen records of stored results, detached from any database session."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from autotune.kernel.config import Config
from autotune.kernel.problem import ProblemKey
from autotune.measure.device import DeviceInfo
from autotune.store.key import KeyFields, TuningKey, parse_dims_key

if TYPE_CHECKING:  # records are read without SQLAlchemy too (autotune.store.reader)
    from autotune.measure.measurement import Decision, Retiming
    from autotune.store.models import Trial

__all__ = ["TrialRecord", "BestRecord", "ImportedResult", "trial_record", "best_from_row", "MEASURED", "CERTIFIED",
           "certificate", "certificate_lines", "SearchTrials", "SearchIdentity", "BenchRunRows",
           "StoredSearch", "ExportDetails"]

MEASURED = ("median_ms", "min_ms", "max_ms", "gbps", "pct_memcpy", "registers", "shared_bytes", "launches",
            "pct_copy", "occupancy", "gflops")
"""Trial columns that come from a :class:`~autotune.measure.measurement.Measurement` (and go in
an export file's measurement)."""

CERTIFIED = ("samples", "ci_low_ms", "ci_high_ms", "energy_j", "sm_mhz")
"""Trial columns of certified timing and energy (schema 0009), also from the measurement;
``None`` where not measured (e.g. trials stored before 0009)."""


@dataclass(frozen=True)
class TrialRecord:
    """One stored trial. Times in ms, ``gbps`` in GB/s (``None`` for a kernel without a bytes
    objective), ``gflops`` in GFLOP/s (``None`` without a flops objective), ``pct_memcpy`` in % of
    the device-to-device memcpy bandwidth, ``shared_bytes`` in bytes; every measured field is
    ``None`` for a failed trial, whose ``reason`` says why; ``phases``: milliseconds per phase
    (compile, load, verify, time, store; :mod:`autotune.measure.phases`), ``None`` where not
    recorded (trials stored before schema 0007); ``samples``, ``ci_low_ms``/``ci_high_ms`` (the
    median's 95 % CI, ms), ``energy_j`` (J per launch) and ``sm_mhz`` (SM clock while timing):
    ``None`` where not measured (:data:`CERTIFIED`)."""

    id: int
    search_id: int
    number: int
    config: Config
    status: str
    reason: str | None
    median_ms: float | None
    min_ms: float | None
    max_ms: float | None
    gbps: float | None
    pct_memcpy: float | None
    registers: int | None
    shared_bytes: int | None
    launches: int | None
    pct_copy: float | None
    occupancy: float | None
    gflops: float | None
    created_at: datetime
    phases: Mapping[str, float] | None = None
    samples: int | None = None
    ci_low_ms: float | None = None
    ci_high_ms: float | None = None
    energy_j: float | None = None
    sm_mhz: int | None = None


@dataclass(frozen=True)
class BestRecord(KeyFields):
    """The best config stored for one key (the lowest median time), with its measurement (units
    as in :class:`TrialRecord`; ``memcpy_gbps`` is the search's memcpy bandwidth, GB/s). The key's
    fields read through it (:class:`~autotune.store.key.KeyFields`: ``device_name``,
    ``compute_capability``, ``sm_count``, ``driver_version``, ``cuda_version``, ``kernel``,
    ``source_hash``, ``spec_hash``, ``dims``, ``dtype``, ``nvcc_version``, ``compile_flags``):
    the device fields are the model; ``device_uuid`` is the physical GPU that measured the best
    trial (``''`` where unknown); ``objective`` what the search of the best trial minimised
    (``time``, ``energy``, ``edp`` or ``time,energy``: then the key's study has a Pareto front,
    :meth:`~autotune.store.repository.Store.pareto_front` of ``search_id``)."""

    key: TuningKey
    device_uuid: str
    config: Config
    median_ms: float
    min_ms: float
    max_ms: float
    gbps: float | None
    pct_memcpy: float | None
    registers: int
    shared_bytes: int
    trial_id: int
    search_id: int
    memcpy_gbps: float | None
    updated_at: datetime
    copy_gbps: float | None = None
    pct_copy: float | None = None
    occupancy: float | None = None
    pooled_median_ms: float | None = None
    spread: float | None = None
    rounds: int | None = None
    tie_group: tuple[str, ...] = ()
    gflops: float | None = None
    certificate: Mapping[str, Any] | None = None
    ci_low_ms: float | None = None
    ci_high_ms: float | None = None
    energy_j: float | None = None
    samples: int | None = None
    objective: str = "time"

    @property
    def time_ms(self) -> float:
        """The time that ranks this best: the re-timed pooled median where there is one, else the
        median of its trial, ms."""
        return self.pooled_median_ms or self.median_ms

    @property
    def pooled_gflops(self) -> float | None:
        """GFLOP/s of the re-timed pooled median (its single measurement where not re-timed;
        ``None`` for a kernel without a flops objective)."""
        if self.pooled_median_ms is None or self.gflops is None:
            return self.gflops
        return self.gflops * self.median_ms / self.pooled_median_ms

    @property
    def pooled_gbps(self) -> float | None:
        """Effective bandwidth of the re-timed pooled median, GB/s (``None`` if not re-timed or
        without a bytes objective)."""
        if self.pooled_median_ms is None or self.gbps is None:
            return None
        return self.gbps * self.median_ms / self.pooled_median_ms


@dataclass(frozen=True)
class ImportedResult(KeyFields):
    """One validated result of an export file, as :meth:`autotune.store.repository.Store.add_imported`
    records it.

    Attributes:
        key: its tuning key (the device model, the stored problem, the toolchain), its fields
            read through it (:class:`~autotune.store.key.KeyFields`).
        gpu_uuid: the GPU that measured it (``''`` where unknown).
        measurement: the trial's measured columns (:data:`MEASURED`; missing ones are ``None``).
        tie_group: the re-timing's tie group as stored (a list of ``{"config": key, ...}``) or ``None``.
        tuned_at: when it was tuned (aware UTC).
        certificate: the final re-timing's certificate (:func:`certificate`), or ``None``.
    """

    key: TuningKey
    gpu_uuid: str
    config: Config
    measurement: Mapping[str, Any]
    memcpy_gbps: float | None
    copy_gbps: float | None
    l2_mode: str | None
    pooled_median_ms: float | None
    spread: float | None
    rounds: int | None
    tie_group: tuple[Mapping[str, Any], ...] | None
    tuned_at: datetime
    certificate: Mapping[str, Any] | None = None


def trial_record(trial: Trial, kernel: str) -> TrialRecord:
    return TrialRecord(
        id=trial.id, search_id=trial.search_id, number=trial.number,
        config=Config.of(kernel, trial.macros), status=trial.status, reason=trial.reason,
        **{name: getattr(trial, name) for name in MEASURED}, created_at=trial.created_at,
        phases=trial.phases, **{name: getattr(trial, name) for name in CERTIFIED},
    )


def best_from_row(row: Mapping[str, Any]) -> BestRecord:
    """The BestRecord of one row of :data:`autotune.store.best_sql.SELECT_BEST` (its fields by
    name). JSON columns and timestamps come back as text from SQLite and as Python values from
    PostgreSQL; both are read here (timestamps are stored in UTC)."""
    fields = dict(row)
    macros, tie_group, certificate = (json.loads(v) if isinstance(v, str) else v
                                      for v in (fields.pop("macros"), fields["tie_group"], fields.get("certificate")))
    updated = fields["updated_at"]
    updated = datetime.fromisoformat(updated) if isinstance(updated, str) else updated
    device = DeviceInfo(*(fields.pop(name) for name in ("device_name", "compute_capability", "sm_count",
                                                        "total_memory", "driver_version", "cuda_version")))
    problem = ProblemKey(fields.pop("kernel"), fields.pop("source_hash"), fields.pop("spec_hash"),
                         parse_dims_key(fields.pop("dims")), fields.pop("dtype"))
    key = TuningKey(device, problem, fields.pop("nvcc_version"), fields.pop("compile_flags"))
    fields.update(key=key, config=Config.of(key.kernel, macros),
                  tie_group=tuple(m["config"] for m in tie_group or ()), certificate=certificate,
                  updated_at=updated.replace(tzinfo=UTC) if updated.tzinfo is None else updated.astimezone(UTC))
    return BestRecord(**fields)


def _timed(r: "Retiming") -> dict[str, Any]:
    return {"config": r.config.key, "pooled_median_ms": r.pooled_median_ms, "ci_low_ms": r.ci_low_ms,
            "ci_high_ms": r.ci_high_ms, "rounds": len(r.round_medians_ms)}


def certificate(decision: "Decision") -> dict[str, Any]:
    """The verdict of a final re-timing as stored with the best (``autotune_best.certificate``):
    the CI level, whether the top configs are statistically tied (and which), the winner's
    pooled median and its 95 % CI (ms), and the runner-up's, with the paired ratio
    ``runner-up / winner`` over the interleaved rounds (the median of the rounds' ratios and its
    order-statistic CI, :func:`autotune.measure.timing.median_ci`); ``runner_up`` is ``None``
    where one config was re-timed."""
    import numpy as np

    from autotune.measure.timing import CI_LEVEL, median_ci

    w, r = decision.winner, decision.runner_up
    out: dict[str, Any] = {"level": CI_LEVEL, "tied": decision.tied,
                           "tie_group": [t.config.key for t in decision.tie_group],
                           "fastest": decision.fastest.config.key, "winner": _timed(w), "runner_up": None}
    if r is not None:
        n = min(len(r.round_medians_ms), len(w.round_medians_ms))
        if n:
            ratios = np.array(r.round_medians_ms[:n]) / np.array(w.round_medians_ms[:n])
            ratio, (low, high) = float(np.median(ratios)), median_ci(ratios)
        else:
            ratio = low = high = r.pooled_median_ms / w.pooled_median_ms
        out["runner_up"] = {**_timed(r), "ratio": ratio, "ratio_low": low, "ratio_high": high}
    return out


def _ms_ci(entry: Mapping[str, Any]) -> str:
    from autotune.measure.figures import duration

    text = duration(entry["pooled_median_ms"])
    if entry.get("ci_low_ms") is not None and entry.get("ci_high_ms") is not None:
        text += f" (95% CI {duration(entry['ci_low_ms'])} .. {duration(entry['ci_high_ms'])})"
    return text


def certificate_lines(cert: Mapping[str, Any] | None) -> list[str]:
    """The stored certificate in words: the winner's time and CI, the runner-up's and how much
    slower it is (paired over the rounds, with its CI), and whether they are statistically tied
    (then the tie rule chose). Empty for ``None`` (a best stored before schema 0009, or not re-timed)."""
    if not cert:
        return []
    w, r = cert["winner"], cert.get("runner_up")
    lines = [f"winner {w['config']}: {_ms_ci(w)}"]
    if r is not None:
        pct = lambda x: f"{(x - 1.0) * 100:+.2f}%"  # noqa: E731
        lines.append(f"runner-up {r['config']}: {_ms_ci(r)}; {pct(r['ratio'])} paired over {r['rounds']} rounds "
                     f"(CI {pct(r['ratio_low'])} .. {pct(r['ratio_high'])})")
    if cert.get("tied"):
        lines.append(f"statistically tied: {', '.join(cert['tie_group'])}; chosen by the rule "
                     "(fewer threads, then less shared memory)")
    else:
        lines.append("not tied: every other re-timed config is slower, paired over the rounds")
    return lines


@dataclass(frozen=True)
class SearchTrials:
    """Every trial (ok or failed, in order) of a kernel row on a device of one name for one
    problem: ``trials`` are mappings of ``macros, status, gbps, gflops, median_ms, config_key``;
    ``skipped``: why each more recent search identity was left out (stale), most recent first.
    No trials: every search was left out."""

    device: str
    source_hash: str
    trials: tuple[dict[str, Any], ...]
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchIdentity:
    """What a search's results were measured with, as :func:`autotune.store.stale.stale_reason`
    reads it (``config``: the macros of one of its ``ok`` trials)."""

    device: str
    compute_capability: str
    kernel_id: int
    source_hash: str
    spec_hash: str
    nvcc_version: str
    compile_flags: str
    config: Any


@dataclass(frozen=True)
class BenchRunRows:
    """One stored bench run and its rows (mappings of the ``autotune_bench_rows`` columns asked for)."""

    run_id: int
    device: str
    dtype: str
    memcpy_gbps: float | None
    l2_mode: str
    nvcc_version: str
    created_at: datetime
    rows: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class StoredSearch(KeyFields):
    """What a stored search was measured with: its key (device, kernel, problem and build, each
    read through it: :class:`~autotune.store.key.KeyFields`) and its L2 mode."""

    key: TuningKey
    l2_mode: str | None


@dataclass(frozen=True)
class ExportDetails:
    """What a results file's entry needs beside a :class:`BestRecord`: the search's device memory
    and L2 mode, the trial's launches, the best's tie group as stored (``None``: none stored)."""

    total_memory: int
    l2_mode: str | None
    launches: int | None
    tie_group: list[dict[str, Any]] | None
