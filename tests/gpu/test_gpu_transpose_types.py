"""``autotune.transpose`` of every element size (1 to 16 bytes), from PyTorch, CuPy and PyCUDA,
bit for bit; the config it uses for a dtype moved as words; and the host time of a call."""

import numpy as np
import pytest

from autotune.runtime.transpose.op import transpose, transpose_plan

pytestmark = pytest.mark.gpu_slow

SHAPES = [(1, 1), (1, 333), (333, 1), (33, 65), (64, 128), (1000, 3001)]
TORCH_TYPES = ["bool", "int8", "uint8", "float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "int16", "int32",
               "float32", "int64", "float64", "complex64", "complex128"]


def _random_bytes(torch, shape, dtype, seed=0):
    """A tensor of ``dtype`` whose bytes are random (any bit pattern: NaNs included), on the GPU."""
    dt = getattr(torch, dtype)
    size = torch.empty((), dtype=dt).element_size()
    g = torch.Generator(device="cuda").manual_seed(seed)
    raw = torch.randint(0, 256, (*shape[:-1], shape[-1] * size), dtype=torch.uint8, device="cuda", generator=g)
    return (raw & 1).bool() if dtype == "bool" else raw.view(dt)


def _bytes(torch, t):
    flat = t.contiguous().reshape(-1)  # (a 1-column view's strides would not allow .view(uint8))
    return flat.view(torch.uint8) if t.dtype != torch.bool else flat.to(torch.uint8)


@pytest.mark.parametrize("dtype", TORCH_TYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_torch_dtype_bit_for_bit(shape, dtype, tmp_path):
    torch = pytest.importorskip("torch")
    x = _random_bytes(torch, shape, dtype)
    y = transpose(x, db=f"sqlite:///{tmp_path / 'none.db'}")
    torch.cuda.synchronize()
    assert y.dtype == x.dtype and y.shape == (shape[1], shape[0]) and y.is_contiguous()
    assert torch.equal(_bytes(torch, y), _bytes(torch, x.t()))


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "float32", "complex64", "complex128"])
def test_cupy_arrays_of_every_size(dtype, tmp_path):
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(3)
    a = np.frombuffer(rng.bytes(77 * 130 * np.dtype(dtype).itemsize), np.uint8).view(dtype).reshape(77, 130)
    y = transpose(cupy.asarray(a), db=f"sqlite:///{tmp_path / 'none.db'}")
    assert isinstance(y, cupy.ndarray) and y.dtype == a.dtype
    assert cupy.asnumpy(y).tobytes() == np.ascontiguousarray(a.T).tobytes()


@pytest.mark.parametrize("dtype", ["float32", "complex128", "uint16"])
def test_pycuda_gpuarrays(dtype, tmp_path):
    pytest.importorskip("pycuda")
    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, as torch and CuPy use)
    from pycuda import gpuarray

    a = np.arange(40 * 24).astype(dtype).reshape(40, 24)
    y = transpose(gpuarray.to_gpu(a), db=f"sqlite:///{tmp_path / 'none.db'}")
    assert isinstance(y, gpuarray.GPUArray)
    np.testing.assert_array_equal(y.get(), a.T)


def test_a_dtype_moved_as_words_says_whose_config_it_uses(tmp_path):
    torch = pytest.importorskip("torch")
    db = f"sqlite:///{tmp_path / 'none.db'}"
    x = torch.zeros((64, 160), dtype=torch.bfloat16, device="cuda")  # not small (sides <= 100 take naive_flat)
    chosen = transpose_plan(x, db=db).launcher.chosen
    assert chosen.rung == "default" and chosen.note.startswith("bfloat16 moved as 2-byte words with the config of "
                                                               "float16: nothing tuned for smem_vec 64x160 float16")
    assert transpose_plan(x.float(), db=db).launcher.chosen.note.startswith("nothing tuned for smem_vec 64x160 float32")


def test_without_kernel_the_shape_picks_it_and_views_get_a_pitched_one(tmp_path):
    torch = pytest.importorskip("torch")
    db = f"sqlite:///{tmp_path / 'none.db'}"
    x = torch.randint(-2**15, 2**15, (496, 701), dtype=torch.int16, device="cuda")  # 2-byte, bit-comparable
    plan = transpose_plan(x, db=db).launcher  # rows of 16-byte multiples on one side only
    assert plan.kernel.name == "smem_vec_realign" and "not a multiple of 8 elements" in plan.chosen.note
    both = x[:495]  # odd on both sides: the classic padded tile (op_choice.BOTH_ODD_KERNEL)
    assert transpose_plan(both, db=db).launcher.kernel.name == "smem_pad"
    assert torch.equal(transpose(both, db=db), both.mT.contiguous())
    assert torch.equal(transpose(x, db=db), x.mT.contiguous())
    rows = x[1:400]  # a row slice: contiguous, realign still
    assert torch.equal(transpose(rows, db=db), rows.mT.contiguous())
    cols = x[:, 3:700]  # row pitch 701 elements, 697 columns: realign reads row-pitched views
    assert transpose_plan(cols, db=db).launcher.kernel.name == "smem_vec_realign"
    assert torch.equal(transpose(cols, db=db), cols.mT.contiguous())
    batch = torch.stack([x, x.flip(0)])  # and batches, one matrix per blockIdx.z
    assert transpose_plan(batch, db=db).launcher.kernel.name == "smem_vec_realign"
    assert torch.equal(transpose(batch, db=db), batch.mT.contiguous())
    b = torch.randint(-128, 128, (3, 500, 701), dtype=torch.int8, device="cuda")  # 1-byte, small: the padded tile
    for v in (b, b[1], b[:, 2:, 1:700]):
        assert transpose_plan(v, db=db).launcher.kernel.name == "smem_pad", v.shape
        assert torch.equal(transpose(v, db=db), v.mT.contiguous()), v.shape
    aligned = x[:496, :696].contiguous()  # both multiples of 8 two-byte elements: 16-byte rows
    assert transpose_plan(aligned, db=db).launcher.kernel.name == "smem_vec"
    assert torch.equal(transpose(aligned, db=db), aligned.mT.contiguous())
    assert transpose_plan(x, kernel="smem_pad", db=db).launcher.kernel.name == "smem_pad"
