"""ORM models of the results database (SQLAlchemy 2, typed).

Every table is prefixed ``autotune_``: Optuna's RDB storage lives in the same database and
owns ``studies``, ``trials``, ``version_info``, ``alembic_version`` and friends.

The schema itself is created by the hand-written Alembic migrations in ``migrations/``
(which never import this module); ``tests/store/test_schema_migrations.py`` checks that both agree.
Constraint names come from :data:`NAMING_CONVENTION`, except the two wide unique keys,
whose names are given explicitly so that they stay short enough for any database.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (JSON, BigInteger, CheckConstraint, DateTime, Float, ForeignKey, Integer, MetaData, String, Text,
                        TypeDecorator, UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = ["NAMING_CONVENTION", "SEARCH_STATUSES", "TRIAL_STATUSES", "Base", "Device", "Kernel", "Search", "Trial", "Best",
           "BenchRun", "BenchRow", "BENCH_KINDS", "Workload", "WorkloadCalls", "WorkloadTuning", "WorkloadResult",
           "TUNING_STATUSES", "RESULT_STATUSES", "utcnow"]

#: Constraint names, after Prefect's convention (``uq_<table>__<columns>`` and so on).
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s__%(column_0_N_name)s",
    "uq": "uq_%(table_name)s__%(column_0_N_name)s",
    "ck": "ck_%(table_name)s__%(constraint_name)s",
    "fk": "fk_%(table_name)s__%(column_0_name)s__%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: Outcome of a trial: ``ok`` (measured) or one of :attr:`autotune.errors.TrialFailed.STATUSES`.
TRIAL_STATUSES = ("ok", "compile_error", "resources", "launch_error", "wrong_result", "crash", "timeout")

#: State of one ``autotune search`` run.
SEARCH_STATUSES = ("running", "finished", "interrupted", "failed")


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp, also on SQLite (which stores no offset).

    Naive datetimes are refused on the way in; values read back are always aware (UTC).
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}; use a timezone-aware one")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base sharing one :class:`MetaData` with the naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Device(Base):
    """A GPU model, by the identity fields of :class:`autotune.measure.device.DeviceInfo` (several
    physical GPUs of one model share a row; :class:`Search` records which one measured)."""

    __tablename__ = "autotune_devices"
    __table_args__ = (
        UniqueConstraint(
            "name", "compute_capability", "sm_count", "total_memory", "driver_version",
            "cuda_version", name="uq_autotune_devices__identity",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    compute_capability: Mapped[str] = mapped_column(String(16))
    sm_count: Mapped[int] = mapped_column(Integer)
    total_memory: Mapped[int] = mapped_column(BigInteger)  # bytes
    driver_version: Mapped[str] = mapped_column(String(32))
    cuda_version: Mapped[str] = mapped_column(String(32))


class Kernel(Base):
    """A kernel: its name, the SHA-256 of its source after includes and the SHA-256 of its
    launch-relevant description (``''`` for rows of kernels no description is known for)."""

    __tablename__ = "autotune_kernels"
    __table_args__ = (UniqueConstraint("name", "source_hash", "spec_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    source_hash: Mapped[str] = mapped_column(String(64))
    spec_hash: Mapped[str] = mapped_column(String(64), server_default="")


class Search(Base):
    """One ``autotune search`` run for one tuning key, on one physical GPU (a search over
    several GPUs stores one per GPU worker, all in the key's one Optuna study)."""

    __tablename__ = "autotune_searches"
    __table_args__ = (CheckConstraint(_in("status", SEARCH_STATUSES), name="status_valid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_id: Mapped[int] = mapped_column(ForeignKey("autotune_devices.id"), index=True)
    kernel_id: Mapped[int] = mapped_column(ForeignKey("autotune_kernels.id"), index=True)
    dims: Mapped[str] = mapped_column(String(1024))  # "rows=8192,cols=8192": the kernel's dims, declared order
    dtype: Mapped[str] = mapped_column(String(32))
    nvcc_version: Mapped[str] = mapped_column(String(64))
    compile_flags: Mapped[str] = mapped_column(String(1024))
    study_name: Mapped[str] = mapped_column(String(1024))
    sampler: Mapped[str] = mapped_column(String(64))
    seed: Mapped[int | None] = mapped_column(Integer)
    memcpy_gbps: Mapped[float | None] = mapped_column(Float)  # GB/s
    copy_gbps: Mapped[float | None] = mapped_column(Float)  # GB/s of copy_row on the search's shape
    l2_mode: Mapped[str | None] = mapped_column(String(16))  # 'single' or 'rotating' buffers
    clocks_start: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    clocks_end: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    clock_warning: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(16), default="running")
    # the physical GPU that measured this search's trials
    gpu_uuid: Mapped[str] = mapped_column(String(64), server_default="")  # '' where NVML could not read it
    gpu_ordinal: Mapped[int | None] = mapped_column(Integer)
    gpu_pci_bus_id: Mapped[str] = mapped_column(String(32), server_default="")
    objective: Mapped[str] = mapped_column(String(16), server_default="time")  # 'time', 'energy' or 'edp'

    device: Mapped[Device] = relationship()
    kernel: Mapped[Kernel] = relationship()


class Trial(Base):
    """One config tried by a search: measured (``ok``) or failed with a reason."""

    __tablename__ = "autotune_trials"
    __table_args__ = (
        CheckConstraint(_in("status", TRIAL_STATUSES), name="status_valid"),
        CheckConstraint("status != 'ok' OR median_ms IS NOT NULL", name="ok_has_median_ms"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    search_id: Mapped[int] = mapped_column(ForeignKey("autotune_searches.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)  # Optuna trial number
    config_key: Mapped[str] = mapped_column(String(1024))
    macros: Mapped[dict[str, int]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    median_ms: Mapped[float | None] = mapped_column(Float)
    min_ms: Mapped[float | None] = mapped_column(Float)
    max_ms: Mapped[float | None] = mapped_column(Float)
    gbps: Mapped[float | None] = mapped_column(Float)  # GB/s of the kernel's bytes objective (None: it has none)
    gflops: Mapped[float | None] = mapped_column(Float)  # GFLOP/s of its flops objective (None: it has none)
    pct_memcpy: Mapped[float | None] = mapped_column(Float)
    pct_copy: Mapped[float | None] = mapped_column(Float)  # % of the search's copy_row bound
    occupancy: Mapped[float | None] = mapped_column(Float)  # theoretical, 0..1, from the driver
    registers: Mapped[int | None] = mapped_column(Integer)
    shared_bytes: Mapped[int | None] = mapped_column(Integer)
    launches: Mapped[int | None] = mapped_column(Integer)
    phases: Mapped[dict[str, float] | None] = mapped_column(JSON)  # ms per phase: compile, load, verify, time, store
    # certified timing and energy (0009; None: not measured)
    samples: Mapped[int | None] = mapped_column(Integer)  # timed samples, each a batch of launches
    ci_low_ms: Mapped[float | None] = mapped_column(Float)  # 95 % CI of the median, ms
    ci_high_ms: Mapped[float | None] = mapped_column(Float)
    energy_j: Mapped[float | None] = mapped_column(Float)  # joules per launch (NVML's energy counter)
    sm_mhz: Mapped[int | None] = mapped_column(Integer)  # SM clock while timing, MHz
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    search: Mapped[Search] = relationship()


class Best(Base):
    """The fastest ``ok`` trial (lowest ``median_ms``) of one tuning key (device, kernel, dims, dtype,
    toolchain)."""

    __tablename__ = "autotune_best"
    __table_args__ = (
        UniqueConstraint(
            "device_id", "kernel_id", "dims", "dtype", "nvcc_version", "compile_flags",
            name="uq_autotune_best__key",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_id: Mapped[int] = mapped_column(ForeignKey("autotune_devices.id"))
    kernel_id: Mapped[int] = mapped_column(ForeignKey("autotune_kernels.id"))
    dims: Mapped[str] = mapped_column(String(1024))  # "rows=8192,cols=8192": the kernel's dims, declared order
    dtype: Mapped[str] = mapped_column(String(32))
    nvcc_version: Mapped[str] = mapped_column(String(64))
    compile_flags: Mapped[str] = mapped_column(String(1024))
    trial_id: Mapped[int] = mapped_column(ForeignKey("autotune_trials.id"), index=True)
    # the interleaved re-timing of the top configs that chose this winner (None: not re-timed)
    pooled_median_ms: Mapped[float | None] = mapped_column(Float)
    spread: Mapped[float | None] = mapped_column(Float)  # relative, e.g. 0.004 = 0.4 %
    rounds: Mapped[int | None] = mapped_column(Integer)
    tie_group: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    certificate: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # the winner's CI against the runner-up (0009)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    device: Mapped[Device] = relationship()
    kernel: Mapped[Kernel] = relationship()
    trial: Mapped[Trial] = relationship()


BENCH_KINDS = ("memcpy", "kernel", "cpu", "transfer", "vendor")


class BenchRun(Base):
    """One ``autotune bench``: every kernel, memcpy, the CPU and host transfers for one shape
    (``dims``: the text form of the benched kernels' dims, e.g. ``m=4096,n=4096,k=4096``)."""

    __tablename__ = "autotune_bench_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_id: Mapped[int] = mapped_column(ForeignKey("autotune_devices.id"), index=True)
    dims: Mapped[str] = mapped_column(String(1024))  # "rows=8192,cols=8192": the kernel's dims, declared order
    dtype: Mapped[str] = mapped_column(String(32))
    nvcc_version: Mapped[str] = mapped_column(String(64))
    memcpy_gbps: Mapped[float | None] = mapped_column(Float)  # None where the bench has no memcpy line
    l2_mode: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    device: Mapped[Device] = relationship()
    lines: Mapped[list["BenchRow"]] = relationship(order_by="BenchRow.position")


class BenchRow(Base):
    """One line of a bench table (GB/s: effective bandwidth; for transfers, bytes moved / time;
    GFLOP/s for matrix products and the vendor library's product)."""

    __tablename__ = "autotune_bench_rows"
    __table_args__ = (CheckConstraint(_in("kind", BENCH_KINDS), name="kind_valid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("autotune_bench_runs.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(16))
    config_key: Mapped[str | None] = mapped_column(String(1024))
    source: Mapped[str | None] = mapped_column(String(16))  # 'default' or 'tuned' for kernels
    median_ms: Mapped[float | None] = mapped_column(Float)
    gbps: Mapped[float | None] = mapped_column(Float)
    gflops: Mapped[float | None] = mapped_column(Float)  # matmul and vendor lines, GFLOP/s
    pct_memcpy: Mapped[float | None] = mapped_column(Float)
    registers: Mapped[int | None] = mapped_column(Integer)
    shared_bytes: Mapped[int | None] = mapped_column(Integer)
    occupancy: Mapped[float | None] = mapped_column(Float)
    note: Mapped[str | None] = mapped_column(Text)  # why a kernel has no figures (failed)


#: State of one ``autotune tune NAME`` (a tuning of a workload on one device model).
TUNING_STATUSES = ("running", "finished", "interrupted", "failed")

#: What a tuning did to one problem: ``pending`` (not reached yet), ``tuned`` (searched and
#: measured), ``skipped`` (no budget, or tuned already: measured only), ``failed`` (with its
#: reason), ``interrupted`` (Ctrl-C during its search, or its process killed: what was measured
#: is kept), ``running`` (handed to a GPU, being tuned now).
RESULT_STATUSES = ("pending", "tuned", "skipped", "failed", "interrupted", "running")


class Workload(Base):
    """A named recording: the launches of a program (``autotune.record("NAME")``,
    ``AUTOTUNE_RECORD=NAME``), counted in :class:`WorkloadCalls`."""

    __tablename__ = "autotune_workloads"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WorkloadCalls(Base):
    """What one recording process counted for one problem in one batch: the calls, and the GPU
    time of those it timed (``sampled`` calls taking ``sampled_ms`` in all, ms). A batch is one
    transaction; ``(run, batch, problem)`` is unique, so a batch written twice counts once."""

    __tablename__ = "autotune_workload_calls"
    __table_args__ = (
        CheckConstraint("calls >= 0 AND sampled >= 0 AND sampled_ms >= 0", name="counts_valid"),
        UniqueConstraint("run", "batch", "device_id", "kernel_id", "dims", "dtype",
                         name="uq_autotune_workload_calls__batch"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("autotune_workloads.id"), index=True)
    run: Mapped[str] = mapped_column(String(32))  # one recording process (a random hex id)
    batch: Mapped[int] = mapped_column(Integer)  # its batch number, from 1
    device_id: Mapped[int] = mapped_column(ForeignKey("autotune_devices.id"))
    kernel_id: Mapped[int] = mapped_column(ForeignKey("autotune_kernels.id"))
    kernel_ref: Mapped[str] = mapped_column(String(1024))  # catalog name or kernel file path ('' : none)
    dims: Mapped[str] = mapped_column(String(1024))  # "rows=8192,cols=8192": the kernel's dims, declared order
    dtype: Mapped[str] = mapped_column(String(32))
    calls: Mapped[int] = mapped_column(BigInteger)
    sampled: Mapped[int] = mapped_column(Integer)
    sampled_ms: Mapped[float] = mapped_column(Float)  # GPU ms of the sampled calls, summed
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    workload: Mapped[Workload] = relationship()
    device: Mapped[Device] = relationship()
    kernel: Mapped[Kernel] = relationship()


class WorkloadTuning(Base):
    """One ``autotune tune NAME`` on one device model: its budget (GPU seconds, all GPUs
    together), the GPUs it ran on, its wall time so far (summed over resumed runs), and the
    process running it (``owner_*``: host name, pid, a token of its run; ``heartbeat_at``: when
    it last said it is alive): a ``running`` tuning whose process is gone is resumed
    (:mod:`autotune.store.leases`)."""

    __tablename__ = "autotune_workload_tunings"
    __table_args__ = (CheckConstraint(_in("status", TUNING_STATUSES), name="status_valid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("autotune_workloads.id"), index=True)
    device_id: Mapped[int] = mapped_column(ForeignKey("autotune_devices.id"))
    budget_s: Mapped[float] = mapped_column(Float)
    gpus: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="running")
    wall_s: Mapped[float] = mapped_column(Float, default=0.0)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    owner_host: Mapped[str | None] = mapped_column(String(255))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    owner_token: Mapped[str | None] = mapped_column(String(32))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    workload: Mapped[Workload] = relationship()
    device: Mapped[Device] = relationship()


class WorkloadResult(Base):
    """What a tuning did to one problem of its workload (statuses: :data:`RESULT_STATUSES`):
    the budget it got and spent (s), its trials, the config chosen, and the GPU time per call
    measured at the default config and at the chosen one (ms; ``None``: not measured)."""

    __tablename__ = "autotune_workload_results"
    __table_args__ = (
        CheckConstraint(_in("status", RESULT_STATUSES), name="status_valid"),
        UniqueConstraint("tuning_id", "kernel_id", "dims", "dtype", name="uq_autotune_workload_results__problem"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tuning_id: Mapped[int] = mapped_column(  # named: the convention's name is over PostgreSQL's 63 characters
        ForeignKey("autotune_workload_tunings.id", name="fk_autotune_workload_results__tuning_id"), index=True)
    kernel_id: Mapped[int] = mapped_column(ForeignKey("autotune_kernels.id"))
    kernel_ref: Mapped[str] = mapped_column(String(1024))
    dims: Mapped[str] = mapped_column(String(1024))
    dtype: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    strategy: Mapped[str | None] = mapped_column(String(64))
    budget_s: Mapped[float] = mapped_column(Float)
    spent_s: Mapped[float] = mapped_column(Float)
    trials: Mapped[int] = mapped_column(Integer)
    gpu_ordinal: Mapped[int | None] = mapped_column(Integer)
    config_key: Mapped[str | None] = mapped_column(String(1024))
    default_ms: Mapped[float | None] = mapped_column(Float)
    tuned_ms: Mapped[float | None] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    tuning: Mapped[WorkloadTuning] = relationship()
    kernel: Mapped[Kernel] = relationship()
