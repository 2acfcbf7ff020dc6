"""The Pareto fronts of time and energy that ``autotune best`` prints and exports: each best
whose search minimised ``time,energy`` has one (:meth:`~autotune.store.repository.Store.pareto_front`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autotune.measure.figures import duration
from .output import Column, Format, emit
from ._common import out

if TYPE_CHECKING:
    from autotune.store.records import BestRecord

__all__ = ["pareto_fronts", "front_role", "front_data", "FRONT_COLUMNS", "emit_front"]


def pareto_fronts(store, records: list[BestRecord]) -> dict[int, list]:
    """The Pareto front of time and energy (:meth:`~autotune.store.repository.Store.pareto_front`)
    of each best whose search minimised ``time,energy``, by ``id()`` of the record."""
    from autotune.search.options import PARETO_OBJECTIVES

    return {id(b): store.pareto_front(b.search_id) for b in records if b.objective in PARETO_OBJECTIVES}


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


def emit_front(b: BestRecord, members: list) -> None:
    """Print one best's Pareto front of time and energy: each config with its ms and J per
    launch, the time-optimal and energy-optimal named (a front without members says why)."""
    what = f"Pareto front of time and energy for {b.kernel} {b.display} {b.dtype}"
    if not members:
        out.print(f"{what}: empty (no trial with both a time and an energy per launch)", markup=False)
        return
    emit(out, [(t, front_role(members, t)) for t in members], FRONT_COLUMNS, Format.table,
         title=f"{what}: {len(members)} config{'s' if len(members) != 1 else ''}")
