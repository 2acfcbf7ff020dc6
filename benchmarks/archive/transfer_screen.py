#!/usr/bin/env python3
"""Issue 35 target 3: screen variants of the ``transfer`` strategy on seeds other than the
reported ones (default 100..107), so that no variant is chosen on the seeds a result reports.

Each variant (a strategy name, or ``NAME:KEY=VALUE[,KEY=VALUE...]`` with its options, as
benchmarks/search_replay.py takes them) is replayed on every recorded table with another shape
of its kernel (history: the other shapes' tables), at batch 16 and 1, the kernel's default
first and not; prints, per variant, the mean P over the tables per setting and budget, the
cells below 0 (P ± standard error) and the least cell.

    nice python3 benchmarks/transfer_screen.py --seed0 100 --seeds 8 transfer transfer:then=tpe_local
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import large_space_search as L  # noqa: E402
import search_replay as S  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--seed0", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", nargs="*", default=None)
    a = ap.parse_args()
    from autotune.interchange.score import score
    from autotune.interchange.table import read_table

    found = L.find_tables(L.RESULTS)
    tables = {s: p for s, p in found.items() if (a.only is None or s.name in a.only) and S._history(s, found)}
    jobs = {}
    with concurrent.futures.ProcessPoolExecutor(a.workers) as pool:
        for spec, path in tables.items():
            history = tuple(S._history(spec, found))
            for name in a.variants:
                for batch in S.BATCHES:
                    for first in (True, False):
                        for seed in range(a.seed0, a.seed0 + a.seeds):
                            jobs[(name, spec.name, batch, first, seed)] = pool.submit(
                                S._ours, (spec, path, name, seed, batch, first, history))
        res = {k: f.result() for k, f in jobs.items()}
    read = {spec.name: read_table(path) for spec, path in tables.items()}
    for name in a.variants:
        cells = {}
        for (n, t, batch, first, seed), r in res.items():
            if n != name:
                continue
            if isinstance(r, str):
                print(f"{name} {t}: {r}")
                continue
            for b in S.BUDGETS:
                cells.setdefault((t, batch, first, b), []).append(score([r[0][:b]], read[t], b).p)
        print(f"== {name}")
        for batch in S.BATCHES:
            for first in (True, False):
                row = [statistics.mean(statistics.mean(v) for (t, bb, ff, b), v in cells.items()
                                       if (bb, ff, b) == (batch, first, budget)) for budget in S.BUDGETS]
                print(f"  batch {batch:2d} first {'yes' if first else 'no ':3s}: " + " ".join(f"{p:.3f}" for p in row))
        below = []
        for k, v in sorted(cells.items()):
            m = statistics.mean(v)
            se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else math.nan
            if m < 0:
                below.append(f"{k[0]} b{k[1]} {'yes' if k[2] else 'no'} @{k[3]}: {m:.2f} ± {se:.2f}")
        least = min(cells.items(), key=lambda kv: statistics.mean(kv[1]))
        print(f"  below 0: {len(below)} of {len(cells)}; least {least[0]} {statistics.mean(least[1]):.2f}; "
              f"mean of all {statistics.mean(statistics.mean(v) for v in cells.values()):.3f}")
        for line in below:
            print("   ", line)


if __name__ == "__main__":
    main()
