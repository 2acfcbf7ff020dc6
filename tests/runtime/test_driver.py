"""The CUDA driver calls of autotune/runtime/driver.py on a fake libcuda (tests/fake_gpu_arrays.py):
each refusal is one AutotuneError naming the call and the CUDA error number."""

from __future__ import annotations

import pytest

from autotune.errors import AutotuneError
from autotune.kernel.catalog import KERNELS
from autotune.runtime import driver

from fake_gpu_arrays import FakeLibcuda


@pytest.fixture
def fake(monkeypatch):
    lib = FakeLibcuda(KERNELS["smem_vec"])
    monkeypatch.setattr(driver, "libcuda", lambda: lib)
    return lib


def test_events_time_the_gpu_clock_between_them(fake):
    start, end = driver.create_event(), driver.create_event()
    assert start != end and not driver.event_done(start)
    driver.record_event(start, 0x5000)
    fake.clock_ms += 1.5
    driver.record_event(end, 0x5000)
    assert driver.event_done(end) and driver.event_done(end, wait=True)
    assert driver.elapsed_ms(start, end) == pytest.approx(1.5)
    assert not driver.stream_capturing(0x5000)
    fake.capturing = True
    assert driver.stream_capturing(0x5000)
    driver.destroy_event(start)
    assert fake.destroyed == [start]
    assert driver.push_context(0xC0)
    driver.pop_context()


@pytest.mark.parametrize("call, run, name", [
    ("cuEventCreate", lambda: driver.create_event(), "cuEventCreate"),
    ("cuEventRecord", lambda: driver.record_event(1, 0), "cuEventRecord"),
    ("cuEventQuery", lambda: driver.event_done(1), "cuEventQuery"),
    ("cuEventSynchronize", lambda: driver.event_done(1, wait=True), "cuEventSynchronize"),
    ("cuEventElapsedTime", lambda: driver.elapsed_ms(1, 2), "cuEventElapsedTime"),
    ("cuStreamIsCapturing", lambda: driver.stream_capturing(0), "cuStreamIsCapturing"),
])
def test_a_refused_event_call_names_the_call_and_the_error(fake, monkeypatch, call, run, name):
    monkeypatch.setattr(fake, call, lambda *args: 700)
    with pytest.raises(AutotuneError, match=f"^{name} failed with CUDA error 700$"):
        run()


def test_a_context_the_driver_refuses_is_not_pushed(fake, monkeypatch):
    monkeypatch.setattr(fake, "cuCtxPushCurrent_v2", lambda context: 201)
    assert driver.push_context(0xC0) is False


def test_device_memory_is_allocated_and_freed_and_a_refusal_names_the_bytes(fake, monkeypatch):
    """The same_arch guard's scratch copies (autotune/runtime/guard.py)."""
    pointer = driver.alloc(1024)
    driver.free(pointer)
    assert [(c["call"], c["pointer"]) for c in fake.calls] == [("alloc", pointer), ("free", pointer)]
    assert fake.calls[0]["count"] == 1024 and pointer != 0
    monkeypatch.setattr(fake, "cuMemAlloc_v2", lambda ref, nbytes: 2)
    with pytest.raises(AutotuneError, match="^cuMemAlloc of 4096 bytes failed with CUDA error 2$"):
        driver.alloc(4096)
