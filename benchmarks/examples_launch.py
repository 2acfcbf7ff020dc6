"""Issue 12 on the GPU: each example kernel, tuned by `autotune search`, is looked up and
launched by the library from PyTorch, and its output checked against PyTorch itself.

    python3 benchmarks/examples_launch.py --db sqlite:///tuned.db

Prints, per example: the lookup's rung and config, the launcher's geometry, the largest
error against PyTorch (float64 reference), and the time per launch (CUDA events, median of
20 batches) next to PyTorch's own op on the same tensors.
"""

from __future__ import annotations

import argparse
import statistics

import torch

import autotune

HERE = __import__("pathlib").Path(__file__).resolve().parent.parent


def _time(fn, launches: int = 50, samples: int = 20) -> float:
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(launches):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / launches)
    return statistics.median(out)


def reduction(db: str, n: int) -> None:
    kernel = autotune.load_kernel(HERE / "examples/reduction/reduce.toml")
    chosen = autotune.lookup(kernel, {"n": n}, "float32", device=0, db=db)
    x = torch.rand(n, device="cuda", dtype=torch.float32) * 2 - 1  # the tensors first: PyTorch's context
    out = torch.empty(1, device="cuda", dtype=torch.float32)
    partials = torch.zeros(4096, device="cuda", dtype=torch.float32)
    counter = torch.zeros(1, device="cuda", dtype=torch.uint32)
    f = autotune.compiled(kernel, {"n": n}, "float32", db=db)  # compiled for the current context's device
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # launched on the caller's current stream
        f(out, x, partials, counter)
    stream.synchronize()
    ref = x.double().sum().item()
    print(f"reduce_sum n={n} float32: lookup {chosen.rung} {chosen.config.key}; grid {f.grid} block {f.block}")
    print(f"  out {out.item():.6f}, torch float64 sum {ref:.6f}, |error| {abs(out.item() - ref):.3g}")
    ms, ms_torch = _time(lambda: f(out, x, partials, counter)), _time(lambda: x.sum())
    gbps = n * 4 / (ms * 1e-3) / 1e9
    print(f"  {ms * 1e3:.1f} us per launch ({gbps:.0f} GB/s); torch x.sum(): {ms_torch * 1e3:.1f} us")
    assert abs(out.item() - ref) <= 1e-2 + 1e-4 * abs(ref), "the tuned reduction disagrees with PyTorch"


def softmax(db: str, rows: int, cols: int) -> None:
    kernel = autotune.load_kernel(HERE / "examples/softmax/softmax.toml")
    chosen = autotune.lookup(kernel, {"rows": rows, "cols": cols}, "float32", device=0, db=db)
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    f = autotune.compiled(kernel, {"rows": rows, "cols": cols}, "float32", db=db)
    f(y, x)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=1)
    err = (y.double() - ref).abs().max().item()
    print(f"softmax_rows {rows}x{cols} float32: lookup {chosen.rung} {chosen.config.key}; grid {f.grid} "
          f"block {f.block}")
    print(f"  max |y - torch.softmax (float64)| = {err:.3g}")
    ms, ms_torch = _time(lambda: f(y, x)), _time(lambda: torch.softmax(x, dim=1))
    gbps = 2 * rows * cols * 4 / (ms * 1e-3) / 1e9
    print(f"  {ms * 1e3:.1f} us per launch ({gbps:.0f} GB/s); torch.softmax: {ms_torch * 1e3:.1f} us")
    assert err <= 1e-6, "the tuned softmax disagrees with PyTorch"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=4096)
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    reduction(args.db, args.n)
    softmax(args.db, args.rows, args.cols)


if __name__ == "__main__":
    main()
