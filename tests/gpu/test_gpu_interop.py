"""``autotune.transpose`` on CuPy arrays and PyTorch tensors (``__cuda_array_interface__``)."""

import numpy as np
import pytest

from autotune import clear_cache, lookup, transpose
from autotune.errors import InvalidInputError

pytestmark = pytest.mark.gpu_slow

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
    odd = torch.from_numpy(_values((9, 13), "float32")).cuda()[:, 1:]  # rows 13 apart: read in place
    np.testing.assert_array_equal(transpose(odd, db=db).cpu().numpy(), odd.cpu().numpy().T)
    with pytest.raises(InvalidInputError, match="strides"):  # a transposed view: columns not adjacent
        transpose(odd.t(), db=db)
    with pytest.raises(InvalidInputError, match="out must be a writable C-contiguous 260x100 float32"):
        transpose(x, out=torch.empty((100, 260), device="cuda"), db=db)


def test_the_tuned_config_of_the_current_device_is_used(tmp_path):
    torch = pytest.importorskip("torch")
    import autotune

    db = f"sqlite:///{tmp_path / 'tuned.db'}"
    torch.zeros(1, device="cuda")  # the primary context is current
    result = autotune.tune("smem_vec", {"rows": 512, "cols": 768}, "float32", trials=4, sampler="grid", repeats=20,
                           db=db)
    assert len(result.measured) == 4
    clear_cache()
    tuned = lookup("smem_vec", (512, 768), "float32", device=0, db=db)
    assert tuned.rung == "exact" and tuned.config in result.measured
    assert autotune.compiled("smem_vec", (512, 768), "float32", db=db).chosen.config == tuned.config
    a = _values((512, 768), "float32")
    np.testing.assert_array_equal(transpose(torch.from_numpy(a).cuda(), db=db).cpu().numpy(), a.T)


@pytest.mark.parametrize("kernel", ["copy_col", "naive_row", "smem_unroll_pad", "matmul_reg"])
def test_compiled_launches_any_catalog_kernel_on_torch_tensors_on_a_stream(kernel, tmp_path):
    torch = pytest.importorskip("torch")
    import autotune
    from autotune.kernel.catalog import KERNELS

    db = f"sqlite:///{tmp_path / 'untuned.db'}"
    k = KERNELS[kernel]
    dims = dict(zip(k.dims, (129, 67, 33)))
    dtype = "float64" if kernel == "matmul_reg" else "int16"
    launch = autotune.compiled(kernel, dims, dtype, db=db)
    assert launch.chosen.config == k.default_config()  # nothing tuned: the kernel's default
    env = k.env(dims, launch.dtype)
    ins = {a.name: _values(a.shape_of(env), dtype, seed=i) for i, a in enumerate(k.arrays) if a.role == "in"}
    out = torch.zeros(k.arrays[0].shape_of(env), dtype=getattr(torch, dtype), device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        launch(out, *(torch.from_numpy(v).cuda() for v in ins.values()))
    stream.synchronize()
    if kernel == "matmul_reg":
        from autotune.kernel.references import product_tolerance

        assert product_tolerance(out.cpu().numpy(), ins["A"] @ ins["B"], name="C", dims=dims) is None
    elif kernel == "copy_col":
        np.testing.assert_array_equal(out.cpu().numpy(), ins["src"])
    else:
        np.testing.assert_array_equal(out.cpu().numpy(), ins["src"].T)


def test_compiled_launches_a_users_kernel_file_on_cupy_arrays(tmp_path):
    cupy = pytest.importorskip("cupy")
    import autotune

    from kernel_files import catalog_doc, write_kernel

    path = write_kernel(tmp_path / "mine.toml", {**catalog_doc("smem_pad"), "name": "interop_pad"})
    launch = autotune.compiled(str(path), (70, 33), "float32", db=f"sqlite:///{tmp_path / 'u.db'}")
    a = _values((70, 33), "float32")
    out = cupy.empty((33, 70), np.float32)
    launch(out, cupy.asarray(a), stream=cupy.cuda.get_current_stream())
    cupy.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out), a.T)
    with pytest.raises(InvalidInputError, match="interop_pad takes 2 arrays"):
        launch(out)
