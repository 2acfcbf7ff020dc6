"""One problem: a kernel, its dims and a dtype, resolved and checked once, carried whole below.

A `Problem` is what a search measures, what a key is made of, what a lookup answers
and what a recording counts: ``smem_pad 8192x8192 float32``. It is built once at each edge
(`tune`, `lookup`, `compiled`, the launcher's cold
path, `transpose`, the command line's shape options) by `Problem.of`, which
resolves the kernel (a catalog name, a kernel file's path, or a `Kernel`),
the dtype (a name or a NumPy dtype) and the dims (a mapping, pairs, or values in the kernel's
order), and checks each once: the dtype is one the kernel takes, every dim is an integer in
``1 .. MAX_DIM`` and at most the kernel file's ``[problem] max``. Everything below
(the key, the measuring child, the benchmark, the compile pool, the re-timing) takes the value
and checks nothing again.

A problem crosses a process boundary as its `ProblemRef` (the kernel's catalog name
or file path, the dims and the dtype's name): the receiving process resolves it, reading the
kernel file itself. A kernel built in Python (no file) is pickled whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autotune.errors import InvalidInputError
from autotune.kernel.arguments import check_dims_arg, check_dtype_arg, check_kernel_arg
from autotune.kernel.config import Config
from autotune.kernel.dims import Dims, NamedDims, make_dims
from autotune.kernel.dtypes import DType, get_dtype
from autotune.kernel.model import Geometry, Kernel, Launch

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["Geometry", "Problem", "ProblemRef"]


@dataclass(frozen=True)
class ProblemRef:
    """A `Problem` as plain, picklable values: ``kernel`` a catalog name or the
    absolute path of a kernel file, ``dims`` ``(name, value)`` pairs, ``dtype`` its name."""

    kernel: str
    dims: Dims
    dtype: str

    def resolve(self) -> Problem:
        """The problem, its kernel resolved in this process (a file read where not read yet).

        Raises:
            InvalidInputError, KernelFileError: as `Problem.of`.
        """
        return Problem.of(self.kernel, self.dims, self.dtype)


@dataclass(frozen=True)
class Problem(NamedDims):
    """A kernel, its dims and a dtype (module doc). Frozen and hashable: a cache key (the
    kernel by identity, as `Kernel` compares).

    Attributes:
        kernel: the resolved `Kernel`.
        dims: ``(name, value)`` pairs in the kernel's declared order, e.g. ``(("rows", 8192),
            ("cols", 8192))`` (also `shape`, `dims_key`, `display`).
        dtype: the problem's `DType`.
    """

    kernel: Kernel
    dims: Dims
    dtype: DType

    @classmethod
    def of(cls, kernel: str | Path | Kernel | Problem, dims: Mapping[str, int] | Sequence[int] | Dims | None = None,
           dtype: DTypeLike | DType = "float32") -> Problem:
        """Resolve and check a problem once (module doc); a `Problem` is returned as is
        (``dims`` must then be ``None``: it holds its own).

        Args:
            kernel: a catalog name (``"smem_pad"``), a kernel file's path, or a Kernel.
            dims: ``{name: value}``, ``(name, value)`` pairs, or the values in the kernel's
                dims order; integers in ``1 .. MAX_DIM``.
            dtype: a dtype name (``"float32"``), a NumPy dtype, or a DType.

        Raises:
            InvalidInputError: an unknown kernel or dtype, a dtype the kernel does not take,
                dims that are not the kernel's, or a value out of range (naming it).
            KernelFileError: the kernel file is malformed.
        """
        from autotune.kernel.catalog import resolve_kernel

        if isinstance(kernel, Problem):
            if dims is not None:
                raise InvalidInputError(f"dims {dims!r} are not allowed with a Problem, which holds its dims")
            return kernel
        check_kernel_arg(kernel)  # the three by type and range first: nothing is read for a bad one
        check_dims_arg(dims)
        check_dtype_arg(dtype)
        k = resolve_kernel(kernel)
        dt = get_dtype(dtype)
        k.check_dtype(dt)
        d = make_dims(k.dims, dims, f"kernel {k.name}")
        k.check_dims(dict(d))
        return cls(k, d, dt)

    def at(self, dims: Mapping[str, int] | Sequence[int] | Dims) -> Problem:
        """The same kernel and dtype at other ``dims`` (checked as `of` checks them)."""
        return Problem.of(self.kernel, dims, self.dtype)

    @property
    def values(self) -> dict[str, int]:
        """The dims as a dict ``{name: value}``."""
        return dict(self.dims)

    @property
    def label(self) -> str:
        """``smem_pad 8192x8192 float32``: how messages name the problem."""
        return f"{self.kernel.name} {self.display} {self.dtype.name}"

    @property
    def ref(self) -> ProblemRef | None:
        """The `ProblemRef` another process resolves this problem from: the catalog
        name of a catalog kernel, else the kernel file's path; ``None`` for a kernel built in
        Python (no file)."""
        from autotune.kernel.catalog import KERNELS

        if KERNELS.get(self.kernel.name) is self.kernel:
            spec = self.kernel.name
        elif self.kernel.path is not None:
            spec = str(self.kernel.path)
        else:
            return None
        return ProblemRef(spec, self.dims, self.dtype.name)

    def env(self, config: Config | None = None) -> dict[str, int]:
        """The names the kernel's expressions see: dims, fixed macros, ``config``'s macros, ``itemsize``."""
        return self.kernel.env(self.values, self.dtype, config)

    def geometry(self, config: Config, launch: Launch | None = None) -> Geometry:
        """The `Geometry` of ``config`` on this problem (of ``launch``, default the
        kernel's own ``[launch]``).

        Raises:
            ZeroDivisionError: an expression divides by zero for this config.
        """
        return self.kernel.geometry(config, self.values, self.dtype, launch)

    def figure(self, which: str) -> int | None:
        """The objective's ``bytes`` or ``flops`` for this problem (``None`` where the kernel
        file gives none)."""
        return self.kernel.figure(which, self.values, self.dtype)

    def __reduce__(self) -> tuple:
        ref = self.ref
        if ref is None:  # a kernel built in Python: pickled whole
            return (Problem, (self.kernel, self.dims, self.dtype))
        return (ProblemRef.resolve, (ref,))

    def __str__(self) -> str:
        return self.label
