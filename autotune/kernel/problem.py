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

A problem is stored as its `ProblemKey`: the kernel's name and its source and spec hashes, the
dims and the dtype's name, plain text that outlives the kernel file. Every stored record of a
problem (the tuning key, a stored best, an imported result, a workload's counts and results, a
bundle's entry) holds one and reads its fields through it (`ProblemFields`), and one rule turns
it back into a problem of today's kernel, comparing the hashes: `ProblemKey.resolve`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar, overload

from autotune.errors import InvalidInputError
from autotune.kernel.arguments import check_dims_arg, check_dtype_arg, check_kernel_arg
from autotune.kernel.config import Config
from autotune.kernel.dims import Dims, NamedDims, make_dims
from autotune.kernel.dtypes import DType, get_dtype
from autotune.kernel.model import Geometry, Kernel, Launch

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["Geometry", "Problem", "ProblemRef", "ProblemKey", "ProblemFields", "Resolved", "Through"]

T = TypeVar("T")


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


@dataclass(frozen=True)
class Resolved:
    """A stored problem as today's kernel file or catalog has it (`ProblemKey.resolve`).

    Attributes:
        problem: the problem resolved today; ``None`` where its kernel cannot be found, ``why``
            then saying why.
        changed: where the kernel's source or description differs from the one stored, what
            differs (``"source 0123456789ab recorded, abcdef012345 now"``); ``""``: the same.
        kernel: today's kernel of that name (``None``: not found), also where its dims or dtype
            no longer fit it (``problem`` then ``None``).
    """

    problem: Problem | None
    why: str = ""
    changed: str = ""
    kernel: Kernel | None = None


@dataclass(frozen=True)
class ProblemKey(NamedDims):
    """The identity of a stored problem, as plain text that outlives the kernel file (module doc).

    Attributes:
        kernel: the kernel's name, e.g. ``smem_pad``.
        source_hash: SHA-256 of the kernel source after includes (hex).
        spec_hash: SHA-256 of the kernel's launch-relevant description (hex).
        dims: ``(name, value)`` pairs in the kernel's declared order.
        dtype: the dtype's name, e.g. ``float32``.
        kernel_ref: where the kernel is found again: its catalog name or kernel file path
            (``""``: unknown, or a kernel built in Python); not part of the identity (equality, hash).

    Raises:
        ValueError: ``dims`` is not a non-empty tuple of ``(name, int)`` pairs.
    """

    kernel: str
    source_hash: str
    spec_hash: str
    dims: Dims
    dtype: str
    kernel_ref: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if (not isinstance(self.dims, tuple) or not self.dims
                or not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int
                           for p in self.dims)):
            raise ValueError(f"dims must be a non-empty tuple of (name, int) pairs, not {self.dims!r}")

    @classmethod
    def of(cls, problem: Problem) -> ProblemKey:
        """The key of ``problem`` with its kernel's current hashes (its `ProblemRef`'s kernel
        as ``kernel_ref``)."""
        k, ref = problem.kernel, problem.ref
        return cls(k.name, k.source_hash, k.spec_hash, problem.dims, problem.dtype.name, ref.kernel if ref else "")

    def at(self, dims: Dims) -> ProblemKey:
        """The same kernel and dtype at other ``dims`` (``(name, value)`` pairs)."""
        return ProblemKey(self.kernel, self.source_hash, self.spec_hash, dims, self.dtype, self.kernel_ref)

    def resolve(self) -> Resolved:
        """The one rule that turns a stored problem back into a kernel (the plan, the tuning, the
        bundle's export and ``autotune bundle`` all use it): its kernel file, else its catalog
        name (a kernel built in Python has neither), loaded today and resolved by `Problem.of`;
        the kernel must still be named as stored, and its source and spec hashes are compared
        with the stored ones (`Resolved.changed`)."""
        from autotune.errors import AutotuneError
        from autotune.kernel.catalog import KERNELS, resolve_kernel

        ref = self.kernel_ref or (self.kernel if self.kernel in KERNELS else "")
        if not ref:
            return Resolved(None, "its kernel was built in Python (no kernel file): it cannot be tuned from the record")
        try:
            k = resolve_kernel(ref)
        except AutotuneError as exc:
            return Resolved(None, f"its kernel cannot be loaded: {exc}")
        if k.name != self.kernel:
            return Resolved(None, f"{ref} is now kernel {k.name}, not {self.kernel}")
        changed = "; ".join(f"{what} {then[:12]} recorded, {now[:12]} now"
                            for what, then, now in (("source", self.source_hash, k.source_hash),
                                                    ("description", self.spec_hash, k.spec_hash)) if then != now)
        try:
            problem = Problem.of(k, self.dims, self.dtype)
        except AutotuneError as exc:
            return Resolved(None, f"its kernel cannot be loaded: {exc}", changed, k)
        return Resolved(problem, changed=changed, kernel=k)

    @property
    def label(self) -> str:
        """``smem_pad 300x200 float32``: how messages name the problem."""
        return f"{self.kernel} {self.display} {self.dtype}"

    @property
    def ident(self) -> tuple[str, Dims, str]:
        """The kernel's name, the dims, the dtype: what tells the problems of a workload apart
        (counts recorded before and after an edit of the kernel are one problem)."""
        return (self.kernel, self.dims, self.dtype)


class Through(Generic[T]):
    """A read-only attribute read through an attribute of the object: in a class,
    ``kernel: Through[str] = Through("problem_key")`` reads ``obj.kernel`` as
    ``obj.problem_key.kernel``, and ``device_name: Through[str] = Through("key.device", "name")``
    as ``obj.key.device.name``; setting it raises ``AttributeError``."""

    def __init__(self, via: str, name: str = "") -> None:
        self.via, self.name = via.split("."), name

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = self.name or name
        self.attribute = name

    @overload
    def __get__(self, obj: None, owner: type) -> Through[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object, owner: type | None = None) -> T | Through[T]:
        if obj is None:
            return self
        for step in self.via:
            obj = getattr(obj, step)
        return getattr(obj, self.name)

    def __set__(self, obj: object, value: T) -> None:
        raise AttributeError(f"{self.attribute} is read through {'.'.join(self.via)}; it cannot be set")


class ProblemFields(NamedDims):
    """The fields of a record's `ProblemKey` (``problem_key``), read through it: the records
    that hold one (the tuning key, a stored best, a workload's counts...) keep their public
    attributes without restating them: ``kernel``, ``source_hash``, ``spec_hash``, ``dims``,
    ``dtype``, ``kernel_ref``, ``label``, ``ident`` (as `ProblemKey` has them)."""

    problem_key: ProblemKey
    kernel: Through[str] = Through("problem_key")
    source_hash: Through[str] = Through("problem_key")
    spec_hash: Through[str] = Through("problem_key")
    dims: Through[Dims] = Through("problem_key")  # type: ignore[assignment]  # NamedDims's, read-only here
    dtype: Through[str] = Through("problem_key")
    kernel_ref: Through[str] = Through("problem_key")
    label: Through[str] = Through("problem_key")
    ident: Through[tuple[str, Dims, str]] = Through("problem_key")
