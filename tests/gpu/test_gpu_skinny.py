"""skinny (kernels/skinny.cu) is bit-exact on the GPU for every dtype it takes, on skinny shapes both
ways (short rows and short columns, 1 to 65 long, the issue's 7 x 1000003 and 65536 x 33) and on
wide ones (bands of rows), through the generic benchmark's check against NumPy; at every config of
its space; launched directly with pointers off a 16-byte boundary, row-pitched views and batches
(guard bytes around the output untouched); and through autotune.transpose on PyTorch views and
batches (against torch), also chosen by the rule. The CPU runs the same in tests/kernel/test_catalog_skinny.py."""

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from gpu_transposes import check_exact, check_launched, offset_cases

pytestmark = pytest.mark.gpu_slow

KERNEL = KERNELS["skinny"]
SHAPES = [(1, 1), (3, 5), (7, 1001), (1001, 7), (33, 517), (517, 33), (64, 129), (65, 4097), (4097, 65),
          (300, 301), (7, 1000003), (65536, 33), (33, 65536)]


def configs():
    """The default and the corners the CPU test runs (tests/kernel/test_catalog_skinny.py)."""
    d = KERNEL.defaults
    picks = [d, {**d, "BLOCK_KIB": 4, "THREADS": 128, "STREAMING": 1},
             {**d, "BLOCK_KIB": 16, "THREADS": 512, "STREAMING": 0}]
    return [Config.of(KERNEL.name, p) for p in picks]


@pytest.mark.parametrize("dtype", KERNEL.dtypes)
def test_exact_for_every_dtype_and_shape(device, dtype):
    check_exact(device, KERNEL, dtype, SHAPES, configs(), seed=3)


@pytest.mark.parametrize("dtype", ["int8", "float32", "float64"])
def test_every_config_of_the_space_is_exact(device, dtype):
    check_exact(device, KERNEL, dtype, [(7, 10007), (10007, 33)], KERNEL.space().configs(), seed=4)


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "float64"])
def test_exact_with_offsets_pitched_views_and_batches(device, dtype):
    """Launched directly: rows ld = cols + pad elements apart, batch matrices rows * ld + gap apart
    (grid z), the input span and the output at pointer offsets; against NumPy, guard bytes kept."""
    layouts = [(0, 1, 0), (1, 1, 0), (3, 1, 0), (0, 3, 0), (0, 2, 7), (3, 2, 5)]
    check_launched(device, KERNEL, dtype, configs(), [(7, 3001), (3001, 7), (33, 517), (517, 33), (70, 65)],
                   offset_cases(layouts, get_dtype(dtype).itemsize), seed=6)


@pytest.mark.parametrize("dtype", ["int8", "bfloat16", "float32", "complex64"])
def test_views_and_batches_match_torch_forced_and_by_rule(dtype, tmp_path):
    """autotune.transpose(x, kernel="skinny") on skinny views and batches, and autotune.transpose(x)
    on skinny shapes of >= 1 MiB whose short rows are under 128 bytes, which the rule sends to skinny
    (or, for 4- and 8-byte elements with short output rows, to naive_flat)."""
    torch = pytest.importorskip("torch")
    from autotune.runtime.transpose.op import transpose, transpose_plan

    db = f"sqlite:///{tmp_path / 'none.db'}"
    g = torch.Generator(device="cuda").manual_seed(1)
    base = torch.randn((3, 4, 33, 1300), device="cuda", generator=g, dtype=torch.float64).to(getattr(torch, dtype))
    views = {
        "contiguous batch": base,
        "short rows, column slice": base[..., 3:1201],
        "short columns": base[0, 0].mT.contiguous(),
        "short columns, pitched": base[0, 0].mT.contiguous()[:, 1:30],
        "every other matrix": base[:, ::2],
        "7 rows, odd start": base[1, 2, :7, 1:],
    }
    for what, v in views.items():
        got = transpose(v, kernel="skinny", db=db)
        assert torch.equal(got, v.mT.contiguous()), what
    for shape in [(7, 1000003), (1000003, 7), (9, 200003)]:
        x = torch.randn(shape, device="cuda", generator=g, dtype=torch.float64).to(getattr(torch, dtype))
        # 4- and 8-byte elements whose output rows are the short ones take naive_flat (SHORT_OUTPUT_KERNEL)
        flat = x.element_size() in (4, 8) and shape[0] < shape[1]
        assert transpose_plan(x, db=db).launcher.kernel.name == ("naive_flat" if flat else "skinny"), shape
        assert torch.equal(transpose(x, db=db), x.mT.contiguous()), shape
