"""Where a trial's time goes: milliseconds per phase (compile, load, verify, time, energy, store).

The benchmark fills ``compile`` (nvcc), ``load`` (module load, function lookup, occupancy),
``verify`` (fresh inputs, one launch, the comparison) and ``time`` (warm-up and timed
launches), ``energy`` (the back-to-back launches metered through NVML, where asked); the tuner
adds ``store`` (the database write of the trial). They are kept with
each trial (``autotune_trials.phases``) and ``autotune search`` prints their totals.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Mapping

__all__ = ["PHASES", "PhaseClock", "totals", "describe"]

PHASES = ("compile", "load", "verify", "time", "energy", "store")
"""The phases of a trial, in the order they run."""


class PhaseClock:
    """Adds up wall-clock milliseconds per phase: ``with clock("compile"): ...``.

    Attributes:
        ms: milliseconds spent so far in each phase entered (a phase entered twice adds up).
    """

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        """Time the block as ``phase`` (also when it raises).

        Raises:
            ValueError: ``phase`` is not one of :data:`PHASES`.
        """
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}; allowed: {', '.join(PHASES)}")
        start = time.perf_counter()
        try:
            yield
        finally:
            self.ms[phase] = self.ms.get(phase, 0.0) + (time.perf_counter() - start) * 1e3


def totals(each: Iterable[Mapping[str, float] | None]) -> dict[str, float]:
    """The sum per phase, ms, of the trials' ``phases`` (``None``: a trial without them), in
    the order of :data:`PHASES`; phases no trial has are left out."""
    out: dict[str, float] = {}
    for phases in each:
        for name, ms in (phases or {}).items():
            out[name] = out.get(name, 0.0) + ms
    return {name: out[name] for name in sorted(out, key=lambda n: (PHASES + (n,)).index(n))}


def describe(total_ms: Mapping[str, float]) -> str:
    """``compile 41.2 s, load 0.3 s, verify 8.1 s, time 12.0 s, store 0.9 s`` (empty: ``""``)."""
    return ", ".join(f"{name} {ms / 1e3:.1f} s" for name, ms in total_ms.items())
