"""The key of a tuned result: everything that changes the binary or its timing.

A stored best config is only reused for an equal key: same device model (name, compute
capability, SM count, memory, driver and CUDA versions), same kernel source (hash after
includes), same toolchain (nvcc version, compile flags), same shape and dtype.

The physical GPU (UUID, ordinal, PCI bus id) is not part of the key: GPUs of one model
share one study, so a search over several of them fills one study, and each search row
records which GPU measured its trials.
"""

from __future__ import annotations

from dataclasses import dataclass

from autotune.measure.device import DeviceInfo

__all__ = ["TuningKey", "tuning_key"]


@dataclass(frozen=True)
class TuningKey:
    """Identity of one tuning problem.

    Attributes:
        device: the GPU; its model is the identity (``uuid``, ``ordinal`` and
            ``pci_bus_id`` are not: they say which GPU of that model measured).
        kernel: catalog name, e.g. ``smem_pad``.
        source_hash: SHA-256 of the kernel source after includes (hex).
        rows, cols: input matrix shape (row-major); the output is ``cols x rows``. For a
            matrix product ``C[M,N] = A[M,K] @ B[K,N]``: ``M`` and ``N``.
        dtype: element type name, e.g. ``float32``.
        nvcc_version: e.g. ``13.0.88``.
        compile_flags: the flags besides the macros, space separated, e.g. ``-O3 -arch=sm_90``.
        depth: ``K`` of a matrix product; 0 for a transpose or copy.
    """

    device: DeviceInfo
    kernel: str
    source_hash: str
    rows: int
    cols: int
    dtype: str
    nvcc_version: str
    compile_flags: str
    depth: int = 0

    @property
    def shape(self) -> tuple[int, ...]:
        """``(rows, cols)``, or ``(M, N, K)`` of a matrix product."""
        return (self.rows, self.cols, self.depth) if self.depth else (self.rows, self.cols)

    @property
    def study_name(self) -> str:
        """Name of the Optuna study of this key (one study per key)."""
        d = self.device
        return (
            f"{self.kernel}@{self.source_hash[:12]}|{d.name}|sm{d.compute_capability}|"
            f"{d.sm_count}SM|drv{d.driver_version}|cuda{d.cuda_version}|nvcc{self.nvcc_version}|"
            f"{self.compile_flags}|{self.rows}x{self.cols}{f'x{self.depth}' if self.depth else ''}|{self.dtype}"
        )


def tuning_key(kernel: str, device: DeviceInfo, rows: int, cols: int, dtype: str, depth: int = 0) -> TuningKey:
    """The key of ``kernel`` on ``device`` for a ``rows x cols`` ``dtype`` input (``M, N``
    and ``depth = K`` of a matrix product), with the current kernel source hash, nvcc
    version and compile flags.

    Raises:
        InvalidInputError: unknown kernel or dtype.
        GPUUnavailableError: nvcc is not on PATH.
    """
    from autotune.measure.compile import compile_flags
    from autotune.measure.device import nvcc_version
    from autotune.kernel.dtypes import get_dtype
    from autotune.kernel.catalog import get_kernel, source_hash

    k = get_kernel(kernel)
    return TuningKey(device, k.name, source_hash(k), rows, cols, get_dtype(dtype).name,
                     nvcc_version(), compile_flags(device.arch), depth)
