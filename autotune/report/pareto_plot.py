"""``autotune report``'s plot of a time-and-energy search: every valid trial's median time against
its energy per launch, the Pareto front highlighted and its time-optimal and energy-optimal
configs named (``pareto_<kernel>_<dims>_<dtype>.png``)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autotune.report.data import MissingData, kernel_of
from autotune.report.figure import NOTE_CHARS, TITLE_CHARS, new_figure, save
from autotune.store.key import Dims, format_shape
from autotune.store.repository import Store

__all__ = ["pareto_bests", "plot_pareto"]


def pareto_bests(store: Store, kernel: Any, dims: Mapping[str, int] | Dims, dtype: str,
                 device: str | None = None) -> list:
    """The stored bests of ``kernel`` at ``dims`` and ``dtype`` (on a device whose name holds
    ``device``) whose search minimised ``time,energy``: those :func:`plot_pareto` draws."""
    found = store.find_best(kernel=kernel_of(kernel).name, dims=dims, dtype=dtype, device_name=device)
    return [b for b in found if "," in b.objective]


def plot_pareto(store: Store, out_dir: Path, best) -> Path:
    """Write ``pareto_<kernel>_<dims>_<dtype>.png`` into ``out_dir`` for one stored best of a
    ``--objective time,energy`` search (a :class:`~autotune.store.records.BestRecord`): every
    valid trial of its study as median ms (x) against J per launch (y), grey; the Pareto front
    (:meth:`~autotune.store.repository.Store.pareto_front`) joined as a step line in red, its
    time-optimal and energy-optimal members named. Returns the path.

    Raises:
        MissingData: no trial of the study has both a time and an energy per launch.
    """
    from autotune.store.pareto import front, named_ends

    trials = [t for t in store.study_trials(best.search_id)
              if t.status == "ok" and t.median_ms is not None and t.energy_j is not None]
    members = front(trials)
    if not members:
        raise MissingData(f"no trial of {best.kernel} {best.display} {best.dtype} with both a time and an energy "
                          "per launch: run autotune search --objective time,energy on a GPU with the energy counter")
    fig = new_figure("pareto")
    ax = fig.add_subplot()
    on_front = {id(t) for t in members}
    rest = [t for t in trials if id(t) not in on_front]
    ax.scatter([t.median_ms for t in rest], [t.energy_j for t in rest], s=18, color="0.65",
               label=f"other valid configs ({len(rest)})")
    ax.step([t.median_ms for t in members], [t.energy_j for t in members], where="post", color="tab:red",
            linewidth=1.2, alpha=0.6)
    ax.scatter([t.median_ms for t in members], [t.energy_j for t in members], s=42, color="tab:red", zorder=3,
               label=f"Pareto front ({len(members)})")
    fastest, frugal = named_ends(members)
    for t, name, offset in ((fastest, "time-optimal", (8, 10)), (frugal, "energy-optimal", (8, -16))):
        ax.annotate(f"{name}: {t.median_ms:.4g} ms, {t.energy_j:.4g} J", (t.median_ms, t.energy_j),
                    xytext=offset, textcoords="offset points", fontsize=8, color="tab:red")
    ax.set_xlabel("median time per launch (ms)")
    ax.set_ylabel("energy per launch (J)")
    ax.grid(color="0.9")
    ax.legend(fontsize=8, loc="upper right")
    title = f"{best.kernel} {best.display} {best.dtype} on {best.device_name}: time and energy"
    ax.set_title("\n".join(textwrap.wrap(title, TITLE_CHARS)), fontsize=11)
    note = (f"time-optimal: {fastest.config.key}; energy-optimal: {frugal.config.key}; "
            f"{len(trials)} valid trials with energy (failed trials are never on the front)")
    fig.supxlabel("\n".join(textwrap.wrap(note, NOTE_CHARS)), fontsize=8, color="0.3")
    return save(fig, Path(out_dir) / f"pareto_{best.kernel}_{format_shape(best.dims)}_{best.dtype}.png")
