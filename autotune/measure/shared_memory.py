"""Shared memory per block: each architecture's limit, and the opt-in above 48 KiB.

Source: NVIDIA's CUDA C++ Programming Guide, "Compute Capabilities", the Shared Memory section
of each architecture (CUDA 13.1). Static shared memory (``__shared__`` arrays) is limited to
48 KiB per block on every architecture; a block may address more only through *dynamic* shared
memory, after an explicit opt-in: ``cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)``
(the backend's :meth:`~autotune.measure.backends.base.Function.set_max_dynamic_shared`).
Without it a launch asking for more than ``48 KiB - static`` dynamic bytes fails. The limits
per block (static plus dynamic) with the opt-in:

======================  ==========  =================================================
compute capability      per block   per SM (the carveout's largest setting)
======================  ==========  =================================================
7.0 (V100)              96 KiB      96 KiB
7.5 (Turing)            64 KiB      64 KiB
8.0, 8.7 (A100, Orin)   163 KiB     164 KiB
8.6, 8.9 (GA10x, Ada)   99 KiB      100 KiB
9.0 (H100, H200)        227 KiB     228 KiB
10.0 (B200)             227 KiB     228 KiB
12.0                    99 KiB      100 KiB
======================  ==========  =================================================

From 8.0 on, CUDA reserves 1 KiB of shared memory per block for system use
(:data:`RESERVED_PER_BLOCK`): that is why a block gets 1 KiB less than an SM has, and it
counts once per resident block when blocks share an SM (occupancy). The device's own figure
(``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``) is used where a GPU is present
(:attr:`autotune.measure.device.DeviceInfo.shared_limit`); this table serves ``autotune
check``, which builds for an ``--arch`` without a GPU. An architecture not in the table gets
the portable 48 KiB.
"""

from __future__ import annotations

from autotune.errors import TrialFailed

__all__ = ["STATIC_LIMIT", "RESERVED_PER_BLOCK", "OPT_IN_LIMITS", "block_limit", "needs_opt_in", "opt_in"]

KIB = 1024
STATIC_LIMIT = 48 * KIB
"""Bytes of shared memory a block may use without the opt-in (and of static shared memory at all)."""
RESERVED_PER_BLOCK = 1 * KIB
"""Bytes of shared memory CUDA reserves per resident block for system use (compute capability 8.0 on)."""
OPT_IN_LIMITS = {
    "sm_70": 96 * KIB, "sm_75": 64 * KIB, "sm_80": 163 * KIB, "sm_86": 99 * KIB, "sm_87": 163 * KIB,
    "sm_89": 99 * KIB, "sm_90": 227 * KIB, "sm_100": 227 * KIB, "sm_120": 99 * KIB,
}
"""Bytes of shared memory (static plus dynamic) one block may address after the opt-in, per nvcc target."""


def block_limit(arch: str) -> int:
    """Bytes of shared memory one block may use on ``arch`` (``sm_90``, ``sm_90a``,
    ``compute_80``), the opt-in included; 48 KiB for an architecture not in :data:`OPT_IN_LIMITS`."""
    number = arch.split("_", 1)[-1].rstrip("af")
    return OPT_IN_LIMITS.get(f"sm_{number}", STATIC_LIMIT)


def needs_opt_in(static: int, dynamic: int) -> bool:
    """Whether a launch with ``static`` + ``dynamic`` bytes per block needs the opt-in."""
    return dynamic > 0 and static + dynamic > STATIC_LIMIT


def opt_in(function, dynamic: int) -> None:
    """Let ``function`` (the backend's :class:`~autotune.measure.backends.base.Function`) launch
    with ``dynamic`` bytes of dynamic shared memory: raise
    its ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` to ``dynamic`` where it is lower (never lowers it, so
    launches of other sizes of the same function keep working).

    Raises:
        TrialFailed: ``resources``, the driver refused the size (over the device's limit).
    """
    from autotune.measure.backends.base import CudaError

    try:
        if function.max_dynamic_shared() < dynamic:
            function.set_max_dynamic_shared(dynamic)
    except CudaError as exc:
        raise TrialFailed("resources", f"{dynamic} B of dynamic shared memory per block refused by the driver "
                                       f"({str(exc).splitlines()[0][:120]})") from None
