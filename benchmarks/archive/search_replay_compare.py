#!/usr/bin/env python3
"""Issue 35's target 2 across replay files: one autotune strategy's rows (from one CSV of
benchmarks/search_replay.py) against the best of Kernel Tuner's strategies (from another),
per table, batch, default-first mode and budget. "Level" is target 2's rule:
P(ours) >= P(best KT) - sqrt(se_ours^2 + se_kt^2). Kernel Tuner proposes one config at a time,
so its rows are the same at batch 16 and 1.

    python3 benchmarks/search_replay_compare.py OURS.csv STRATEGY KT.csv [--out FILE.md]
    python3 benchmarks/search_replay_compare.py OURS.csv STRATEGY OTHER.csv --peer hillclimb  # an autotune peer
e.g. python3 benchmarks/search_replay_compare.py benchmarks/results/2026-11-27_cpu_search_replay_tpe_variants.csv \
        tpe:local=0.5,startup=5 benchmarks/results/2026-11-27_cpu_search_replay_kt_9tables.csv
"""

from __future__ import annotations

import argparse
import collections
import csv
import math
from pathlib import Path


def cells(path: Path, keep) -> dict[tuple, list[tuple[float, float, str]]]:
    """(table, batch, default_first, budget) -> [(P, se, strategy)] of the rows ``keep`` accepts."""
    out: dict[tuple, list] = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        if keep(r):
            se = float(r["P_se"]) if r["P_se"] not in ("", "nan") else 0.0
            out[(r["table"], int(r["batch"]), r["default_first"], int(r["budget"]))].append((float(r["P"]), se,
                                                                                            r["strategy"]))
    return out


def compare(ours: dict, kt: dict, name: str, peer: str = "Kernel Tuner") -> list[str]:
    """The report's lines: the count of level cells, then each cell behind."""
    level, behind = 0, []
    for key in sorted(set(ours) & set(kt)):
        (p, se, _), best = ours[key][0], max(kt[key])
        if p >= best[0] - math.sqrt(se ** 2 + best[1] ** 2):
            level += 1
        else:
            behind.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {p:.2f} ± {se:.2f} | {best[2]} "
                          f"{best[0]:.2f} ± {best[1]:.2f} |")
    total = level + len(behind)
    best = "Kernel Tuner's best strategy" if peer == "Kernel Tuner" else f"{peer}"
    return [f"`{name}` is level with {best} (target 2's rule) in {level} of {total} "
            f"cells (table x batch x default first x budget); behind in {len(behind)}:", "",
            f"| table | batch | default first | budget | ours P | best {peer} P |", "|---|---|---|---|---|---|",
            *behind]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ours", type=Path)
    ap.add_argument("strategy")
    ap.add_argument("kt", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--peer", help="an autotune strategy of the second file (e.g. hillclimb) to compare with, "
                                   "instead of Kernel Tuner's best")
    a = ap.parse_args()
    ours = cells(a.ours, lambda r: r["tool"] == "autotune" and r["strategy"] == a.strategy)
    if a.peer:
        kt = cells(a.kt, lambda r: r["tool"] == "autotune" and r["strategy"] == a.peer)
        peer = f"`{a.peer}`"
    else:
        kt = cells(a.kt, lambda r: r["tool"] == "kernel_tuner")
        peer = "Kernel Tuner"
    lines = [f"# Issue 35 target 2: `{a.strategy}` ({a.ours.name}) against {peer} ({a.kt.name})", "",
             *compare(ours, kt, a.strategy, peer)]
    text = "\n".join(lines) + "\n"
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
