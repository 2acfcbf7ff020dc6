"""How a transpose reads its input: ``(..., rows, cols)`` as a batch of row-pitched matrices.

A view is accepted when its columns are adjacent elements (unit stride), its rows are any
non-negative number of elements apart (the row pitch ``ld``; ``ld >= cols`` for a view of a
wider matrix, smaller for overlapping or broadcast rows, which a transpose may read all the
same), and its leading dims fold into one batch dim of a single non-negative stride (a
contiguous batch, a slice of one, a broadcast ``expand``); dims of one element are moot.
Anything else (a transposed view, a column slice with a step, leading dims that do not
fold) is refused with its strides named.
"""

from __future__ import annotations

from math import prod

from autotune.errors import InvalidInputError
from autotune.runtime.transpose.views import View

__all__ = ["Layout", "layout_of"]


class Layout:
    """A batch of ``batch`` matrices of ``rows`` x ``cols`` elements.

    Attributes:
        lead: the leading dims (``()`` for a 2-D input); ``batch``: their product.
        ld: elements between the starts of consecutive rows (``cols`` where there is one row).
        batch_stride: elements between consecutive matrices (0 where there is one).
        contiguous: the elements lie in C order without gaps, so a 1-row or 1-column input
            (whose transpose keeps the element order) is a plain copy.
    """

    __slots__ = ("lead", "rows", "cols", "ld", "batch", "batch_stride", "contiguous")

    def __init__(self, lead, rows, cols, ld, batch, batch_stride, contiguous) -> None:
        self.lead, self.rows, self.cols, self.ld = lead, rows, cols, ld
        self.batch, self.batch_stride, self.contiguous = batch, batch_stride, contiguous


def layout_of(view: View, what: str = "input") -> Layout:
    """The :class:`Layout` of ``view``.

    Raises:
        InvalidInputError: fewer than 2 dims, or strides that are not a batch of row-pitched
            matrices (named in elements, with what is allowed).
    """
    shape, strides = view.shape, view.strides
    if len(shape) == 2:  # the common case, short
        rows, cols = shape
        if cols > 1 and strides[1] != 1:
            raise _refuse(view, what, "the columns must be adjacent elements (stride 1)")
        ld = strides[0] if rows > 1 else cols
        return Layout((), rows, cols, ld, 1, 0, ld == cols)
    if len(shape) < 2:
        raise InvalidInputError(f"{what} has {len(shape)} dimension{'s' * (len(shape) != 1)} {tuple(shape)}; "
                                "allowed: 2 or more, (..., rows, cols)")
    rows, cols = shape[-2], shape[-1]
    if cols > 1 and strides[-1] != 1:
        raise _refuse(view, what, "the columns must be adjacent elements (stride 1)")
    ld = strides[-2] if rows > 1 else cols
    lead = tuple(shape[:-2])
    big = [(n, s) for n, s in zip(lead, strides[:-2]) if n > 1]
    batch_stride = big[-1][1] if big else 0
    step = batch_stride
    for n, s in reversed(big):
        if s != step:
            raise _refuse(view, what, "the leading dims must fold into one batch dim of a single stride")
        step = s * n
    return Layout(lead, rows, cols, ld, prod(lead), batch_stride, _contiguous(shape, strides))


def _contiguous(shape, strides) -> bool:
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n > 1 and s != step:
            return False
        step *= n
    return True


def _refuse(view: View, what: str, why: str) -> InvalidInputError:
    return InvalidInputError(f"{what} of shape {tuple(view.shape)} has strides {tuple(view.strides)} elements; "
                             f"allowed: (..., rows, cols) with {why}, rows any non-negative stride apart, "
                             "e.g. a contiguous array or a slice of its rows or columns")
