"""``autotune.launcher`` without a GPU (fake PyTorch tensors and a fake driver,
tests/fake_gpu_arrays.py): dims read from the shapes, one error line for disagreeing or
unsolvable dims, one prepared launch per shape (the lookup ladder once, then a dict hit),
the packed arguments, the current stream, and resets queued before the launch."""

from pathlib import Path

import pytest

import autotune
from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.kernel.loader import load_kernel
from autotune.runtime import compiled as launch_module
from autotune.runtime.launcher import KernelLauncher

from fake_gpu_arrays import Tensor, installed
from kernel_files import write_kernel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake(monkeypatch, device_info, histogram):
    yield from installed(monkeypatch, histogram, device_info)


def test_the_dims_come_from_the_shapes_and_a_shape_is_prepared_once(fake, histogram, monkeypatch, db_url):
    built = []
    real = launch_module._build
    monkeypatch.setattr(launch_module, "_build", lambda *a: built.append(a[0].dims) or real(*a))
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32", ptr=0x1000), Tensor((1000,), "uint8", ptr=0x2000)
    f(bins, data)
    f(bins, Tensor((1000,), "uint8", ptr=0x3000))  # another array of the same shape: no new build
    f(bins, Tensor((5000,), "uint8", ptr=0x4000))
    assert built == [(("n", 1000),), (("n", 5000),)]
    first, second, third = fake.launches
    default = histogram.default_config().as_dict()
    assert first["grid"] == (min(-(-1000 // (4 * default["BLOCK_SIZE"])), default["MAX_BLOCKS"]), 1, 1)
    assert first["block"] == (default["BLOCK_SIZE"], 1, 1) and first["shared"] == default["COPIES"] * 1024
    assert (first["bins"], first["in"], first["n"], first["stream"]) == (0x1000, 0x2000, 1000, 0x5000)
    assert (second["in"], second["n"]) == (0x3000, 1000) and (third["in"], third["n"]) == (0x4000, 5000)
    assert f.prepared(bins, data).launcher.chosen.rung == "default"


def test_a_stream_and_the_current_device_stream(fake, histogram, db_url):
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32"), Tensor((64,), "uint8")
    f(bins, data, stream=0x77)
    f(bins, data)
    f(Tensor((256,), "uint32", device=1), Tensor((64,), "uint8", device=1))
    assert [c["stream"] for c in fake.launches] == [0x77, 0x5000, 0x5001]


def test_reset_queues_the_memsets_on_the_launchs_stream_before_it(fake, histogram, db_url):
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32", ptr=0x1000), Tensor((64,), "uint8", ptr=0x2000)
    f(bins, data)
    f(bins, data, reset=True)
    assert [c["call"] for c in fake.calls] == ["launch", "d8", "launch"]
    assert fake.calls[1] == {"call": "d8", "pointer": 0x1000, "word": 0, "count": 1024, "stream": 0x5000}
    fake.calls.clear()
    g = autotune.launcher(histogram, db=db_url, reset=True)
    g(bins, data)
    g(bins, data, reset=False)
    assert [c["call"] for c in fake.calls] == ["d8", "launch", "launch"]


def test_reset_is_refused_for_a_kernel_without_reset_arrays(fake):
    with pytest.raises(InvalidInputError, match="reset=True is not allowed: no array of smem_vec has reset"):
        autotune.launcher("smem_vec", reset=True)


def test_two_dim_shapes_and_scalars(fake, db_url):
    fake.kernel = KERNELS["smem_vec"]
    f = autotune.launcher("smem_vec", db=db_url)
    f(Tensor((300, 100)), Tensor((100, 300)))
    (one,) = fake.launches
    assert (one["rows"], one["cols"], one["ld"], one["batch_stride"]) == (100, 300, 300, 100 * 300)
    assert f.prepared(Tensor((300, 100)), Tensor((100, 300))).launcher.dims == (("rows", 100), ("cols", 300))


@pytest.mark.parametrize("arrays, message", [
    (lambda: (Tensor((64, 100)), Tensor((100, 65))),
     "smem_vec: the arrays disagree on cols = 64 (out axis 0), 65 (src axis 1)"),
    (lambda: (Tensor((64, 100)), Tensor((101, 65))),
     "the arrays disagree on rows = 100 (out axis 1), 101 (src axis 0); cols = 64 (out axis 0), 65 (src axis 1)"),
    (lambda: (Tensor((64,)), Tensor((100, 64))), "out has 1 dimensions (64,); smem_vec takes 2: [cols, rows]"),
    (lambda: (Tensor((64, 100)),), "smem_vec takes 2 arrays (out, src); got 1"),
    (lambda: (Tensor((64, 100)), Tensor((100, 64), "float64")), "src must be float32 (the problem's dtype), not float64"),
    (lambda: (Tensor((64, 100)), Tensor((100, 64), contiguous=False)), "src has strides"),
    (lambda: (Tensor((64, 100)), Tensor((100, 64), device=-1)), "src is a PyTorch tensor on cpu; allowed: a CUDA"),
    (lambda: (Tensor((64, 100)), [[1.0]]), "src of type list is not a GPU array"),
    (lambda: (Tensor((64, 100)), Tensor((100, 64), device=1)), "the arrays are on devices [0, 1]; smem_vec takes"),
    (lambda: (Tensor((64, 100), "bfloat16"), Tensor((100, 64), "bfloat16")), "out: unknown dtype 'bfloat16'"),
], ids=["one dim", "two dims", "ndim", "count", "dtype", "strides", "cpu", "list", "devices", "unsupported dtype"])
def test_bad_arrays_are_one_error_naming_them(fake, db_url, arrays, message):
    fake.kernel = KERNELS["smem_vec"]
    f = autotune.launcher("smem_vec", db=db_url)
    with pytest.raises(InvalidInputError) as info:
        f(*arrays())
    assert message in str(info.value) and "\n" not in str(info.value)
    assert fake.launches == []


def test_a_hot_shape_with_a_non_contiguous_array_is_still_refused(fake, db_url):
    fake.kernel = KERNELS["smem_vec"]
    f = autotune.launcher("smem_vec", db=db_url)
    f(Tensor((64, 100)), Tensor((100, 64)))
    with pytest.raises(InvalidInputError, match="src has strides"):
        f(Tensor((64, 100)), Tensor((100, 64), contiguous=False))
    assert len(fake.launches) == 1


def shaped(tmp_path, shape, **extra):
    doc = {"name": f"scaled_{tmp_path.name[-12:]}", "source": str(ROOT / "examples/histogram/histogram.cu"), "function": "histogram256",
           "problem": {"dims": ["n", "k"], "dtypes": ["uint8"]},
           "args": [{"name": "bins", "array": [256], "dtype": "uint32", "role": "out", "reset": "zeros"},
                    {"name": "in", "array": shape, "role": "in"},
                    {"name": "n", "scalar": "int64", "value": "n * k"}],
           "launch": {"block": [256, 1, 1], "grid": ["cdiv(n * k, 1024)", 1, 1], "shared": 1024},
           "space": {"params": {"BLOCK_SIZE": [256], "COPIES": [1], "MAX_BLOCKS": [264]},
                     "default": {"BLOCK_SIZE": 256, "COPIES": 1, "MAX_BLOCKS": 264}},
           "check": {"reference_kernel": "histogram_reference", "launch": {"block": [256], "grid": [1]}}, **extra}
    return load_kernel(write_kernel(tmp_path / "scaled.toml", doc))


def test_a_dim_no_shape_names_must_be_given(fake, tmp_path, db_url):
    k = shaped(tmp_path, ["n", "2 * k"])
    with pytest.raises(InvalidInputError, match=r"scaled_\w+: dim k is named by no array's shape \(bins \[256\]; in "
                                                r"\[n, 2 \* k\]\); give it: dims=\{'k': \.\.\.\}"):
        autotune.launcher(k)
    fake.kernel = k
    f = autotune.launcher(k, dims={"k": 3}, db=db_url)
    f(Tensor((256,), "uint32"), Tensor((10, 6), "uint8"))
    assert fake.launches[0]["n"] == 30
    with pytest.raises(InvalidInputError, match=r"in must be 10x6 \(\[n, 2 \* k\] at n=10, k=3\), not 10x7"):
        f(Tensor((256,), "uint32"), Tensor((10, 7), "uint8"))


def test_a_grid_over_the_limits_for_the_solved_dims_is_refused(fake, tmp_path, db_url):
    k = shaped(tmp_path, ["n", "k"], launch={"block": [256, 1, 1], "grid": [1, "n", 1], "shared": 0})
    fake.kernel = k
    f = autotune.launcher(k, db=db_url)
    f(Tensor((256,), "uint32"), Tensor((65535, 1), "uint8"))
    with pytest.raises(InvalidInputError, match=r"grid \(1, 65536, 1\) is not allowed \(y=65536 > 65535\)"):
        f(Tensor((256,), "uint32"), Tensor((65536, 1), "uint8"))


def test_the_launcher_is_thread_safe_each_thread_packs_its_own_buffer(fake, histogram, db_url):
    from concurrent.futures import ThreadPoolExecutor

    f = KernelLauncher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32"), Tensor((64,), "uint8")
    f(bins, data)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda i: f(bins, Tensor((64,), "uint8", ptr=0x9000 + i)), range(2)))
    assert len({id(p) for p in f._prepared.values()}) == len(f._prepared) >= 2


class FakeBindings:
    """``cuda.bindings.driver``: CUfunction and CUstream wrap handles; cuLaunchKernel reads the
    packed arguments through the ``void **`` address, as the driver would."""

    class CUresult:
        CUDA_SUCCESS = type("Result", (), {"name": "CUDA_SUCCESS", "__int__": lambda self: 0})()
        CUDA_ERROR_INVALID_VALUE = type("Result", (), {"name": "CUDA_ERROR_INVALID_VALUE", "__int__": lambda self: 1})()

    class CUfunction(int):
        pass

    class CUstream(int):
        pass

    def __init__(self, kernel):
        self.kernel, self.launches, self.fail = kernel, [], False

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, argv, extra):
        import ctypes

        slots = ctypes.cast(argv, ctypes.POINTER(ctypes.c_void_p))
        values = [ctypes.cast(slots[i], ctypes.POINTER(ctypes.c_uint64)).contents.value for i in range(2)]
        self.launches.append((type(f).__name__, int(f), (gx, gy, gz), (bx, by, bz), shared, type(stream).__name__,
                              int(stream), values))
        return (self.CUresult.CUDA_ERROR_INVALID_VALUE if self.fail else self.CUresult.CUDA_SUCCESS,)


def test_the_launch_goes_through_cuda_bindings_where_it_imports(fake, histogram, monkeypatch, db_url):
    import sys
    import types

    from autotune.errors import AutotuneError

    bindings = FakeBindings(histogram)
    cuda = types.ModuleType("cuda")
    cuda.bindings = types.ModuleType("cuda.bindings")
    cuda.bindings.driver = bindings
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.bindings", cuda.bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", bindings)
    monkeypatch.delenv("AUTOTUNE_LAUNCH_API")  # the default (the fake's install chose ctypes)
    f = autotune.launcher(histogram, db=db_url)
    bins, data = Tensor((256,), "uint32", ptr=0x1000), Tensor((64,), "uint8", ptr=0x2000)
    f(bins, data)
    f(bins, Tensor((64,), "uint8", ptr=0x3000), stream=0x77)
    assert f.prepared(bins, data).api == "cuda.bindings" and fake.launches == []
    (kind, function, grid, block, shared, stream_type, stream, values), second = bindings.launches
    assert (kind, function, grid[1:], block[1:], stream_type, stream, values) == \
        ("CUfunction", 0xF00, (1, 1), (1, 1), "CUstream", 0x5000, [0x1000, 0x2000])
    assert second[-2:] == (0x77, [0x1000, 0x3000])
    bindings.fail = True
    with pytest.raises(AutotuneError, match="cuLaunchKernel of histogram256 failed with CUDA error 1 "
                                            r"\(CUDA_ERROR_INVALID_VALUE\)"):
        f(bins, data)
    monkeypatch.setenv("AUTOTUNE_LAUNCH_API", "ctypes")
    g = autotune.launcher(histogram, db=db_url)
    g(bins, data)
    assert g.prepared(bins, data).api == "ctypes" and len(fake.launches) == 1
    monkeypatch.setenv("AUTOTUNE_LAUNCH_API", "cupy")
    with pytest.raises(InvalidInputError, match="AUTOTUNE_LAUNCH_API='cupy' is not allowed"):
        autotune.launcher(histogram, db=db_url)(bins, Tensor((65,), "uint8"))


def test_dims_over_the_kernel_files_max_are_refused(fake, tmp_path, db_url):
    k = shaped(tmp_path, ["n", "k"], problem={"dims": ["n", "k"], "dtypes": ["uint8"], "max": {"n": 100}})
    assert k.max_dims == {"n": 100} and k.largest("n") == 100 and k.largest("k") == 2**31 - 1
    fake.kernel = k
    f = autotune.launcher(k, db=db_url)
    f(Tensor((256,), "uint32"), Tensor((100, 3), "uint8"))
    with pytest.raises(InvalidInputError, match=r"n=101 is over scaled_\w+'s largest n \(100, \[problem\] max"):
        f(Tensor((256,), "uint32"), Tensor((101, 3), "uint8"))


@pytest.mark.parametrize("value, message", [({"m": 5}, "[problem] max m: is not a dim; allowed: n, k"),
                                            ({"n": 0}, "[problem] max n: 0 is not allowed; give an integer 1.."),
                                            ({"n": True}, "[problem] max n: True is not allowed")])
def test_a_bad_max_is_one_error_naming_it(tmp_path, value, message):
    from autotune.errors import KernelFileError

    with pytest.raises(KernelFileError) as info:
        shaped(tmp_path, ["n", "k"], problem={"dims": ["n", "k"], "dtypes": ["uint8"], "max": value})
    assert message in str(info.value)


def test_cupy_arrays_take_their_own_hot_path_on_cupys_current_stream(fake, histogram, monkeypatch, db_url):
    import sys

    from fake_gpu_arrays import fake_cupy, ndarray
    import autotune.runtime.streams as streams_module

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(0x6000))
    monkeypatch.setattr(streams_module, "_cupy_current", None)
    built = []
    real = launch_module._build
    monkeypatch.setattr(launch_module, "_build", lambda *a: built.append(a[0].dims) or real(*a))
    f = autotune.launcher(histogram, db=db_url)
    bins = ndarray((256,), "uint32", ptr=0x1000)
    f(bins, ndarray((100,), "uint8", ptr=0x2000))
    f(bins, ndarray((100,), "uint8", ptr=0x3000), reset=True)
    f(bins, ndarray((100,), "uint8", ptr=0x4000), stream=0x99)
    assert built == [(("n", 100),)] and f._cupy is ndarray
    assert [c["call"] for c in fake.calls] == ["launch", "d8", "launch", "launch"]
    assert [(c["in"], c["stream"]) for c in fake.launches] == [(0x2000, 0x6000), (0x3000, 0x6000), (0x4000, 0x99)]
    with pytest.raises(InvalidInputError, match="in has strides"):
        f(bins, ndarray((100,), "uint8", contiguous=False))
    with pytest.raises(InvalidInputError, match=r"bins must be uint32 \(its kernel file's\), not float32"):
        f(ndarray((256,), "float32"), ndarray((100,), "uint8"))
