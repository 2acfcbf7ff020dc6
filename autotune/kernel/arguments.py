"""Checks of the arguments the library's public functions take, made first, before anything is
opened, read or imported.

``tune``, ``lookup``, ``compiled``, ``launcher``, ``transpose``, ``load_kernel`` and
:class:`~autotune.search.options.SearchOptions` call these at their top, and
:meth:`autotune.kernel.problem.Problem.of` checks its kernel, dims and dtype with them before it
resolves anything, so that ``tune("k.toml", 5)`` refuses the dims without reading the kernel
file, and ``lookup(..., device=-1)`` names the ordinal instead of a missing CUDA backend. Each check
looks at the value's type and range only (no file, no database, no GPU): whether a name is a
catalog kernel, or dims fit the kernel, is for the resolution that follows.

Every refusal is one :class:`~autotune.errors.InvalidInputError` naming the argument (``what``),
its value (cut to :data:`SHOWN` characters) and what is allowed. Booleans are never integers
here (``True`` is not a dim, an ordinal or a count), NaN and infinity are never numbers, and a
string is never a sequence of dims.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autotune.errors import InvalidInputError
from autotune.kernel.dims import MAX_DIM

__all__ = ["SHOWN", "MAX_TEXT", "shown", "check_kernel_arg", "check_dims_arg", "check_dtype_arg", "check_path_arg",
           "check_text_arg", "check_db_arg", "check_flag_arg", "check_ordinal_arg", "check_callable_arg",
           "check_seconds_arg"]

SHOWN = 80
"""Characters of a refused value a message quotes (a 1 MB string is not echoed whole)."""
MAX_TEXT = 4096
"""Longest name, path or URL taken (PATH_MAX on Linux)."""
MAX_DIMS = 16
"""Most dims a problem has (the catalog's kernels have 1 to 3)."""

_KERNEL = "give a catalog name (e.g. 'smem_pad'), a kernel file's path or a Kernel"
_DIMS = ("give a mapping {name: value} or a tuple of integers in the kernel's dims order, each an integer "
         f"1..{MAX_DIM}")


def shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`SHOWN` characters."""
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ is not the caller's message
        text = f"<{type(value).__name__}>"
    return text if len(text) <= SHOWN else text[:SHOWN - 3] + "..."


def _fail(what: str, value: Any, allowed: str, verb: str = "is") -> InvalidInputError:
    return InvalidInputError(f"{what} {shown(value)} {verb} not allowed; {allowed}")


def _text_problem(text: str) -> str | None:
    """Why ``text`` is no name, path or URL: empty, too long, or holding a control character."""
    if not text.strip():
        return "it is empty"
    if len(text) > MAX_TEXT:
        return f"it is {len(text)} characters long (at most {MAX_TEXT})"
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        return f"it holds the control character {bad!r}"
    return None


def check_text_arg(value: Any, what: str, allowed: str, *, optional: bool = False) -> None:
    """``value`` is a string, not empty, at most :data:`MAX_TEXT` characters, without control
    characters (``None`` too where ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise _fail(what, value, allowed)
    why = _text_problem(value)
    if why is not None:
        raise _fail(what, value, f"{why}; {allowed}")


def check_path_arg(value: Any, what: str, allowed: str = "give the path of a file", *,
                   optional: bool = False) -> None:
    """``value`` is a path: a string or an ``os.PathLike`` of text, checked as by
    :func:`check_text_arg` (a NUL byte would reach ``open`` as ``ValueError``)."""
    if value is None and optional:
        return
    if isinstance(value, os.PathLike) and not isinstance(value, (str, bytes)):
        try:
            value = os.fspath(value)
        except TypeError:
            raise _fail(what, value, allowed) from None
    check_text_arg(value, what, allowed)


def check_kernel_arg(value: Any, what: str = "kernel", *, identity: bool = False) -> None:
    """``value`` is a kernel: a catalog name or a kernel file's path (:func:`check_path_arg`),
    or a :class:`~autotune.kernel.model.Kernel`; where ``identity``, any object with a kernel's
    ``name``, ``source_hash`` and ``spec_hash`` (what :func:`autotune.lookup` keys by). (A whole
    :class:`~autotune.kernel.problem.Problem` is taken by its callers before they check.)

    Raises:
        InvalidInputError: ``None``, a number, a boolean, bytes, a container, an empty or
            control-character name, naming ``what``.
    """
    from autotune.kernel.model import Kernel

    if isinstance(value, Kernel):
        return
    if isinstance(value, (str, Path)) or (isinstance(value, os.PathLike) and not isinstance(value, bytes)):
        check_path_arg(value, what, _KERNEL)
        return
    if identity and all(isinstance(getattr(value, a, None), str) for a in ("name", "source_hash", "spec_hash")):
        return
    raise _fail(what, value, _KERNEL)


def _dim_value(value: Any, where: str, ranged: bool = True) -> None:
    if isinstance(value, bool) or getattr(value, "dtype", None) is not None and str(value.dtype) == "bool":
        raise InvalidInputError(f"{where}={shown(value)} is not allowed; give an integer 1..{MAX_DIM}, not a boolean")
    try:
        n = operator.index(value)
    except TypeError:
        raise InvalidInputError(f"{where}={shown(value)} is not allowed; give an integer 1..{MAX_DIM}") from None
    if ranged and not 1 <= n <= MAX_DIM:
        raise InvalidInputError(f"{where}={shown(value)} is not allowed; give an integer 1..{MAX_DIM}")


def check_dims_arg(value: Any, what: str = "dims", *, optional: bool = False, positional: bool = True,
                   empty: bool = False) -> None:
    """``value`` is a problem's dims: a mapping ``{name: value}`` (names non-empty strings), or
    (where ``positional``) a tuple or list of values, or of ``(name, value)`` pairs; every value
    an integer (NumPy integers too; not a boolean, a float or a string), ``1 .. MAX_DIM`` where it
    is named (a value by position is ranged by :func:`autotune.kernel.dims.make_dims`, which
    names its dim); at most :data:`MAX_DIMS` of them. ``None`` where ``optional``. Whether the
    names and count fit the kernel is :func:`~autotune.kernel.dims.make_dims`'s to say.
    ``empty``: no dims at all is allowed too (the launcher's extra dims).

    Raises:
        InvalidInputError: naming ``what`` and the first value refused.
    """
    if value is None and optional:
        return
    allowed = _DIMS if positional else f"give a mapping {{name: value}}, each value an integer 1..{MAX_DIM}"
    if isinstance(value, Mapping):
        items = list(value.items())
    elif positional and isinstance(value, (tuple, list)):
        pairs = len(value) > 0 and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value)
        items = list(value) if pairs else [(None, v) for v in value]
    else:
        raise _fail(what, value, allowed, "are")
    if not items and not empty:
        raise _fail(what, value, f"they are empty; {allowed}", "are")
    if len(items) > MAX_DIMS:
        raise _fail(what, value, f"they are {len(items)} (at most {MAX_DIMS}); {allowed}", "are")
    for i, (name, v) in enumerate(items):
        if name is not None:
            if not isinstance(name, str) or not name.isidentifier() or len(name) > 64:
                raise InvalidInputError(f"{what}: the name {shown(name)} is not allowed; give a dim's name "
                                        "(letters, digits and _)")
        # a value by position: its range is said by make_dims, which knows the dim's name (rows=0)
        _dim_value(v, name if name is not None else f"{what}[{i}]", ranged=name is not None)


def check_dtype_arg(value: Any, what: str = "dtype", *, optional: bool = False) -> None:
    """``value`` is an element type: a name (``"float32"``), a NumPy dtype or scalar type, or a
    :class:`~autotune.kernel.dtypes.DType` (``None`` where ``optional``; NumPy would read
    ``None`` as float64). Whether it is one autotune knows is for
    :func:`autotune.kernel.dtypes.get_dtype`.

    Raises:
        InvalidInputError: anything else (a number, a boolean, a container, an empty or long name).
    """
    import numpy as np

    from autotune.kernel.dtypes import DTYPES, DType

    allowed = f"allowed: {', '.join(DTYPES)} (a name or a NumPy dtype{', or None' if optional else ''})"
    if value is None and optional:
        return
    if isinstance(value, (DType, np.dtype)):
        return
    if isinstance(value, type) and issubclass(value, np.generic):
        return
    if isinstance(value, str):
        if not value.strip() or len(value) > 64:
            raise _fail(what, value, allowed)
        return
    if type(value).__module__.split(".")[0] == "torch" and type(value).__name__ == "dtype":
        return  # a torch.dtype: its name says which
    raise _fail(what, value, allowed)


def check_db_arg(value: Any, what: str = "db") -> None:
    """``value`` is ``None`` (``$AUTOTUNE_DB``, else the default database) or a SQLAlchemy URL:
    a non-empty string without control characters (an empty one would silently mean the default)."""
    flag = what.startswith("--")  # the command line's --db: no None there
    check_text_arg(value, what, "give a SQLAlchemy URL (sqlite:///PATH, postgresql+psycopg://USER@HOST/DB)"
                   + ("" if flag else " or None"), optional=True)


def check_flag_arg(value: Any, what: str) -> None:
    """``value`` is ``True`` or ``False`` (``"no"``, ``0`` and ``None`` are not: a string is truthy)."""
    if not isinstance(value, bool):
        raise _fail(what, value, "give True or False")


def check_bundle_args(bundle: Any, allow_same_arch: Any) -> None:
    """``bundle`` is ``None`` (``$AUTOTUNE_BUNDLE``, else none) or a bundle's folder;
    ``allow_same_arch`` is ``None`` (``$AUTOTUNE_BUNDLE_ALLOW``) or a bool."""
    check_path_arg(bundle, "bundle", "give the folder of a bundle (autotune export NAME --bundle DIR) or None",
                   optional=True)
    if allow_same_arch is not None and not isinstance(allow_same_arch, bool):
        raise _fail("allow_same_arch", allow_same_arch, "give True, False or None")


def check_ordinal_arg(value: Any, what: str = "device", *, also: tuple[type, ...] = (), also_text: str = "",
                      several: bool = False) -> None:
    """``value`` is a CUDA ordinal, an integer >= 0 (not a boolean); where ``several``, also a
    non-empty list or tuple of distinct ones; an instance of ``also`` (e.g. a DeviceInfo) is taken
    as it is (``also_text`` says so in the message)."""
    allowed = "give a CUDA ordinal 0, 1, ..." + (" or a list of them" if several else "") + also_text
    if also and isinstance(value, also):
        return
    if several and isinstance(value, (list, tuple)):
        if not value:
            raise _fail(what, value, f"it is empty; {allowed}")
        for v in value:
            check_ordinal_arg(v, what, also_text=also_text)
        if len(set(value)) != len(value):
            raise _fail(what, value, f"an ordinal is given twice; {allowed}")
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        raise _fail(what, value, allowed)


def check_callable_arg(value: Any, what: str) -> None:
    """``value`` is ``None`` or callable."""
    if value is not None and not callable(value):
        raise _fail(what, value, "give a function (or None)")


def check_seconds_arg(value: Any, what: str, *, optional: bool = False) -> None:
    """``value`` is a finite number of seconds > 0 (not a boolean, NaN or infinity)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _fail(what, value, "give a positive number of seconds")
