"""smem_bytes (kernels/bytes_realign.cu) is bit-exact on the GPU for every dtype it takes (int8,
uint8, int16, float16) on odd, prime, 1 x N and N x 1 shapes and 5000x7001 (through the generic
benchmark's check against NumPy), at every config of its space on odd shapes, and with input and
output pointers 0..15 bytes off a 16-byte boundary (launched directly on offset views, guard
bytes around the output untouched), and on row-pitched views and batches: launched directly
(pitches with odd pads, batches with gaps, against NumPy) and through autotune.transpose on
PyTorch views (against torch). The CPU runs the same in tests/kernel/test_catalog_bytes_realign.py."""

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from gpu_transposes import check_exact, check_launched, offset_cases

pytestmark = pytest.mark.gpu_slow

KERNEL = KERNELS["smem_bytes"]
SHAPES = [(1, 1), (1, 300), (300, 1), (33, 17), (67, 131), (129, 257), (64, 64), (128, 128), (1000, 1003),
          (2003, 1999), (3001, 7919), (5000, 7001)]


def configs():
    """The default and the corners the CPU test runs (tests/kernel/test_catalog_bytes_realign.py)."""
    d = KERNEL.defaults
    picks = [d, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 4, "STREAMING": 1, "DIAGONAL": 1},
             {**d, "TILE_BYTES": 128, "BLOCK_ROWS": 32, "DIAGONAL": 1}, {**d, "TILE_BYTES": 64, "BLOCK_ROWS": 16}]
    return [Config.of(KERNEL.name, p) for p in picks]


@pytest.mark.parametrize("dtype", KERNEL.dtypes)
def test_exact_for_every_dtype_and_shape(device, dtype):
    check_exact(device, KERNEL, dtype, SHAPES, configs(), seed=3)


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_every_config_of_the_space_is_exact(device, dtype):
    check_exact(device, KERNEL, dtype, [(67, 131), (1000, 1003)], KERNEL.space().configs(), seed=4)


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_exact_with_pointers_off_16_bytes(device, dtype):
    cases = [(0, 1, 0, i, o) for i, o in [(1, 0), (0, 3), (2, 14), (15, 15), (6, 9), (13, 4), (8, 8), (14, 2)]]
    check_launched(device, KERNEL, dtype, configs(), [(131, 77), (64, 96), (1, 33), (45, 1), (129, 257)], cases, seed=5)


@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_exact_on_pitched_views_and_batches(device, dtype):
    """Launched directly: rows ld = cols + pad elements apart, batch matrices rows * ld + gap
    apart (grid z), the input span placed at a pointer offset; every matrix against NumPy,
    guard bytes around the output untouched."""
    layouts = [(1, 1, 0), (3, 1, 0), (5, 1, 0), (0, 3, 0), (0, 2, 7), (1, 3, 0), (3, 2, 5), (5, 3, 1)]
    check_launched(device, KERNEL, dtype, configs(), [(131, 77), (64, 96), (1, 33), (45, 1), (129, 257)],
                   offset_cases(layouts, get_dtype(dtype).itemsize), seed=6)


@pytest.mark.parametrize("dtype", KERNEL.dtypes)
def test_batches_and_views_match_torch(dtype, tmp_path):
    """autotune.transpose(x, kernel="smem_bytes") on the views of
    tests/gpu/test_gpu_transpose_views.py, plus pitches with odd pads."""
    torch = pytest.importorskip("torch")
    from autotune.runtime.transpose.op import transpose

    db = f"sqlite:///{tmp_path / 'none.db'}"
    g = torch.Generator(device="cuda").manual_seed(1)
    base = torch.randn((3, 4, 70, 130), device="cuda", generator=g, dtype=torch.float64).to(getattr(torch, dtype))
    views = {
        "contiguous batch": base,
        "column slice (row pitch 130)": base[..., 3:67],
        "row slice": base[:, :, 5:50],
        "every other matrix": base[:, ::2],
        "one matrix of a batch, 2-D pitched": base[1, 2, 1:, 2:],
        "broadcast batch": base[0, 0].expand(5, 70, 130),
        "odd shape": base[0, :, :33, :65],
        "pad 1": base[0, :, :, :129],
        "pad 3, odd start": base[1, :, :, 1:128],
        "pad 5, batch of one matrix in four": base[:, 3, :69, 2:127],
    }
    for what, v in views.items():
        got = transpose(v, kernel="smem_bytes", db=db)
        assert torch.equal(got, v.mT.contiguous()), what
