"""Reading ``__cuda_array_interface__`` (no GPU: objects that only export the dict)."""

import numpy as np
import pytest

from autotune import transpose
from autotune.runtime.arrays import describe
from autotune.errors import InvalidInputError


class Exported:
    """An object exporting a CUDA Array Interface dict, like CuPy and PyTorch do."""

    def __init__(self, shape, typestr="<f4", strides=None, data=(0x7F0000000000, False), **extra):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": data, "version": 3, **extra}


def test_describe_reads_pointer_shape_dtype_and_kind():
    a = describe(Exported((3, 5), "<f8", data=(4096, True)))
    assert (a.pointer, a.shape, a.dtype.name, a.kind, a.readonly) == (4096, (3, 5), "float64", "cai", True)
    assert describe(Exported((2, 4), "|i1", strides=(4, 1))).dtype.name == "int8"
    assert describe(Exported((1, 4), "<f2", strides=(999, 2))).shape == (1, 4)  # one row: its stride is moot
    assert describe(Exported((4, 1), "<i4", strides=(4, 77))).shape == (4, 1)


@pytest.mark.parametrize("obj, message", [
    (np.zeros((2, 2), np.float32), "input of type ndarray is not a GPU array; allowed: a PyCUDA GPUArray"),
    (Exported((2, 2, 2)), r"input has 3 dimensions \(2, 2, 2\); allowed: 2"),
    (Exported((0, 4)), "input of shape 0x4 is empty"),
    (Exported((4, 4), strides=(4, 16)), r"input has strides \(4, 16\) bytes; allowed: C-contiguous \(16, 4\)"),
    (Exported((4, 4), strides=(32, 4)), r"strides \(32, 4\) bytes"),  # a view of every other row
    (Exported((4, 4), "<c8"), "input: unknown dtype 'complex64'"),
    (Exported((4, 4), mask=object()), "input is a masked array"),
])
def test_describe_refuses_what_a_kernel_cannot_take(obj, message):
    with pytest.raises(InvalidInputError, match=message):
        describe(obj)


def test_transpose_refuses_a_host_array_before_touching_cuda():
    with pytest.raises(InvalidInputError, match="not a GPU array"):
        transpose(np.ones((4, 4), np.float32))
    with pytest.raises(InvalidInputError, match="is not a transpose"):
        transpose(Exported((4, 4)), kernel="copy_row")
