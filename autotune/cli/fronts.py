"""The Pareto fronts of time and energy that ``autotune best`` prints and exports: each best
whose search minimised ``time,energy`` has one (:meth:`~autotune.store.repository.Store.pareto_front`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotune.report.result_tables import FRONT_COLUMNS, front_role
from .output import Format, emit
from ._common import out

if TYPE_CHECKING:
    from autotune.store.records import BestRecord

__all__ = ["pareto_fronts", "emit_front"]


def pareto_fronts(store, records: list[BestRecord]) -> dict[int, list]:
    """The Pareto front of time and energy (:meth:`~autotune.store.repository.Store.pareto_front`)
    of each best whose search minimised ``time,energy``, by ``id()`` of the record."""
    from autotune.search.options import PARETO_OBJECTIVES

    return {id(b): store.pareto_front(b.search_id) for b in records if b.objective in PARETO_OBJECTIVES}


def emit_front(b: BestRecord, members: list) -> None:
    """Print one best's Pareto front of time and energy: each config with its ms and J per
    launch, the time-optimal and energy-optimal named (a front without members says why)."""
    what = f"Pareto front of time and energy for {b.kernel} {b.display} {b.dtype}"
    if not members:
        out.print(f"{what}: empty (no trial with both a time and an energy per launch)", markup=False)
        return
    emit(out, [(t, front_role(members, t)) for t in members], FRONT_COLUMNS, Format.table,
         title=f"{what}: {len(members)} config{'s' if len(members) != 1 else ''}")
