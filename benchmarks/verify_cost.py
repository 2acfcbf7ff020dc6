#!/usr/bin/env python3
"""What verifying one config costs, against one launch of it, on the GPU.

For each problem, in one process, no store and no Optuna: the benchmark is opened (bounds off),
the first verification prepares the reference (computed once per problem, then kept on the
device), then each of ``--configs`` valid configs (the default first, then a seeded sample of
the space) is compiled, verified and timed. Per config: the verification's wall ms (restore,
poisoned launches, comparison), the median of one launch (CUDA events), and their ratio. With
``--host`` the comparison is forced onto the host, as a ``module:function`` comparison without
a ``relative_norm`` runs (the output copied back, compared in NumPy), for the before/after.

    python benchmarks/verify_cost.py [--problems matmul_warp:4096x4096x4096,smem_pad:8192x8192,...]
                                     [--configs 8] [--host] [--out FILE]

Prints one table; the target (issue 47): verification <= 2x one launch + 5 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT = ("matmul_warp:m=4096,n=4096,k=4096;matmul_warp:m=3072,n=768,k=2048;smem_pad:rows=8192,cols=8192;"
           f"{ROOT}/examples/softmax/softmax.toml:rows=4096,cols=1024")


def parse(problems: str) -> list[tuple[str, dict[str, int]]]:
    out = []
    for item in problems.split(";"):
        name, _, dims = item.partition(":")
        out.append((name, {k: int(v) for k, v in (d.split("=") for d in dims.split(","))}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=DEFAULT, help="KERNEL:dim=v,...;... (a kernel name or a kernel file)")
    ap.add_argument("--configs", type=int, default=8)
    ap.add_argument("--host", action="store_true", help="compare on the host (the output copied back)")
    ap.add_argument("--out")
    a = ap.parse_args()
    os.environ.setdefault("AUTOTUNE_CACHE_DIR", tempfile.mkdtemp())
    from autotune.kernel.catalog import resolve_kernel
    from autotune.kernel.dtypes import get_dtype
    from autotune.kernel.problem import Problem
    from autotune.measure import verify as verify_module
    from autotune.measure.benchmark import open_benchmark
    from autotune.measure.measure_options import MeasureOptions
    from autotune.measure.pipeline import compile_ahead
    from autotune.measure.timing import samples
    from autotune.errors import TrialFailed

    if a.host:
        verify_module.relative_norm_of = lambda check, base=None: None
    lines = [f"# verify_cost{' --host' if a.host else ''}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "problem | configs | prepare s | verify ms (median, max) | one launch ms (median) | "
             "verify / launch | verify - 2 x launch ms (max)"]
    for name, dims in parse(a.problems):
        kernel, dtype = resolve_kernel(name), get_dtype("float32")
        space = kernel.space()
        rng = random.Random(0)
        default = kernel.default_config()
        rest = [c for c in space.iter_configs() if c != default]
        configs = [default] + rng.sample(rest, min(len(rest), 4 * a.configs))
        problem = Problem.of(kernel, dims, dtype)
        rows = []
        with open_benchmark(0, problem, MeasureOptions(ci=0), bounds=False) as bench, \
                compile_ahead(kernel, dtype, bench.device.arch, configs):
            t = time.perf_counter()
            bench.verifier()
            prepare = time.perf_counter() - t
            for config in configs:
                if len(rows) == a.configs:
                    break
                try:
                    compiled, grid, block, shared = bench.compile(config)
                    bench.verify(compiled, grid, block, shared)  # module loaded, first launch paid
                    t = time.perf_counter()
                    bench.verify(compiled, grid, block, shared)
                    verify_ms = (time.perf_counter() - t) * 1e3
                    bench._fill()
                    ms, _ = samples(bench.drv, bench.launcher(compiled, grid, block, shared), 3, 20)
                except TrialFailed as failure:
                    print(f"  {config}: {failure.status}", flush=True)
                    continue
                rows.append((verify_ms, float(statistics.median(ms))))
        v = [r[0] for r in rows]
        launch = [r[1] for r in rows]
        over = max(r[0] - 2 * r[1] for r in rows)
        line = (f"{problem.label} | {len(rows)} | {prepare:.2f} | {statistics.median(v):.2f}, {max(v):.2f} | "
                f"{statistics.median(launch):.3f} | {statistics.median(x / y for x, y in rows):.1f} | {over:.2f}")
        print(line, flush=True)
        lines.append(line)
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
