"""The key of a tuned result: everything that changes the binary or its timing.

A stored best config is only reused for an equal key: same device model (name, compute
capability, SM count, memory, driver and CUDA versions), same kernel (name, hash of the source
after includes, hash of its launch-relevant description), same toolchain (nvcc version, compile
flags), same problem dimensions and dtype.

The shape of a key is the kernel's named dimensions in the kernel's declared order,
``dims = (("rows", 8192), ("cols", 8192))``; its text form in the database and in exports is
:func:`dims_key` (``"rows=8192,cols=8192"``), its display form :func:`format_shape`
(``"8192x8192"``); both from :mod:`autotune.kernel.dims`.

The physical GPU (UUID, ordinal, PCI bus id) is not part of the key: GPUs of one model
share one study, so a search over several of them fills one study, and each search row
records which GPU measured its trials.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from autotune.kernel.dims import Dims, NamedDims, dims_key, format_shape, make_dims, parse_dims_key
from autotune.measure.device import DeviceInfo

if TYPE_CHECKING:
    from autotune.kernel.problem import Problem
    from autotune.measure.toolchain import Toolchain

__all__ = ["Dims", "TuningKey", "tuning_key", "dims_key", "parse_dims_key", "format_shape"]


@dataclass(frozen=True)
class TuningKey(NamedDims):
    """Identity of one tuning problem.

    Attributes:
        device: the GPU; its model is the identity (``uuid``, ``ordinal`` and
            ``pci_bus_id`` are not: they say which GPU of that model measured).
        kernel: the kernel's name, e.g. ``smem_pad``.
        source_hash: SHA-256 of the kernel source after includes (hex).
        spec_hash: SHA-256 of the kernel's launch-relevant description (hex): two kernels of
            one name and source but other arguments, launch or dims are other keys.
        dims: the problem's named dimensions in the kernel's declared order (:data:`Dims`).
        dtype: element type name, e.g. ``float32``.
        nvcc_version: e.g. ``13.0.88``.
        compile_flags: the flags besides the macros, space separated, e.g. ``-O3 -arch=sm_90``.
        problem: the :class:`~autotune.kernel.problem.Problem` the key was made of
            (:meth:`of`), ``None`` for a key read back from stored text; not part of the
            key's identity (equality, hash).

    Raises:
        ValueError: ``dims`` is not a non-empty tuple of ``(name, int)`` pairs.
    """

    device: DeviceInfo
    kernel: str
    source_hash: str
    spec_hash: str
    dims: Dims
    dtype: str
    nvcc_version: str
    compile_flags: str
    problem: Problem | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, problem: Problem, device: DeviceInfo, toolchain: Toolchain) -> TuningKey:
        """The key of ``problem`` on ``device`` built with ``toolchain``: the kernel's name and
        its current source and spec hashes, the dims and the dtype's name (runs nothing)."""
        k = problem.kernel
        return cls(device, k.name, k.source_hash, k.spec_hash, problem.dims, problem.dtype.name,
                   toolchain.nvcc_version, toolchain.compile_flags, problem)

    def __post_init__(self) -> None:
        if (not isinstance(self.dims, tuple) or not self.dims
                or not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int
                           for p in self.dims)):
            raise ValueError(f"dims must be a non-empty tuple of (name, int) pairs, not {self.dims!r}")
        p = self.problem
        if p is not None and (p.dims, p.dtype.name, p.kernel.name) != (self.dims, self.dtype, self.kernel):
            object.__setattr__(self, "problem", None)  # a copy with other dims (dataclasses.replace): not its problem

    @property
    def study_name(self) -> str:
        """Name of the Optuna study of this key (one study per key): the readable part first
        (kernel, shape, dtype, device model), then 10 hex digits of the SHA-256 of the whole key
        (:attr:`legacy_study_name`), e.g. ``smem_pad 8192x8192 float32 NVIDIA H100 80GB HBM3
        #0123456789``. A study made before 0.4.0 keeps its :attr:`legacy_study_name`, and is
        found by it (:func:`autotune.store.study_storage.stored_study_name`)."""
        digest = hashlib.sha256(self.legacy_study_name.encode()).hexdigest()[:10]
        return f"{self.kernel} {self.display} {self.dtype} {self.device.name} #{digest}"

    @property
    def legacy_study_name(self) -> str:
        """The study name of autotune < 0.4.0, every part of the key, hashes first (123 to 136
        characters), e.g.
        ``smem_pad@0123456789ab+89abcdef|NVIDIA H100 ...|nvcc13.0.88|-O3 -arch=sm_90|8192x8192|float32``."""
        d = self.device
        return (
            f"{self.kernel}@{self.source_hash[:12]}+{self.spec_hash[:8]}|{d.name}|sm{d.compute_capability}|"
            f"{d.sm_count}SM|drv{d.driver_version}|cuda{d.cuda_version}|nvcc{self.nvcc_version}|"
            f"{self.compile_flags}|{self.display}|{self.dtype}"
        )

def tuning_key(kernel, device: DeviceInfo, dims: Mapping[str, int] | Sequence, dtype: str) -> TuningKey:
    """The key of ``kernel`` on ``device`` for problem ``dims`` of ``dtype``, with the kernel's
    current source and spec hashes, and the current nvcc version and compile flags: a shorthand
    of :meth:`TuningKey.of` (``Problem.of(kernel, dims, dtype)``, ``Toolchain.of(device.arch)``).

    Args:
        kernel: a :class:`~autotune.kernel.model.Kernel`, a catalog name or a kernel file's path
            (:func:`autotune.kernel.catalog.resolve_kernel`); or any object with ``.name``,
            ``.dims``, ``.source_hash`` and ``.spec_hash`` (taken as it is).
        device: the GPU.
        dims: ``{name: value}``, ``(name, value)`` pairs, or the values in the kernel's dims order
            (:func:`autotune.kernel.dims.make_dims`).
        dtype: a dtype name or NumPy dtype.

    Raises:
        InvalidInputError: unknown kernel or dtype; dims that do not fit the kernel.
        GPUUnavailableError: nvcc is not on PATH.
    """
    from pathlib import Path

    from autotune.kernel.dtypes import get_dtype
    from autotune.kernel.model import Kernel
    from autotune.kernel.problem import Problem
    from autotune.measure.toolchain import Toolchain

    toolchain = Toolchain.of(device.arch)
    if isinstance(kernel, (str, Path, Kernel)):
        return TuningKey.of(Problem.of(kernel, dims, dtype), device, toolchain)
    return TuningKey(device, kernel.name, kernel.source_hash, kernel.spec_hash,
                     make_dims(kernel.dims, dims, f"kernel {kernel.name}"), get_dtype(dtype).name,
                     toolchain.nvcc_version, toolchain.compile_flags)
