"""GPU telemetry through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``): the
device UUID for result provenance, clocks and throttle reasons to tell whether a
search ran at steady clocks, the SM clock seen while a config is timed, and the total-energy
counter for energy per launch (:class:`EnergyMeter`). Optional: without NVML every function
answers "unknown". Nothing here sets a clock or a power limit: autotune only reads them."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["device_uuid", "clock_state", "clock_warning", "sm_clock_reader", "EnergyMeter", "energy_meter"]


_why: list[str] = []
"""Why NVML could not be used (filled by :func:`_nvml` when it answers ``None``)."""


@functools.cache
def _nvml():
    try:
        import pynvml
    except ImportError:
        _why.append("nvidia-ml-py is not installed (pip install nvidia-ml-py)")
        return None
    try:
        pynvml.nvmlInit()
        return pynvml
    except Exception as exc:  # no driver, or NVML refuses: telemetry is optional
        _why.append(f"NVML did not start ({exc})")
        return None


def _handle(pci_bus_id: str):
    nv = _nvml()
    if nv is None:
        return None
    try:
        return nv.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode() if isinstance(pci_bus_id, str) else pci_bus_id)
    except nv.NVMLError:
        return None


def device_uuid(pci_bus_id: str) -> str:
    """The GPU's UUID (``GPU-...``), or ``""`` when NVML cannot tell."""
    handle = _handle(pci_bus_id)
    if handle is None:
        return ""
    uuid = _nvml().nvmlDeviceGetUUID(handle)
    return uuid.decode() if isinstance(uuid, bytes) else str(uuid)


def clock_state(pci_bus_id: str) -> dict[str, Any] | None:
    """SM and memory clocks (MHz), temperature (C), power (W) and the active throttle reasons
    (NVML's clocks-event bit mask and the names of its set bits); ``None`` without NVML."""
    nv, handle = _nvml(), _handle(pci_bus_id)
    if handle is None:
        return None
    reasons = nv.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
    names = [n.removeprefix("nvmlClocksThrottleReason") for n in dir(nv)
             if n.startswith("nvmlClocksThrottleReason") and n not in ("nvmlClocksThrottleReasonAll",
                                                                       "nvmlClocksThrottleReasonNone")
             and getattr(nv, n) & reasons]
    return {
        "sm_mhz": nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM),
        "mem_mhz": nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_MEM),
        "temperature_c": nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU),
        "power_w": nv.nvmlDeviceGetPowerUsage(handle) / 1000.0,
        "throttle_mask": int(reasons),
        "throttle": sorted(names),
    }


_BENIGN = {"GpuIdle", "ApplicationsClocksSetting"}


def clock_warning(start: dict[str, Any] | None, end: dict[str, Any] | None) -> str | None:
    """A one-line warning when the memory clock moved, or a throttle reason other than idle
    appeared, between ``start`` and ``end`` (both from :func:`clock_state`); else ``None``.

    The SM clock is not compared: it idles low between launches and boosts under load, so
    its reading at a search's start and end says little; the memory clock bounds a
    bandwidth-bound kernel and should not move.
    """
    if not start or not end:
        return None
    problems = []
    if start["mem_mhz"] != end["mem_mhz"]:
        problems.append(f"memory clock moved {start['mem_mhz']} -> {end['mem_mhz']} MHz")
    throttled = sorted(set(end["throttle"]) - _BENIGN)
    if throttled:
        problems.append(f"throttling at the end: {', '.join(throttled)}")
    return "; ".join(problems) or None


def sm_clock_reader(pci_bus_id: str):
    """A function reading the GPU's SM clock now, MHz (``None`` when NVML cannot tell), or
    ``None`` without NVML: the benchmark calls it while a config's launches run."""
    nv, handle = _nvml(), _handle(pci_bus_id)
    if handle is None:
        return None

    def read() -> int | None:
        try:
            return int(nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM))
        except nv.NVMLError:
            return None
    return read


class EnergyMeter:
    """NVML's total-energy counter of one GPU (``nvmlDeviceGetTotalEnergyConsumption``:
    millijoules since the driver loaded; Volta and newer), read before and after a window of
    launches: the energy per launch is the difference over the launches. The counter is updated
    by the driver every few tens of ms, so the window must be long (the benchmark's
    :data:`autotune.measure.energy.ENERGY_WINDOW_MS`); it counts the whole board, idle power
    included, which is why the launches are queued back to back. Reads only.

    Args:
        nv: the ``pynvml`` module (initialised); handle: the device's NVML handle.
    """

    def __init__(self, nv, handle) -> None:
        self.nv, self.handle = nv, handle

    def millijoules(self) -> int:
        """The counter now, mJ.

        Raises:
            pynvml.NVMLError: NVML refused (the GPU was lost).
        """
        return int(self.nv.nvmlDeviceGetTotalEnergyConsumption(self.handle))


def energy_meter(pci_bus_id: str) -> EnergyMeter | str:
    """The :class:`EnergyMeter` of the GPU at ``pci_bus_id``, or one line saying why energy is
    unavailable (NVML missing, the GPU not found by NVML, or no total-energy counter on it)."""
    nv = _nvml()
    if nv is None:
        return f"energy is unavailable: {_why[-1] if _why else 'NVML is not available'}"
    handle = _handle(pci_bus_id)
    if handle is None:
        return f"energy is unavailable: NVML does not find the GPU at PCI bus id {pci_bus_id}"
    try:
        nv.nvmlDeviceGetTotalEnergyConsumption(handle)
    except nv.NVMLError as exc:
        name = nv.nvmlDeviceGetName(handle)
        name = name.decode() if isinstance(name, bytes) else str(name)
        return (f"energy is unavailable: {name} has no total-energy counter "
                f"(nvmlDeviceGetTotalEnergyConsumption: {exc}; Volta or newer GPUs have one)")
    return EnergyMeter(nv, handle)
