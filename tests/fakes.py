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
