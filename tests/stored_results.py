"""Results written straight into a store (no search), shared by the sharing, T4, replay and
bad-input tests: two devices, a tuning key of a catalog kernel, its valid configs, and a
finished search with one ok trial per (config, GB/s)."""

from __future__ import annotations

from autotune.kernel.catalog import get_kernel
from autotune.kernel.config import Config
from autotune.measure.device import DeviceInfo
from autotune.measure.measurement import Decision, Measurement, Retiming
from autotune.store.key import ProblemKey, TuningKey
from autotune.store.repository import Store

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0",
                  uuid="GPU-11111111-2222-3333-4444-555555555555")
A100 = DeviceInfo("NVIDIA A100-SXM4-40GB", "8.0", 108, 42_000_000_000, "12.4", "12.4")


def key(kernel: str = "smem_pad", device: DeviceInfo = H100, rows: int = 1024, cols: int = 1024,
        **changes) -> TuningKey:
    k = get_kernel(kernel)
    fields = dict(kernel=kernel, source_hash=k.source_hash, spec_hash=k.spec_hash,
                  dims=(("rows", rows), ("cols", cols)), dtype="float32", nvcc_version="13.0.88",
                  compile_flags=f"-O3 -arch={device.arch}")
    fields.update(changes)
    return key_of(device, **fields)


def key_of(device: DeviceInfo, **fields) -> TuningKey:
    """The key of ``fields``: the stored problem's (kernel, source_hash, spec_hash, dims, dtype)
    and the toolchain's (nvcc_version, compile_flags)."""
    problem = ProblemKey(**{n: fields.pop(n) for n in ("kernel", "source_hash", "spec_hash", "dims", "dtype")})
    return TuningKey(device, problem, **fields)


def configs(kernel: str = "smem_pad") -> list[Config]:
    """Valid configs of the kernel, the default first (never a hard-coded macro set)."""
    default = get_kernel(kernel).default_config()
    return [default] + [c for c in get_kernel(kernel).space().configs() if c != default]


def measured(gbps: float, rows: int = 1024, cols: int = 1024, itemsize: int = 4) -> Measurement:
    ms = 2 * rows * cols * itemsize / (gbps * 1e9) * 1e3
    return Measurement(median_ms=ms, min_ms=ms * 0.98, max_ms=ms * 1.05, gbps=gbps, pct_memcpy=gbps / 30,
                       registers=24, shared_bytes=4224, launches=50, pct_copy=gbps / 29,
                       samples=40, ci_low_ms=ms * 0.995, ci_high_ms=ms * 1.005, energy_j=gbps * 1e-6)


def tune(store: Store, k: TuningKey, results: list[tuple[Config, float]], *, memcpy_gbps=3000.0,
         copy_gbps=2900.0, retime: bool = False) -> None:
    """A finished search of ``k`` with one ok trial per (config, GB/s); with ``retime`` the
    fastest is then made the winner of a re-timing, with pooled figures and a tie group."""
    sid = store.start_search(k, study_name=k.study_name, sampler="tpe", seed=1, memcpy_gbps=memcpy_gbps,
                             copy_gbps=copy_gbps, l2_mode="rotating", clocks={"sm_mhz": 1980})
    for number, (config, gbps) in enumerate(results):
        store.record_trial(sid, number, config, status="ok", measurement=measured(gbps, *k.shape))
    store.record_trial(sid, len(results), configs(k.kernel)[-1], status="compile_error", reason="planted")
    store.finish_search(sid, "finished")
    if retime:
        ranked = sorted(results, key=lambda r: -r[1])
        ret = [Retiming(c, (0.7001 + i / 1000, 0.7003 + i / 1000), 0.7002 + i / 1000) for i, (c, _) in
               enumerate(ranked[:2])]
        store.set_winner(k, Decision(winner=ret[0], fastest=ret[0], tie_group=tuple(ret)), rounds=2)
