"""Progress and outcome lines of ``autotune search --device 0,1`` (one worker per GPU)."""

from __future__ import annotations

from autotune.search.workers import WorkerReport
from ._common import err, out

__all__ = ["BAR_WIDTH", "best_text", "worker_progress", "print_reports"]

BAR_WIDTH = 20
"""Characters of a progress bar: the line keeps room for the best so far at 80 columns."""


def best_text(console, description: str, figure: str, config: str) -> str:
    """``best 2800 GB/s CONFIG`` where the progress line has room for the config, else
    ``best 2800 GB/s`` (Rich would cut it with an ellipsis; the config is printed at the end)."""
    text = f"best {figure} {config}"
    room = console.width - len(description) - BAR_WIDTH - len(" 100/100 0:00:00 ") - 4
    return text if len(text) <= room else f"best {figure}"


def worker_progress(progress, ordinals: list[int], shares) -> callable:
    """A progress bar per GPU on ``progress``; returns the ``on_report`` that updates them."""
    tasks = {o: progress.add_task(f"GPU {o}", total=n, best="starting") for o, n in zip(ordinals, shares)}

    def on_report(rep: WorkerReport) -> None:
        description = f"GPU {rep.ordinal} {rep.name}".rstrip()
        best = (best_text(progress.console, description, str(rep.best), str(rep.best_config))
                if rep.best is not None else "no valid config yet")
        if rep.state not in ("starting", "running", "done"):
            best = rep.state
        measured = sum(rep.counts.values())  # every trial is a config measured
        progress.update(tasks[rep.ordinal], completed=measured, best=best, description=description)

    return on_report


def print_reports(reports: list[WorkerReport], console=None) -> None:
    """One line per GPU: its trials by outcome, and how it ended (on ``console``, default
    stdout; a worker that failed on stderr)."""
    for rep in reports:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(rep.counts.items())) or "no trials"
        line = (f"GPU {rep.ordinal} {rep.name} {rep.uuid}".rstrip() + f": {counts}; "
                + (f"stopped: {rep.stopped}" if rep.state == "done" else f"{rep.state}: {rep.message}"))
        (console or out if rep.state == "done" else err).print(line, markup=False, soft_wrap=True)
        if rep.clock_warning:
            err.print(f"warning: GPU {rep.ordinal} clocks moved during the search: {rep.clock_warning}")
