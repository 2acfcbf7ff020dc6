"""The key of a tuned result: everything that changes the binary or its timing.

A stored best config is only reused for an equal key: same device model (name, compute
capability, SM count, memory, driver and CUDA versions), same kernel (name, hash of its
source after includes, hash of its launch-relevant description), same toolchain (nvcc
version, compile flags), same named dims and dtype.

The physical GPU (UUID, ordinal, PCI bus id) is not part of the key: GPUs of one model
share one study, so a search over several of them fills one study, and each search row
records which GPU measured its trials.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autotune.kernel.dims import Dims, dims_key, format_shape, make_dims
from autotune.measure.device import DeviceInfo

__all__ = ["TuningKey", "tuning_key"]


@dataclass(frozen=True)
class TuningKey:
    """Identity of one tuning problem.

    Attributes:
        device: the GPU; its model is the identity (``uuid``, ``ordinal`` and
            ``pci_bus_id`` are not: they say which GPU of that model measured).
        kernel: the kernel's name, e.g. ``smem_pad``.
        source_hash: SHA-256 of the kernel source after includes (hex).
        spec_hash: SHA-256 of the kernel's launch-relevant description (hex; see
            :attr:`autotune.kernel.model.Kernel.spec_hash`).
        dims: the kernel's named dimensions in its declared order, e.g.
            ``(("rows", 8192), ("cols", 8192))``.
        dtype: element type name, e.g. ``float32``.
        nvcc_version: e.g. ``13.0.88``.
        compile_flags: the flags besides the macros, space separated, e.g. ``-O3 -arch=sm_90``.
    """

    device: DeviceInfo
    kernel: str
    source_hash: str
    spec_hash: str
    dims: Dims
    dtype: str
    nvcc_version: str
    compile_flags: str

    @property
    def shape(self) -> tuple[int, ...]:
        """The dims' values, in the kernel's order."""
        return tuple(v for _, v in self.dims)

    @property
    def dims_key(self) -> str:
        """``rows=8192,cols=8192``: the stored form of the dims."""
        return dims_key(self.dims)

    def dim(self, name: str) -> int:
        """The value of dimension ``name``.

        Raises:
            KeyError: the kernel has no such dimension.
        """
        return dict(self.dims)[name]

    @property
    def study_name(self) -> str:
        """Name of the Optuna study of this key (one study per key)."""
        d = self.device
        return (
            f"{self.kernel}@{self.source_hash[:12]}+{self.spec_hash[:8]}|{d.name}|sm{d.compute_capability}|"
            f"{d.sm_count}SM|drv{d.driver_version}|cuda{d.cuda_version}|nvcc{self.nvcc_version}|"
            f"{self.compile_flags}|{format_shape(self.dims)}|{self.dtype}"
        )


def tuning_key(kernel, device: DeviceInfo, dims: Mapping[str, int] | tuple, dtype: str) -> TuningKey:
    """The key of ``kernel`` (a :class:`~autotune.kernel.model.Kernel`, catalog name or kernel
    file path) on ``device`` for ``dims`` (a mapping, pairs, or values in the kernel's order)
    and ``dtype``, with the current source and spec hashes, nvcc version and compile flags.

    Raises:
        InvalidInputError: unknown kernel or dtype, or bad dims.
        GPUUnavailableError: nvcc is not on PATH.
    """
    from autotune.kernel.catalog import resolve_kernel
    from autotune.kernel.dtypes import get_dtype
    from autotune.measure.compile import compile_flags
    from autotune.measure.device import nvcc_version

    k = resolve_kernel(kernel)
    return TuningKey(device, k.name, k.source_hash, k.spec_hash, make_dims(k.dims, dims, f"kernel {k.name}"),
                     get_dtype(dtype).name, nvcc_version(), compile_flags(device.arch))
