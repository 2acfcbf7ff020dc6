"""What a recording counted (autotune/runtime/recording/counts.py): slots per prepared launch or
shared per problem, a batch per problem since the last one written, its GPU time the median of
its samples times their number, and a forked child's counts starting from the parent's."""

from __future__ import annotations

import pytest

from autotune.kernel.problem import Problem
from autotune.runtime.recording.counts import Counts

SMALL = Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float32")
LARGE = Problem.of("smem_pad", {"rows": 128, "cols": 128}, "float32")


def test_a_batch_sums_the_slots_of_one_problem_and_takes_the_median_sample(device_info):
    counts = Counts()
    a, b, c = counts.slot(SMALL, device_info), counts.slot(SMALL, device_info), counts.slot(LARGE, device_info)
    a.calls[0], b.calls[0], c.calls[0] = 10, 5, 1
    for ms in (1.0, 2.0, 900.0):  # one stalled sample does not set the time
        a.add(ms)
    (small, large), marks = sorted(counts.batch()[0], key=lambda r: r.dims), counts.batch()[1]
    assert (small.calls, small.sampled, small.sampled_ms) == (15, 3, pytest.approx(2.0 * 3))
    assert (large.calls, large.sampled, large.sampled_ms) == (1, 0, 0.0)
    assert small.kernel == "smem_pad" and small.kernel_ref == "smem_pad" and small.dtype == "float32"
    counts.written(marks)
    assert counts.batch()[0] == [] and a.samples == []  # written: nothing new, the samples gone
    a.calls[0] += 2
    a.add(4.0)
    (again,), _ = counts.batch()
    assert (again.calls, again.sampled, again.sampled_ms) == (2, 1, pytest.approx(4.0))


def test_a_shared_slot_is_one_per_problem_and_device(device_info):
    counts = Counts()
    slot = counts.shared_slot(SMALL, device_info)
    assert counts.shared_slot(SMALL, device_info) is slot and counts.shared_slot(LARGE, device_info) is not slot
    assert counts.slot(SMALL, device_info) is not slot and len(counts.slots) == 3


def test_a_forked_child_takes_what_was_counted_before_the_fork_as_written(device_info):
    counts = Counts()
    slot = counts.slot(SMALL, device_info)
    slot.calls[0] = 7
    slot.add(1.0)
    lock = slot.lock
    counts.forked()
    assert counts.batch()[0] == [] and slot.samples == [] and slot.lock is not lock
    slot.calls[0] += 1
    (count,), _ = counts.batch()
    assert (count.calls, count.sampled) == (1, 0)
