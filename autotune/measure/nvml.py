"""GPU telemetry through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``): the
device UUID for result provenance, and clocks and throttle reasons to tell whether a
search ran at steady clocks. Optional: without NVML every function answers "unknown"."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["device_uuid", "clock_state", "clock_warning"]


@functools.cache
def _nvml():
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # not installed, no driver, or NVML refuses: telemetry is optional
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
