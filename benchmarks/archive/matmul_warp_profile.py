"""One launch of a matmul_warp config and one of cuBLAS, for Nsight Compute.

Picks the fastest float32 config of the harness's final rounds at SHAPE from RESULTS (a
results.jsonl of benchmarks/matmul_harness.py) unless --config gives one (JSON), warms both
up, then launches each once between cudaProfilerStart/Stop, so that
``ncu --profile-from-start off`` profiles exactly those two kernels.

    ncu --profile-from-start off ... python3 benchmarks/matmul_warp_profile.py --results R --cubins DIR
"""
from __future__ import annotations

import os

os.environ["CUPY_TF32"] = "0"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matmul_warp_build import name_of  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path)
    ap.add_argument("--config")
    ap.add_argument("--cubins", type=Path, required=True)
    ap.add_argument("--shape", default="4096,4096,4096")
    a = ap.parse_args()
    M, N, K = (int(x) for x in a.shape.split(","))
    if a.config:
        cfg = json.loads(a.config)
    else:
        rows = [json.loads(l) for l in a.results.read_text().splitlines()]
        rows = [r for r in rows if r["stage"] == "final" and r["dtype"] == "float32" and r["name"] != "cublas"
                and r["shape"] == [M, N, K]]
        cfg = min(rows, key=lambda r: r["ms"])["config"]
    print("profiling", cfg, flush=True)
    fn = cp.RawModule(path=str(a.cubins / f"{name_of(cfg, 'float32')}.cubin")).get_function("matmul_warp")
    rs = cp.random.RandomState(3)
    A = rs.uniform(-1, 1, (M, K), dtype=cp.float32)
    B = rs.uniform(-1, 1, (K, N), dtype=cp.float32)
    C = cp.empty((M, N), dtype=cp.float32)
    grid = (-(-M // cfg["BM"])) * (-(-N // cfg["BN"]))
    block = 32 * (cfg["BM"] // cfg["WM"]) * (cfg["BN"] // cfg["WN"])

    def ours():
        fn((grid,), (block,), (C, A, B, np.int32(M), np.int32(N), np.int32(K)))

    for _ in range(3):
        ours()
        cp.matmul(A, B, out=C)
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.runtime.profilerStart()
    ours()
    cp.matmul(A, B, out=C)
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.runtime.profilerStop()


if __name__ == "__main__":
    main()
