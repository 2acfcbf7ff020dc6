"""The results tables: the columns of stored bests (``autotune best``, ``list``, and the best
``search`` stored), of one key's trials (``trials``), of the kernel catalog (``kernels``) and of
a best's Pareto front of time and energy, each a list of :class:`~autotune.report.columns.Column`:
what a table, JSON and CSV show of a record, and how. The command line prints them
(``autotune.cli.output``); nothing here reads the database or prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autotune.measure.figures import duration, unit
from autotune.report.columns import Column, rate
from autotune.store.records import certificate_lines

if TYPE_CHECKING:
    from autotune.store.records import BestRecord

__all__ = ["best_columns", "trial_columns", "kernel_columns", "FRONT_COLUMNS", "front_data", "front_role"]


def best_columns(records: list[BestRecord], marks: dict[int, str] | None = None,
                 fronts: dict[int, list] | None = None) -> list[Column]:
    """The columns of stored bests: kernel, shape, dtype, time and the headline figure (GFLOP/s
    where a result has them, else GB/s) with % of memcpy in the row, the config on its own line;
    the rest with --wide (and always in JSON/CSV). ``marks`` (by ``id()`` of the record): a
    ``stale`` column. ``fronts`` (by ``id()``): a ``pareto_front`` field in JSON/CSV (the
    table prints each front after the bests, with :data:`FRONT_COLUMNS`)."""
    devices = {b.device_name for b in records}
    columns = [
        Column("device", "device", lambda b: b.device_name, long=True, wide=len(devices) <= 1),
        Column("kernel", "kernel", lambda b: b.kernel),
        Column("shape", "shape", lambda b: b.display),
        Column("dtype", "dtype", lambda b: b.dtype),
        Column("median", "median_ms", lambda b: b.time_ms, text=duration, right=True),
        Column("95% CI", "ci_pct", _ci_pct, text=lambda v: f"±{v:.2f}%", right=True,
               wide=not any(_ci_pct(b) is not None for b in records)),
        Column("figure", "figure", _figure, right=True, data=False),
        Column("GFLOP/s", "gflops", lambda b: b.pooled_gflops, table=False),
        Column("GB/s", "gbps", _gbps, table=False),
        Column("% memcpy", "pct_memcpy", _pct_memcpy, text=lambda v: f"{v:.1f}", right=True,
               wide=not any(_pct_memcpy(b) is not None for b in records)),
        Column("% copy", "pct_copy", lambda b: 100 * g / b.copy_gbps if (g := _gbps(b)) and b.copy_gbps else None,
               text=lambda v: f"{v:.1f}", right=True, wide=True),
        Column("spread %", "spread_pct", lambda b: None if b.spread is None else 100 * b.spread,
               text=lambda v: f"{v:.2f}", right=True, wide=True),
        Column("regs", "registers", lambda b: b.registers, right=True, wide=True),
        Column("smem B", "shared_bytes", lambda b: b.shared_bytes, right=True, wide=True),
        Column("tuned", "tuned_at", lambda b: b.updated_at, lambda t: f"{t:%Y-%m-%d %H:%M}", wide=True),
        Column("config", "config", lambda b: b.config.key, long=True),
        Column("tie group", "tie_group", lambda b: [t for t in b.tie_group if t != b.config.key] or None,
               text=" | ".join, long=True, wide=True, breaks=", |"),
        Column("energy J", "energy_j", lambda b: b.energy_j, text=lambda v: f"{v:.4g}", right=True,
               wide=not any(b.energy_j is not None for b in records)),
        Column("CI low", "ci_low_ms", lambda b: _winner_ci(b)[0], table=False),
        Column("CI high", "ci_high_ms", lambda b: _winner_ci(b)[1], table=False),
        Column("certified", "certified", lambda b: "; ".join(certificate_lines(b.certificate)[1:]) or None,
               long=True, data=False, breaks="; "),
        Column("certificate", "certificate", lambda b: b.certificate, table=False),
    ]
    if marks is not None:
        columns.append(Column("stale", "stale", lambda b: marks.get(id(b)) or None, long=True, breaks=" "))
    if fronts:
        columns.append(Column("objective", "objective", lambda b: b.objective, table=False))
        columns.append(Column("pareto front", "pareto_front", lambda b: front_data(fronts.get(id(b))), table=False))
    return columns


def _winner_ci(b: BestRecord) -> tuple[float | None, float | None]:
    """The 95 % CI of the best's median, ms: the re-timing's pooled one where stored, else its trial's."""
    w = (b.certificate or {}).get("winner") or {}
    if w.get("ci_low_ms") is not None:
        return w["ci_low_ms"], w["ci_high_ms"]
    return b.ci_low_ms, b.ci_high_ms


def _ci_pct(b: BestRecord) -> float | None:
    """Half the width of that CI in % of the best's time (``None``: no CI stored)."""
    low, high = _winner_ci(b)
    return None if low is None or high is None else 50.0 * (high - low) / b.time_ms


def _figure(b: BestRecord) -> str:
    """``24447 GFLOP/s`` or ``2800 GB/s`` (the re-timed figure where there is one)."""
    if b.gflops is not None:
        return f"{rate(b.pooled_gflops)} GFLOP/s"
    gbps = _gbps(b)
    return "" if gbps is None else f"{rate(gbps)} GB/s"


def _gbps(b: BestRecord) -> float | None:
    return (b.pooled_gbps or b.gbps) if b.gflops is None else None


def _pct_memcpy(b: BestRecord) -> float | None:
    gbps = _gbps(b)
    return None if gbps is None else 100 * gbps / b.memcpy_gbps if b.memcpy_gbps else b.pct_memcpy


def trial_columns(records: list) -> list[Column]:
    """The columns of a key's trials: number, status, time, the figure (GB/s or GFLOP/s, where a
    trial has it), the config; with --wide, min/max, registers, occupancy, when; the reason of a
    failed one on its own line."""
    return [
        Column("#", "number", lambda t: t.number, right=True),
        Column("status", "status", lambda t: t.status),
        Column("median", "median_ms", lambda t: t.median_ms, text=duration, right=True),
        Column("min", "min_ms", lambda t: t.min_ms, text=duration, right=True, wide=True),
        Column("max", "max_ms", lambda t: t.max_ms, text=duration, right=True, wide=True),
        Column("GB/s", "gbps", lambda t: t.gbps, text=rate, right=True,
               wide=not any(t.gbps is not None for t in records)),
        Column("GFLOP/s", "gflops", lambda t: t.gflops, text=rate, right=True,
               wide=not any(t.gflops is not None for t in records)),
        Column("% memcpy", "pct_memcpy", lambda t: t.pct_memcpy, text=lambda v: f"{v:.1f}", right=True, wide=True),
        Column("regs", "registers", lambda t: t.registers, right=True, wide=True),
        Column("occupancy", "occupancy", lambda t: t.occupancy, text=lambda v: f"{100 * v:.0f} %", right=True,
               wide=True),
        Column("stored", "created_at", lambda t: t.created_at, lambda t: f"{t:%Y-%m-%d %H:%M:%S}", wide=True),
        Column("config", "config", lambda t: t.config.key, long=True),
        Column("reason", "reason", lambda t: t.reason, long=True, breaks=" "),
    ]


def kernel_columns() -> list[Column]:
    """The columns of the kernel catalog (``autotune kernels``): each kernel's name, dims,
    objective, what it is and its default config; with --wide, its tunables, dtypes and source."""
    return [Column("kernel", "kernel", lambda k: k.name), Column("dims", "dims", lambda k: ",".join(k.dims)),
            Column("objective", "objective", unit),
            Column("about", "summary", lambda k: k.summary, long=True, breaks=" "),
            Column("default", "default_config", lambda k: k.default_config().key, long=True),
            Column("tunables", "tunables", lambda k: list(k.tunables), text=",".join, long=True, wide=True),
            Column("dtypes", "dtypes", lambda k: list(k.dtypes), text=",".join, long=True, wide=True),
            Column("source", "source", lambda k: str(k.path), long=True, wide=True, breaks="/")]


def front_role(members: list, t) -> str:
    """``time-optimal``, ``energy-optimal``, both, or ``""``: what a front member is named."""
    from autotune.store.pareto import named_ends

    ends = named_ends(members)
    if ends is None:
        return ""
    roles = [name for name, end in zip(("time-optimal", "energy-optimal"), ends) if end is t]
    return " and ".join(roles)


def front_data(members: list | None) -> list[dict[str, Any]] | None:
    """A front as the JSON export of ``best`` writes it: each member's config, ms, J and role."""
    if members is None:
        return None
    return [{"config": t.config.as_dict(), "median_ms": t.median_ms, "energy_j": t.energy_j,
             "role": front_role(members, t) or None} for t in members]


FRONT_COLUMNS = [
    Column("", "role", lambda t: t[1] or None),
    Column("median", "median_ms", lambda t: t[0].median_ms, text=duration, right=True),
    Column("J/launch", "energy_j", lambda t: t[0].energy_j, text=lambda v: f"{v:.4g}", right=True),
    Column("config", "config", lambda t: t[0].config.key, long=True),
]
"""The columns of a front's table (``autotune best``): rows of ``(TrialRecord, role)``."""
