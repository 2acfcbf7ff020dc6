"""``autotune dispatch``: a kernel's dispatch per device and dtype, with its held-out regret.

:func:`stored_tables` reads the kernel's non-stale trials (:mod:`autotune.store.stale`, the
rules ``best`` and ``lookup`` use) and groups them per device (name and compute capability) and
dtype into the tables a dispatch is learned from (:func:`autotune.dispatch.tables_from_trials`).
:func:`dispatch_reports` learns each dispatch (:func:`autotune.dispatch.build_dispatch`),
holds each tuned shape out in turn (:func:`autotune.dispatch.leave_one_out`: its time with
the config the dispatch learned from the other shapes picks, against its own best, from the
stored trials), with today's ``nearest_shape`` rung and the default beside it, and says where
more tuning would pay most: the tuned shapes whose held-out regret is largest, and new shapes
(:func:`autotune.dispatch.next_shapes` over the tuned shapes' range, weighted by those
regrets). The C header (:mod:`autotune.report.tuned_header`) reads the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from autotune.kernel.model import Kernel
from autotune.store import stale
from autotune.dispatch import (Dispatch, HeldOut, ShapeTable, Summary, build_dispatch, leave_one_out,
                                     next_shapes, regret_weights, summarize,
                                     tables_from_trials)

__all__ = ["DispatchReport", "dispatch_reports", "stored_tables"]


def stored_tables(store, kernel: Kernel, *, dtype: str | None = None, device_name: str | None = None,
                  nvcc_version: str | None = None) -> dict[tuple[str, str, str], list[ShapeTable]]:
    """``{(device name, compute capability, dtype): tables}`` of ``kernel``'s non-stale trials (of
    ``dtype``; of devices whose name contains ``device_name``, case-insensitive), each shape's
    table knowing its stored best. One device name's trials make one group, whatever the
    driver (the C header tells devices apart by name and compute capability only).

    Args:
        store: a :class:`~autotune.store.repository.Store`.
        nvcc_version: today's nvcc (:func:`autotune.store.stale.current_nvcc`); trials built with
            another are stale (``None``: not compared).

    Raises:
        StoreError: the database cannot be read.
    """
    filters = {"source_hash": kernel.source_hash, "spec_hash": kernel.spec_hash}
    if dtype is not None:
        filters["dtype"] = dtype
    groups: dict[tuple[str, str, str], list] = {}
    for t in store.kernel_trials(kernel.name, **filters):
        if device_name is not None and device_name.lower() not in t.device_name.lower():
            continue
        if stale.stale_reason(t, kernel, nvcc_version) is None:
            groups.setdefault((t.device_name, t.compute_capability, t.dtype), []).append(t)
    bests: dict[tuple[str, str, str], dict] = {}
    for b in store.find_best(kernel=kernel.name, dtype=dtype, device_name=device_name,
                             source_hash=kernel.source_hash, spec_hash=kernel.spec_hash):
        bests.setdefault((b.device_name, b.compute_capability, b.dtype), {})[b.shape] = b.config
    out = {}
    for key, trials in sorted(groups.items()):
        tables = tables_from_trials(trials, bests.get(key))
        if tables:
            out[key] = tables
    return out


@dataclass(frozen=True)
class DispatchReport:
    """One device's dispatch for one dtype and how it does on shapes it was not learned from.

    Attributes:
        device, compute_capability, dtype: whose.
        dispatch: learned from every tuned shape.
        tables: the tuned shapes' tables.
        held_out: each tuned shape held out in turn (empty with fewer than two shapes).
        dispatch_summary, nearest_summary, default_summary: the held-out regret of the dispatch,
            of today's ``nearest_shape`` rung and of the default (``None`` without held-out rows).
        worst: the tuned shapes whose held-out regret is largest (worst first, at most ``top``):
            their neighbourhoods need more tuned shapes.
        suggested: new shapes to tune (:func:`~autotune.dispatch.next_shapes` over the
            range of the tuned shapes, weighted by the held-out regrets).
    """

    device: str
    compute_capability: str
    dtype: str
    dispatch: Dispatch
    tables: list[ShapeTable]
    held_out: list[HeldOut]
    dispatch_summary: Summary | None
    nearest_summary: Summary | None
    default_summary: Summary | None
    worst: list[HeldOut]
    suggested: list[tuple[int, ...]]


def dispatch_reports(store, kernel: Kernel, *, dtype: str | None = None, device_name: str | None = None,
                     nvcc_version: str | None = None, top: int = 3) -> list[DispatchReport]:
    """The :class:`DispatchReport` of every device and dtype ``kernel`` has non-stale trials of
    (:func:`stored_tables`'s filters), with ``top`` shapes to look at and to tune.

    Raises:
        StoreError: the database cannot be read.
    """
    reports = []
    default = kernel.default_config()
    for (device, cc, dt), tables in stored_tables(store, kernel, dtype=dtype, device_name=device_name,
                                                  nvcc_version=nvcc_version).items():
        d = build_dispatch(tables, default, kernel.dims)
        rows = leave_one_out(tables, default, kernel.dims) if len(tables) >= 2 else []
        weights = regret_weights(rows)
        worst = sorted(rows, key=lambda r: -weights[r.shape])[:top]
        ranges = [(min(s[i] for s in d.shapes), max(s[i] for s in d.shapes)) for i in range(len(kernel.dims))]
        suggested = next_shapes(ranges, list(d.shapes), top, weights=weights) if len(tables) >= 2 else []
        summaries = [summarize(rows, which) if rows else None for which in ("dispatch", "nearest", "default")]
        reports.append(DispatchReport(device, cc, dt, d, tables, rows, *summaries, worst, suggested))
    return reports
