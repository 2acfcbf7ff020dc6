#!/usr/bin/env python3
"""Issue 13, time to tuned, the GPU side: where the measuring child's time goes in a sweep of
smem_pad's space (8192^2 float32 by default), in one process, no store, no Optuna.

Steps timed: opening the benchmark (CUDA context, buffers, input values), the memcpy and
copy-row bounds, each config's measure (its own phases: compile wait, load, verify, time), and
the interleaved re-timing of the five fastest; then the 25 functions with the most cumulative
time under cProfile (the profile's overhead inflates small calls; read it for where, not how
much).

    python benchmarks/measure_profile.py [--size 8192] [--kernel smem_pad] [--out FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--kernel", default="smem_pad")
    ap.add_argument("--out")
    a = ap.parse_args()
    os.environ.setdefault("AUTOTUNE_CACHE_DIR", tempfile.mkdtemp())  # a cold cubin cache
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    t0 = time.perf_counter()
    from autotune.kernel.catalog import resolve_kernel
    from autotune.kernel.dtypes import get_dtype
    from autotune.kernel.space import kernel_space, load_space
    from autotune.kernel.problem import Problem
    from autotune.measure.benchmark import open_benchmark
    from autotune.measure.measure_options import MeasureOptions
    from autotune.measure.pipeline import compile_ahead
    from autotune.search.proposals import default_config

    say(f"# measure_profile: {a.kernel} {a.size}^2 float32, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    say(f"import {time.perf_counter() - t0:.2f} s")
    kernel, dtype = resolve_kernel(a.kernel), get_dtype("float32")
    toml = ROOT / "configs" / f"{a.kernel}.toml"  # the sweep's space (the CLI's default)
    space = load_space(kernel, toml) if toml.exists() else kernel_space(kernel)
    default = default_config(kernel.name, space)
    configs = ([default] if default else []) + [c for c in space.iter_configs() if c != default]
    profile = cProfile.Profile()
    profile.enable()
    t = time.perf_counter()
    with open_benchmark(0, Problem.of(kernel, {"rows": a.size, "cols": a.size}, dtype),
                        MeasureOptions(ci=0)) as bench:
        say(f"open benchmark (context, buffers, inputs) {time.perf_counter() - t:.2f} s; {bench.device.name}")
        t = time.perf_counter()
        say(f"bounds: memcpy {bench.memcpy_gbps:.0f} GB/s, copy {bench.copy_gbps or 0:.0f} GB/s "
            f"in {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        phases: dict[str, float] = {}
        with compile_ahead(kernel, dtype, bench.device.arch, configs):
            say(f"compile pipeline started in {time.perf_counter() - t:.2f} s")
            t = time.perf_counter()
            results = []
            for config in configs:
                try:
                    m = bench.measure(config)
                except Exception as exc:  # noqa: BLE001  (a failed config is a line here)
                    say(f"  {config}: failed {exc}")
                    continue
                results.append((m.median_ms, config))
                for k, v in (m.phases or {}).items():
                    phases[k] = phases.get(k, 0.0) + v / 1e3  # ms -> s
        say(f"measure x{len(configs)} {time.perf_counter() - t:.2f} s; phases summed "
            + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))
        t = time.perf_counter()
        top = [c for _, c in sorted(results, key=lambda r: r[0])[:5]]
        bench.retime(top, 5)
        say(f"retime 5 configs x 5 rounds {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
    say(f"close {time.perf_counter() - t:.2f} s; total {time.perf_counter() - t0:.2f} s")
    profile.disable()
    buf = io.StringIO()
    pstats.Stats(profile, stream=buf).sort_stats("cumulative").print_stats(25)
    say(buf.getvalue())
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
