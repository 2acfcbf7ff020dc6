"""``autotune.transpose`` of batches and views in one launch, of single rows and columns by a
copy, on the caller's stream, and inside a CUDA graph capture (PyTorch)."""

import dataclasses

import pytest

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.runtime.transpose.op import transpose

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'none.db'}"


def _x(torch, shape, dtype="float32", seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, device="cuda", generator=g).to(getattr(torch, dtype))


@pytest.mark.parametrize("kernel", ["smem_vec", "smem_pad", "smem_unroll_pad", "smem_vec_realign", "naive_col", "unroll_row"])
@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "float64", "complex128"])
def test_batches_and_views_match_torch(kernel, dtype, torch, db):
    if kernel == "smem_vec_realign" and dtype == "complex128":
        pytest.skip("smem_vec_realign takes elements of 1 to 8 bytes")
    base = _x(torch, (3, 4, 70, 130), "float64", seed=1).to(getattr(torch, dtype))
    views = {
        "contiguous batch": base,
        "column slice (row pitch 130)": base[..., 3:67],
        "row slice": base[:, :, 5:50],
        "every other matrix": base[:, ::2],
        "one matrix of a batch, 2-D pitched": base[1, 2, 1:, 2:],
        "broadcast batch": base[0, 0].expand(5, 70, 130),
        "odd shape": base[0, :, :33, :65],
    }
    for what, v in views.items():
        got = transpose(v, kernel=kernel, db=db)
        assert torch.equal(got, v.mT.contiguous()), what


def test_more_matrices_than_a_grid_holds_in_z(torch, db):
    x = _x(torch, (70000, 2, 3))
    assert torch.equal(transpose(x, db=db), x.mT.contiguous())


def test_views_the_kernel_cannot_read_are_refused(torch, db):
    x = _x(torch, (4, 6, 8))
    with pytest.raises(InvalidInputError, match=r"strides \(48, 1, 8\) elements; allowed: \(\.\.\., rows, cols\) "
                                                r"with the columns must be adjacent"):
        transpose(x.mT, db=db)
    with pytest.raises(InvalidInputError, match="leading dims must fold"):
        transpose(x.view(2, 2, 6, 8)[:, :1].expand(2, 3, 6, 8)[:, 1:], db=db)
    assert torch.equal(transpose(x, kernel="naive_row", db=db), x.mT.contiguous())  # takes batches now
    # a user's transpose without ld and batch_stride arguments is given contiguous matrices only
    naive = KERNELS["naive_row"]
    flat = dataclasses.replace(naive, name="naive_row_flat",
                               args=tuple(a for a in naive.args if a.name not in ("ld", "batch_stride")))
    with pytest.raises(InvalidInputError, match="kernel naive_row_flat takes a contiguous 2-D input"):
        transpose(x, kernel=flat, db=db)


@pytest.mark.parametrize("shape", [(1, 1 << 20), (1 << 20, 1), (4, 1, 300000), (3, 1 << 18, 1)])
def test_a_single_row_or_column_is_a_copy(shape, torch, db):
    x = _x(torch, shape)
    y = transpose(x, db=db)
    assert y.shape == (*shape[:-2], shape[-1], shape[-2]) and torch.equal(y, x.mT.contiguous())
    strided = _x(torch, (1 << 12, 3))[:, 1:2]  # one column whose elements are 3 apart: a kernel, not a copy
    assert torch.equal(transpose(strided, db=db), strided.mT.contiguous())


@pytest.mark.parametrize("shape", [(2048, 4096), (1, 1 << 22)])
def test_the_launch_goes_on_the_callers_stream(shape, torch, db):
    x = _x(torch, shape)
    new = _x(torch, shape, seed=5)
    side = torch.cuda.Stream()
    transpose(x, db=db)  # built and loaded before the timed part
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # the side stream is busy for tens of ms ...
        x.copy_(new)  # ... then changes x; a launch on another stream would read the old x
        y = transpose(x, db=db)
        after = y * 2  # work queued after it on the same stream sees its result
    side.synchronize()
    assert torch.equal(y, new.mT.contiguous()) and torch.equal(after, 2 * new.mT.contiguous())
    out = torch.empty_like(y)
    s2 = torch.cuda.Stream()
    with torch.cuda.stream(s2):
        torch.cuda._sleep(50_000_000)
        x.fill_(3.0)
    transpose(x, db=db, out=out, stream=s2)  # stream= given: queued behind the fill
    s2.synchronize()
    assert bool((out == 3.0).all())


@pytest.mark.parametrize("shape", [(257, 513), (2, 64, 96), (1, 100000)])
def test_graph_capture_and_replay(shape, torch, db):
    x = _x(torch, shape)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (compile, load) outside the capture, as torch asks
        transpose(x, db=db)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = transpose(x, db=db)  # the output comes from the graph's memory pool
    for seed in (7, 8):
        x.copy_(_x(torch, shape, seed=seed))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, x.mT.contiguous())
