"""The toolchain a binary is built with: nvcc's release and the compile flags for an arch.

A `Toolchain` is resolved once at an edge (a search, a lookup's cold path, a bench run)
with `Toolchain.of`, which runs ``nvcc --version`` once, and handed to whatever needs
it (`TuningKey.of`), which never runs nvcc itself.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Toolchain"]


@dataclass(frozen=True)
class Toolchain:
    """nvcc's release (``13.0.88``) and the flags besides the macros (``-O3 -arch=sm_90``),
    both part of every stored result's key."""

    nvcc_version: str
    compile_flags: str

    @classmethod
    def of(cls, arch: str) -> Toolchain:
        """The toolchain on PATH building for ``arch`` (``sm_90``).

        Raises:
            GPUUnavailableError: nvcc is not on PATH.
        """
        from autotune.measure.compile import compile_flags
        from autotune.measure.device import nvcc_version

        return cls(nvcc_version(), compile_flags(arch))
