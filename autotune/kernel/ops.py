"""The operations registry: which catalog kernels compute an operation (a transpose, ...).

An operation is a family of kernels that compute the same thing and so can stand in for one
another: ``autotune search --op transpose`` searches them together
(:mod:`autotune.search.op`), and ``autotune.transpose`` picks among them at run time
(:mod:`autotune.runtime.transpose.choice`). Both read this one registry, below them. A kernel file
belongs to an operation when it takes the operation's dims and its check's reference is the
operation's reference: the copies (``copy_row``, ``copy_col``) check against ``copy`` and are
not transposes.
"""

from __future__ import annotations

from collections.abc import Mapping

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.model import Kernel

__all__ = ["OPS", "op_kernels"]

OPS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "transpose": (("rows", "cols"), "autotune.kernel.references:transpose"),
}
"""Operation name -> (the dims its kernels take, the check reference that says they compute it)."""


def op_kernels(op: str, dtype=None) -> list[Kernel]:
    """The catalog kernels computing ``op`` (taking ``dtype``, when given), by name.

    Raises:
        InvalidInputError: unknown ``op`` (the message lists :data:`OPS`), or a dtype no kernel of it takes.
    """
    if op not in OPS:
        raise InvalidInputError(f"unknown operation {op!r}; allowed: {', '.join(OPS)}")
    dims, reference = OPS[op]
    found = [k for name, k in sorted(KERNELS.items())
             if tuple(k.dims) == dims and k.check_spec.reference == reference]
    if dtype is not None:
        dt = get_dtype(dtype)
        found = [k for k in found if dt.name in k.dtypes]
        if not found:
            raise InvalidInputError(f"no catalog kernel computes {op} for dtype {dt.name!r}")
    return found
