"""Do the two CUDA backends time the same configs the same? (issue 39: cuda-bindings and PyCUDA.)

The same configs of the same problems are measured by ``Benchmark.measure`` (verified, then
``repeats`` samples of CUDA-event-timed batches: the search's own method) in a fresh process per
backend, the backends alternating over ``--rounds`` rounds (cuda-bindings, pycuda, cuda-bindings,
...), so that a drift of the GPU's clocks falls on both. Per config: each backend's median over
the rounds of its per-round medians, their relative difference, and the noise: the larger of the
two backends' spreads over the rounds, (max - min) / median. The backends agree on a config when
the difference is within the noise (or within 2 %, the search's smallest early-stop margin).

    python3 benchmarks/backends_agree.py [--rounds 3] [--out FILE.md]
    python3 benchmarks/backends_agree.py --backend pycuda --json     # one process's measurements

Needs a GPU and both backends installed (cuda-bindings and PyCUDA).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = [  # (kernel, dims, dtype, configs: None = the default config)
    ("smem_pad", {"rows": 8192, "cols": 8192}, "float32",
     [None, {"TILE_DIM": 32, "BLOCK_ROWS": 16, "IPAD": 1, "DIAGONAL": 0},
      {"TILE_DIM": 64, "BLOCK_ROWS": 8, "IPAD": 2, "DIAGONAL": 1}]),
    ("naive_row", {"rows": 8192, "cols": 8192}, "float32", [None]),
    ("smem_pad", {"rows": 1024, "cols": 1024}, "float32", [None]),  # short launches: launch overhead shows here
    ("matmul_tiled", {"m": 1024, "n": 1024, "k": 1024}, "float32", [None]),
]
BACKENDS = ("cuda-bindings", "pycuda")
MIN_AGREEMENT = 0.02


def measure_here(repeats: int) -> list[dict]:
    """This process's measurements of :data:`CASES` with the backend ``AUTOTUNE_BACKEND`` names."""
    from autotune.kernel.config import Config
    from autotune.kernel.problem import Problem
    from autotune.measure import backends
    from autotune.measure.benchmark import open_benchmark
    from autotune.measure.measure_options import MeasureOptions

    rows = []
    for kernel, dims, dtype, configs in CASES:
        problem = Problem.of(kernel, dims, dtype)
        with open_benchmark(0, problem, MeasureOptions(repeats=repeats, seed=0, ci=0), bounds=False) as bench:
            for macros in configs:
                config = problem.kernel.default_config() if macros is None else Config.of(kernel, macros)
                m = bench.measure(config)
                rows.append({"backend": backends.get().name, "problem": problem.label, "config": config.key,
                             "median_ms": m.median_ms, "min_ms": m.min_ms, "launches": m.launches})
    return rows


def run_rounds(rounds: int, repeats: int) -> list[dict]:
    """Every round: one process per backend, in turn; their rows, with the round."""
    rows = []
    for r in range(rounds):
        for backend in BACKENDS if r % 2 == 0 else BACKENDS[::-1]:
            env = {**os.environ, "AUTOTUNE_BACKEND": backend}
            out = subprocess.run([sys.executable, __file__, "--json", "--repeats", str(repeats)], env=env,
                                 capture_output=True, text=True, check=True).stdout
            rows += [{**row, "round": r} for row in json.loads(out)]
    return rows


def table(rows: list[dict]) -> tuple[list[str], bool]:
    """The markdown lines of the comparison, and whether every config agrees."""
    lines = ["| problem | config | cuda-bindings ms | pycuda ms | difference | noise | agree |",
             "|---|---|---|---|---|---|---|"]
    agree_all = True
    keys = list(dict.fromkeys((row["problem"], row["config"]) for row in rows))
    for problem, config in keys:
        per = {b: [row["median_ms"] for row in rows if (row["problem"], row["config"], row["backend"]) ==
                   (problem, config, b)] for b in BACKENDS}
        med = {b: statistics.median(v) for b, v in per.items()}
        noise = max((max(v) - min(v)) / statistics.median(v) for v in per.values())
        diff = (med["cuda-bindings"] - med["pycuda"]) / med["pycuda"]
        agree = abs(diff) <= max(noise, MIN_AGREEMENT)
        agree_all &= agree
        lines.append(f"| {problem} | {config} | {med['cuda-bindings']:.4f} | {med['pycuda']:.4f} | "
                     f"{100 * diff:+.2f} % | {100 * noise:.2f} % | {'yes' if agree else 'NO'} |")
    return lines, agree_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="measure in this process and print JSON rows")
    parser.add_argument("--out", type=Path, help="write the markdown table here too")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure_here(args.repeats)))
        return
    started = time.time()
    rows = run_rounds(args.rounds, args.repeats)
    lines, ok = table(rows)
    import autotune

    head = [f"# The two CUDA backends time the same configs ({time.strftime('%Y-%m-%d', time.gmtime())}, "
            f"autotune {autotune.__version__})", "",
            f"{args.rounds} rounds, backends alternating, one process each; each measurement: verified, then "
            f"{args.repeats} CUDA-event samples (Benchmark.measure); per backend the median of the rounds' "
            f"medians; noise: the larger backend's (max - min) / median over the rounds; agree: "
            f"|difference| <= max(noise, {100 * MIN_AGREEMENT:g} %). {time.time() - started:.0f} s.", ""]
    text = "\n".join(head + lines + ["", f"all agree: {'yes' if ok else 'NO'}", "",
                                     "raw rows:", "", "```json", json.dumps(rows, indent=1), "```", ""])
    print("\n".join(head + lines + ["", f"all agree: {'yes' if ok else 'NO'}"]))
    if args.out:
        args.out.write_text(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
