"""``autotune plan NAME --plot FILE.png``: a workload's GPU time per problem, before and after tuning.

One horizontal bar per problem (largest first): its GPU time over the recorded calls at the
configs the runtime picked when it was recorded (``before``), and, where the workload's
tuning measured it, at the default and the tuned configs (calls x time per call measured by
the final re-timing), each as a share of the total before. The plot takes plain figures
(:class:`ShareBar`): the command line hands it the plan's and the tuning's, so the report
floor needs nothing of the workload's.

Matplotlib is imported inside the function and drawn through its ``Agg`` canvas (no pyplot),
as every plot of the report does (``autotune.report.figure``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autotune.errors import NotTunedError

__all__ = ["ShareBar", "plot_shares", "MAX_BARS"]

MAX_BARS = 30
"""Problems shown; the rest are summed into one bar."""


@dataclass(frozen=True)
class ShareBar:
    """One problem's GPU time over its recorded calls, ms: ``recorded`` (sampled when it ran),
    ``default`` and ``tuned`` (measured by the tuning; ``None``: not measured)."""

    label: str
    recorded: float
    default: float | None = None
    tuned: float | None = None


def plot_shares(bars: Sequence[ShareBar], path: str | Path, title: str) -> Path:
    """Write the plot of ``bars`` (module doc) to the PNG ``path``, whole or not at all.

    Raises:
        NotTunedError: no bar has a GPU time to show.
        InvalidInputError: ``path`` cannot be written.
    """
    from autotune.report.figure import new_figure, save

    shown = sorted((b for b in bars if b.recorded > 0), key=lambda b: -b.recorded)
    if not shown:
        raise NotTunedError("the workload has no timed call to plot")
    if len(shown) > MAX_BARS:
        rest = shown[MAX_BARS - 1:]
        total = lambda f: None if any(f(b) is None for b in rest) else sum(f(b) for b in rest)  # noqa: E731
        shown = shown[:MAX_BARS - 1] + [ShareBar(f"{len(rest)} others", sum(b.recorded for b in rest),
                                                 total(lambda b: b.default), total(lambda b: b.tuned))]
    whole = sum(b.recorded for b in shown)
    measured = any(b.tuned is not None for b in shown)
    fig = new_figure(size=(10.0, 1.2 + 0.32 * len(shown)))
    ax = fig.add_subplot()
    ys = list(range(len(shown)))[::-1]
    height = 0.27 if measured else 0.6
    ax.barh([y + (height if measured else 0) for y in ys], [100 * b.recorded / whole for b in shown], height,
            label="recorded (configs the runtime picked then)", color="#9e9e9e")
    if measured:
        ax.barh(ys, [100 * (b.default or 0) / whole for b in shown], height, label="default configs (measured)",
                color="#ef6c00")
        ax.barh([y - height for y in ys], [100 * (b.tuned or 0) / whole for b in shown], height,
                label="tuned configs (measured)", color="#00897b")
        default = sum(b.default or 0 for b in shown if b.tuned is not None)
        tuned = sum(b.tuned or 0 for b in shown if b.tuned is not None)
        if default > 0:
            title = (f"{title}\nmeasured GPU time: tuned {tuned:.4g} ms against default {default:.4g} ms "
                     f"({100 * (1 - tuned / default):.1f} % saved)")
    ax.set_yticks(ys, [b.label for b in shown], fontsize=8)
    ax.set_xlabel("% of the recorded GPU time")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return save(fig, Path(path))
