"""The Pareto front of time and energy, derived from stored trials (``--objective time,energy``).

A trial is on the front where it is valid (status ``ok``, with a median time and an energy per
launch) and no other valid trial of the study is at least as good in both and better in one:
lower or equal median ms and lower or equal J per launch, one of them strictly lower
(non-domination, Deb et al., IEEE TEC 2002). Failed trials, and trials without energy, are never
on it. A config measured in several trials (a resumed study, several GPUs of one model) counts
once, by its trial of the lowest time. Nothing is stored for the front: it is a pure function of
the trials, so it always agrees with them (:meth:`autotune.store.repository.Store.pareto_front`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["front", "dominates", "named_ends"]


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether point ``a`` (ms, J) dominates ``b``: no worse in both, better in one."""
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


def _point(t: Any) -> tuple[float, float] | None:
    if getattr(t, "status", "ok") != "ok" or t.median_ms is None or t.energy_j is None:
        return None
    return (t.median_ms, t.energy_j)


def front(trials: Iterable[Any]) -> list[Any]:
    """The non-dominated valid trials among ``trials`` (objects with ``status``, ``config``,
    ``median_ms`` in ms and ``energy_j`` in J per launch, e.g.
    :class:`~autotune.store.records.TrialRecord`), sorted by time (then energy); one per config
    (its fastest trial). Two trials of equal time and energy are both kept (neither dominates).
    O(n log n): sorted by time, a trial is on the front where its energy is below every faster
    one's."""
    by_config: dict[Any, Any] = {}
    for t in trials:
        p = _point(t)
        if p is None:
            continue
        held = by_config.get(t.config)
        if held is None or p < _point(held):
            by_config[t.config] = t
    ordered = sorted(by_config.values(), key=lambda t: (_point(t), getattr(t.config, "key", "")))
    out: list[Any] = []
    least = float("inf")  # lowest energy of a strictly faster or equal-time-lower-energy trial kept so far
    for t in ordered:
        ms, joules = _point(t)
        if joules < least or (out and _point(out[-1]) == (ms, joules)):
            out.append(t)
            least = min(least, joules)
    return out


def named_ends(members: Sequence[Any]) -> tuple[Any, Any] | None:
    """The front's time-optimal member (lowest ms) and energy-optimal member (lowest J per
    launch), or ``None`` for an empty front. ``members`` sorted as :func:`front` returns them."""
    if not members:
        return None
    return members[0], min(members, key=lambda t: (t.energy_j, t.median_ms))
