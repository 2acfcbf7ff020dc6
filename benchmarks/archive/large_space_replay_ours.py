#!/usr/bin/env python3
"""Issue 22 (b) and (c) in minutes on a 2-core CPU: autotune's random, tpe and tpe with the default
first (5 seeds) replayed on every recorded table except smem_vec's (whose full replay beside Kernel
Tuner is large_space_search.py's), scored with P, then the transfer figures (c) of every table group.

    python3 benchmarks/large_space_replay_ours.py OUT.txt
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import large_space_search as L  # noqa: E402

from autotune.interchange.replay import replay  # noqa: E402
from autotune.interchange.score import score  # noqa: E402
from autotune.interchange.table import read_table  # noqa: E402

tables = L.find_tables(L.RESULTS)
out = open(sys.argv[1], "w")
L.log(out, "# issue 22 (b) for the matmul_warp and user-kernel tables, autotune's strategies only (CPU replay, 5 seeds); "
           "Kernel Tuner's simulation mode was not run on these tables this session (time)")
for spec, path in tables.items():
    if spec.group == "smem_vec":
        continue
    table, space = read_table(path), L._space(spec)
    t0 = time.time()
    rows = []
    for label in ("random", "tpe", "tpe" + L.DEFAULT_FIRST):
        name = label.removesuffix(L.DEFAULT_FIRST)
        first = [L._kernel(spec).default_config()] if label.endswith(L.DEFAULT_FIRST) else []
        curves = [replay(name, space, table, 100, seed=s, first=first).curve for s in range(5)]
        ps = [score(curves, table, b).p for b in L.BUDGETS]
        rows.append((label, ps))
    ok = [v for v in table.values() if v is not None]
    dflt = table.get(L._kernel(spec).default_config().key)
    L.log(out, f"\n## {spec.name}: {len(table)} configs; the default is {100*min(ok)/dflt:.1f} % of the best ({time.time()-t0:.0f} s)")
    L.log(out, "strategy            P@20    P@50    P@100")
    for label, ps in rows:
        L.log(out, f"{label:18s} " + "  ".join(f"{p:6.3f}" for p in ps))
L.transfer(out, tables)
