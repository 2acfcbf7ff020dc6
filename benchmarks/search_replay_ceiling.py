#!/usr/bin/env python3
"""Issue 35, target 1: the highest score P a search can reach in batches when its first batch
does as well as random search, per table, batch, default-first mode and budget, computed
exactly on the CPU.

The methodology score P at a budget ``B`` is the mean of ``P(k)`` over ``k = 1..B``
(:mod:`autotune.interchange.score`), so the configs measured first weigh as much as the last.
At batch 16 the first batch is chosen before any config of it is measured: with nothing known
of the table (no other shape, no earlier study), its expected best-so-far, over the tables a
search may meet, is random search's. On a given table a first batch does better only through
what it assumes of the table, a bet that loses elsewhere: the default's neighbours (the hill
climber's first batch at batch 16) score 0.62 at 20 configs on softmax_rows_flags 1000x3001,
but -0.23 as a mean over the 12 tables. The ceiling here is the curve of a search whose first
batch does exactly as well as random search and whose every config after that batch is the
optimum:

* default first: ``f(1)`` is the default's time ``d``; ``f(k)``, ``k = 2..batch + 1``, the
  expected ``min(d, best of k - 1 random configs of the rest of the table)``; then the optimum;
* no default: ``f(k) = f_r(k)`` (random search) for ``k <= batch``; then the optimum.

No real search reaches it (its second batch would have to hold the optimum in its first
config), so where the ceiling is below the issue's goal (0.5 / 0.7 / 0.8 at 20 / 50 / 100
configs) no search whose first batch is worth random search's meets the goal on that table,
whatever it does afterwards. Where a transfer prior or an earlier study is known, the first batch is not
uninformed and this bound does not apply.

    python3 benchmarks/search_replay_ceiling.py [--out benchmarks/results]
Writes <out>/<date>_cpu_search_replay_ceiling.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import large_space_search as L  # noqa: E402

from search_replay import BATCHES, BUDGETS  # noqa: E402

GOALS = {20: 0.5, 50: 0.7, 100: 0.8}


def ceiling_curve(table: dict, default_key: str | None, batch: int, budget: int) -> np.ndarray:
    """The ceiling's best-so-far curve (ms), shape ``(budget,)`` (module doc); ``default_key``
    ``None``: no default first."""
    from autotune.interchange.score import expected_random_curve

    valid = [v for v in table.values() if v is not None]
    opt, worst = min(valid), max(valid)
    if default_key is None:
        head = expected_random_curve(table, min(batch, budget))
    else:
        d = table[default_key] if table[default_key] is not None else worst
        rest = {k: (d if v is None else min(v, d)) for k, v in table.items() if k != default_key}
        draws = min(batch, budget - 1)
        head = np.concatenate([[d], expected_random_curve(rest, draws) if draws > 0 else []])
    return np.concatenate([head, np.full(budget - head.size, opt)])


def ceiling(table: dict, default_key: str | None, batch: int, budget: int) -> float:
    """The ceiling's P at ``budget`` (mean of ``P(k)``, :func:`autotune.interchange.score.standardised`)."""
    from autotune.interchange.score import expected_random_curve, standardised

    valid = [v for v in table.values() if v is not None]
    p = standardised(ceiling_curve(table, default_key, batch, budget), expected_random_curve(table, budget), min(valid))
    return float(np.mean(p))


def main() -> None:
    from autotune.interchange.table import read_table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results"))
    a = ap.parse_args()
    tables = L.find_tables(L.RESULTS)
    lines = [f"# Issue 35, target 1: the ceiling of a search whose first batch is worth random search's "
             f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)", "",
             "`python3 benchmarks/search_replay_ceiling.py`, exact, on the CPU, from the committed tables.", "",
             *[re.sub(r"\n(?!\* )\s*", " ", p).replace("``", "`") + "\n" for p in __doc__.split("\n\n")[1:4]],
             "P of that ceiling (0: random search, 1: the optimum from the first config), at 20 / 50 / 100 configs.", ""]
    means: dict = {}
    rows = []
    for spec, path in tables.items():
        table = read_table(path)
        default = L._kernel(spec).default_config().key
        for batch in BATCHES:
            for first in ("yes", "no"):
                ps = [ceiling(table, default if first == "yes" else None, batch, b) for b in BUDGETS]
                rows.append((spec.name, batch, first, ps))
                for b, p in zip(BUDGETS, ps):
                    means.setdefault((batch, first, b), []).append(p)
    lines += ["## Mean over tables", "", "| batch | default first | P@20 | P@50 | P@100 | goal 0.5 / 0.7 / 0.8 reachable |",
              "|---|---|---|---|---|---|"]
    for batch in BATCHES:
        for first in ("yes", "no"):
            ps = [float(np.mean(means[(batch, first, b)])) for b in BUDGETS]
            reach = " / ".join("yes" if p >= GOALS[b] else "no" for p, b in zip(ps, BUDGETS))
            lines.append(f"| {batch} | {first} | " + " | ".join(f"{p:.2f}" for p in ps) + f" | {reach} |")
    lines += ["", f"## Per table ({len(tables)} tables)", "", "| table | batch | default first | P@20 | P@50 | P@100 |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {t} | {b} | {f} | " + " | ".join(f"{p:.2f}" for p in ps) + " |" for t, b, f, ps in rows]
    out = Path(a.out) / f"{datetime.now(timezone.utc):%Y-%m-%d}_cpu_search_replay_ceiling.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:16]))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
