"""What a search measures with, injected into the loop (:class:`autotune.search.tuner.Tuner`):
the real ones come from the benchmark in its measuring child (:mod:`autotune.search.on_gpu`),
tests pass a fake timer and record the calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from autotune.kernel.config import Config
from autotune.measure.measurement import Measurement
from autotune.search import retiming

__all__ = ["Instruments", "Measure"]

Measure = Callable[[Config], Measurement]
"""``measure(config) -> Measurement``; raises :class:`~autotune.errors.TrialFailed` for a failed config."""


@dataclass(frozen=True)
class Instruments:
    """What a search measures with, injected.

    Attributes:
        measure: ``measure(config) -> Measurement``; raises ``TrialFailed`` for a failed config.
        retime: ``retime(configs, rounds) -> list[Retiming]``; ``None`` skips the re-timing.
        clocks: reads the GPU clocks (:func:`autotune.measure.nvml.clock_state`), at start and end.
        prefetch: called with each batch as it is proposed, before any config of it is
            measured (the compile pool); ``None``: nothing ahead.
        built: ``built(config)``: what the compile pool made of a config
            (:meth:`autotune.measure.pipeline.Ahead.built`: its binary's identity, or the failure
            a measurement would meet), waiting for its build; ``None`` where unknown.
        ready: ``ready(config)``: whether the compile pool's build of a config has ended
            (:meth:`autotune.measure.pipeline.Ahead.ready`), so that the loop measures a config
            already built before one still building; ``None``: in the order proposed.
        memcpy_gbps, copy_gbps: the memcpy and bound-kernel figures of this run, GB/s.
        l2_mode: how timing treated L2 (``single`` or ``rotating``), stored with the run.
        send: ``send(config)`` starts measuring ``config`` and returns at once an object whose
            ``result()`` waits for the ``Measurement`` (raising ``TrialFailed`` as ``measure``)
            and whose ``cancel()`` gives it up
            (:meth:`autotune.measure.isolation.IsolatedBenchmark.send`): the loop then claims
            the next config while the GPU measures. ``None``: ``measure`` only.
    """

    measure: Measure
    retime: retiming.Retime | None = None
    clocks: Callable[[], dict | None] | None = None
    prefetch: Callable[[list[Config]], None] | None = None
    built: Callable[[Config], object] | None = None
    ready: Callable[[Config], bool] | None = None
    memcpy_gbps: float | None = None
    copy_gbps: float | None = None
    l2_mode: str | None = None
    send: Callable[[Config], object] | None = None
