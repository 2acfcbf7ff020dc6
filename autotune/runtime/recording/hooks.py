"""The launch methods a recording swaps: nothing is checked per launch while none is active.

A recording that starts replaces the ``go`` of every live `PackedLaunch` by a counting one (and
wraps the ones prepared while it is active: :func:`track`), and the launch methods registered
with :func:`register_method` (`Launcher.__call__`, `PreparedTranspose.__call__`) by counting
ones; stopping puts the originals back. The sampled calls (the 2nd, 4th, 8th, ... call, every
power of two, and one call in ``sample_every``: the 2nd, then every N-th after it; never the
1st, which may load the module) are timed between two CUDA events (`events.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autotune.runtime.recording.counts import Slot
from autotune.runtime.recording.state import STATE
from autotune.runtime.streams import stream_handle

__all__ = ["track", "register_method", "swap_in", "swap_out", "count", "launcher_call", "transpose_call"]


def swap_in(recording) -> None:
    """Count every launch from now on into ``recording`` (under ``STATE.lock``)."""
    for p in list(STATE.live):
        p.go = wrap_go(p, recording)
    for cls, attribute, factory in STATE.methods:
        setattr(cls, attribute, factory(cls.__dict__[attribute], recording))


def swap_out() -> None:
    """Put every launch's uncounted path back (under ``STATE.lock``)."""
    for p in list(STATE.live):
        p.go = p.raw_go
    for cls, attribute, _ in STATE.methods:
        original = cls.__dict__[attribute]
        setattr(cls, attribute, getattr(original, "__wrapped__", original))


def track(p) -> None:
    """Note a new `PackedLaunch` ``p`` (its ``raw_go`` set): counted from now on while a
    recording is active, and whenever one starts later (the cold path calls this once)."""
    with STATE.lock:
        STATE.live.add(p)
        if STATE.active is not None:
            p.go = wrap_go(p, STATE.active)


def register_method(cls: type, attribute: str, factory: Callable[[Callable, Any], Callable]) -> None:
    """Have ``cls.attribute`` (a launch method) replaced by ``factory(original, recording)``
    while a recording is active (the wrapper gets ``__wrapped__`` set to the original)."""
    def made(original, recording):
        wrapper = factory(original, recording)
        wrapper.__wrapped__ = original
        return wrapper

    with STATE.lock:
        STATE.methods.append((cls, attribute, made))
        if STATE.active is not None:
            setattr(cls, attribute, made(cls.__dict__[attribute], STATE.active))


def wrap_go(p, recording) -> Callable:
    """A counting ``go(pointers, stream)`` for the `PackedLaunch` ``p`` (one per thread, so
    its count needs no lock): its own slot, the sampled call timed."""
    go = p.raw_go
    if getattr(p.launcher, "device", None) is None:  # made without the device's identity: not counted
        return go
    slot = recording.counts.slot(p.launcher.problem, p.launcher.device)
    calls, mask, sample = slot.calls, recording.sample_every - 1, recording.events.timed
    second = 2 & mask  # calls 2, 2 + N, 2 + 2N, ... (N >= 2) are timed, and every power of two
    if mask == 0:
        def every(pointers, stream: int) -> None:
            calls[0] += 1
            if calls[0] == 1:
                return go(pointers, stream)
            sample(go, (pointers, stream), stream, slot)
        return every

    def recorded(pointers, stream: int) -> None:
        n = calls[0] + 1
        calls[0] = n
        if n & mask != second and (n & (n - 1) or n == 1):
            return go(pointers, stream)
        sample(go, (pointers, stream), stream, slot)
    return recorded


def count(recording, launch: Callable, args: tuple, stream: Callable[[], int], slot: Slot) -> Any:
    """Count one call of ``launch(*args)`` in ``slot`` (under its lock) and run it, timed if it
    is a sampled one (``stream()`` gives its stream then)."""
    with slot.lock:
        n = slot.calls[0] = slot.calls[0] + 1
    if n < 2 or ((n - 2) % recording.sample_every and n & (n - 1)):
        return launch(*args)
    return recording.events.timed(launch, args, stream(), slot)


def launcher_call(original: Callable, recording) -> Callable:
    """The counting ``Launcher.__call__`` (module ``autotune.runtime.compiled``)."""
    def __call__(self, *arrays, stream=None):
        if self.device is None or not arrays:
            return original(self, *arrays, stream=stream)
        slot = recording.counts.shared_slot(self.problem, self.device)
        return count(recording, lambda: original(self, *arrays, stream=stream), (),
                     lambda: stream_handle(stream, arrays[0]), slot)
    return __call__


def transpose_call(original: Callable, recording) -> Callable:
    """The counting ``PreparedTranspose.__call__`` (module ``autotune.runtime.transpose.prepared``)."""
    def __call__(self, out, src, ld, batch, batch_stride, stream):
        launcher = self.launcher
        if launcher.device is None:
            return original(self, out, src, ld, batch, batch_stride, stream)
        slot = recording.counts.shared_slot(launcher.problem, launcher.device)
        return count(recording, original, (self, out, src, ld, batch, batch_stride, stream), lambda: stream, slot)
    return __call__
