"""Which CUDA errors leave a context unusable ("sticky"): an illegal address, a ``trap``, a
misaligned access... After one, every later launch in that context fails too, so the measuring
process (:mod:`autotune.measure.isolation`) fails the trial as ``crash`` and is replaced.

The driver's message is ``"<call> failed: <the driver's text>"`` (the backends' contract,
:mod:`autotune.measure.backends.base`); :func:`sticky_reason` names the error from that text.
"""

from __future__ import annotations

__all__ = ["STICKY", "driver_errors", "sticky_reason"]

STICKY = (("illegal_address", "illegal memory access"), ("misaligned_address", "misaligned address"),
          ("illegal_instruction", "illegal instruction"), ("trap", "trap"), ("assert", "device-side assert"),
          ("hardware_stack_error", "hardware stack error"), ("invalid_pc", "invalid program counter"),
          ("invalid_address_space", "not supported on global/shared address space"),
          ("launch_timeout", "launch timed out"), ("launch_failed", "unspecified launch failure"),
          ("context_unusable", "context is destroyed"), ("context_unusable", "context has been destroyed"))
"""(name, text in the driver's message) of the CUDA errors that leave a context unusable."""


def sticky_reason(message: str) -> str | None:
    """``name: driver text`` if ``message`` tells of a sticky CUDA error, else ``None``.

    ``"cuCtxSynchronize failed: an illegal memory access was encountered"`` gives
    ``"illegal_address: an illegal memory access was encountered"``.
    """
    lowered = message.lower()
    for name, text in STICKY:
        if text in lowered:
            return f"{name}: {message.splitlines()[0].rpartition('failed: ')[2].strip()}"
    return None


def driver_errors() -> tuple[type[BaseException], ...]:
    """The driver errors of the backends this process made (:mod:`autotune.measure.backends`)."""
    from autotune.measure import backends

    return tuple({b.Error for b in backends.created()})
