"""The ``same_arch`` guard: a config tuned on another GPU model never runs below the default here.

A config answered at the ``same_arch`` rung (:func:`autotune.lookup` from another device model,
driver or nvcc of the same compute capability in the database, or a bundle made on one,
``allow_same_arch``) was never timed on this GPU, and may be slower here than the kernel's
default. So the first launch of each problem answered there (once per process, context,
problem and database or bundle: the guard's verdict is kept with the cached
:class:`~autotune.runtime.compiled.Launcher`, which :func:`autotune.compiled`, every
:func:`autotune.launcher` of the problem and :func:`autotune.transpose` share) times that config
against the default on the caller's arrays and stream, and launches the faster from then on (a
batch or view of ``autotune.transpose``: timed on its first matrix):

* the default's module is loaded (built through the cubin cache: one nvcc run where that config
  was never built on this machine);
* the arrays the kernel writes (``out``, ``inout``, ``scratch``) are copied once to scratch
  buffers, which the timed launches write instead: the caller's arrays are never touched by the
  guard, so what the call leaves in them is exactly what one launch of the chosen config gives.
  Before each timed launch, as the measurement does (:mod:`autotune.measure.resets`), an array
  with ``reset`` is set to its value (a histogram counts from zero every time) and an ``inout``
  without it gets its input back; these memsets and copies are outside the timed events;
* :data:`WARMUPS` untimed and :data:`REPEATS` timed launches of each config, alternating
  (default, shipped, then shipped, default, ...: a clock that drifts favours neither), each timed
  by a pair of CUDA events on the caller's stream, then one wait for the last event;
* the shipped config is kept only where its median is below the default's by more than
  :data:`MARGIN`; else the default is launched (rung ``default``). The `LaunchConfig`'s note
  says what was timed and what was kept.

**What it costs the first call** of each such problem: loading (maybe building) the default's
module, one scratch allocation per written array and a copy into it, ``2 * (WARMUPS + REPEATS)``
= 12 launches of the kernel (with their resets), and one wait for the stream; about 12 times the
kernel's time plus milliseconds of host work. Later calls cost nothing more. Launches a recording
counts (:mod:`autotune.runtime.recording`) are the caller's only.

Not timed, and the shipped config kept, where the first launch is captured into a CUDA graph
(events time nothing there: loading a module is not allowed there anyway), or where the default
cannot be loaded or the scratch memory allocated (the note says why).
``AUTOTUNE_SAME_ARCH_GUARD=off`` turns the guard off (:mod:`autotune.settings`).
"""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from autotune import settings
from autotune.errors import AutotuneError, InvalidInputError
from autotune.kernel.model import Array
from autotune.kernel.resets import fill_ops
from autotune.measure.packing import PackedArguments, kernel_layout
from autotune.runtime import driver

if TYPE_CHECKING:
    from autotune.runtime.lookup import LaunchConfig

Launcher = Any
"""An :class:`autotune.runtime.compiled.Launcher` (which imports this module: not imported here)."""

__all__ = ["Pending", "enabled", "settle", "REPEATS", "WARMUPS", "MARGIN"]

REPEATS = 5
"""Timed launches of each config (the median of them is compared)."""
WARMUPS = 1
"""Untimed launches of each config first (the first launch of a module may load it lazily)."""
MARGIN = 0.02
"""How much faster than the default the shipped config must time to be kept: 2 %. Two configs
that time within the noise of a few alternating launches are the same here, and then the default
is the safe one: the target is never to run slower than the default here, and a config kept on
noise could be; the margin gives up at most 2 % of a real gain."""


@dataclass
class Pending:
    """A launcher's guard not run yet: the default's `LaunchConfig` and how to load it.

    Attributes:
        default: the config the ``default`` rung would launch (the kernel's default, or the
            ``default=`` given to :func:`autotune.compiled`).
        load: loads it, giving its `Launcher` for the same problem and device.
        lock: held while timing.
        verdict: once timed: what the note adds, and the default's `Launcher` where it is kept
            (``None``: the shipped config is).
    """

    default: LaunchConfig
    load: Callable[[], Launcher]
    lock: threading.Lock = field(default_factory=threading.Lock)
    verdict: tuple[str, Launcher | None] | None = None


def enabled() -> bool:
    """Whether the guard runs: ``AUTOTUNE_SAME_ARCH_GUARD`` is ``on`` (or unset), not ``off``.

    Raises:
        InvalidInputError: it is something else.
    """
    value = settings.SAME_ARCH_GUARD.get()
    if value not in ("on", "off", ""):
        raise InvalidInputError(f"AUTOTUNE_SAME_ARCH_GUARD={value!r} is not allowed; allowed: on, off")
    return value != "off"


def settle(launcher: Launcher, pointers: Sequence[int], stream: int) -> None:
    """Run ``launcher``'s guard, if pending, on the arrays at ``pointers`` and ``stream`` (module
    doc), and make it launch the faster config from now on (its ``chosen`` says which, its note
    extended by the verdict). Timed once per `Pending`: a thread arriving while another times
    waits for its verdict, and a copy of the launcher (``dataclasses.replace``, as the transpose
    op makes) that shares it takes the verdict without timing again.

    Raises:
        AutotuneError: the driver refused a launch, an event or a copy of the timing.
    """
    pending = launcher.pending
    if pending is None:
        return
    with pending.lock:
        if launcher.pending is None:
            return
        if pending.verdict is None:
            pending.verdict = _decide(launcher, pending, pointers, stream)
        why, winner = pending.verdict
        if winner is None:
            launcher.chosen = replace(launcher.chosen, note=f"{launcher.chosen.note}; {why}")
        else:
            launcher.adopt(winner)
            launcher.chosen = replace(pending.default, note=f"{launcher.chosen.note}; {why}")
        launcher.pending = None


def _decide(launcher: Launcher, pending: Pending, pointers: Sequence[int], stream: int
            ) -> tuple[str, Launcher | None]:
    """The verdict: what the note adds, and the default's launcher where it is kept (``None``:
    the shipped config is)."""
    key = launcher.chosen.config.key
    if driver.stream_capturing(stream):
        return ("same_arch: not timed against the default (the first launch was captured in a CUDA graph); the "
                "shipped config kept"), None
    try:
        default = pending.load()
    except AutotuneError as exc:
        return (f"same_arch: the default {pending.default.config.key} cannot be loaded here "
                f"({str(exc).splitlines()[0]}); the shipped config kept"), None
    try:
        default_ms, shipped_ms = _time([default, launcher], pointers, stream)
    except _NoScratch as exc:
        return f"same_arch: not timed against the default ({exc}); the shipped config kept", None
    timed = f"timed {shipped_ms:.4g} ms against the default's {default_ms:.4g} ms"
    if shipped_ms * (1 + MARGIN) < default_ms:
        return f"same_arch: {timed} ({default_ms / shipped_ms:.2f}x faster) here at first launch; kept", None
    ratio = (f"{shipped_ms / default_ms:.2f}x slower" if shipped_ms > default_ms else "as fast"
             if shipped_ms == default_ms else
             f"{default_ms / shipped_ms:.3f}x faster, within the {MARGIN * 100:g} % margin")
    return f"same_arch: shipped config {key} {timed} ({ratio}) here at first launch; the default kept", default


class _NoScratch(Exception):
    """The scratch copies could not be allocated."""


def _time(launchers: Sequence[Launcher], pointers: Sequence[int], stream: int) -> list[float]:
    """The median time in ms of each of ``launchers`` (one problem, other configs) launched
    alternately on scratch copies of the written arrays at ``pointers`` (module doc)."""
    first = launchers[0]
    k = first.kernel
    args, scratch = list(pointers), []
    before: list[tuple[Callable[..., None], tuple]] = []  # the memsets and copies before each launch
    events: list[int] = []
    try:
        for i, (a, (_, shape, dt, written)) in enumerate(zip(k.arrays, first.expected)):
            nbytes = dt.itemsize * math.prod(shape)
            if not written or nbytes == 0:
                continue
            try:
                copy = driver.alloc(nbytes)
            except AutotuneError as exc:
                raise _NoScratch(str(exc).splitlines()[0]) from None
            scratch.append(copy)
            driver.copy_async(copy, pointers[i], nbytes, stream)
            args[i] = copy
            if a.reset is not None:
                before.append((driver.fill_async, (fill_ops(a.reset, dt.numpy, nbytes), copy, stream)))
            elif a.role == "inout":
                before.append((driver.copy_async, (copy, pointers[i], nbytes, stream)))
        packed = PackedArguments(kernel_layout(k.args))
        given = iter(args)
        for a in k.args:
            packed.put(a.name, next(given) if isinstance(a, Array) else first.scalars[a.name].value)

        def prelude() -> None:
            for op, operands in before:
                op(*operands)

        def go(which: Launcher) -> None:
            driver.launch(which.function, which.grid, which.block, which.shared, stream, packed.argv, k.name)

        for _ in range(WARMUPS):
            for which in launchers:
                prelude()
                go(which)
        timed: list[tuple[int, int, int]] = []
        for r in range(REPEATS):
            for j in (range(len(launchers)) if r % 2 == 0 else reversed(range(len(launchers)))):
                start, end = driver.create_event(), driver.create_event()
                events += (start, end)
                prelude()  # the resets and restores are queued before the start: not timed
                driver.record_event(start, stream)
                go(launchers[j])
                driver.record_event(end, stream)
                timed.append((j, start, end))
        driver.event_done(events[-1], wait=True)
        times: list[list[float]] = [[] for _ in launchers]
        for j, start, end in timed:
            times[j].append(driver.elapsed_ms(start, end))
        return [statistics.median(t) for t in times]
    finally:
        for e in events:
            driver.destroy_event(e)
        for copy in scratch:  # cuMemFree waits for the work queued on them (after a refused launch too)
            driver.free(copy)
