"""The queries behind ``autotune report`` (:mod:`autotune.report.data` shapes and plots what they
return): the trials of the latest search of a problem, the latest bench run of a problem, and
the dims a kernel was searched or benched on. Plain values out; SQLAlchemy stays in the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from autotune.store.key import Dims, dims_key
from autotune.store.models import BenchRow, BenchRun, Device, Kernel, Search, Trial

__all__ = ["SearchTrials", "SearchIdentity", "BenchRunRows", "latest_search_trials", "latest_bench_run", "tried_dims"]


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


def _device_filter(device: str | None) -> tuple:
    """``device``: a case-insensitive part of the device name (``None``: any)."""
    return () if device is None else (func.lower(Device.name).contains(device.lower(), autoescape=True),)


def latest_search_trials(store, kernel: str, dims: Dims, dtype: str, device: str | None = None,
                         unusable: Callable[[SearchIdentity], str | None] | None = None) -> SearchTrials | None:
    """The trials behind a heatmap: the device name and kernel row (source) of the most recent
    search of ``kernel``, ``dims`` and ``dtype`` with an ``ok`` trial (on a device whose name
    contains ``device``), and every trial of every search of that kernel row on devices of that
    name for the problem (a resumed study has several). ``None``: no such search.

    ``unusable(identity)``: why a search's results cannot be used (stale), or ``None``; each
    more recent identity it refuses is skipped (its reason in ``SearchTrials.skipped``), and the
    trials are then only those built with the chosen search's nvcc and compile flags.

    Raises:
        StoreError: the database cannot be read.
    """
    from autotune.kernel.config import Config

    where = (Kernel.name == kernel, Search.dims == dims_key(dims), Search.dtype == dtype, *_device_filter(device))
    has_ok = select(Trial.id).where(Trial.search_id == Search.id, Trial.status == "ok").exists()
    skipped: list[str] = []
    with store.session() as session:
        candidates = session.execute(
            select(Device.name, Device.compute_capability, Kernel.id, Kernel.source_hash, Kernel.spec_hash,
                   Search.nvcc_version, Search.compile_flags, Search.id)
            .select_from(Search).join(Device, Search.device_id == Device.id)
            .join(Kernel, Search.kernel_id == Kernel.id)
            .where(*where, has_ok).order_by(Search.started_at.desc(), Search.id.desc())
        ).all()
        chosen, seen = None, set()
        for *fields, search_id in candidates:
            if tuple(fields) in seen:
                continue
            seen.add(tuple(fields))
            if unusable is None:
                chosen = fields
                break
            macros = session.scalars(select(Trial.macros).where(Trial.search_id == search_id, Trial.status == "ok")
                                     .order_by(Trial.id).limit(1)).first()
            reason = unusable(SearchIdentity(*fields, Config.of(kernel, macros or {})))
            if reason is None:
                chosen = fields
                break
            skipped.append(reason)
        if chosen is None:
            return SearchTrials("", "", (), tuple(skipped)) if skipped else None
        device_name, _, kernel_id, source_hash, _, nvcc_version, compile_flags = chosen
        same_build = () if unusable is None else (Search.nvcc_version == nvcc_version,
                                                   Search.compile_flags == compile_flags)
        trials = session.execute(
            select(Trial.macros, Trial.status, Trial.gbps, Trial.gflops, Trial.median_ms, Trial.config_key)
            .join(Search, Trial.search_id == Search.id).join(Device, Search.device_id == Device.id)
            .where(Search.kernel_id == kernel_id, Device.name == device_name, Search.dims == dims_key(dims),
                   Search.dtype == dtype, *same_build)
            .order_by(Trial.id)
        ).mappings().all()
    return SearchTrials(device_name, source_hash, tuple(dict(t) for t in trials), tuple(skipped))


def latest_bench_run(store, dims: Dims, dtype: str, fields: tuple[str, ...],
                     device: str | None = None) -> BenchRunRows | None:
    """The latest bench run of ``dims`` and ``dtype`` (on a device whose name contains
    ``device``), with its rows in order, each a mapping of ``fields`` (columns of
    ``autotune_bench_rows``). ``None``: there is none.

    Raises:
        StoreError: the database cannot be read.
    """
    with store.session() as session:
        run = session.scalars(
            select(BenchRun).join(Device, BenchRun.device_id == Device.id)
            .where(BenchRun.dims == dims_key(dims), BenchRun.dtype == dtype, *_device_filter(device))
            .order_by(BenchRun.created_at.desc(), BenchRun.id.desc()).limit(1)
        ).first()
        if run is None:
            return None
        rows = session.scalars(select(BenchRow).where(BenchRow.run_id == run.id).order_by(BenchRow.position)).all()
        return BenchRunRows(run.id, run.device.name, run.dtype, run.memcpy_gbps, run.l2_mode, run.nvcc_version,
                            run.created_at, tuple({f: getattr(r, f) for f in fields} for r in rows))


def tried_dims(store, kernel: str, dtype: str, device: str | None = None) -> tuple[list[str], list[str]]:
    """The dims keys (``"rows=8192,cols=8192"``) searched with an ``ok`` trial of ``kernel`` and
    ``dtype``, and those of every bench run of ``dtype`` (on devices whose name contains ``device``).

    Raises:
        StoreError: the database cannot be read.
    """
    has_ok = select(Trial.id).where(Trial.search_id == Search.id, Trial.status == "ok").exists()
    with store.session() as session:
        searched = session.scalars(
            select(Search.dims).join(Device, Search.device_id == Device.id).join(Kernel, Search.kernel_id == Kernel.id)
            .where(Kernel.name == kernel, Search.dtype == dtype, has_ok, *_device_filter(device)).distinct()).all()
        benched = session.scalars(
            select(BenchRun.dims).join(Device, BenchRun.device_id == Device.id)
            .where(BenchRun.dtype == dtype, *_device_filter(device)).distinct()).all()
    return list(searched), list(benched)
