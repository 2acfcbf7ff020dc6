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
import dataclasses
from dataclasses import dataclass, field

from typing import TYPE_CHECKING, Any

from autotune.kernel.dims import Dims, dims_key, format_shape, make_dims, parse_dims_key
from autotune.kernel.problem import ProblemFields, ProblemKey, Through
from autotune.measure.device import DeviceInfo

if TYPE_CHECKING:
    from autotune.kernel.problem import Problem
    from autotune.measure.toolchain import Toolchain

__all__ = ["Dims", "ProblemKey", "TuningKey", "KeyFields", "tuning_key", "dims_key", "parse_dims_key", "format_shape"]


@dataclass(frozen=True)
class TuningKey(ProblemFields):
    """Identity of one tuning problem: a stored problem (its
    :class:`~autotune.kernel.problem.ProblemKey`) on a device model built with a toolchain.

    Attributes:
        device: the GPU; its model is the identity (``uuid``, ``ordinal`` and
            ``pci_bus_id`` are not: they say which GPU of that model measured).
        problem_key: the kernel's name, source and spec hashes, the dims and the dtype's name;
            each is also an attribute of the key, read through it: ``kernel`` (e.g.
            ``smem_pad``), ``source_hash`` (SHA-256 of the kernel source after includes, hex),
            ``spec_hash`` (SHA-256 of the kernel's launch-relevant description: two kernels of
            one name and source but other arguments, launch or dims are other keys), ``dims``
            (the problem's named dimensions in the kernel's declared order, :data:`Dims`) and
            ``dtype`` (element type name, e.g. ``float32``).
        nvcc_version: e.g. ``13.0.88``.
        compile_flags: the flags besides the macros, space separated, e.g. ``-O3 -arch=sm_90``.
        problem: the :class:`~autotune.kernel.problem.Problem` the key was made of
            (:meth:`of`), ``None`` for a key read back from stored text; not part of the
            key's identity (equality, hash).
    """

    device: DeviceInfo
    problem_key: ProblemKey
    nvcc_version: str
    compile_flags: str
    problem: Problem | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, problem: Problem, device: DeviceInfo, toolchain: Toolchain) -> TuningKey:
        """The key of ``problem`` on ``device`` built with ``toolchain``: the kernel's name and
        its current source and spec hashes, the dims and the dtype's name (runs nothing)."""
        return cls(device, ProblemKey.of(problem), toolchain.nvcc_version, toolchain.compile_flags, problem)

    def __post_init__(self) -> None:
        p = self.problem
        if p is not None and (p.dims, p.dtype.name, p.kernel.name) != (self.dims, self.dtype, self.kernel):
            object.__setattr__(self, "problem", None)  # another problem's key: not its problem

    def at(self, dims: Dims) -> TuningKey:
        """This key at other ``dims`` (``(name, value)`` pairs): the same device, kernel, dtype
        and toolchain."""
        return self.replace(dims=dims)

    def replace(self, **changes: Any) -> TuningKey:
        """A copy with ``changes``, fields of the key (``device``, ``nvcc_version``...) or of its
        stored problem (``dims``, ``dtype``, ``spec_hash``...).

        Raises:
            TypeError: a name that is neither.
        """
        own = {name: changes.pop(name) for name in list(changes) if name in _OWN}
        return dataclasses.replace(self, problem_key=dataclasses.replace(self.problem_key, **changes), **own)

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


_OWN = {f.name for f in dataclasses.fields(TuningKey)}


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
    return TuningKey(device, ProblemKey(kernel.name, kernel.source_hash, kernel.spec_hash,
                                        make_dims(kernel.dims, dims, f"kernel {kernel.name}"), get_dtype(dtype).name),
                     toolchain.nvcc_version, toolchain.compile_flags)


class KeyFields(ProblemFields):
    """The fields of a record's :class:`TuningKey` (``key``), read through it: a stored best, an
    imported result and a stored search keep their attributes without restating them: the
    stored problem's (``problem_key``, ``kernel``, ``dims``...:
    :class:`~autotune.kernel.problem.ProblemFields`), the device model (``device``, and its
    ``device_name``, ``compute_capability``, ``sm_count``, ``driver_version``,
    ``cuda_version``) and the toolchain (``nvcc_version``, ``compile_flags``)."""

    key: TuningKey
    problem_key: Through[ProblemKey] = Through("key")  # type: ignore[assignment]  # read-only here
    device: Through[DeviceInfo] = Through("key")
    device_name: Through[str] = Through("key.device", "name")
    compute_capability: Through[str] = Through("key.device")
    sm_count: Through[int] = Through("key.device")
    driver_version: Through[str] = Through("key.device")
    cuda_version: Through[str] = Through("key.device")
    nvcc_version: Through[str] = Through("key")
    compile_flags: Through[str] = Through("key")
