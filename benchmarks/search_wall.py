#!/usr/bin/env python3
"""Issue 47, target 5 on the GPU: the wall seconds to within 1 % (and 5 %) of each recorded table's
optimum, by ``autotune search`` as it runs, against Kernel Tuner run live on the same GPU.

The tables are those with a costs file (``search_replay.find_costs``: matmul_warp 1024^3,
histogram256 16777216 and softmax_rows_flags 4096x1024, recorded whole on this GPU model by
``record_tables.sh`` with ``COSTS=1``). A run is judged by the table, the same for every tool: the
seconds from its start until it has measured a config whose recorded median is within 1 % (5 %) of
the table's best. A run that gets there by its end is not censored; one that does not counts as
``> its end`` (the median of a tool is then a lower bound where it is censored).

- **autotune:** ``python3 -m autotune search --kernel K --space S --dims D --dtype T --seed s
  --trials N --timeout T`` as a user runs it, from a fresh database and an empty cubin cache
  (``AUTOTUNE_CACHE_DIR``); the clock starts before the process does. A trial's second is its
  row's ``created_at`` (stored after it was measured).
- **Kernel Tuner 1.5** (``kernel_tuner.tune_kernel``, ``lang="pycuda"``: its PyCUDA backend,
  which builds with nvcc as autotune does), one fresh process per run (a fresh HOME and folder): the same source (its includes inlined), the same nvcc
  options, the table's configs exactly (a restriction; failed ones included), the launch
  geometry of the kernel file (``problem_size`` a function of the config, no grid divisors; a
  block size that is no tunable is a derived parameter, restricted to its value) and the
  kernel file's arguments. No ``answer``: it does not verify, which only saves it time. Its
  strategy stops at ``time_limit`` = ``--kt-cap`` seconds (its start-up included); each
  evaluation's second is its ``timestamp`` less the moment ``tune_kernel`` was called. Kernel
  Tuner cannot make nvcc options tunables, so a table with flag tunables (softmax_rows_flags) is
  run by autotune only; its peers there are the cost-charged replay's
  (``results/*_cpu_search_replay_costs_*.csv``), whose rows this report repeats for every table.

    python3 benchmarks/search_wall.py [--seeds 5] [--only NAME ...] [--kt genetic_algorithm ...]
Writes --out/<date>_<gpu>_search_wall.{md,csv} and ..._search_wall_log.txt (every run's output, in
order). The runs of one report may be split over several calls (a GPU call lasts at most 10
minutes): ``--merge CSV ...`` writes the report of the rows of several CSVs, without a GPU.

    python3 benchmarks/search_wall.py --merge A.csv B.csv [--drop-errors] --out DIR
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import large_space_search as L  # noqa: E402
from search_replay import find_costs, quartiles  # noqa: E402

WITHIN = (0.01, 0.05)
TRIALS = {"matmul_warp": 300, "histogram256": 300, "softmax_rows_flags": 300}
"""Trials asked of ``autotune search`` per kernel (its ``--timeout`` ends it first)."""
TIMEOUT = {"matmul_warp": 35, "histogram256": 10, "softmax_rows_flags": 10}
"""``autotune search --timeout`` per kernel, s: no trial starts after it (about 3x the replay's median
seconds to 1 %)."""
KT_BEST = {"matmul_warp": "genetic_algorithm", "histogram256": "dual_annealing"}
"""Kernel Tuner's best strategy on each table in the cost-charged replay (fewest median seconds to 1 %)."""


def reach(evals, table, within):
    """(seconds, configs) until the first of ``evals`` ((config key, seconds since the start), in
    order) whose recorded median in ``table`` (key -> ms, ``None``: failed) is within ``within`` of
    the table's best; ``(inf, inf)`` where none is."""
    best = min(ms for ms in table.values() if ms is not None)
    for i, (key, secs) in enumerate(evals, 1):
        ms = table.get(key)
        if ms is not None and ms <= best * (1 + within):
            return secs, i
    return math.inf, math.inf


def trial_seconds(db: Path, start: float):
    """(config key, seconds from ``start`` (epoch s) to its row's ``created_at``) of every trial
    stored in the search database ``db``, in the order stored."""
    with sqlite3.connect(db) as con:
        rows = con.execute("select config_key, created_at from autotune_trials order by id").fetchall()
    out = []
    for key, created in rows:
        at = datetime.fromisoformat(created)
        at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
        out.append((key, at.timestamp() - start))
    return out


def run_ours(spec, seed, log):
    """One ``autotune search`` (module doc): its evaluations and wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "search.db"
        cmd = [sys.executable, "-m", "autotune", "search", "--kernel", spec.kernel,
               "--dims", ",".join(f"{k}={v}" for k, v in spec.dims), "--dtype", spec.dtype, "--seed", str(seed),
               "--trials", str(TRIALS[spec.kernel_name]), "--timeout", str(TIMEOUT[spec.kernel_name]),
               "--db", f"sqlite:///{db}"]
        if spec.space:
            cmd += ["--space", str(HERE / "spaces" / spec.space)]
        env = {**os.environ, "AUTOTUNE_CACHE_DIR": str(Path(tmp) / "cubins")}
        env.pop("AUTOTUNE_DB", None)
        start = time.time()
        log.write(f"== autotune {spec.name} seed {seed}: {' '.join(cmd)}\n")
        log.flush()
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=HERE.parent)
        wall = time.time() - start
        if done.returncode != 0:
            raise RuntimeError(f"autotune search exited {done.returncode} ({spec.name}, seed {seed})")
        return trial_seconds(db, start), wall


def kt_problem(spec, table):
    """What ``tune_kernel`` needs for ``spec``'s kernel (module doc): a dict of its keyword
    arguments but ``strategy``, plus ``"names"`` (the space's macros) and ``"allowed"`` (the
    table's configs as value tuples)."""
    import numpy as np

    from autotune.interchange.table import params_of
    from autotune.kernel.catalog import resolve_kernel
    from autotune.kernel.config import Config
    from autotune.kernel.dtypes import get_dtype
    from autotune.kernel.model import Array
    from autotune.measure.compile import nvcc_options

    kernel = resolve_kernel(spec.kernel)
    if kernel.flags:
        raise ValueError(f"{spec.name}: nvcc options as tunables (Kernel Tuner has none)")
    dtype = get_dtype(spec.dtype)
    dims = dict(spec.dims)
    space = kernel.space(str(HERE / "spaces" / spec.space) if spec.space else None)
    names = [p for p, _ in space.params]
    configs = [Config.of(kernel.name, params_of(k)) for k in table]
    geometry = {c.key: kernel.geometry(c, dims, dtype) for c in configs}
    if any(g.block[1:] != (1, 1) for g in geometry.values()):
        raise ValueError(f"{spec.name}: a block of more than one dimension")
    block = next((p for p in names if all(c.as_dict()[p] == geometry[c.key].block[0] for c in configs)), None)
    params = {p: list(v) for p, v in space.params}
    allowed = {tuple(c.as_dict()[p] for p in names) for c in configs}
    if block is None:  # a derived parameter, restricted to the config's block
        block = "block_size_x"
        params[block] = sorted({g.block[0] for g in geometry.values()})
        allowed = {tuple(c.as_dict()[p] for p in names) + (geometry[c.key].block[0],) for c in configs}
        names = names + [block]
    macros = set(kernel.tunables)
    default = kernel.default_config()
    options = [o for o in nvcc_options(kernel, default, dtype) if not any(o.startswith(f"-D{m}=") for m in macros)]

    def config_of(p):
        return Config.of(kernel.name, {m: int(p[m]) for m in kernel.tunables})

    rng = np.random.default_rng(0)
    env = kernel.env(dims, dtype)
    args = []
    for a in kernel.args:
        if isinstance(a, Array):
            dt, shape = a.dtype_of(dtype).numpy, a.shape_of(env)
            args.append(np.zeros(shape, dt) if a.role in ("out", "scratch") else
                        rng.integers(0, 256, shape).astype(dt) if dt.kind in "iu" else rng.random(shape).astype(dt))
        else:
            args.append(np.dtype(a.ctype).type(a.value(env)))
    return {
        "kernel_name": kernel.function, "kernel_source": kernel.source_text(), "arguments": args,
        "tune_params": params, "names": names, "allowed": allowed,
        "problem_size": lambda p: geometry[config_of(p).key].grid,
        "grid_div_x": [], "grid_div_y": [], "grid_div_z": [], "block_size_names": [block],
        "smem_args": {"size": lambda p: geometry[config_of(p).key].shared},
        "compiler_options": options, "lang": "pycuda", "key_of": lambda p: config_of(p).key,
    }


def kt_one(spec_name: str, table_path: str, strategy: str, seed: int, cap: float) -> None:
    """One Kernel Tuner run (in its own process: ``--kt-one``): prints one JSON line, ``{"evals":
    [[config key, seconds since tune_kernel was called], ...], "wall": s, "error": text}``."""
    import random

    import numpy as np
    import kernel_tuner

    from autotune.interchange.table import read_table

    here = os.getcwd()  # a fresh folder: Kernel Tuner leaves a failed build's source there
    os.chdir(HERE.parent)  # the tables name kernel files relative to the repository
    spec = next(s for s in L.TABLES if s.name == spec_name)
    prob = kt_problem(spec, read_table(table_path))
    os.chdir(here)
    names, allowed, key_of = prob.pop("names"), prob.pop("allowed"), prob.pop("key_of")

    def recorded(p) -> bool:  # a named function: Kernel Tuner parses a lambda's source as a restriction
        return tuple(p[n] for n in names) in allowed

    random.seed(seed)
    np.random.seed(seed)
    start = time.time()
    error, results = None, []
    try:
        results, _ = kernel_tuner.tune_kernel(
            prob.pop("kernel_name"), prob.pop("kernel_source"), prob.pop("problem_size"), prob.pop("arguments"),
            prob.pop("tune_params"), restrictions=recorded,
            strategy=strategy, strategy_options={"time_limit": cap}, quiet=True, seed=seed, **prob)
    except Exception as exc:  # reported with what it evaluated
        error = f"{type(exc).__name__}: {str(exc)[:300]}"
    evals = []
    for r in results:
        if r and "timestamp" in r:
            at = datetime.fromisoformat(r["timestamp"])
            evals.append([key_of(r), at.timestamp() - start])
    print(json.dumps({"evals": evals, "wall": time.time() - start, "error": error}))


def run_kt(spec, table_path, strategy, seed, cap, log):
    """One Kernel Tuner run in a fresh process (module doc): its evaluations and wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:  # a fresh HOME: PyCUDA caches no build between runs
        env = {**os.environ, "HOME": tmp}
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--kt-one", spec.name,
                               str(Path(table_path).resolve()), strategy, str(seed), str(cap)],
                              capture_output=True, text=True, env=env, cwd=tmp)
    log.write(f"== kernel_tuner {strategy} {spec.name} seed {seed}\n{done.stdout}{done.stderr}\n")
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"Kernel Tuner run gave no result (exit {done.returncode}): {done.stderr[-300:]}")
    got = json.loads(lines[-1])
    return [tuple(e) for e in got["evals"]], got["wall"], got["error"]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0, help="the first seed (to add seeds in a later GPU call)")
    p.add_argument("--only", nargs="*", help="table names (large_space_search.TABLES), e.g. histogram256_16777216_uint8")
    p.add_argument("--kt", nargs="*", default=None, help="Kernel Tuner strategies (default: its best per table, "
                   "KT_BEST, and greedy_ils, its hill climber); none: autotune only")
    p.add_argument("--kt-cap", type=float, default=45.0, help="Kernel Tuner's time_limit, s")
    p.add_argument("--no-ours", action="store_true", help="Kernel Tuner only")
    p.add_argument("--results", default=str(HERE / "results"))
    p.add_argument("--out", default=os.environ.get("OUT") or str(HERE / "results"))
    p.add_argument("--merge", nargs="+", metavar="CSV", help="write the report of these runs' CSVs (no GPU)")
    p.add_argument("--drop-errors", action="store_true", help="with --merge: leave out the runs with an error")
    p.add_argument("--kt-one", nargs=5, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.kt_one:
        name, table, strategy, seed, cap = a.kt_one
        return kt_one(name, table, strategy, int(seed), float(cap))
    if a.merge:
        return merge(a.merge, Path(a.out), a.drop_errors)
    found = find_costs(Path(a.results), a.only)
    if not found:
        print(f"error: no table under {a.results} has a costs file beside it (record_tables.sh with COSTS=1)",
              file=sys.stderr)
        raise SystemExit(2)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{datetime.now(timezone.utc):%Y-%m-%d}_{L.gpu_tag()}_search_wall"
    t0 = time.time()
    with open(f"{stem}_log.txt", "a") as logs:
        rows = run_all(found, a, logs)
    write(stem, rows, [f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {a.seeds} seeds, Kernel Tuner's "
                       f"time_limit {a.kt_cap:g} s, {time.time() - t0:.0f} s in all; tables: "
                       + ", ".join(str(t.name) for t, *_ in found.values())])


def run_all(found, a, logs) -> list[dict]:
    """Every run of every table of ``found`` (``find_costs``), seed after seed: one row each."""
    from autotune.interchange.table import read_table

    rows = []
    for spec, (table_path, _costs, _device) in found.items():
        table = read_table(table_path)
        runs = []  # (tool, strategy)
        if not a.no_ours:
            runs.append(("autotune", "tpe_local"))
        kt = a.kt if a.kt is not None else [KT_BEST.get(spec.kernel_name), "greedy_ils"]
        try:
            kt_problem(spec, table)
            runs += [("kernel_tuner", s) for s in kt if s]
        except ValueError as exc:
            print(f"# {spec.name}: Kernel Tuner not run ({exc})", flush=True)
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            for tool, strategy in runs:
                try:
                    if tool == "autotune":
                        evals, wall = run_ours(spec, seed, logs)
                        error = None
                    else:
                        evals, wall, error = run_kt(spec, table_path, strategy, seed, a.kt_cap, logs)
                except RuntimeError as exc:
                    evals, wall, error = [], math.nan, str(exc)
                row = {"table": spec.name, "tool": tool, "strategy": strategy, "seed": seed,
                       "wall_s": round(wall, 2), "configs": len({k for k, _ in evals if k in table}),
                       "error": error or ""}
                for w in WITHIN:
                    secs, n = reach(evals, table, w)
                    row[f"s_to_{w:.0%}"] = secs if secs == math.inf else round(secs, 2)
                    row[f"configs_to_{w:.0%}"] = n
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def merge(paths, out: Path, drop_errors: bool) -> None:
    """The report of the rows of the CSVs ``paths`` (each written by a run of this script), in
    their order; ``drop_errors``: without the runs that ended in an error."""
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if drop_errors and r["error"]:
                    continue
                for k in r:
                    if k.startswith(("s_to_", "configs_to_")) or k == "wall_s":
                        r[k] = float(r[k])
                r["seed"], r["configs"] = int(r["seed"]), int(r["configs"])
                rows.append(r)
    found = re.search(r"\d{4}-\d{2}-\d{2}_.+?(?=_search_wall)", Path(paths[0]).name)  # <date>_<gpu>
    name = found.group(0) if found else f"{datetime.now(timezone.utc):%Y-%m-%d}_merged"
    out.mkdir(parents=True, exist_ok=True)
    write(out / f"{name}_search_wall", rows, [f"# the runs of {', '.join(Path(p).name for p in paths)}"
                                             f"{' (runs with an error left out)' if drop_errors else ''}: {len(rows)} runs"])


def write(stem: Path, rows, header) -> None:
    """The CSV of every run and the Markdown summary (median [quartiles] per table and tool)."""
    fields = list(rows[0]) if rows else ["table"]
    with open(f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(rows)
    lines = [f"# {Path(__file__).name}: seconds to within 1 % and 5 % of each table's optimum, on the GPU",
             *header, "",
             "| table | tool | strategy | seeds | s to 1 %, median [q1, q3] | configs to 1 % | s to 5 % | wall s |",
             "|---|---|---|---|---|---|---|---|"]

    def s(v):
        return ">end" if v == math.inf else f"{v:.1f}"

    groups = {}
    for r in rows:
        groups.setdefault((r["table"], r["tool"], r["strategy"]), []).append(r)
    for (table, tool, strategy), got in groups.items():
        one = quartiles([r["s_to_1%"] for r in got])
        five = quartiles([r["s_to_5%"] for r in got])
        n = statistics.median([r["configs_to_1%"] for r in got]) if all(
            r["configs_to_1%"] != math.inf for r in got) else math.inf
        walls = [r["wall_s"] for r in got if not math.isnan(r["wall_s"])]
        wall = f"{statistics.median(walls):.1f}" if walls else "-"
        errors = sum(bool(r["error"]) for r in got)
        lines.append(f"| {table} | {tool} | {strategy} | {len(got)}{f' ({errors} with an error)' if errors else ''} "
                     f"| {s(one[0])} [{s(one[1])}, {s(one[2])}] | {s(n)} | {s(five[0])} | {wall} |")
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
