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


def test_compiled_refuses_bad_input_before_touching_cuda():
    from autotune import compiled

    with pytest.raises(InvalidInputError, match="unknown kernel 'smem_padd'"):
        compiled("smem_padd", (4, 4))
    with pytest.raises(InvalidInputError, match="does not support dtype 'int8'"):
        compiled("matmul_tiled", (4, 4, 4), "int8")
    with pytest.raises(InvalidInputError, match=r"shape \(4, 4\) is not allowed; kernel matmul_tiled takes \(m, n, k\)"):
        compiled("matmul_tiled", (4, 4))
    with pytest.raises(InvalidInputError, match="unknown dim 'rows'; kernel matmul_tiled takes m, n, k"):
        compiled("matmul_tiled", {"rows": 4, "n": 4, "k": 4})
    with pytest.raises(InvalidInputError, match="m=0 is not allowed"):
        compiled("matmul_tiled", {"m": 0, "n": 4, "k": 4})


def test_a_launcher_checks_its_arrays_against_the_kernels_arguments():
    from autotune.kernel.catalog import KERNELS
    from autotune.kernel.dtypes import get_dtype
    from autotune.kernel.problem import Problem
    from autotune.runtime.compiled import Launcher

    k, dt = KERNELS["matmul_tiled"], get_dtype("float32")
    env = k.env({"m": 2, "n": 3, "k": 5}, dt)
    expected = [(a.name, a.shape_of(env), a.dtype_of(dt), a.role != "in") for a in k.arrays]
    launch = Launcher(Problem.of(k, (("m", 2), ("n", 3), ("k", 5)), dt), None, (1, 1, 1), (16, 16, 1), 0, 0, 0,
                      expected, {})
    c, a, b = Exported((2, 3)), Exported((2, 5)), Exported((5, 3))
    with pytest.raises(InvalidInputError, match=r"matmul_tiled takes 3 arrays \(C, A, B\); got 2"):
        launch(c, a)
    with pytest.raises(InvalidInputError, match="A must be a C-contiguous 2x5 float32 array, not 5x2 float32"):
        launch(c, Exported((5, 2)), b)
    with pytest.raises(InvalidInputError, match="B must be a C-contiguous 5x3 float32 array, not 5x3 float64"):
        launch(c, a, Exported((5, 3), "<f8"))
    with pytest.raises(InvalidInputError, match="C must be a writable C-contiguous 2x3 float32 array"):
        launch(Exported((2, 3), data=(4096, True)), a, b)
    with pytest.raises(InvalidInputError, match="C has strides"):
        launch(Exported((2, 3), strides=(4, 8)), a, b)


def test_transpose_takes_a_users_transpose_file_and_refuses_other_kernels(tmp_path, monkeypatch):
    import autotune.kernel.catalog as catalog

    from kernel_files import catalog_doc, write_kernel

    monkeypatch.setattr(catalog, "_user", {})
    monkeypatch.setattr(catalog, "_files", {})
    mine = write_kernel(tmp_path / "t.toml", {**catalog_doc("smem_pad"), "name": "my_transpose"})
    with pytest.raises(InvalidInputError, match="not a GPU array"):  # accepted as a transpose: the input is checked
        transpose(np.ones((4, 4), np.float32), kernel=str(mine))
    other = write_kernel(tmp_path / "c.toml", {**catalog_doc("copy_col"), "name": "my_copy"})
    with pytest.raises(InvalidInputError, match="is not a transpose"):
        transpose(Exported((4, 4)), kernel=str(other))
    with pytest.raises(InvalidInputError, match="is not a transpose"):
        transpose(Exported((4, 4)), kernel="matmul_reg")
