"""NVML telemetry without a GPU (autotune/measure/nvml.py): a fake ``pynvml`` stands in for
nvidia-ml-py. The SM clock reader, the energy meter, and the one line saying why energy is
unavailable; the benchmark's energy per launch on a fake clock (autotune/measure/benchmark.py)."""

from __future__ import annotations

import sys
import types

import pytest

from autotune.measure import nvml

from fakes import FakeClock


class NVMLError(Exception):
    pass


def fake_pynvml(*, energy: bool = True, found: bool = True, sm_mhz: int = 1980) -> types.ModuleType:
    """A ``pynvml`` of one GPU: an energy counter (mJ) that ``state["mj"]`` holds, or none."""
    nv = types.ModuleType("pynvml")
    nv.NVMLError = NVMLError
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM = 0, 1
    nv.state = {"mj": 1_000_000, "reads": 0}
    nv.nvmlInit = lambda: None

    def handle(bus):
        if not found:
            raise NVMLError("Not Found")
        return "gpu0"

    def total_energy(h):
        if not energy:
            raise NVMLError("Not Supported")
        nv.state["reads"] += 1
        return nv.state["mj"]

    nv.nvmlDeviceGetHandleByPciBusId = handle
    nv.nvmlDeviceGetTotalEnergyConsumption = total_energy
    nv.nvmlDeviceGetName = lambda h: b"Tesla T4-like"
    nv.nvmlDeviceGetClockInfo = lambda h, which: sm_mhz if which == 0 else 2619
    return nv


@pytest.fixture
def with_nvml(monkeypatch):
    def install(**kwargs):
        nv = fake_pynvml(**kwargs)
        monkeypatch.setitem(sys.modules, "pynvml", nv)
        nvml._nvml.cache_clear()
        return nv
    yield install
    nvml._nvml.cache_clear()


def test_the_energy_meter_reads_the_counter(with_nvml):
    with_nvml()
    meter = nvml.energy_meter("0000:01:00.0")
    assert isinstance(meter, nvml.EnergyMeter) and meter.millijoules() == 1_000_000
    assert nvml.sm_clock_reader("0000:01:00.0")() == 1980


def test_a_gpu_without_the_counter_gets_one_line_saying_why(with_nvml):
    with_nvml(energy=False)
    why = nvml.energy_meter("0000:01:00.0")
    assert why == ("energy is unavailable: Tesla T4-like has no total-energy counter "
                   "(nvmlDeviceGetTotalEnergyConsumption: Not Supported; Volta or newer GPUs have one)")
    assert "\n" not in why


def test_nvml_not_finding_the_gpu_is_said(with_nvml):
    with_nvml(found=False)
    assert nvml.energy_meter("0000:07:00.0") == ("energy is unavailable: NVML does not find the GPU at PCI bus id "
                                                 "0000:07:00.0")
    assert nvml.sm_clock_reader("0000:07:00.0") is None


def test_without_nvidia_ml_py_energy_is_unavailable_and_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    nvml._nvml.cache_clear()
    try:
        assert nvml.energy_meter("0000:01:00.0") == ("energy is unavailable: nvidia-ml-py is not installed "
                                                     "(pip install nvidia-ml-py)")
        assert nvml.sm_clock_reader("0000:01:00.0") is None
    finally:
        nvml._nvml.cache_clear()


class MeteredClock(FakeClock):
    """A fake GPU whose energy counter rises ``mj_per_launch`` per launch."""

    def __init__(self, nv, mj_per_launch: float) -> None:
        super().__init__()
        self.nv, self.mj_per_launch, self.synced = nv, mj_per_launch, 0

    def launch(self, ms):
        run = super().launch(ms)

        def metered() -> None:
            run()
            self.nv.state["mj"] += self.mj_per_launch
        return metered

    def synchronize(self) -> None:
        self.synced += 1


def test_the_benchmark_meters_joules_per_launch_over_a_window_of_launches(with_nvml):
    from autotune.measure.benchmark import ENERGY_WINDOW_MS, Benchmark

    nv = with_nvml()
    bench = object.__new__(Benchmark)  # only what energy() uses: the driver and the meter
    clock = MeteredClock(nv, mj_per_launch=3)
    bench.drv, bench.meter = clock, nvml.energy_meter("0000:01:00.0")
    joules = bench.energy(clock.launch(0.5), median_ms=0.5)
    assert clock.launched == ENERGY_WINDOW_MS / 0.5 and clock.synced == 1
    assert joules == pytest.approx(0.003)
    assert nv.state["reads"] == 3  # once to find the counter, once before and once after the window


def test_no_energy_when_the_counter_does_not_move_or_there_is_no_meter(with_nvml):
    from autotune.measure.benchmark import Benchmark

    nv = with_nvml()
    bench = object.__new__(Benchmark)
    clock = MeteredClock(nv, mj_per_launch=0)
    bench.drv, bench.meter = clock, nvml.energy_meter("0000:01:00.0")
    assert bench.energy(clock.launch(0.5), median_ms=0.5) is None
    bench.meter = None
    assert bench.energy(clock.launch(0.5), median_ms=0.5) is None


def test_nothing_here_sets_a_clock_or_a_power_limit():
    import inspect

    source = inspect.getsource(nvml)
    assert "nvmlDeviceSet" not in source and "ResetGpuLockedClocks" not in source
