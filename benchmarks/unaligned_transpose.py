"""Transpose kernels on unaligned (and aligned) shapes, at given configs, on one GPU.

For each shape and dtype: every kernel at each config given (``KERNEL:MACRO=V,...``; a kernel
name alone is its default config), measured through autotune's benchmark (verified bit for bit,
then median of ``--repeats`` CUDA-event-timed launches), beside the device memcpy of the same
bytes. Prints one line per measurement: ms, GB/s, % of memcpy, registers. Run on the GPU
machine:

    python benchmarks/unaligned_transpose.py --shape 5000x7001 --dtype int8 \
        --config smem_vec --config smem_pad --config smem_vec_realign:WIDE=1 --config smem_bytes

benchmarks/unaligned_transpose.sh runs it for the 1- and 2-byte kernels (smem_bytes against
smem_vec_realign, smem_pad and smem_vec at 5000x7001 and 3001x7919, int8 and float16).
"""

import argparse
import datetime
import os
from concurrent.futures import ThreadPoolExecutor

from autotune.errors import TrialFailed
from autotune.kernel.problem import Problem
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.measure.benchmark import Benchmark
from autotune.measure.device import open_device
from autotune.measure.measure_options import MeasureOptions


def parse_config(text: str) -> Config:
    """``KERNEL`` or ``KERNEL:MACRO=V,...`` -> the kernel's default with those macros changed."""
    name, _, rest = text.partition(":")
    macros = dict(KERNELS[name].defaults)
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        macros[key] = int(value)
    return Config.of(name, macros)


def prebuild(configs, dtypes) -> None:
    """Every config (and copy_row, the bound) for every dtype it takes into the on-disk cubin cache,
    one nvcc per core, so that the measurements below do not wait on nvcc one build at a time."""
    from autotune.measure.compile import build_cubin

    jobs = {(c.kernel, c, d) for c in configs for d in dtypes if d in KERNELS[c.kernel].dtypes}
    jobs |= {("copy_row", KERNELS["copy_row"].default_config(), d) for d in dtypes}

    def build(job):
        name, config, dtype = job
        try:
            build_cubin(KERNELS[name], config, get_dtype(dtype), "sm_90")
        except TrialFailed:
            pass  # measured again below, where the failure is printed

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(build, sorted(jobs, key=str)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", required=True, help="ROWSxCOLS (repeatable)")
    ap.add_argument("--dtype", action="append", required=True, help="dtype (repeatable)")
    ap.add_argument("--config", action="append", required=True, help="KERNEL[:MACRO=V,...] (repeatable)")
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    configs = [parse_config(c) for c in args.config]
    prebuild(configs, args.dtype)
    with open_device(0) as device:
        print(f"# {device.name}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
              f"median of {args.repeats} launches; % of a device memcpy of the same bytes")
        for shape in args.shape:
            rows, cols = (int(v) for v in shape.split("x"))
            for dtype in args.dtype:
                benches = {}
                try:
                    for config in configs:
                        k = KERNELS[config.kernel]
                        if dtype not in k.dtypes:
                            continue
                        if k.name not in benches:
                            benches[k.name] = Benchmark(device, Problem.of(k, {"rows": rows, "cols": cols}, get_dtype(dtype)),
                                                        MeasureOptions(repeats=args.repeats, seed=0, ci=0))
                        try:
                            m = benches[k.name].measure(config)
                            print(f"{shape:>11} {dtype:8} {m.median_ms:8.4f} ms {m.gbps:7.0f} GB/s "
                                  f"{m.pct_memcpy:6.1f}% {m.registers:4d} reg  {config}", flush=True)
                        except TrialFailed as failure:
                            print(f"{shape:>11} {dtype:8} failed: {failure.status}: {failure.reason}  {config}",
                                  flush=True)
                finally:
                    for bench in benches.values():
                        bench.free()


if __name__ == "__main__":
    main()
