"""Plain, frozen records of stored results, detached from any database session."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from autotune.kernel.config import Config
from autotune.kernel.dims import NamedDims
from autotune.store.key import Dims, parse_dims_key

if TYPE_CHECKING:  # records are read without SQLAlchemy too (autotune.store.reader)
    from autotune.store.models import Trial

__all__ = ["TrialRecord", "BestRecord", "ImportedResult", "trial_record", "best_from_row", "MEASURED"]

MEASURED = ("median_ms", "min_ms", "max_ms", "gbps", "pct_memcpy", "registers", "shared_bytes", "launches",
            "pct_copy", "occupancy", "gflops")
"""Trial columns that come from a :class:`~autotune.measure.measurement.Measurement`."""


@dataclass(frozen=True)
class TrialRecord:
    """One stored trial. Times in ms, ``gbps`` in GB/s (``None`` for a kernel without a bytes
    objective), ``gflops`` in GFLOP/s (``None`` without a flops objective), ``pct_memcpy`` in % of
    the device-to-device memcpy bandwidth, ``shared_bytes`` in bytes; every measured field is
    ``None`` for a failed trial, whose ``reason`` says why; ``phases``: milliseconds per phase
    (compile, load, verify, time, store; :mod:`autotune.measure.phases`), ``None`` where not
    recorded (trials stored before schema 0007)."""

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


@dataclass(frozen=True)
class BestRecord(NamedDims):
    """The best config stored for one key (the lowest median time), with its measurement (units
    as in :class:`TrialRecord`; ``memcpy_gbps`` is the search's memcpy bandwidth, GB/s; ``dims``
    the key's named dimensions in the kernel's declared order). The device fields are the model
    (the key); ``device_uuid`` is the physical GPU that measured the best trial (``''`` where
    unknown)."""

    device_name: str
    compute_capability: str
    sm_count: int
    driver_version: str
    cuda_version: str
    device_uuid: str
    kernel: str
    source_hash: str
    spec_hash: str
    dims: Dims
    dtype: str
    nvcc_version: str
    compile_flags: str
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
class ImportedResult:
    """One validated result of an export file, as :meth:`autotune.store.repository.Store.add_imported`
    records it.

    Attributes:
        device: the identity columns of the device model (name, compute_capability, sm_count,
            total_memory, driver_version, cuda_version).
        gpu_uuid: the GPU that measured it (``''`` where unknown).
        measurement: the trial's measured columns (:data:`MEASURED`; missing ones are ``None``).
        tie_group: the re-timing's tie group as stored (a list of ``{"config": key, ...}``) or ``None``.
        tuned_at: when it was tuned (aware UTC).
    """

    device: Mapping[str, Any]
    gpu_uuid: str
    kernel: str
    source_hash: str
    spec_hash: str
    dims: Dims
    dtype: str
    nvcc_version: str
    compile_flags: str
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


def trial_record(trial: Trial, kernel: str) -> TrialRecord:
    return TrialRecord(
        id=trial.id, search_id=trial.search_id, number=trial.number,
        config=Config.of(kernel, trial.macros), status=trial.status, reason=trial.reason,
        **{name: getattr(trial, name) for name in MEASURED}, created_at=trial.created_at,
        phases=trial.phases,
    )


def best_from_row(row: Mapping[str, Any]) -> BestRecord:
    """The BestRecord of one row of :data:`autotune.store.best_sql.SELECT_BEST` (its fields by
    name). JSON columns and timestamps come back as text from SQLite and as Python values from
    PostgreSQL; both are read here (timestamps are stored in UTC)."""
    fields = dict(row)
    macros, tie_group = (json.loads(v) if isinstance(v, str) else v for v in (fields.pop("macros"), fields["tie_group"]))
    updated = fields["updated_at"]
    updated = datetime.fromisoformat(updated) if isinstance(updated, str) else updated
    fields.update(config=Config.of(fields["kernel"], macros), dims=parse_dims_key(fields["dims"]),
                  tie_group=tuple(m["config"] for m in tie_group or ()),
                  updated_at=updated.replace(tzinfo=UTC) if updated.tzinfo is None else updated.astimezone(UTC))
    return BestRecord(**fields)
