"""``autotune.transpose`` on CuPy arrays and PyTorch tensors (``__cuda_array_interface__``)."""

import numpy as np
import pytest

from autotune import clear_cache, lookup, transpose
from autotune.errors import InvalidInputError

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1), (1, 333), (333, 1), (33, 65), (64, 128), (1000, 3001), (2048, 1024)]
DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64"]


def _values(shape, dtype, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape) * 100
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_torch_tensors_in_torch_tensors_out(shape, dtype, tmp_path):
    torch = pytest.importorskip("torch")
    a = _values(shape, dtype)
    x = torch.from_numpy(a).cuda()
    y = transpose(x, db=f"sqlite:///{tmp_path / 't.db'}")
    assert isinstance(y, torch.Tensor) and y.device == x.device and y.is_contiguous()
    np.testing.assert_array_equal(y.cpu().numpy(), a.T)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8"])
@pytest.mark.parametrize("shape", SHAPES)
def test_cupy_arrays_in_cupy_arrays_out(shape, dtype, tmp_path):
    cupy = pytest.importorskip("cupy")
    a = _values(shape, dtype, seed=1)
    x = cupy.asarray(a)
    y = transpose(x, db=f"sqlite:///{tmp_path / 'c.db'}")
    assert isinstance(y, cupy.ndarray) and y.flags.c_contiguous
    np.testing.assert_array_equal(cupy.asnumpy(y), a.T)


def test_out_of_another_kind_and_unaligned_views(tmp_path):
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    db = f"sqlite:///{tmp_path / 'o.db'}"
    a = _values((100, 260), "float32")
    x = torch.from_numpy(a).cuda()
    out = cupy.empty((260, 100), np.float32)
    assert transpose(x, out=out, db=db) is out
    np.testing.assert_array_equal(cupy.asnumpy(out), a.T)
    # a view one element into its buffer: cols is a multiple of the vector width, but the
    # pointer is only 4-byte aligned, so the kernel must fall back to scalar accesses
    flat = torch.from_numpy(_values((1, 100 * 260 + 1), "float32")).cuda()[0]
    view = flat[1:].view(100, 260)
    assert view.data_ptr() % 16 == 4
    np.testing.assert_array_equal(transpose(view, db=db).cpu().numpy(), view.cpu().numpy().T)
    odd = torch.from_numpy(_values((9, 13), "float32")).cuda()[:, 1:]  # rows strided: refused
    with pytest.raises(InvalidInputError, match="strides"):
        transpose(odd, db=db)
    with pytest.raises(InvalidInputError, match="out must be a writable C-contiguous 260x100 float32"):
        transpose(x, out=torch.empty((100, 260), device="cuda"), db=db)


def test_the_tuned_config_of_the_current_device_is_used(tmp_path):
    torch = pytest.importorskip("torch")
    from typer.testing import CliRunner

    from autotune.cli import app

    db = f"sqlite:///{tmp_path / 'tuned.db'}"
    torch.zeros(1, device="cuda")  # the primary context is current
    r = CliRunner().invoke(app, ["search", "--kernel", "smem_vec", "--rows", "512", "--cols", "768",
                                 "--trials", "4", "--sampler", "grid", "--db", db])
    assert r.exit_code == 0, r.output
    clear_cache()
    assert lookup("smem_vec", (512, 768), "float32", device=0, db=db).rung == "exact"
    a = _values((512, 768), "float32")
    np.testing.assert_array_equal(transpose(torch.from_numpy(a).cuda(), db=db).cpu().numpy(), a.T)
