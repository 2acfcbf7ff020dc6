"""What a recording counted: one slot per prepared launch (or per problem, for the launches
shared between threads), and the batch made of them: the calls and samples since the last batch
written, per problem (``CallCount``). A batch's GPU time of a problem is the median of its
samples times their number, so one stalled sample does not set the problem's time."""

from __future__ import annotations

import statistics
import threading

__all__ = ["Slot", "Counts"]


class Slot:
    """What one prepared launch counted: ``calls[0]`` launches (bumped on the launch path),
    ``sampled`` of them timed taking ``sampled_ms`` (filled by the flusher), and the samples
    not yet written in a batch."""

    __slots__ = ("problem", "device", "calls", "sampled", "sampled_ms", "samples", "lock")

    def __init__(self, problem, device) -> None:
        self.problem, self.device = problem, device
        self.calls = [0]
        self.sampled, self.sampled_ms = 0, 0.0
        self.samples: list[float] = []  # the samples (ms) not yet written in a batch
        self.lock = threading.Lock()

    def add(self, ms: float) -> None:
        """One sample read back: ``ms`` on the GPU."""
        self.sampled += 1
        self.sampled_ms += ms
        self.samples.append(ms)


class Counts:
    """Every slot of one recording, and the counts of each already written in a batch."""

    def __init__(self) -> None:
        self.slots: list[Slot] = []
        self._by_problem: dict[tuple, Slot] = {}  # slots of Launchers and transposes (shared, locked)
        self._flushed: dict[int, tuple[int, int, float, int]] = {}  # id(slot) -> counts written
        self._lock = threading.RLock()

    def slot(self, problem, device) -> Slot:
        """A new slot, of one prepared launch (counted by one thread: no lock)."""
        slot = Slot(problem, device)
        with self._lock:
            self.slots.append(slot)
        return slot

    def shared_slot(self, problem, device) -> Slot:
        """The one slot of ``problem`` on ``device`` for launches shared between threads
        (`Launcher`, transposes): counted under its lock."""
        key = (problem, device)
        slot = self._by_problem.get(key)
        if slot is None:
            with self._lock:
                slot = self._by_problem.get(key)
                if slot is None:
                    slot = self._by_problem[key] = self.slot(problem, device)
        return slot

    def batch(self) -> tuple[list, dict]:
        """What was counted since the last batch, per problem (``CallCount``), and each
        slot's counts now (taken as written once the batch is: :meth:`written`)."""
        from autotune.kernel.problem import ProblemKey
        from autotune.store.workload_records import CallCount, device_model

        grouped: dict[tuple, list] = {}
        marks = {}
        for slot in list(self.slots):
            calls, sampled, ms, taken = slot.calls[0], slot.sampled, slot.sampled_ms, len(slot.samples)
            done = self._flushed.get(id(slot), (0, 0, 0.0, 0))
            marks[id(slot)] = (calls, sampled, ms, taken)
            if calls == done[0] and sampled == done[1]:
                continue
            key = (device_model(slot.device), ProblemKey.of(slot.problem))
            total = grouped.setdefault(key, [0, []])
            total[0] += calls - done[0]
            total[1] += slot.samples[:taken]
        return [CallCount(*key, calls=c, sampled=len(s), sampled_ms=statistics.median(s) * len(s) if s else 0.0)
                for key, (c, s) in grouped.items()], marks

    def written(self, marks: dict) -> None:
        """Take a written batch's counts as done: its samples leave their slots."""
        self._flushed.update(marks)
        for slot in list(self.slots):
            mark = marks.get(id(slot))
            if mark is not None:
                del slot.samples[:mark[3]]

    def forked(self) -> None:
        """In a forked child: what was counted before the fork taken as written (it is the
        parent's), the locks made anew (a thread of the parent may have held one)."""
        self._lock = threading.RLock()
        for slot in self.slots:
            slot.lock = threading.Lock()
            slot.samples.clear()
        self._flushed = {id(slot): (slot.calls[0], slot.sampled, slot.sampled_ms, 0) for slot in self.slots}
