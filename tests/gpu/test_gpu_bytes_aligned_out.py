"""smem_bytes_aligned_out (kernels/bytes_aligned_out.cu) is bit-exact on the GPU for every 1- and 2-byte
dtype, on shapes odd on both sides, even, one row or column and a few tiles, at every config of its space,
and through autotune.transpose on PyTorch views and batches (against torch). The CPU runs the same kernel
in tests/kernel/test_catalog_bytes_aligned_out.py."""

import pytest

from autotune.kernel.catalog import KERNELS
from gpu_transposes import check_exact, check_views_and_batches

pytestmark = pytest.mark.gpu_slow

KERNEL = KERNELS["smem_bytes_aligned_out"]
SHAPES = [(1, 1), (1, 1000), (1000, 1), (33, 65), (127, 1031), (1031, 127), (128, 128), (4093, 4099)]


@pytest.mark.parametrize("dtype", KERNEL.dtypes)
def test_exact_for_every_dtype_and_shape(device, dtype):
    check_exact(device, KERNEL, dtype, SHAPES, [KERNEL.default_config()], seed=3)


@pytest.mark.parametrize("dtype", ["uint8", "float16"])
def test_every_config_of_the_space_is_exact(device, dtype):
    check_exact(device, KERNEL, dtype, [(1001, 3001), (10007, 129)], KERNEL.space().configs(), seed=4)


@pytest.mark.parametrize("dtype", ["int8", "bool", "bfloat16", "float16"])
def test_views_and_batches_match_torch(dtype, tmp_path):
    """autotune.transpose(x, kernel="smem_bytes_aligned_out") on odd views and batches: each output row's
    skew and each input row's offset come from their own addresses."""
    torch = pytest.importorskip("torch")
    check_views_and_batches(torch, "smem_bytes_aligned_out", dtype, f"sqlite:///{tmp_path / 'none.db'}")


@pytest.mark.parametrize("shape,dtype", [((4099, 2053), "int8"), ((3001, 7919), "uint8"), ((3001, 5003), "float16"),
                                         ((2, 3001, 5003), "bfloat16")])
def test_the_rule_takes_it_for_large_matrices_at_its_config(shape, dtype, tmp_path):
    """autotune.transpose(x) without a kernel: 1-byte matrices of 4 MiB and more, 2-byte ones of 24 MiB and
    more take smem_bytes_aligned_out at the rule's config (op_choice.BYTES_CONFIG; 1-byte from 20 MiB: the
    kernel file's default), bit for bit against torch."""
    torch = pytest.importorskip("torch")
    from autotune.runtime.transpose import choice as op_choice
    from autotune.runtime.transpose.op import transpose, transpose_plan

    db = f"sqlite:///{tmp_path / 'none.db'}"
    dt = getattr(torch, dtype)
    x = torch.randint(0, 256, (*shape[:-1], shape[-1] * dt.itemsize), dtype=torch.uint8, device="cuda").view(dt)
    plan = transpose_plan(x, db=db).launcher
    want = op_choice.rule_config(shape[-2], shape[-1], dt.itemsize) or KERNEL.default_config()
    assert plan.kernel.name == KERNEL.name and plan.chosen.config == want
    got = transpose(x, db=db)
    assert torch.equal(got.view(torch.uint8), x.mT.contiguous().view(torch.uint8))
