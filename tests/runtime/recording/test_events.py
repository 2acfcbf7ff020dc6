"""The recording's CUDA event pool (autotune/runtime/recording/events.py) on a fake driver
(tests/fake_gpu_arrays.py): a sampled call between two events, read back, the pairs reused, and
every refusal of the driver leaving the call run and counted, not timed."""

from __future__ import annotations

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.runtime import driver
from autotune.runtime.recording import events
from autotune.runtime.recording.counts import Slot

from fake_gpu_arrays import FakeLibcuda


@pytest.fixture
def fake(monkeypatch):
    lib = FakeLibcuda(KERNELS["smem_vec"])
    monkeypatch.setattr(driver, "libcuda", lambda: lib)
    monkeypatch.setattr(driver, "current_context", lambda: lib.context)
    monkeypatch.setattr(events, "_host_ns", lib.host_ns)
    return lib


def kernel(fake, ms):
    def run():
        fake.clock_ms += ms
        return "done"
    return run


def test_a_timed_call_is_read_back_into_its_slot_and_its_events_reused(fake):
    pool, slot = events.EventPool(), Slot(None, None)
    assert pool.timed(kernel(fake, 0.25), (), 0x5000, slot) == "done"
    assert len(pool.pending) == 1 and slot.sampled == 0
    pool.read(False)
    assert (slot.sampled, slot.samples) == (1, [pytest.approx(0.25)]) and not pool.pending
    pool.timed(kernel(fake, 0.5), (), 0x5000, slot)
    assert len(fake.events) == 2 and pool.created == 1  # the pair read back was used again
    pool.read(True)
    assert slot.sampled == 2 and slot.sampled_ms == pytest.approx(0.75)


def test_a_sample_not_completed_stays_in_flight(fake, monkeypatch):
    pool, slot = events.EventPool(), Slot(None, None)
    pool.timed(kernel(fake, 0.25), (), 0x5000, slot)
    monkeypatch.setattr(fake, "cuEventQuery", lambda event: driver.CUDA_ERROR_NOT_READY)
    pool.read(False)
    assert len(pool.pending) == 1 and slot.sampled == 0


@pytest.mark.parametrize("refused", ["cuEventQuery", "cuEventElapsedTime"])
def test_a_sample_the_driver_cannot_read_is_dropped_and_its_events_freed(fake, monkeypatch, refused):
    pool, slot = events.EventPool(), Slot(None, None)
    pool.timed(kernel(fake, 0.25), (), 0x5000, slot)
    monkeypatch.setattr(fake, refused, lambda *args: 700)  # CUDA_ERROR_ILLEGAL_ADDRESS
    pool.read(False)
    assert not pool.pending and slot.sampled == 0
    pool.destroy()
    assert sorted(fake.destroyed) == sorted(fake.events)


def test_a_refused_end_event_runs_the_call_and_takes_no_sample(fake, monkeypatch):
    pool, slot = events.EventPool(), Slot(None, None)
    recorded = []

    def record(event, stream):  # the start event is recorded, the end one refused
        recorded.append(event)
        return 0 if len(recorded) == 1 else 1
    monkeypatch.setattr(fake, "cuEventRecord", record)
    assert pool.timed(kernel(fake, 0.25), (), 0x5000, slot) == "done"
    assert not pool.pending and fake.clock_ms == 0.25


def test_no_events_in_a_graph_capture_nor_past_the_limit(fake, monkeypatch):
    pool, slot = events.EventPool(), Slot(None, None)
    fake.capturing = True
    assert pool.timed(kernel(fake, 0.25), (), 0x5000, slot) == "done"
    assert not fake.events and not pool.pending
    fake.capturing = False
    monkeypatch.setattr(events, "MAX_IN_FLIGHT", 1)
    pool.timed(kernel(fake, 0.25), (), 0x5000, slot)
    pool.timed(kernel(fake, 0.25), (), 0x5000, slot)
    assert len(pool.pending) == 1 and fake.clock_ms == 0.75


def test_an_event_that_cannot_be_made_leaves_none_behind(fake, monkeypatch):
    pool, slot = events.EventPool(), Slot(None, None)
    made = []
    create = fake.cuEventCreate

    def second_refused(ref, flags):
        if made:
            return 2  # CUDA_ERROR_OUT_OF_MEMORY
        made.append(create(ref, flags))
        return 0
    monkeypatch.setattr(fake, "cuEventCreate", second_refused)
    assert pool.timed(kernel(fake, 0.25), (), 0x5000, slot) == "done"
    assert fake.destroyed == list(fake.events) and pool.created == 0


def test_destroy_skips_a_context_already_gone(fake, monkeypatch):
    pool, slot = events.EventPool(), Slot(None, None)
    pool.timed(kernel(fake, 0.25), (), 0x5000, slot)
    pool.read(True)
    monkeypatch.setattr(fake, "cuCtxPushCurrent_v2", lambda context: 201)  # CUDA_ERROR_INVALID_CONTEXT
    pool.destroy()
    assert fake.destroyed == []
