"""A prepared transpose launch, without a GPU: what reaches ``cuLaunchKernel`` (argument values
through the packed ``void **``, grid, block, stream), per call and per chunk of a large batch."""

import ctypes

import pytest

from autotune.kernel.problem import Problem
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dims import make_dims
from autotune.kernel.dtypes import get_dtype
from autotune.runtime import driver
from autotune.runtime.compiled import CTYPES, Launcher
from autotune.runtime.transpose.prepared import MAX_GRID_Z, PreparedTranspose


class FakeDriver:
    """Records every cuLaunchKernel: the kernel's argument values read back through argv."""

    def __init__(self, kernel):
        self.kernel, self.launches = kernel, []

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, argv, extra):
        slots = ctypes.cast(argv, ctypes.POINTER(ctypes.c_void_p))
        values = {}
        for i, a in enumerate(self.kernel.args):
            kind = ctypes.c_void_p if not hasattr(a, "ctype") else CTYPES[a.ctype]
            values[a.name] = ctypes.cast(slots[i], ctypes.POINTER(kind)).contents.value
        self.launches.append({"function": function.value, "grid": (gx.value, gy.value, gz.value),
                              "block": (bx.value, by.value, bz.value), "stream": stream.value, **values})
        return 0


@pytest.fixture
def prepared(monkeypatch):
    k, dt = KERNELS["smem_vec"], get_dtype("float32")
    dims = make_dims(k.dims, (100, 300), "smem_vec")
    config = k.default_config()
    grid, block, shared = k.geometry(config, dict(dims), dt)
    scalars = {"rows": ctypes.c_int32(100), "cols": ctypes.c_int32(300), "ld": ctypes.c_int64(300),
               "batch_stride": ctypes.c_int64(30000)}
    fake = FakeDriver(k)
    monkeypatch.setattr(driver, "libcuda", lambda: fake)
    launcher = Launcher(Problem.of(k, dims, dt), None, grid, block, shared, 0xF00, 0xBA5, [], scalars)
    return PreparedTranspose(launcher, 4), fake, grid, block


def test_a_call_refills_pointers_pitch_and_stream_and_keeps_the_rest(prepared):
    p, fake, grid, block = prepared
    assert p.pitched and p.matrix_bytes == 100 * 300 * 4
    p(0x10000, 0x20000, 300, 1, 0, 0)
    p(0x30000, 0x40000, 512, 3, 100 * 512 + 8, 77)
    import gc

    gc.collect()  # the argument slots must outlive the constructor's locals
    p(0x50000, 0x60000, 300, 1, 0, 0)
    one, batch, again = fake.launches
    assert one == {"function": 0xF00, "grid": grid, "block": block, "stream": None, "out": 0x10000, "src": 0x20000,
                   "rows": 100, "cols": 300, "ld": 300, "batch_stride": 0}
    assert batch["grid"] == (grid[0], grid[1], 3) and batch["stream"] == 77
    assert (batch["ld"], batch["batch_stride"], batch["rows"], batch["cols"]) == (512, 100 * 512 + 8, 100, 300)
    assert again["grid"] == grid and (again["out"], again["src"], again["ld"]) == (0x50000, 0x60000, 300)


def test_a_batch_larger_than_a_grid_in_z_is_launched_in_chunks(prepared):
    p, fake, grid, _ = prepared
    p(0x10000, 0x20000, 300, MAX_GRID_Z + 5, 40000, 0)
    first, second = fake.launches
    assert first["grid"][2] == MAX_GRID_Z and second["grid"][2] == 5
    assert second["out"] == 0x10000 + MAX_GRID_Z * 100 * 300 * 4
    assert second["src"] == 0x20000 + MAX_GRID_Z * 40000 * 4
