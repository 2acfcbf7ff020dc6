"""The kernel model: one declarative description of a CUDA kernel, for the catalog and users alike.

A :class:`Kernel` says everything autotune needs to compile, launch, verify, time and store
a kernel, as data (after Kernel Tuner's ``tune_kernel``: the kernel, its arguments, launch
geometry and checks are data, not subclasses):

* source: a ``.cu`` file (local ``#include "..."`` resolved relative to it) and its
  ``extern "C"`` entry point;
* problem: named dimensions (``rows, cols``; ``m, n, k``; ``n``) and the dtypes it takes;
* arguments in order: device arrays (:class:`Array`: shape as expressions of the dims, dtype,
  role) and scalars (:class:`Scalar`);
* launch geometry: block, grid and dynamic shared memory as expressions (:class:`Launch`);
* space: tunable macros, their values and constraints, a default config; fixed macros;
* check: a reference and a comparison (:class:`Check`); objective: figures (:class:`Objective`).

Kernel files (TOML beside the ``.cu``) are read by :mod:`autotune.kernel.loader`; the
catalog (:mod:`autotune.kernel.catalog`) is such files in ``kernels/``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES, DType, get_dtype
from autotune.kernel.expr import Expr

if TYPE_CHECKING:
    from autotune.kernel.space import SearchSpace

__all__ = ["ROLES", "INITS", "SCALAR_TYPES", "COMPARES", "Array", "Scalar", "Launch", "Geometry", "Check", "Objective",
           "Kernel", "FLAGS", "flag_options"]

FLAGS: dict[str, tuple[str, tuple[int, int], int]] = {
    "maxrregcount": ("NVCC_MAXRREGCOUNT", (0, 255), 0),
    "ptxas_opt": ("NVCC_PTXAS_O", (0, 3), 3),
    "fast_math": ("NVCC_FAST_MATH", (0, 1), 0),
}
"""The nvcc options a kernel file may declare as tunables (``[flags]``): the key in the
file -> (the tunable's name in configs, the allowed values, the neutral value: nvcc's own
behaviour). ``maxrregcount = N``: ``--maxrregcount=N`` (0: no cap); ``ptxas_opt = N``: ``-Xptxas
-ON`` (3 is nvcc's default); ``fast_math = 1``: ``--use_fast_math``."""


def flag_options(flags: Mapping[str, str], values: Mapping[str, int]) -> list[str]:
    """The nvcc options of the flag tunables ``flags`` (tunable name -> key of :data:`FLAGS`) at
    ``values`` (a config's macros); a neutral value adds nothing."""
    out: list[str] = []
    for name, kind in sorted(flags.items()):
        v = values[name]
        if kind == "maxrregcount" and v:
            out.append(f"--maxrregcount={v}")
        elif kind == "ptxas_opt" and v != 3:
            out += ["-Xptxas", f"-O{v}"]
        elif kind == "fast_math" and v:
            out.append("--use_fast_math")
    return out


ROLES = ("in", "out", "inout", "scratch")
"""Array roles: read; written (poisoned, guarded, checked); both (checked); a workspace (never checked)."""
INITS = ("uniform", "bits", "zeros", "ones")
"""How an input, inout or scratch array is filled: uniform(-1, 1) floats or small random integers;
random bytes; zeros; ones."""
SCALAR_TYPES = {"int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d"}
"""Scalar argument types and their PyCUDA ``prepare`` codes."""
COMPARES = ("exact", "tolerance")
"""Built-in comparisons; anything else is a ``module:function``."""

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Array:
    """A device array argument: ``shape`` in elements (C order), ``dtype`` ``"T"`` (the
    problem's dtype) or a dtype name, ``role`` one of :data:`ROLES`, ``init`` one of :data:`INITS`
    or the path of a ``.npy`` file of the values themselves (absolute once loaded; the kernel file
    gives it relative to itself) (the values an ``in``, ``inout`` or ``scratch`` array starts with), ``reset`` the value every
    element of an ``out``, ``inout`` or ``scratch`` array is set to before every launch of the
    check, every timed launch and, when asked, every launch of :func:`autotune.launcher`
    (``None``: not reset; ``0`` for ``reset = "zeros"``), as Triton's ``reset_to_zero``."""

    name: str
    shape: tuple[Expr, ...]
    dtype: str = "T"
    role: str = "in"
    init: str = "uniform"
    reset: int | float | None = None

    def dtype_of(self, problem: DType) -> DType:
        """The element type for a problem of dtype ``problem``."""
        return problem if self.dtype == "T" else get_dtype(self.dtype)

    def shape_of(self, env: Mapping[str, int]) -> tuple[int, ...]:
        """The shape for the names in ``env`` (dims, fixed macros, ``itemsize``)."""
        return tuple(e(env) for e in self.shape)


@dataclass(frozen=True)
class Scalar:
    """A scalar argument of C type ``ctype`` (a key of :data:`SCALAR_TYPES`) and value ``value``."""

    name: str
    ctype: str
    value: Expr


@dataclass(frozen=True)
class Launch:
    """Threads per block, blocks per grid (x, y, z) and dynamic shared memory (bytes)."""

    block: tuple[Expr, Expr, Expr]
    grid: tuple[Expr, Expr, Expr]
    shared: Expr


class Geometry(NamedTuple):
    """A launch's geometry: ``grid`` (blocks along x, y, z), ``block`` (threads along x, y,
    z) and ``shared`` (bytes of dynamic shared memory per block). A named tuple: it also
    unpacks as ``grid, block, shared``."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int

    @property
    def threads(self) -> int:
        """Threads per block."""
        return math.prod(self.block)

    @property
    def blocks(self) -> int:
        """Blocks per grid."""
        return math.prod(self.grid)


@dataclass(frozen=True)
class Check:
    """How a config's output is verified.

    Attributes:
        reference: ``module:function`` on NumPy arrays (a module may be a ``.py`` path
            relative to the kernel file), called with every argument by name; returns the
            expected array (one checked output) or ``{name: array}``.
        reference_kernel: or an entry point of the same source, compiled with the default
            config's macros and launched with the same arguments and ``reference_launch``.
        compare: ``exact`` (bit for bit), ``tolerance`` (``|got - ref| <= atol + rtol*|ref|``,
            all finite), or ``module:function`` ``(got, expected, *, name, dims) -> str | None``.
    """

    reference: str | None = None
    reference_kernel: str | None = None
    reference_launch: Launch | None = None
    compare: str = "exact"
    atol: float = 0.0
    rtol: float = 0.0

    @property
    def exact(self) -> bool:
        """Bit-exact comparison (outputs poisoned twice) rather than a tolerance (NaN poison)."""
        return self.compare == "exact"


@dataclass(frozen=True)
class Objective:
    """Figures derived from the time: ``bytes`` moved (GB/s) and ``flops`` (GFLOP/s) as
    expressions; ``bound``: ``"memcpy"`` (a device-to-device copy of ``bytes / 2``) or
    ``"cublas"`` (the vendor's product of the same m, n, k: a line of ``autotune bench``);
    ``bound_kernel``: a catalog kernel whose default config on the same dims is a bound."""

    bytes: Expr | None = None
    flops: Expr | None = None
    bound: str | None = None
    bound_kernel: str | None = None


@dataclass(frozen=True, eq=False)
class Kernel:
    """One kernel: source, problem, arguments, launch geometry, space, check and objective.

    ``params`` are ``(macro, values)`` pairs of the kernel's own space (its ``[space]``),
    ``defaults`` its default config, ``fixed`` its fixed macros, ``flags`` its nvcc options
    declared as tunables (tunable name -> key of ``FLAGS``: they are in ``params`` and
    ``defaults`` like any tunable, but reach nvcc as options, not ``-D``), ``max_dims`` the largest value
    of dims its launch geometry allows (``[problem] max``; a dim not in it: ``MAX_DIM``). Instances are compared
    by identity; loaders return one instance per file.
    """

    name: str
    source: Path
    function: str
    dims: tuple[str, ...]
    args: tuple[Array | Scalar, ...]
    launch: Launch
    defaults: Mapping[str, int]
    params: tuple[tuple[str, tuple[int, ...]], ...] = ()
    constraints: tuple[str, ...] = ()
    fixed: Mapping[str, int] = field(default_factory=dict)
    dtypes: tuple[str, ...] = tuple(DTYPES)
    dtype_macro: str = "ELEM_T"
    check_spec: Check = field(default_factory=Check)
    objective: Objective = field(default_factory=Objective)
    summary: str = ""
    path: Path | None = None
    space_file: Path | None = None
    max_dims: Mapping[str, int] = field(default_factory=dict)
    flags: Mapping[str, str] = field(default_factory=dict)

    @property
    def tunables(self) -> tuple[str, ...]:
        """Names of the tunable macros, sorted."""
        return tuple(sorted(self.defaults))

    @property
    def arrays(self) -> tuple[Array, ...]:
        """The array arguments, in the kernel's order (scratch included)."""
        return tuple(a for a in self.args if isinstance(a, Array))

    @property
    def outputs(self) -> tuple[Array, ...]:
        """The checked arrays (roles ``out`` and ``inout``)."""
        return tuple(a for a in self.arrays if a.role in ("out", "inout"))

    @property
    def signature(self) -> str:
        """PyCUDA ``prepare`` argument types (``P`` per array, then scalar codes)."""
        return "".join("P" if isinstance(a, Array) else SCALAR_TYPES[a.ctype] for a in self.args)

    def check_dtype(self, dtype: DType | str) -> None:
        """Raise `InvalidInputError` unless this kernel takes ``dtype``."""
        name = get_dtype(dtype).name
        if name not in self.dtypes:
            raise InvalidInputError(f"kernel {self.name} does not support dtype {name!r}; "
                                    f"allowed: {', '.join(self.dtypes)}")

    def largest(self, dim: str) -> int:
        """The largest value of ``dim`` (``[problem] max``, else ``MAX_DIM``, 2**31 - 1)."""
        from autotune.kernel.dims import MAX_DIM

        return self.max_dims.get(dim, MAX_DIM)

    def check_dims(self, dims: Mapping[str, int]) -> None:
        """Raise `InvalidInputError` naming the first dim over its
        ``[problem] max``."""
        for name, value in dims.items():
            if value > self.largest(name):
                raise InvalidInputError(f"{name}={value} is over {self.name}'s largest {name} ({self.largest(name)}, "
                                        "[problem] max of its kernel file)")

    def default_config(self) -> Config:
        """The kernel's default config (used when nothing is tuned)."""
        return Config.of(self.name, dict(self.defaults))

    def check(self, config: Config) -> None:
        """Raise `InvalidInputError` unless ``config`` sets
        exactly this kernel's tunables to non-negative integers."""
        if config.kernel != self.name:
            raise InvalidInputError(f"config {config} is not for kernel {self.name!r}")
        names = {k for k, _ in config.macros}
        if names != set(self.defaults):
            raise InvalidInputError(f"config {config} sets macros {sorted(names)}; "
                                    f"{self.name} takes {list(self.tunables)}")
        for name, value in config.macros:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInputError(f"macro {name}={value!r} is not a non-negative integer")

    def macros(self, config: Config, dtype: DType) -> dict[str, str]:
        """Every ``-D`` macro of ``config`` for ``dtype``: tunables and fixed ones (sorted),
        then the dtype macro with the element's C type.

        Raises:
            InvalidInputError: ``config`` does not fit this kernel (`Kernel.check`).
        """
        self.check(config)
        values = {**{k: v for k, v in config.as_dict().items() if k not in self.flags}, **self.fixed}
        return {**{k: str(v) for k, v in sorted(values.items())}, self.dtype_macro: dtype.ctype}

    def nvcc_flags(self, config: Config) -> list[str]:
        """The nvcc options ``config`` sets through the kernel's flag tunables (``FLAGS``;
        none for a kernel without ``[flags]``)."""
        return flag_options(self.flags, config.as_dict()) if self.flags else []

    def env(self, dims: Mapping[str, int], dtype: DType, config: Config | None = None) -> dict[str, int]:
        """The names expressions see: dims, fixed macros, ``config``'s macros and ``itemsize``."""
        return {**dims, **self.fixed, **(config.as_dict() if config else {}), "itemsize": dtype.itemsize}

    def geometry(self, config: Config, dims: Mapping[str, int], dtype: DType,
                 launch: Launch | None = None) -> Geometry:
        """The `Geometry` (grid, block, dynamic shared bytes) of ``config`` on ``dims``
        (of ``launch``, default the kernel's own).

        Raises:
            ZeroDivisionError: an expression divides by zero for this config.
        """
        launch = launch or self.launch
        env = self.env(dims, dtype, config)
        grid = tuple(e(env) for e in launch.grid)
        block = tuple(e(env) for e in launch.block)
        return Geometry(grid, block, launch.shared(env))  # type: ignore[arg-type]

    def figure(self, which: str, dims: Mapping[str, int], dtype: DType) -> int | None:
        """The objective's ``bytes`` or ``flops`` for ``dims`` (``None`` where not given)."""
        expr = getattr(self.objective, which)
        return None if expr is None else expr(self.env(dims, dtype))

    def space(self, path: str | Path | None = None) -> SearchSpace:
        """The search space: the file ``path`` (today's space format), else the kernel's own.

        Raises:
            SearchSpaceError: the file or the space is malformed or does not fit the kernel.
        """
        from autotune.kernel.space import kernel_space, load_space

        if path is not None:
            return load_space(self, path)
        if self.space_file is not None:
            return load_space(self, self.space_file)
        return kernel_space(self)

    def source_text(self) -> str:
        """The source with its local ``#include "..."`` files inlined once each, resolved
        relative to the including file: the text compiled and hashed."""
        return _inline(self.source)

    @cached_property
    def source_hash(self) -> str:
        """SHA-256 (hex) of `Kernel.source_text`."""
        return hashlib.sha256(self.source_text().encode()).hexdigest()

    @cached_property
    def spec_hash(self) -> str:
        """SHA-256 (hex) of what, besides the source, changes the binary or the launch: the
        entry point, dims, dtype macro, arguments, launch geometry, fixed macros and the
        names of the tunables (not the space's values, the check or the objective). An array's
        ``reset`` counts (the timed launches include the clear) where it is set."""
        def expr(e):
            return [str(x) for x in e] if isinstance(e, tuple) else str(e)

        args = [{"name": a.name, "shape": expr(a.shape), "dtype": a.dtype, "role": a.role,
                 **({} if a.reset is None else {"reset": a.reset})}  # (absent: the hash of files before reset)
                if isinstance(a, Array) else {"name": a.name, "scalar": a.ctype, "value": str(a.value)}
                for a in self.args]
        doc = {"function": self.function, "dims": list(self.dims), "dtype_macro": self.dtype_macro, "args": args,
               "launch": {"block": expr(self.launch.block), "grid": expr(self.launch.grid),
                          "shared": str(self.launch.shared)},
               "fixed": dict(sorted(self.fixed.items())), "tunables": list(self.tunables)}
        if self.flags:  # (absent: the hash of kernels without flags is what it was)
            doc["flags"] = dict(sorted(self.flags.items()))
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def __repr__(self) -> str:
        return f"Kernel({self.name!r}, {self.path or self.source})"


def _inline(path: Path) -> str:
    """The text of ``path`` with its local includes inlined once each.

    Raises:
        InvalidInputError: the source or an include is missing, not a regular file, binary
            (NUL bytes) or not UTF-8 (the message names the file, and the including file).
    """
    from autotune.base.files import read_text

    seen: set[Path] = set()

    def read(file: Path, what: str) -> str:
        text = read_text(file, what)
        if "\0" in text:
            raise InvalidInputError(f"cannot read {what} {file}: a binary file (it holds NUL bytes); "
                                    "give a text file")
        return text

    def inline(file: Path, what: str) -> str:
        def repl(m: re.Match[str]) -> str:
            target = (file.parent / m.group(1)).resolve()
            if target in seen:
                return ""
            if not target.exists():
                raise InvalidInputError(f'#include "{m.group(1)}" of {file.name}: {target} does not exist (a quoted '
                                        "include is read beside the including file; the toolkit's with <...>)")
            seen.add(target)
            return inline(target, f'#include "{m.group(1)}" of {file.name}')

        return _PRAGMA_ONCE.sub("", _INCLUDE.sub(repl, read(file, what)))

    return inline(path, "source")
