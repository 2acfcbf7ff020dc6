"""The CUDA backends' registry, and the ``cuda-bindings`` backend on a fake ``cuda.bindings.driver``
(tests/fake_cuda.py): devices, contexts, memory, errors, argument packing, and a whole
benchmark (compile, verify on the device, time with events) run through it without a GPU."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from autotune.errors import GPUUnavailableError, InvalidInputError, TrialFailed
from autotune.kernel.config import Config
from autotune.kernel.problem import Problem
from autotune.measure import backends
from autotune.measure.backends.base import CudaError, CudaLaunchError, CudaMemoryError, DeviceAllocation
from autotune.measure.backends.bindings import BindingsBackend, pack_arguments
from autotune.measure.sticky import sticky_reason
from autotune.measure.measure_options import MeasureOptions

from fake_cuda import CUresult, FakeCu, chosen_bindings


@pytest.fixture
def registry(monkeypatch):
    """A registry with nothing made and no AUTOTUNE_BACKEND; ``installed`` says what is installed."""
    monkeypatch.setattr(backends, "_made", {})
    monkeypatch.delenv(backends.ENV, raising=False)
    present = {"cuda.bindings": True, "pycuda": True}
    monkeypatch.setattr(backends, "_installed", lambda needs: present.get(needs, True))
    return present


@pytest.fixture
def fake(monkeypatch):
    """The cuda-bindings backend over a FakeCu, chosen (AUTOTUNE_BACKEND) and made."""
    yield from chosen_bindings(monkeypatch)


def test_cuda_bindings_is_the_default_and_pycuda_is_chosen_when_asked_or_alone(registry, monkeypatch):
    assert backends.names() == ["cuda-bindings", "pycuda"]
    assert backends.chosen() == "cuda-bindings"
    monkeypatch.setenv(backends.ENV, "pycuda")
    assert backends.chosen() == "pycuda"
    monkeypatch.delenv(backends.ENV)
    registry["cuda.bindings"] = False
    assert backends.chosen() == "pycuda"  # the only one installed
    registry["pycuda"] = False
    assert backends.chosen() == "cuda-bindings"  # none: its error says how to install it
    with pytest.raises(GPUUnavailableError, match=r"the cuda-bindings backend is not installed \(cuda.bindings is "
                                                  r"missing\): pip install 'cuda-autotune\[cuda\]'$"):
        backends.get()


def test_a_backend_asked_for_but_missing_names_the_one_installed(registry, monkeypatch):
    registry["pycuda"] = False
    monkeypatch.setenv(backends.ENV, "pycuda")
    with pytest.raises(GPUUnavailableError, match=r"pip install 'cuda-autotune\[pycuda\]'; installed: cuda-bindings "
                                                  r"\(AUTOTUNE_BACKEND=cuda-bindings\)"):
        backends.get()
    monkeypatch.setenv(backends.ENV, "opencl")
    with pytest.raises(InvalidInputError, match=r"AUTOTUNE_BACKEND='opencl' is not a backend; allowed: "
                                                r"cuda-bindings, pycuda"):
        backends.chosen()


def test_a_registered_backend_is_made_once_and_use_passes_the_choice_to_child_processes(registry, monkeypatch):
    made = []
    monkeypatch.setattr(backends, "_FACTORIES", dict(backends._FACTORIES))  # undone after the test (copied first:
    backends.register("fake", lambda: made.append(1) or BindingsBackend(FakeCu()), needs="")  # else it stays)
    try:
        first = backends.use("fake")
        assert backends.get() is first and backends.get("fake") is first and made == [1]
        import os

        assert os.environ[backends.ENV] == "fake" and first in backends.created()
    finally:
        backends._FACTORIES.pop("fake", None)


def test_no_driver_on_the_machine_is_a_gpu_unavailable_error():
    with pytest.raises(GPUUnavailableError, match=r"^the CUDA driver \(libcuda.so.1\) cannot be loaded: Failed to dlopen "
                                                  r"libcuda.so.1; autotune needs"):
        BindingsBackend(FakeCu(dlopen_fails=True)).device_count()


def test_devices_contexts_and_identity_come_from_the_driver(fake):
    from autotune.measure.device import current_device, device_count, open_device, query_device

    assert device_count() == 1
    info = query_device(0)
    assert (info.name, info.compute_capability, info.sm_count, info.driver_version, info.cuda_version) == (
        "NVIDIA H100 80GB HBM3", "9.0", 132, "13.0", "13.0")
    assert (info.max_shared_optin, info.l2_bytes, info.pci_bus_id) == (227 * 1024, 50 * 2**20, "0000:1A:00.0")
    with pytest.raises(InvalidInputError, match=r"--device 3 is out of range; allowed: 0..0"):
        query_device(3)
    with pytest.raises(GPUUnavailableError, match="no current CUDA context"):
        current_device()
    with open_device(0) as opened:
        assert fake.contexts == [0] and current_device() == opened == info
    assert fake.contexts == []
    assert fake.calls.count("cuDevicePrimaryCtxRetain") == fake.calls.count("cuDevicePrimaryCtxRelease") == 1


def test_events_wait_by_blocking_so_a_waiting_measurement_leaves_its_core_to_nvcc(fake):
    """Issue 47 (the compile floor): a measuring process waiting for its samples spun on a
    core (the driver's default for an event) that the nvcc runs compiling ahead could use; its
    events are made with CU_EVENT_BLOCKING_SYNC, and still time (the GPU's clock)."""
    from autotune.measure.backends.base import EVENT_BLOCKING_SYNC

    backend = backends.get()
    with backend.primary_context(0):
        start, end = backend.event(), backend.event()
        start.record()
        fake.now += 2.5
        end.record()
        end.synchronize()
        assert end.time_since(start) == 2.5
    assert EVENT_BLOCKING_SYNC == 1 and fake.event_flags == [EVENT_BLOCKING_SYNC] * 2


def test_memory_copies_and_page_locked_host_arrays(fake):
    backend = backends.get()
    buf = backend.mem_alloc(64)
    assert isinstance(buf, DeviceAllocation)
    host = np.arange(16, dtype=np.float32)
    backend.memcpy_htod(buf, host)
    backend.memset_d8(int(buf) + 8, 0, 4)  # element 2 becomes 0.0
    pinned = backend.pagelocked_empty(16, np.float32)
    backend.memcpy_dtoh(pinned, buf)
    want = host.copy()
    want[2] = 0
    np.testing.assert_array_equal(pinned, want)
    other = backend.mem_alloc(64)
    backend.memcpy_dtod(other, buf, 64)
    backend.memset_d32_async(other, 0x3F800000, 2)  # 1.0f, twice
    got = np.empty(16, np.float32)
    backend.memcpy_dtoh(got, other)
    np.testing.assert_array_equal(got[:3], [1, 1, 0])
    buf.free()
    buf.free()  # once only
    assert fake.freed == [int(buf)]
    assert backend.mem_get_info()[1] == fake.drv.memory.size


def test_driver_errors_keep_the_drivers_text_and_their_kind(fake):
    backend = backends.get()
    fake.refuse["cuMemAlloc"] = CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(CudaMemoryError, match="^cuMemAlloc failed: out of memory$") as info:
        backend.mem_alloc(1 << 40)
    assert info.value.code == 2 and backend.MemoryError is CudaMemoryError
    fake.refuse = {"cuCtxSynchronize": CUresult.CUDA_ERROR_ILLEGAL_ADDRESS}
    with pytest.raises(CudaError) as info:
        backend.synchronize()
    assert not isinstance(info.value, CudaLaunchError)
    assert sticky_reason(str(info.value)) == "illegal_address: an illegal memory access was encountered"
    from autotune.measure.sticky import driver_errors

    assert CudaError in driver_errors()


def test_arguments_are_packed_at_their_alignment_behind_a_pointer_array():
    buf, argv = pack_arguments("PiqfdI", [np.uintp(0x1000), np.int32(-3), np.int64(1 << 40), np.float32(1.5),
                                         2.25, 7])
    raw = bytes(buf)
    assert struct.unpack_from("=Qi4xqfxxxxdI", raw) == (0x1000, -3, 1 << 40, 1.5, 2.25, 7)
    base = ctypes.addressof(buf)
    assert [p - base for p in argv] == [0, 8, 16, 24, 32, 40]
    with pytest.raises(ValueError, match="allowed"):
        BindingsBackend(FakeCu()).load_module(b"").function("not_byte", "PX")


def transpose_model(itemsize: int, wrong_tile: int | None = None):
    """The NumPy model of transpose_smem for the fake driver (a config with TILE_DIM ``wrong_tile`` writes nothing)."""
    def run(drv, grid, block, args):
        out, src, rows, cols = args[:4]
        if block[0] == wrong_tile:
            return
        word = f"u{itemsize}"
        drv.view(out, (cols, rows), word)[:] = drv.view(src, (rows, cols), word).T
    return run


def test_a_benchmark_compiles_verifies_and_times_through_the_cuda_bindings_backend(fake, monkeypatch):
    """The whole measurement on the fake driver: the module loaded and the function's attributes
    read, the launch packed, the comparison kernels run on the device, the events timed."""
    from autotune.measure import benchmark, compile as compile_module, device_compare

    fake.kernels["transpose_smem"] = ("PPiiqq", transpose_model(4, wrong_tile=16))
    fake.launch_ms = 0.25
    monkeypatch.setattr(compile_module, "build_cubin", lambda *a, **k: (b"cubin", {"registers": 32}, True))
    monkeypatch.setattr(device_compare, "compare_cubin", lambda arch: b"compare")
    problem = Problem.of("smem_pad", {"rows": 40, "cols": 72}, "float32")
    with benchmark.open_benchmark(0, problem, MeasureOptions(repeats=20, warmup=2, seed=1, ci=0),
                                  bounds=False) as bench:
        good = Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0})
        m = bench.measure(good)
        assert m.median_ms == pytest.approx(0.25) and m.registers == 32 and m.occupancy == 1.0  # 8 blocks of 8 warps of 64
        names = [name for name, *_ in fake.launched]
        assert "transpose_smem" in names and any(n.startswith("exact_u") for n in names)
        _, grid, block, shared, args = next(launch for launch in fake.launched if launch[0] == "transpose_smem")
        assert (grid, block, args[2:]) == ((6, 1, 1), (32, 8, 1), (40, 72, 72, 40 * 72))
        with pytest.raises(TrialFailed) as info:
            bench.measure(Config.of("smem_pad", {"TILE_DIM": 16, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0}))
        assert info.value.status == "wrong_result" and "differ from the reference" in info.value.reason
    assert fake.contexts == []
