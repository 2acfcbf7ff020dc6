"""The recording's CUDA events: a sampled call runs between two events recorded on its stream,
and the flusher reads them back, never the launch path (the driver calls: `runtime/driver.py`).

At most :data:`MAX_IN_FLIGHT` samples are in flight at once: the flusher reads the completed
ones back every ``READ_S`` seconds and reuses their events, and a sampled call that finds the
limit reached is counted, not timed. Stopping destroys the recording's events. (Events left
alive by the thousands slow every later launch of the process, recording or not: evidence in
``benchmarks/README.md``, "Evidence behind the code's constants".)

A sample's time is the GPU time between the two events: the kernel itself, plus the events' own
cost (about a microsecond). A sample whose host side took longer than :data:`MAX_HOST_US` is
dropped (the GPU may have idled between its events while another thread held the GIL). Launches
captured in a CUDA graph are counted but not timed (events in a capture time nothing).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

from autotune.errors import AutotuneError
from autotune.runtime import driver
from autotune.runtime.recording.counts import Slot

__all__ = ["EventPool", "MAX_IN_FLIGHT", "MAX_HOST_US"]

MAX_HOST_US = 100.0
"""A sample whose host side (its two ``cuEventRecord`` calls and the launch between them) took
longer than this (µs) is dropped, the call only counted: the GPU may have idled between the
events meanwhile. Another Python thread holding the GIL (the flusher writing a batch, the
program's own threads) can stop the launching thread for the interpreter's switch interval
(5 ms), which would read a microsecond kernel's sample as milliseconds."""
MAX_IN_FLIGHT = 256
"""Samples (event pairs) in flight at most; a sampled call beyond them is counted, not timed."""

_host_ns = time.perf_counter_ns


class EventPool:
    """One recording's event pairs, per CUDA context: the free ones, and the samples in flight
    (``pending``: ``(slot, start, end, context)``)."""

    def __init__(self) -> None:
        self.pending: collections.deque = collections.deque()
        self._free: dict[int, list[tuple[int, int]]] = {}  # context -> free event pairs
        self.created = 0  # event pairs made (at most MAX_IN_FLIGHT + 1 alive)
        self._lock = threading.Lock()

    def timed(self, launch: Callable, args: tuple, stream: int, slot: Slot) -> Any:
        """Run ``launch(*args)`` between two events on ``stream``; the flusher reads them back
        (:meth:`read`). Where no event can be recorded (no context, a graph capture,
        ``MAX_IN_FLIGHT`` samples in flight), the call is only run."""
        if len(self.pending) >= MAX_IN_FLIGHT:
            return launch(*args)
        pair = self._take(stream)
        if pair is None:
            return launch(*args)
        context, start, end = pair
        began = _host_ns()
        try:
            driver.record_event(start, stream)
        except AutotuneError:
            self._give(context, start, end)
            return launch(*args)
        try:
            result = launch(*args)
        except BaseException:
            self._give(context, start, end)
            raise
        try:
            driver.record_event(end, stream)
        except AutotuneError:
            self._give(context, start, end)  # not recorded: not a sample
            return result
        if _host_ns() - began > MAX_HOST_US * 1e3:
            self._give(context, start, end)  # the host stalled inside: not a sample
        else:
            self.pending.append((slot, start, end, context))
        return result

    def _take(self, stream: int) -> tuple[int, int, int] | None:
        """A free event pair of the current context, made if none is free: ``(context, start,
        end)``; ``None`` where there is no context, ``stream`` is capturing, or the driver
        refuses."""
        try:
            if driver.stream_capturing(stream):
                return None
            context = driver.current_context()
        except AutotuneError:
            return None
        with self._lock:
            free = self._free.setdefault(context, [])
            if free:
                return (context, *free.pop())
        handles = []
        try:
            for _ in range(2):
                handles.append(driver.create_event())
        except AutotuneError:
            for made in handles:
                driver.destroy_event(made)
            return None
        with self._lock:
            self.created += 1
        return context, handles[0], handles[1]

    def _give(self, context: int, start: int, end: int) -> None:
        with self._lock:
            self._free.setdefault(context, []).append((start, end))

    def read(self, wait: bool) -> None:
        """Read the pending samples whose end event has completed (``wait``: every one,
        waiting on each), adding their time to their slots; their events are free again."""
        keep = []
        while self.pending:
            slot, start, end, context = self.pending.popleft()
            pushed = driver.push_context(context)
            try:
                try:
                    done = driver.event_done(end, wait)
                except AutotuneError:
                    done = None  # an error: the sample is dropped
                if done is False:
                    keep.append((slot, start, end, context))
                    continue
                if done:
                    try:
                        slot.add(driver.elapsed_ms(start, end))
                    except AutotuneError:
                        pass
            finally:
                if pushed:
                    driver.pop_context()
            self._give(context, start, end)
        self.pending.extend(keep)

    def destroy(self) -> None:
        """Destroy the free event pairs (every pair, once the pending samples are read back),
        each in its context; a context already gone (at exit) is skipped."""
        with self._lock:
            pools, self._free = self._free, {}
        if not any(pools.values()):
            return
        try:
            driver.libcuda()
        except AutotuneError:
            return
        for context, pairs in pools.items():
            if not pairs or not driver.push_context(context):
                continue
            try:
                for pair in pairs:
                    for event in pair:
                        driver.destroy_event(event)
            finally:
                driver.pop_context()

    def forked(self) -> None:
        """In a forked child: the samples in flight and the event pairs (of the parent's CUDA
        context) dropped, the lock made anew."""
        self._lock = threading.Lock()
        self.pending.clear()
        self._free, self.created = {}, 0
