#!/usr/bin/env python3
"""Issue 40: do nvcc flags as tunables beat the best macro-only config? Read from tables recorded
whole on the GPU (benchmarks/record_new_tables.sh): for each kernel, the best config with nvcc's
own flags (register cap 0, -Xptxas -O3, no fast math: "macros only") against the best config
of the whole space, and the best per flag setting.

* softmax_rows_flags 4096x1024 float32: the softmax example, macros x flags (624 configs);
* matmul_warp_flags 2048^3 and smem_vec_flags 4096^2 float32: the catalog kernels at their
  recorded tables' best macro config (each kernel's default), flags swept (30 and 12 configs).

Each table entry is one measurement (a grid search, ``--top-k 1 --rounds 1``: the median of up
to 50 timed launches), so differences of about 1 % are within the run-to-run noise.

    python3 benchmarks/flags_vs_macros.py [--results benchmarks/results] [--out FILE]
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from autotune.interchange.table import read_table  # noqa: E402

TABLES = ("softmax_rows_flags_4096x1024_float32", "matmul_warp_flags_2048x2048x2048_float32",
          "smem_vec_flags_4096x4096_float32")
NVCC_DEFAULTS = {"NVCC_MAXRREGCOUNT": "0", "NVCC_PTXAS_O": "3", "NVCC_FAST_MATH": "0"}
"""nvcc's own behaviour: a config with these (or without the tunable) is "macros only"."""


def split(key: str) -> tuple[dict[str, str], dict[str, str]]:
    """A config key's macros and its flag tunables."""
    pairs = dict(kv.split("=", 1) for kv in key.split(","))
    flags = {k: v for k, v in pairs.items() if k.startswith("NVCC_")}
    return {k: v for k, v in pairs.items() if k not in flags}, flags


def compare(table: dict[str, float | None]) -> list[str]:
    """The lines for one table: best macro-only, best overall, best per flag setting."""
    ok = {k: v for k, v in table.items() if v is not None}
    plain = {k: v for k, v in ok.items() if all(split(k)[1].get(n, d) == d for n, d in NVCC_DEFAULTS.items())}
    best, base = min(ok, key=ok.get), min(plain, key=plain.get)
    less = 100 * (1 - ok[best] / ok[base])
    lines = [f"- configs measured: {len(ok)} ({len(table) - len(ok)} failed), {len(plain)} with nvcc's own flags",
             f"- best with nvcc's own flags (macros only): {base} at {ok[base] * 1e3:.2f} µs",
             f"- best of the whole space: {best} at {ok[best] * 1e3:.2f} µs",
             f"- flags beat the best macro-only config: {less:.1f} % less time ({ok[base] / ok[best]:.3f}x)"
             if best != base else
             "- no flag setting beats the best macro-only config"]
    per: dict[tuple, float] = {}
    for k, v in ok.items():
        f = tuple(sorted(split(k)[1].items()))
        per[f] = min(per.get(f, v), v)
    lines += ["", "| flags | best µs | vs best macro-only |", "|---|---|---|"]
    for f, v in sorted(per.items(), key=lambda kv: kv[1]):
        lines.append(f"| {', '.join(f'{n}={x}' for n, x in f)} | {v * 1e3:.2f} | {100 * (v / ok[base] - 1):+.1f} % |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    lines = ["# Issue 40: nvcc flags as tunables against the best macro-only config", "",
             "From tables recorded whole on the GPU (benchmarks/record_new_tables.sh); one measurement per "
             "config (the median of up to 50 launches): differences of about 1 % are within run-to-run noise.", ""]
    for name in TABLES:
        paths = sorted(glob.glob(str(options.results / f"*_table_{name}.csv")))
        if not paths:
            lines += [f"## {name}", "", "not recorded", ""]
            continue
        lines += [f"## {name}", "", f"table: {Path(paths[-1]).name}", "", *compare(read_table(Path(paths[-1]))), ""]
    text = "\n".join(lines)
    if options.out:
        options.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
