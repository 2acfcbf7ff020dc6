"""Reading a kernel file: TOML beside its ``.cu`` into a :class:`~autotune.kernel.model.Kernel`.

The format is documented in the README ("Tune your own kernel") and shown by every file in
``kernels/``. Every problem is one :class:`~autotune.errors.KernelFileError` naming the file,
the field and what is allowed. The same description can be built in Python with
:func:`kernel_from_dict` (a dict shaped like the TOML document).
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from types import MappingProxyType
from typing import Any

from autotune.base.files import read_text
from autotune.kernel.arguments import check_path_arg
from autotune.errors import InvalidInputError, KernelFileError, SearchSpaceError
from autotune.kernel.dims import MAX_DIM
from autotune.kernel.dtypes import ARG_DTYPES, DTYPES, get_dtype
from autotune.kernel.expr import Expr, ExprError, parse_expr
from autotune.kernel.model import COMPARES, INITS, ROLES, SCALAR_TYPES, Array, Check, Kernel, Launch, Objective, \
    Scalar

__all__ = ["load_kernel", "kernel_from_dict", "NAME"]

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
"""What a kernel, dimension, argument or macro name may be (``\\Z``, not ``$``: ``$`` also
matches before a final newline, and ``"x\\n"`` is no C identifier)."""
_TOP = {"name", "summary", "source", "function", "problem", "args", "launch", "macros", "space", "check", "objective",
        "flags"}


def load_kernel(path: str | Path) -> Kernel:
    """Read the kernel file ``path``.

    Raises:
        InvalidInputError: ``path`` is not a path (``None``, a number, bytes, empty, a control
            character), refused before anything is read.
        KernelFileError: unreadable file (missing, a folder or device, not UTF-8), invalid
            TOML, or an invalid field (named).
    """
    check_path_arg(path, "load_kernel: path", "give the path of a kernel file (.toml)")
    file = Path(path)
    try:
        doc = tomllib.loads(read_text(file, "kernel file"))
    except InvalidInputError as exc:
        raise KernelFileError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise KernelFileError(f"kernel file {file} is not valid TOML: {exc}") from None
    return kernel_from_dict(doc, file.resolve())


class _Reader:
    """Field access with errors that name the file and the field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, field: str, message: str) -> KernelFileError:
        return KernelFileError(f"kernel file {self.where}: {field}: {message}")

    def get(self, table: dict, key: str, field: str, kind, default=..., what: str = ""):
        if key not in table:
            if default is ...:
                raise self.fail(field, f"missing; give {what}")
            return default
        value = table[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise self.fail(field, f"{value!r} is not allowed; give {what}")
        return value

    def known(self, table: dict, allowed: tuple[str, ...], field: str) -> None:
        """Refuse a key of ``table`` outside ``allowed`` (a misspelt key must not fall back to a default)."""
        unknown = sorted(set(table) - set(allowed))
        if unknown:
            raise self.fail(f"{field} {unknown[0]}", f"unknown field; allowed: {', '.join(allowed)}")

    def name(self, value: object, field: str) -> str:
        if not isinstance(value, str) or not NAME.match(value):
            raise self.fail(field, f"{value!r} is not allowed; give a name of letters, digits and _")
        return value

    def expr(self, value: object, field: str, names) -> Expr:
        try:
            return parse_expr(value, names)  # type: ignore[arg-type]
        except ExprError as exc:
            raise self.fail(field, str(exc)) from None

    def triple(self, value: object, field: str, names) -> tuple[Expr, Expr, Expr]:
        if not isinstance(value, list) or not 1 <= len(value) <= 3:
            raise self.fail(field, f"{value!r} is not allowed; give a list of 1 to 3 integer expressions")
        exprs = [self.expr(v, f"{field}[{i}]", names) for i, v in enumerate(value)]
        return tuple(exprs + [parse_expr(1)] * (3 - len(exprs)))  # type: ignore[return-value]


def kernel_from_dict(doc: dict[str, Any], path: Path | None = None, *, source_root: Path | None = None) -> Kernel:
    """Build a `Kernel` from a kernel file's document (a dict).

    Args:
        doc: the document, shaped like the TOML file (``{"name": ..., "source": ..., "problem": {...}}``).
        path: the file it came from; ``source`` is resolved relative to its folder (else
            relative to ``source_root`` or the current directory).
        source_root: the folder ``source`` is relative to when there is no ``path``.

    Raises:
        KernelFileError: an invalid field (named), or a space that does not fit the kernel.
    """
    r = _Reader(str(path) if path else "<dict>")
    unknown = sorted(set(doc) - _TOP)
    if unknown:
        raise r.fail(unknown[0], f"unknown field; allowed: {', '.join(sorted(_TOP))}")
    name = r.name(r.get(doc, "name", "name", str, what="the kernel's name"), "name")
    folder = path.parent if path else (source_root or Path.cwd())
    source = _source(r, folder, r.get(doc, "source", "source", str, what="the .cu file, relative to this file"))
    problem = r.get(doc, "problem", "[problem]", dict, what="a table with dims")
    r.known(problem, ("dims", "dtypes", "dtype_macro", "max"), "[problem]")
    dims = tuple(r.name(d, "[problem] dims") for d in
                 r.get(problem, "dims", "[problem] dims", list, what='a list of dimension names, e.g. ["n"]'))
    if not dims or len(set(dims)) != len(dims):
        raise r.fail("[problem] dims", f"{list(dims)} is not allowed; give one or more distinct names")
    max_dims = r.get(problem, "max", "[problem] max", dict, {}, "a table of the largest value of dims, e.g. "
                                                                 "{ m = 1048560 }")
    for d, v in max_dims.items():
        if d not in dims:
            raise r.fail(f"[problem] max {d}", f"is not a dim; allowed: {', '.join(dims)}")
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_DIM:
            raise r.fail(f"[problem] max {d}", f"{v!r} is not allowed; give an integer 1..{MAX_DIM}")
    dtypes = tuple(r.get(problem, "dtypes", "[problem] dtypes", list, list(DTYPES), "a list of dtype names"))
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise r.fail("[problem] dtypes", f"{bad or dtypes} is not allowed; allowed: {', '.join(DTYPES)}")
    dtype_macro = r.name(r.get(problem, "dtype_macro", "[problem] dtype_macro", str, "ELEM_T", "a macro name"),
                         "[problem] dtype_macro")
    fixed = r.get(doc, "macros", "[macros]", dict, {}, "a table of fixed macros")
    for k, v in fixed.items():
        r.name(k, "[macros]")
        if not isinstance(v, int) or isinstance(v, bool):
            raise r.fail(f"[macros] {k}", f"{v!r} is not allowed; give an integer")
    space = r.get(doc, "space", "[space]", dict, what="a table with default and params (or file)")
    r.known(space, ("file", "params", "constraints", "default"), "[space]")
    defaults = r.get(space, "default", "[space] default", dict, what="the default config, e.g. { BLOCK_SIZE = 256 }")
    for k, v in defaults.items():
        r.name(k, "[space] default")
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise r.fail(f"[space] default {k}", f"{v!r} is not allowed; give a non-negative integer")
    flag_params, flags = _flags(r, r.get(doc, "flags", "[flags]", dict, {}, "a table of nvcc options as tunables"),
                                defaults, space)
    clash = sorted(set(defaults) & (set(fixed) | set(dims) | {"itemsize", dtype_macro}))
    if clash:
        raise r.fail("[space] default", f"{clash[0]} is also a fixed macro, a dim, itemsize or the dtype macro; "
                                        "names must differ")
    clash = sorted(set(fixed) & (set(dims) | {"itemsize", dtype_macro}))
    if clash:
        raise r.fail("[macros]", f"{clash[0]} is also a dim, itemsize or the dtype macro; names must differ")
    static = {*dims, *fixed, "itemsize"}
    every = static | set(defaults)
    args = _args(r, r.get(doc, "args", "[[args]]", list, what="the kernel's arguments, in order"), static, dtypes,
                 folder)
    launch = _launch(r, r.get(doc, "launch", "[launch]", dict, what="a table with block and grid"), "[launch]", every)
    kernel = Kernel(
        name=name, source=source, function=r.name(r.get(doc, "function", "function", str, what="the extern \"C\" "
                                                                                              "entry point"),
                                                  "function"),
        dims=dims, args=args, launch=launch, defaults=MappingProxyType(dict(defaults)),
        max_dims=MappingProxyType(dict(max_dims)),
        flags=MappingProxyType(flags),
        params=tuple(sorted(_params(r, space) + flag_params)), constraints=tuple(r.get(space, "constraints", "[space] constraints", list, [],
                                                          "a list of strings")),
        fixed=MappingProxyType(dict(fixed)), dtypes=dtypes, dtype_macro=dtype_macro,
        check_spec=_check(r, r.get(doc, "check", "[check]", dict, {}, "a table"), every, args),
        objective=_objective(r, r.get(doc, "objective", "[objective]", dict, {}, "a table"), static, dims),
        summary=r.get(doc, "summary", "summary", str, "", "one line of text"), path=path,
        space_file=(folder / space["file"]) if isinstance(space.get("file"), str) else None)
    _check_space(r, kernel, space)
    _read_source(r, kernel)
    return kernel


def _source(r: _Reader, folder: Path, given: str) -> Path:
    """The ``.cu`` file: relative to the kernel file's folder (or absolute), anywhere on the
    machine (a source shared by several kernel files may sit elsewhere), resolved so that
    ``autotune check`` and every message show where it really is. Read (with its includes)
    once the kernel is built: :func:`_read_source`."""
    if not given or "\0" in given:
        raise r.fail("source", f"{given!r} is not allowed; give the .cu file, relative to this file")
    return (folder / given).resolve()


def _read_source(r: _Reader, kernel: Kernel) -> None:
    """Read the source and its local includes now (:meth:`Kernel.source_hash`, kept for
    later): a missing, binary, non-UTF-8 or non-regular source or include is refused here,
    by the one reader of users' files (:mod:`autotune.base.files`), not later by nvcc."""
    try:
        _ = kernel.source_hash
    except InvalidInputError as exc:
        raise r.fail("source", str(exc)) from None


def _args(r: _Reader, items: list, names: set[str], dtypes: tuple[str, ...],
          folder: Path | None = None) -> tuple[Array | Scalar, ...]:
    out: list[Array | Scalar] = []
    for i, item in enumerate(items):
        field = f"[[args]] {i + 1}"
        if not isinstance(item, dict):
            raise r.fail(field, "is not a table")
        name = r.name(item.get("name"), f"{field} name")
        if name in {a.name for a in out}:
            raise r.fail(f"{field} name", f"{name!r} is used twice")
        if ("array" in item) == ("scalar" in item):
            raise r.fail(field, f"{name}: give either array = [shape] or scalar = type")
        r.known(item, ("name", "array", "dtype", "role", "init", "reset") if "array" in item
                else ("name", "scalar", "value"), field)
        if "array" in item:
            shape = r.get(item, "array", f"{field} array", list, what="a list of expressions of the dims")
            dtype = r.get(item, "dtype", f"{field} dtype", str, "T", '"T" or a dtype name')
            role = r.get(item, "role", f"{field} role", str, "in", " | ".join(ROLES))
            init = r.get(item, "init", f"{field} init", str, "uniform", " | ".join(INITS) + " | a .npy file")
            if init.endswith(".npy"):  # the values themselves (autotune.tune_kernel writes the user's arrays so)
                values = (folder or Path.cwd()) / init
                if not values.is_file():
                    raise r.fail(f"{field} init", f"{init!r}: no such file ({values}); give a .npy file of the "
                                                  "array's values, relative to the kernel file")
                init = str(values.resolve())
            for value, allowed, what in ((dtype, ("T", *ARG_DTYPES), "dtype"), (role, ROLES, "role"),
                                         (init if not init.endswith(".npy") else "uniform", INITS, "init")):
                if value not in allowed:
                    raise r.fail(f"{field} {what}", f"{value!r} is not allowed; allowed: {', '.join(allowed)}")
            if not shape:
                raise r.fail(f"{field} array", "is empty; give at least one dimension")
            if role == "out" and "init" in item:
                raise r.fail(f"{field} init", f"{name}: an out array is not filled (it is poisoned before the "
                                              "check); to start it at a value before every launch, give reset = "
                                              '"zeros" or reset = <number>')
            reset = _reset(r, item, field, name, role, dtype, dtypes)
            out.append(Array(name, tuple(r.expr(s, f"{field} array", names) for s in shape), dtype, role, init,
                             reset))
        else:
            ctype = r.get(item, "scalar", f"{field} scalar", str, what=" | ".join(SCALAR_TYPES))
            if ctype not in SCALAR_TYPES:
                raise r.fail(f"{field} scalar", f"{ctype!r} is not allowed; allowed: {', '.join(SCALAR_TYPES)}")
            value = r.get(item, "value", f"{field} value", (str, int), what="an expression of the dims")
            out.append(Scalar(name, ctype, r.expr(value, f"{field} value", names)))
    if not any(isinstance(a, Array) and a.role in ("out", "inout") for a in out):
        raise r.fail("[[args]]", "no array has role out or inout; a kernel must write something to check")
    return tuple(out)


def _reset(r: _Reader, item: dict, field: str, name: str, role: str, dtype: str,
           dtypes: tuple[str, ...]) -> int | float | None:
    """An array's ``reset``: ``"zeros"`` (0) or a number every element of its dtype can hold
    (checked for each dtype it can take); only on out, inout and scratch arrays."""
    if "reset" not in item:
        return None
    value = item["reset"]
    if role == "in":
        raise r.fail(f"{field} reset", f"{name}: an in array is never reset; reset is for out, inout and scratch")
    if value == "zeros" and isinstance(value, str):
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (
            float("inf"), float("-inf")):
        raise r.fail(f"{field} reset", f'{value!r} is not allowed; allowed: "zeros" or a finite number')
    for dt in ([get_dtype(dtype)] if dtype != "T" else [get_dtype(d) for d in dtypes]):
        if not _fits(value, dt.numpy):
            raise r.fail(f"{field} reset", f"{value!r} is not a value of {dt.name}")
    return value


def _fits(value: int | float, dtype) -> bool:
    """Whether ``value`` is a value of ``dtype``: an integer in its range, or finite in a float type."""
    import numpy as np

    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return float(value).is_integer() and info.min <= int(value) <= info.max
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.array(value, np.float64).astype(dtype)))


def _launch(r: _Reader, table: dict, field: str, names: set[str]) -> Launch:
    unknown = sorted(set(table) - {"block", "grid", "shared"})
    if unknown:
        raise r.fail(f"{field} {unknown[0]}", "unknown field; allowed: block, grid, shared")
    return Launch(r.triple(r.get(table, "block", f"{field} block", list, what="[x, y, z] threads"),
                           f"{field} block", names),
                  r.triple(r.get(table, "grid", f"{field} grid", list, what="[x, y, z] blocks"), f"{field} grid", names),
                  r.expr(table.get("shared", 0), f"{field} shared", names))


def _check(r: _Reader, table: dict, names: set[str], args) -> Check:
    r.known(table, ("reference", "reference_kernel", "compare", "atol", "rtol", "launch"), "[check]")
    reference, kernel = table.get("reference"), table.get("reference_kernel")
    if (reference is None) == (kernel is None):
        raise r.fail("[check]", 'give either reference = "module:function" or reference_kernel = "entry point"')
    for key, value in (("reference", reference), ("compare", table.get("compare", "exact"))):
        if key == "reference" and value is None:
            continue
        if not isinstance(value, str) or (value not in COMPARES or key == "reference") and ":" not in value:
            raise r.fail(f"[check] {key}", f"{value!r} is not allowed; give "
                         + ('"module:function"' if key == "reference" else 'exact, tolerance or "module:function"'))
    if kernel is not None:
        r.name(kernel, "[check] reference_kernel")
    launch = table.get("launch")
    if kernel is not None and not isinstance(launch, dict):
        raise r.fail("[check.launch]", "missing; a reference kernel needs its own block and grid")
    tolerances = {k: r.get(table, k, f"[check] {k}", (int, float), 0.0, "a number >= 0") for k in ("atol", "rtol")}
    for key, value in tolerances.items():  # NaN compares false: a NaN tolerance would pass any result
        if not math.isfinite(value) or value < 0:
            raise r.fail(f"[check] {key}", f"{value!r} is not allowed; give a finite number >= 0")
    return Check(reference, kernel, _launch(r, launch, "[check.launch]", names - set()) if kernel else None,
                 table.get("compare", "exact"), float(tolerances["atol"]), float(tolerances["rtol"]))


def _objective(r: _Reader, table: dict, names: set[str], dims: tuple[str, ...]) -> Objective:
    unknown = sorted(set(table) - {"bytes", "flops", "bound", "bound_kernel"})
    if unknown:
        raise r.fail(f"[objective] {unknown[0]}", "unknown field; allowed: bytes, flops, bound, bound_kernel")
    bound = table.get("bound")
    if bound not in (None, "memcpy", "cublas"):
        raise r.fail("[objective] bound", f"{bound!r} is not allowed; allowed: memcpy, cublas")
    if bound == "memcpy" and "bytes" not in table:
        raise r.fail("[objective] bound", "memcpy needs bytes (it copies bytes / 2)")
    if bound == "cublas" and ("flops" not in table or not {"m", "n", "k"} <= set(dims)):
        raise r.fail("[objective] bound", "cublas needs flops and dims m, n, k (C[m,n] = A[m,k] @ B[k,n])")
    exprs = {k: r.expr(table[k], f"[objective] {k}", names) if k in table else None for k in ("bytes", "flops")}
    kernel = table.get("bound_kernel")
    if kernel is not None:
        r.name(kernel, "[objective] bound_kernel")
    return Objective(exprs["bytes"], exprs["flops"], bound, kernel)


def _params(r: _Reader, space: dict) -> tuple[tuple[str, tuple[int, ...]], ...]:
    params = space.get("params", {})
    if not isinstance(params, dict):
        raise r.fail("[space] params", "is not a table of macro = [values]")
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def _flags(r: _Reader, table: dict, defaults: dict, space: dict
           ) -> tuple[tuple[tuple[str, tuple[int, ...]], ...], dict[str, str]]:
    """``[flags]``: nvcc options as tunables (:data:`autotune.kernel.model.FLAGS`), e.g.
    ``{ maxrregcount = [0, 64, 128], ptxas_opt = [1, 3], fast_math = [0, 1] }``. Each becomes a
    tunable of the space (``NVCC_MAXRREGCOUNT`` ...) whose default, unless ``[space] default``
    gives one, is the neutral value (nvcc's own behaviour), which must then be in its list.
    ``defaults`` gets them. A ``[space] params`` entry of a flag's tunable name is refused:
    its values would skip these checks and still reach nvcc as the flag (``NVCC_FAST_MATH =
    [0, 1, 7]``: 7 passed on as ``--use_fast_math``). Returns the space params and the tunable
    -> flag map."""
    from autotune.kernel.model import FLAGS

    if table and "file" in space:
        raise r.fail("[flags]", "is allowed with [space] params only (a space file has no flags)")
    given = space.get("params") if isinstance(space.get("params"), dict) else {}
    params, flags = [], {}
    for key, values in table.items():
        if key not in FLAGS:
            raise r.fail(f"[flags] {key}", f"is not a flag autotune knows; allowed: {', '.join(FLAGS)}")
        name, (low, high), neutral = FLAGS[key]
        if name in given:
            raise r.fail(f"[flags] {key}", f"its tunable {name} is also in [space] params; give its values in "
                                           "[flags] only")
        if (not isinstance(values, list) or not values
                or any(not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high for v in values)):
            raise r.fail(f"[flags] {key}", f"{values!r} is not allowed; give a list of integers {low}..{high}")
        if key == "maxrregcount" and any(0 < v < 16 for v in values):
            raise r.fail(f"[flags] {key}", f"{values!r} is not allowed; a register cap is 0 (none) or 16..255")
        if name not in defaults:
            if neutral not in values:
                raise r.fail(f"[flags] {key}", f"{values!r} lacks {neutral} (nvcc's own behaviour, the default); "
                                               f"add it or give {name} in [space] default")
            defaults[name] = neutral
        params.append((name, tuple(values)))
        flags[name] = key
    return tuple(params), flags


def _check_space(r: _Reader, kernel: Kernel, space: dict) -> None:
    """The space (inline or its file) must fit the kernel, and the default must be in it."""
    if ("file" in space) == ("params" in space):
        raise r.fail("[space]", "give either file = \"space.toml\" or params = { MACRO = [values] }")
    try:
        s = kernel.space()
    except SearchSpaceError as exc:
        raise r.fail("[space]", str(exc)) from None
    broken = s.violations(kernel.default_config())
    if broken:
        raise r.fail("[space] default", f"{kernel.default_config().key} is not in the space: {'; '.join(broken)}")
