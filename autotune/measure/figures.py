"""A kernel's figures of merit for a time: GB/s of its objective's bytes, GFLOP/s of its flops.

The headline figure of a kernel is GFLOP/s when its objective counts flops, else GB/s when it
counts bytes, else the time itself (ms). A time is printed by :func:`duration` everywhere: in
µs below 0.1 ms, where four decimals of ms would hide its digits (``0.0042`` ms is ``4.20 µs``).
"""

from __future__ import annotations

from autotune.kernel.model import Kernel
from autotune.kernel.problem import Problem

__all__ = ["unit", "figure", "headline", "duration", "MICROSECONDS_BELOW_MS"]

MICROSECONDS_BELOW_MS = 0.1
"""Times shorter than this (ms) print in µs."""


def unit(kernel: Kernel) -> str:
    """``GFLOP/s``, ``GB/s`` or ``ms``: the unit of :func:`figure`."""
    return "GFLOP/s" if kernel.objective.flops else "GB/s" if kernel.objective.bytes else "ms"


def figure(problem: Problem, ms: float) -> float:
    """The headline figure of ``ms`` per launch on ``problem``: GFLOP/s, GB/s, or the ms
    itself (higher is better except for ``ms``)."""
    kernel = problem.kernel
    which = "flops" if kernel.objective.flops else "bytes" if kernel.objective.bytes else None
    if which is None:
        return ms
    return problem.figure(which) / (ms * 1e-3) / 1e9


def headline(problem: Problem, ms: float) -> str:
    """``"2873 GB/s"``, ``"24447 GFLOP/s"`` or a time (:func:`duration`: ``"0.1234 ms"``, ``"4.20 µs"``)."""
    u = unit(problem.kernel)
    value = figure(problem, ms)
    return duration(value) if u == "ms" else f"{value:.0f} {u}"


def duration(ms: float) -> str:
    """A time given in ms as every table and line prints it: ``4.20 µs`` below
    :data:`MICROSECONDS_BELOW_MS`, else ``0.1938 ms`` (JSON and CSV keep the raw ms)."""
    return f"{ms * 1e3:.2f} µs" if abs(ms) < MICROSECONDS_BELOW_MS else f"{ms:.4f} ms"
