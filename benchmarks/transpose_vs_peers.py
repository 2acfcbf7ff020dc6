"""Transpose against its peers on one GPU, in one run: memcpy, PyTorch, CuPy, the classic
padded 32x8 shared-memory kernel, and autotune's tuned best.

For each dtype and shape, every method moves the same C-contiguous rows x cols input into
a cols x rows output (memcpy: a same-size device-to-device copy, the bound), timed with
CUDA events on the default stream. The launches of a batch are queued behind a GPU sleep
(``torch.cuda._sleep``) 1.5 times as long as Python took to queue the same batch, so the
events time the GPU's back-to-back work, not Python's launch overhead; each figure is the
median over BATCHES batches of the mean time per launch. Effective bandwidth GB/s = 2 * rows * cols * itemsize / time (read + write).

Every output is checked against NumPy once before timing. Ours is ``autotune.transpose``
(kernel ``smem_vec``) with the config that ``autotune.lookup`` gives for the shape and dtype
from the tuned database (``--db``): the table says which rung of the lookup ladder served it.
The classic kernel is ``smem_pad`` at its default config (TILE_DIM=32, BLOCK_ROWS=8, IPAD=1).

    python3 benchmarks/transpose_vs_peers.py --db sqlite:///tuned.db [--dtypes float32,...] [--sizes ...]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
import time

import numpy as np

BATCHES = 7
WORK_PER_BATCH_S = 0.02
SHAPES = [(4096, 4096), (8192, 8192), (16384, 16384), (8192, 16384), (5000, 7001)]
DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64"]


def _timer(torch):
    """``per_launch_ms(fn, launches)``: GPU time per call of ``fn``, with the batch queued behind a
    GPU sleep that outlasts the time Python takes to queue it (measured, times 1.5)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10**8)
    end.record()
    end.synchronize()
    cycles_per_ms = 10**8 / start.elapsed_time(end)

    def per_launch_ms(fn, launches: int) -> float:
        t = time.perf_counter()
        for _ in range(launches):
            fn()
        queue_ms = (time.perf_counter() - t) * 1e3
        torch.cuda.synchronize()
        times = []
        for _ in range(BATCHES):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(int(1.5 * queue_ms * cycles_per_ms) + 10**6)  # GPU busy while Python queues
            start.record()
            for _ in range(launches):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / launches)
        return statistics.median(times)

    return per_launch_ms


def _launches(ms_estimate: float) -> int:
    return int(min(200, max(10, WORK_PER_BATCH_S * 1e3 / max(ms_estimate, 1e-3))))


def _methods(torch, cupy, autotune, x, y, db_tuned, db_classic):
    xc = cupy.asarray(x)
    nbytes = x.numel() * x.element_size()
    return {
        "memcpy (device to device)": lambda: cupy.cuda.runtime.memcpyAsync(y.data_ptr(), x.data_ptr(), nbytes, 3,
                                                                          0) and None,
        "torch x.t().contiguous()": lambda: x.t().contiguous(),
        "cupy ascontiguousarray(x.T)": lambda: cupy.ascontiguousarray(xc.T),
        "classic smem_pad 32x8": lambda: autotune.transpose(x, kernel="smem_pad", out=y, db=db_classic),
        "autotune smem_vec (tuned)": lambda: autotune.transpose(x, out=y, db=db_tuned),
    }


def _check(name, fn, torch, ref) -> None:
    got = fn()
    torch.cuda.synchronize()
    if got is not None and not torch.equal(torch.as_tensor(got, device="cuda"), ref):
        raise SystemExit(f"{name} gave a wrong transpose")


def run(dtypes, shapes, db_tuned) -> list[dict]:
    import cupy
    import torch

    import autotune

    db_classic = f"sqlite:///{tempfile.mkdtemp()}/empty.db"
    per_launch_ms = _timer(torch)
    rows_out = []
    for dtype in dtypes:
        for rows, cols in shapes:
            a = torch.from_numpy((np.random.default_rng(0).standard_normal((rows, cols)) * 100).astype(dtype))
            x = a.cuda()
            y = torch.empty((cols, rows), dtype=x.dtype, device="cuda")
            ref = x.t().contiguous()
            methods = _methods(torch, cupy, autotune, x, y, db_tuned, db_classic)
            nbytes = 2 * rows * cols * x.element_size()
            tuned = autotune.lookup("smem_vec", (rows, cols), dtype, device=torch.cuda.current_device(), db=db_tuned)
            line = {"dtype": dtype, "shape": f"{rows}x{cols}", "rung": tuned.rung, "config": tuned.config.key}
            for name, fn in methods.items():
                _check(name, fn, torch, ref)
                first = per_launch_ms(fn, 10)
                ms = per_launch_ms(fn, _launches(first))
                line[name] = (ms, nbytes / ms / 1e6)
            rows_out.append(line)
            print(_format_line(line), flush=True)
            del x, y, ref, methods
            torch.cuda.empty_cache()
    return rows_out


def _format_line(line) -> str:
    memcpy = line["memcpy (device to device)"][1]
    torch_gbps = line["torch x.t().contiguous()"][1]
    cells = []
    for name in ("memcpy (device to device)", "torch x.t().contiguous()", "cupy ascontiguousarray(x.T)",
                 "classic smem_pad 32x8", "autotune smem_vec (tuned)"):
        ms, gbps = line[name]
        cells.append(f"{gbps:7.0f} {100 * gbps / memcpy:5.1f}% {gbps / torch_gbps:5.2f}x")
    return f"| {line['dtype']:8} | {line['shape']:>11} | " + " | ".join(cells) + f" | {line['rung']} {line['config']} |"


HEADER = ("| dtype | shape | memcpy GB/s %memcpy x torch | torch | cupy | classic smem_pad 32x8 | "
          "autotune smem_vec | lookup rung, config |\n|---|---|---|---|---|---|---|---|")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, help="database with the tuned smem_vec results")
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--sizes", default=",".join(f"{r}x{c}" for r, c in SHAPES))
    args = p.parse_args()
    import torch

    shapes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    props = torch.cuda.get_device_properties(0)
    print(f"# transpose vs peers on {props.name}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
          f"torch {torch.__version__}; each cell: GB/s, % of memcpy, ratio to torch; median of {BATCHES} batches")
    print(HEADER)
    run(args.dtypes.split(","), shapes, args.db)
    print(_host_cost(args.db))


def _host_cost(db: str) -> str:
    """Host time per call (µs) of autotune.transpose and of torch's transpose, float32 1024^2."""
    import torch

    import autotune

    x = torch.zeros((1024, 1024), device="cuda")
    y = torch.empty((1024, 1024), device="cuda")
    calls = {"autotune.transpose(x, out=y)": lambda: autotune.transpose(x, out=y, db=db),
             "torch x.t().contiguous()": lambda: x.t().contiguous()}
    cells = []
    for name, fn in calls.items():
        fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(1000):
            fn()
        cells.append(f"{name}: {(time.perf_counter() - t) * 1e3:.1f} µs")
        torch.cuda.synchronize()
    return "\nhost time per call (float32 1024x1024, mean of 1000 calls): " + "; ".join(cells)


if __name__ == "__main__":
    main()
