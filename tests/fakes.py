"""A fake timer for the tuner: a deterministic bandwidth landscape with planted failures."""

from __future__ import annotations

import zlib

from autotune.kernel.config import Config
from autotune.errors import TrialFailed
from autotune.measure.measurement import Measurement

OPTIMUM = {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 2, "DIAGONAL": 0}
PHASES_MS = {"compile": 800.0, "load": 2.0, "verify": 50.0, "time": 100.0}
"""What the fake benchmark says each phase of a measurement took, ms (a failure: the compile only)."""


class FakeTimer:
    """``measure(config)`` like :meth:`autotune.measure.benchmark.Benchmark.measure`, without a GPU.

    Bandwidth peaks at :data:`OPTIMUM`. Configs in ``failures`` raise ``TrialFailed`` with
    the given status; ``fast_failures`` would be the fastest of all, if they counted.
    """

    def __init__(self, failures: dict[str, str] | None = None, memcpy_gbps: float = 3000.0) -> None:
        self.failures = failures or {}
        self.memcpy_gbps = memcpy_gbps
        self.calls: list[Config] = []

    def gbps(self, config: Config) -> float:
        m = config.as_dict()
        penalty = sum(abs(m[k].bit_length() - OPTIMUM[k].bit_length()) for k in OPTIMUM if k in m)
        return 2800.0 - 150.0 * penalty

    def __call__(self, config: Config) -> Measurement:
        self.calls.append(config)
        if config.key in self.failures:
            failure = TrialFailed(self.failures[config.key], f"planted failure of {config.key}")
            failure.phases = {"compile": PHASES_MS["compile"]}
            raise failure
        gbps = self.gbps(config)
        ms = 2 * 1024 * 1024 * 4 / (gbps * 1e9) * 1e3
        return Measurement(ms, ms * 0.99, ms * 1.02, gbps, 100 * gbps / self.memcpy_gbps, 20, 4000, 50,
                           phases=dict(PHASES_MS))


def fake_retime(noise: float = 0.002, tie_band: float = 0.0):
    """``retime(configs, rounds)`` for the fake landscape: the pooled median follows
    :meth:`FakeTimer.gbps`; each round wobbles by up to ``noise`` (relative, deterministic);
    configs within ``tie_band`` of the best are made equally fast."""
    from autotune.measure.measurement import Retiming

    timer = FakeTimer()

    def retime(configs, rounds):
        out = []
        best = max(timer.gbps(c) for c in configs)
        for c in configs:
            gbps = timer.gbps(c)
            gbps = best if best - gbps <= tie_band * best else gbps
            ms = 2 * 1024 * 1024 * 4 / (gbps * 1e9) * 1e3
            digest = zlib.crc32(c.key.encode())  # the same in every process (hash() of a str is not)
            wobble = [noise * (((digest >> (3 * r)) % 7) / 3.0 - 1.0) for r in range(rounds)]
            out.append(Retiming(c, tuple(ms * (1 + w) for w in wobble), ms))
        return out

    return retime


MATMUL_OPTIMUM = {"TILE_WIDTH": 32, "BLOCK_X": 32, "BLOCK_Y": 8, "BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4}


class FakeMatmulBench:
    """A :class:`~autotune.measure.benchmark.Benchmark` of a matrix product without a GPU:
    GFLOP/s peak at :data:`MATMUL_OPTIMUM` (macros the kernel has), no memcpy or copy bound."""

    memcpy_gbps = copy_gbps = None
    l2_mode = "single"
    companion = False

    def __init__(self, device, m: int, n: int, k: int, dtype, kernel=None) -> None:
        self.device, self.rows, self.cols, self.depth, self.dtype = device, m, n, k, dtype
        self.kernel, self.dim_values = kernel, {"m": m, "n": n, "k": k}
        self.calls: list[Config] = []

    def ms(self, config: Config) -> float:
        m = config.as_dict()
        penalty = sum(abs(m[k].bit_length() - MATMUL_OPTIMUM[k].bit_length()) for k in MATMUL_OPTIMUM if k in m)
        gflops = 20000.0 - 2000.0 * penalty
        return 2.0 * self.rows * self.cols * self.depth / (gflops * 1e9) * 1e3

    def measure(self, config: Config) -> Measurement:
        self.calls.append(config)
        ms = self.ms(config)
        m, n, k = self.rows, self.cols, self.depth
        gflops = 2.0 * m * n * k / (ms * 1e-3) / 1e9
        return Measurement(ms, ms * 0.99, ms * 1.02, None, None, 64, 8192, 50, None, 0.5, gflops)

    def retime(self, configs, rounds):
        from autotune.measure.measurement import Retiming

        return [Retiming(c, tuple(self.ms(c) for _ in range(rounds)), self.ms(c)) for c in configs]


# --- a fake device: memory, copies, the comparison kernels, CUDA events --------------------------

import math  # noqa: E402

import numpy as np  # noqa: E402


class Allocation(int):
    """A device address that can be freed, like ``pycuda.driver.DeviceAllocation``."""

    def free(self) -> None:
        pass


class FakeDriver:
    """A CUDA backend (:class:`autotune.measure.backends.base.Backend`'s memory, copies and modules)
    over one flat byte array: a device address is an offset into ``memory``.

    ``mem_alloc`` raises :class:`FakeDriver.MemoryError` past ``size`` bytes (like a full GPU);
    ``load_module`` gives :class:`FakeCompareModule` (the kernels of
    ``autotune/measure/device_compare.cu``, in NumPy); ``launches`` counts its launches and
    ``copies`` the bytes moved host to device, device to host and device to device.
    """

    class LaunchError(Exception):
        pass

    class MemoryError(Exception):
        pass

    def synchronize(self) -> None:
        pass

    def __init__(self, size: int = 1 << 21) -> None:
        self.memory = np.zeros(size, np.uint8)
        self.top = 256
        self.launches: list[str] = []
        self.copies = {"htod": 0, "dtoh": 0, "dtod": 0}

    def mem_alloc(self, n: int) -> Allocation:
        need = -(-n // 256) * 256
        if self.top + need > self.memory.size:
            raise FakeDriver.MemoryError("cuMemAlloc failed: out of memory")
        address = Allocation(self.top)
        self.top += need
        return address

    def memset_d8(self, address: int, value: int, n: int) -> None:
        assert isinstance(address, int) and 0 <= value <= 255
        self.memory[address:address + n] = value

    def memcpy_htod(self, address: int, host: np.ndarray) -> None:
        data = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        self.memory[address:address + data.size] = data
        self.copies["htod"] += data.size

    def memcpy_dtoh(self, host: np.ndarray, address: int) -> None:
        host.reshape(-1).view(np.uint8)[:] = self.memory[address:address + host.nbytes]
        self.copies["dtoh"] += host.nbytes

    def memcpy_dtod(self, dst: int, src: int, n: int) -> None:
        self.memory[dst:dst + n] = self.memory[src:src + n].copy()
        self.copies["dtod"] += n

    def memset_d8_async(self, address: int, value: int, n: int, stream=None) -> None:
        self.memory[address:address + n] = value

    def memset_d16_async(self, address: int, value: int, n: int, stream=None) -> None:
        self.memory[address:address + 2 * n].view(np.uint16)[:] = value

    def memset_d32_async(self, address: int, value: int, n: int, stream=None) -> None:
        self.memory[address:address + 4 * n].view(np.uint32)[:] = value

    def memset_d2d32_async(self, address: int, pitch: int, value: int, width: int, height: int, stream=None) -> None:
        for row in range(height):  # width 4-byte words at the start of each of height rows, pitch bytes apart
            at = address + row * pitch
            self.memory[at:at + 4 * width].view(np.uint32)[:] = value

    def memcpy_dtod_async(self, dst: int, src: int, n: int, stream=None) -> None:
        self.memcpy_dtod(dst, src, n)

    def view(self, address: int, shape: tuple[int, ...], dtype) -> np.ndarray:
        n = math.prod(shape) * np.dtype(dtype).itemsize
        return self.memory[address:address + n].view(dtype).reshape(shape)

    def load_module(self, cubin: bytes) -> "FakeCompareModule":
        return FakeCompareModule(self)


class FakeCompareModule:
    """The comparison kernels of ``device_compare.cu`` computed in NumPy on a :class:`FakeDriver`'s memory."""

    def __init__(self, drv: FakeDriver) -> None:
        self.drv = drv

    def function(self, name: str, signature: str) -> "_FakeCompare":
        return _FakeCompare(self.drv, name, signature)


class _FakeCompare:
    def __init__(self, drv: FakeDriver, name: str, signature: str) -> None:
        self.drv, self.name, self.signature = drv, name, signature

    def launch(self, grid, block, args, shared: int = 0) -> None:
        assert len(args) == len(self.signature)
        self.drv.launches.append(self.name)
        drv, name, result = self.drv, self.name, self.drv.view(int(args[-1]), (4,), np.uint64)
        if name == "not_byte":
            p, n, value = int(args[0]), int(args[1]), int(args[2])
            pairs = [np.flatnonzero(drv.memory[p:p + n] != value)]
        elif name.startswith("exact_u"):
            size, n = int(name[7:]), int(args[2])
            got, exp = (drv.view(int(a), (n,), f"u{size}") for a in args[:2])
            pairs = [np.flatnonzero(got != exp)]
        elif name.startswith("norm_"):
            dtype, n = np.dtype(name[len("norm_"):]), int(args[2])
            g = drv.view(int(args[0]), (n,), dtype).astype(np.float64)
            e = drv.view(int(args[1]), (n,), np.float64)
            finite = np.isfinite(g)
            bad = np.flatnonzero(~finite)
            if bad.size:
                result[0], result[1] = bad.size, bad[0]
            result[2:] = np.array([np.sum((g[finite] - e[finite]) ** 2), np.sum(e * e)]).view(np.uint64)
            return
        else:
            dtype, n = np.dtype(name[len("tolerance_"):]), int(args[2])
            g = drv.view(int(args[0]), (n,), dtype).astype(np.float64)
            e = drv.view(int(args[1]), (n,), np.float64)
            finite = np.isfinite(g)
            with np.errstate(invalid="ignore"):
                off = finite & (np.abs(g - e) > float(args[3]) + float(args[4]) * np.abs(e))
            pairs = [np.flatnonzero(~finite), np.flatnonzero(off)]
        for k, hits in enumerate(pairs):
            if hits.size:
                result[2 * k] += hits.size
                result[2 * k + 1] = min(int(result[2 * k + 1]), int(hits[0]))


class FakeEvent:
    """A CUDA event of :class:`FakeClock`: records the clock's time."""

    def __init__(self, clock: "FakeClock") -> None:
        self.clock, self.at = clock, None

    def record(self) -> None:
        self.at = self.clock.now

    def synchronize(self) -> None:
        pass

    def time_since(self, start: "FakeEvent") -> float:
        return self.at - start.at


class FakeClock:
    """A ``drv`` for :mod:`autotune.measure.timing`: ``Event`` reads a clock in ms that each
    launch (``launch(ms)``) advances; ``launched`` counts launches."""

    def __init__(self) -> None:
        self.now, self.launched = 0.0, 0

    def event(self) -> FakeEvent:
        return FakeEvent(self)

    def launch(self, ms: float):
        """A launch taking ``ms`` on the fake GPU; ``ms`` may be a callable of the launch number."""
        def run() -> None:
            self.now += ms(self.launched) if callable(ms) else ms
            self.launched += 1
        return run


class FakeAnyBench:
    """A benchmark of any kernel's problem without a GPU: a config's time grows with its
    distance from a planted optimum (each macro's value in :data:`OPTIMUM` where it has one,
    else the largest value of its space), in powers of two: ``base_ms * (1 + 0.2 * distance)``,
    ``base_ms`` growing with the problem's size. Configs of ``failures`` (config key -> status)
    fail as planted; ``calls`` lists what was measured and re-timed."""

    memcpy_gbps = copy_gbps = None
    l2_mode = "single"
    companion = False

    def __init__(self, device, problem, failures: dict[str, str] | None = None, also=()) -> None:
        self.device, self.problem, self.also = device, problem, tuple(also)
        self._others: dict[int, FakeAnyBench] = {}
        space = problem.kernel.space()
        self.optimum = {name: OPTIMUM.get(name, max(values)) for name, values in space.params}
        size = 1
        for _, v in problem.dims:
            size *= v
        self.base_ms = 0.01 + size * 1e-7
        self.failures = failures or {}
        self.calls: list[tuple[str, str]] = []

    def ms(self, config: Config) -> float:
        m = config.as_dict()
        distance = sum(abs(max(1, m[k]).bit_length() - max(1, v).bit_length()) for k, v in self.optimum.items()
                       if k in m)
        return self.base_ms * (1 + 0.2 * distance)

    def measure(self, config: Config) -> Measurement:
        self.calls.append(("measure", config.key))
        if config.key in self.failures:
            failure = TrialFailed(self.failures[config.key], f"planted failure of {config.key}")
            failure.phases = {"compile": PHASES_MS["compile"]}
            raise failure
        ms = self.ms(config)
        return Measurement(ms, ms * 0.99, ms * 1.02, None, None, 32, 0, 50, phases=dict(PHASES_MS))

    def at(self, i: int) -> "FakeAnyBench":
        """The benchmark of the other shape ``also[i]`` (``Benchmark.at``); it records its calls
        in this one's :attr:`calls` too, with the shape's dims."""
        if i not in self._others:
            other = self.also[i]
            other = other.resolve() if hasattr(other, "resolve") else other
            self._others[i] = type(self)(self.device, other, self.failures)
            self._others[i].companion = True  # measured alongside another shape's search
        return self._others[i]

    def measure_at(self, i: int, config: Config) -> Measurement:
        self.calls.append(("measure_at", f"{i} {config.key}"))
        return self.at(i).measure(config)

    def retime_at(self, i: int, configs, rounds):
        self.calls.append(("retime_at", f"{i} {','.join(c.key for c in configs)}"))
        return self.at(i).retime(configs, rounds)

    def retime(self, configs, rounds):
        from autotune.measure.measurement import Retiming

        self.calls.append(("retime", ",".join(c.key for c in configs)))
        for c in configs:
            if c.key in self.failures:
                raise TrialFailed(self.failures[c.key], f"planted failure of {c.key}")
        return [Retiming(c, tuple(self.ms(c) for _ in range(rounds)), self.ms(c)) for c in configs]


def no_backend(monkeypatch) -> None:
    """Neither CUDA backend installed (``import cuda.bindings`` and ``import pycuda`` fail), and
    no backend made yet in this process."""
    import sys

    from autotune.measure import backends

    for name in ("pycuda", "pycuda.driver", "cuda.bindings", "cuda.bindings.driver"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delenv(backends.ENV, raising=False)
    monkeypatch.setattr(backends, "_made", {})


NO_BACKEND = "the cuda-bindings backend is not installed (cuda.bindings is missing): pip install 'cuda-autotune[cuda]'"
"""The error a GPU command gives where no backend is installed."""
