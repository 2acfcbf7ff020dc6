"""What ``autotune.transpose`` reads of its input and accepts, without a GPU: views of every
element size, row-pitched and batched layouts, and the ``error:`` lines of the rest."""

import numpy as np
import pytest

from autotune import transpose
from autotune.errors import InvalidInputError
from autotune.kernel.dtypes import DTYPES, WORD_DTYPES, word_dtype
from autotune.runtime.transpose.layout import layout_of
from autotune.runtime.transpose.views import view_of


class Exported:
    """An object exporting a CUDA Array Interface dict (strides in bytes, or None: C order)."""

    def __init__(self, shape, typestr="<f4", strides=None, data=(0x7F0000000000, False)):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides, "data": data,
                                         "version": 3}


@pytest.mark.parametrize("typestr, size, name", [("|b1", 1, "bool"), ("|u1", 1, "uint8"), ("|V2", 2, "raw 2-byte words"),
                                                 ("<f2", 2, "float16"), ("<u4", 4, "uint32"), ("<c8", 8, "complex64"),
                                                 ("<c16", 16, "complex128")])
def test_elements_are_read_by_size_whatever_their_type(typestr, size, name):
    v = view_of(Exported((3, 5), typestr, data=(4096, True)))
    assert (v.pointer, v.shape, v.strides, v.itemsize, v.type_name, v.kind, v.readonly) == (
        4096, (3, 5), (5, 1), size, name, "cai", True)


def test_every_size_has_a_canonical_dtype_of_the_catalog():
    assert {n: word_dtype(n).itemsize for n in WORD_DTYPES} == {1: 1, 2: 2, 4: 4, 8: 8, 16: 16}
    assert DTYPES["complex128"].ctype == "double2" and word_dtype(16).name == "complex128"
    with pytest.raises(InvalidInputError, match="elements of 32 bytes are not allowed; allowed: 1, 2, 4, 8, 16"):
        word_dtype(32)


@pytest.mark.parametrize("shape, strides, want", [
    ((4, 6), None, ((), 4, 6, 6, 1, 0, True)),
    ((4, 6), (40, 4), ((), 4, 6, 10, 1, 0, False)),            # a slice of the columns of a 4 x 10 matrix
    ((2, 3, 4, 6), None, ((2, 3), 4, 6, 6, 6, 24, True)),       # a contiguous batch
    ((2, 3, 4, 6), (3 * 480, 480, 40, 4), ((2, 3), 4, 6, 10, 6, 120, False)),  # a batch of pitched views
    ((5, 4, 6), (0, 24, 4), ((5,), 4, 6, 6, 5, 0, False)),      # a broadcast batch (expand)
    ((1, 4, 6), (999, 24, 4), ((1,), 4, 6, 6, 1, 0, True)),     # dims of one element are moot
    ((1, 9), (4, 4), ((), 1, 9, 9, 1, 0, True)),                # one row
    ((9, 1), (12, 4), ((), 9, 1, 3, 1, 0, False)),              # one column, elements 3 apart
])
def test_layouts_of_views_and_batches(shape, strides, want):
    lay = layout_of(view_of(Exported(shape, "<f4", strides)))
    assert (lay.lead, lay.rows, lay.cols, lay.ld, lay.batch, lay.batch_stride, lay.contiguous) == want


@pytest.mark.parametrize("obj, message", [
    (np.zeros((2, 2), np.float32), "input of type ndarray is not a GPU array; allowed: a PyTorch CUDA tensor"),
    (Exported((5,)), r"input has 1 dimension \(5,\); allowed: 2 or more, \(..., rows, cols\)"),
    (Exported((0, 4)), "input of shape 0x4 is empty"),
    (Exported((4, 4), "<c32"), r"input has 32-byte elements \(complex256\); allowed: 1, 2, 4, 8 or 16 bytes"),
    (Exported((4, 4), strides=(4, 16)), r"strides \(1, 4\) elements; allowed: \(\.\.\., rows, cols\) with the "
                                        r"columns must be adjacent"),  # a transposed view
    (Exported((4, 4), strides=(16, 8)), r"strides \(4, 2\) elements"),  # every other column
    (Exported((4, 4), strides=(16, -4)), r"strides \(16, -4\) bytes; allowed: non-negative multiples"),
    (Exported((4, 4), strides=(16, 2)), r"strides \(16, 2\) bytes; allowed: non-negative multiples of the element"),
    (Exported((2, 2, 4, 4), strides=(256, 64, 16, 4)), r"the leading dims must fold into one batch dim"),
])
def test_transpose_refuses_what_it_cannot_read_before_touching_cuda(obj, message):
    with pytest.raises(InvalidInputError, match=message):
        transpose(obj)


def test_a_kernel_that_is_no_transpose_is_refused_first():
    with pytest.raises(InvalidInputError, match="kernel 'copy_row' is not a transpose"):
        transpose(Exported((1, 8)), kernel="copy_row")
