"""What a search minimises (``--objective``, :data:`autotune.search.options.OBJECTIVES`).

* ``time``: the median time per launch, ms (the default);
* ``energy``: the energy per launch, J, from NVML's total-energy counter over a window of
  back-to-back launches (:class:`autotune.measure.nvml.EnergyMeter`);
* ``edp``: the energy-delay product per launch, J s (energy x median time): low energy without
  giving up speed (Kernel Tuner's ``nvml_energy`` and EDP objectives);
* ``time,energy``: both at once (Kernel Tuner's NSGA-II over time and energy): the strategy is
  told ``(ms, J)`` (:func:`told`), the stored Optuna study has two directions, and the front of
  non-dominated configs is derived from the stored trials (:func:`autotune.store.pareto.front`).
  The key's best (what ``lookup`` launches) is the re-timed fastest, as for ``time``.

The value is what the strategy is told and what Optuna stores for the trial; the stored trial
keeps its time and its energy whatever the objective. With ``energy`` or ``edp`` the early stop
(a time rule) is off, and the winner is the re-timed top config of lowest objective, its energy
that of its trial (:func:`winner_by_objective`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from autotune.kernel.config import Config
from autotune.measure.measurement import Decision, Retiming

__all__ = ["value", "values", "told", "winner_by_objective"]


def value(measurement, objective: str) -> float | None:
    """The ``objective`` of a measurement (``median_ms``, ``energy_j``): ms, J or J s; ``None``
    where it needs energy and the measurement has none. For ``time,energy`` the time (what
    ranks the re-timing), ``None`` without energy (such a trial is not on the front).

    Raises:
        ValueError: an unknown objective.
    """
    if objective == "time":
        return measurement.median_ms
    if "," in objective:
        both = values(measurement, objective)
        return None if both is None else both[0]
    energy = getattr(measurement, "energy_j", None)
    if objective == "energy":
        return energy
    if objective == "edp":
        return None if energy is None else energy * measurement.median_ms * 1e-3
    raise ValueError(f"unknown objective {objective!r}")


def values(measurement, objective: str) -> tuple[float, ...] | None:
    """Each objective of ``objective`` (comma-separated, e.g. ``time,energy``) of a measurement,
    in order (ms, J); ``None`` where one of them is missing (no energy).

    Raises:
        ValueError: an unknown objective.
    """
    out = tuple(value(measurement, name) for name in objective.split(","))
    return None if any(v is None for v in out) else out


def told(measurement, objective: str) -> float | tuple[float, ...] | None:
    """What the strategy (and the stored Optuna study) is told of a measured config: the one
    value of a single objective (:func:`value`), or the tuple of a Pareto search's
    (:func:`values`); ``None``: it cannot be scored (a failure, or no energy)."""
    return values(measurement, objective) if "," in objective else value(measurement, objective)


def winner_by_objective(decision: Decision, retimings: Sequence[Retiming], energy_j: Mapping[Config, float],
                        objective: str, threads: Callable[[Config], int],
                        shared_bytes: Callable[[Config], int]) -> Decision:
    """The re-timing's decision for ``objective``: for ``time`` ``decision`` as it is; for
    ``energy`` and ``edp`` the re-timed config of lowest energy (J per launch, ``energy_j`` by
    config, from its trial) or energy x pooled time, ties broken by the rule of
    :func:`autotune.search.winner.choose` (fewer threads, less shared memory, config key).
    Configs without energy are left out; none with energy: ``decision`` as it is."""
    if objective == "time" or "," in objective:  # time,energy: the key's best is the re-timed fastest
        return decision

    def score(r: Retiming) -> float:
        e = energy_j[r.config]
        return e if objective == "energy" else e * r.pooled_median_ms * 1e-3

    metered = [r for r in retimings if energy_j.get(r.config) is not None]
    if not metered:
        return decision
    best = min(metered, key=lambda r: (score(r), threads(r.config), shared_bytes(r.config), r.config.key))
    return Decision(best, decision.fastest, (best,), decision.paired, decision.ranked)
