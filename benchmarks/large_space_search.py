#!/usr/bin/env python3
"""Issue 22: search in spaces of thousands of configs, scored against random search and Kernel Tuner.

(a) ``--throughput`` (GPU): ``autotune search --kernel matmul_warp --size 4096 --dtype float32
    --strategy tpe --batch K --trials 100`` from a fresh database and an empty cubin cache
    (AUTOTUNE_CACHE_DIR): wall time, configs measured per second (over the wall, and sustained:
    first to last trial stored) and the per-phase totals of its trials (compile, load, verify,
    time, store; ms summed over trials, read back from the database).
(b) Replay (CPU, the default): every recorded table of :data:`TABLES` found under ``--results``
    (CSV ``config,median_ms``, empty = failed) is replayed with each of autotune's strategies
    (``autotune.search.strategies``, several seeds, on the CPU: no kernel runs) and with Kernel
    Tuner's strategies in its own simulation mode on the same table (``autotune.interchange.kt_cache``,
    ``max_fevals`` = budget, several seeds); each is scored with the methodology score P
    (``autotune.interchange.score``: 0 = expected random search, 1 = the optimum, the mean over the
    budget) at budgets 20, 50 and 100. Writes ``..._scores.csv``, ``..._scores.md`` and one PNG of
    best-so-far curves per table.
(c) Transfer (CPU, with (b)): for each table group of several shapes, each shape held out in
    turn: configs measured until within 2 % of the held-out table's best, by (1) the bests of the
    other (tuned) shapes, nearest first by the lookup's log-distance, and (2) autotune's
    ``transfer`` strategy given the other shapes' trials as history, the kernel's default measured
    first as ``autotune search`` does (where the registry has it);
    beside the exact chance that 10 random configs get there.
``--record`` (GPU) measures the tables: ``autotune sweep`` of each table's space at its shape
(``--top-k 1 --rounds 1``: every config measured once, no re-timing) into a fresh database, then
the table CSV ``<date>_<gpu>_table_<kernel>_<shape>_<dtype>.csv``.

    python3 benchmarks/large_space_search.py --record [--only NAME ...]     (GPU)
    python3 benchmarks/large_space_search.py --throughput [--batch 16]       (GPU)
    python3 benchmarks/large_space_search.py [--seeds 20] [--kt-seeds 10]    (CPU: replay)
Outputs under --out (default $OUT or benchmarks/results): <date>_<gpu>_large_space_search*.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import glob
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
SPACES = ROOT / "benchmarks" / "spaces"
BUDGETS = (20, 50, 100)
WITHIN = 0.02
TRANSFER_SEEDS = 5
KT_STRATEGIES = ("random_sample", "genetic_algorithm", "dual_annealing", "bayes_opt", "simulated_annealing",
                 "diff_evo", "pso", "firefly_algorithm", "greedy_ils", "mls", "basinhopping", "minimize")
"""Kernel Tuner 1.5.0 strategies that run in simulation mode on a budget of evaluations."""


@dataclass(frozen=True)
class Spec:
    """One recorded table: ``kernel`` at ``dims`` (name -> int) and ``dtype``, over ``space``
    (a file under benchmarks/spaces; ``""``: the kernel file's own space, e.g. one with nvcc
    flags as tunables); tables of one ``group`` are shapes of one space (transfer)."""

    kernel: str
    space: str
    dims: tuple[tuple[str, int], ...]
    dtype: str
    group: str

    @property
    def shape(self) -> str:
        return "x".join(str(v) for _, v in self.dims)

    @property
    def kernel_name(self) -> str:
        """The kernel's name (a user kernel is given by the path of its kernel file)."""
        from autotune.kernel.catalog import resolve_kernel

        return resolve_kernel(self.kernel).name if self.kernel.endswith(".toml") else self.kernel

    @property
    def name(self) -> str:
        return f"{self.kernel_name}_{self.shape}_{self.dtype}"


def _spec(kernel, space, dtype, group, **dims) -> Spec:
    return Spec(kernel, space, tuple(dims.items()), dtype, group)


TABLES = (
    _spec("smem_vec", "smem_vec_1080.toml", "float32", "smem_vec", rows=4096, cols=4096),
    _spec("smem_vec", "smem_vec_1080.toml", "float32", "smem_vec", rows=2048, cols=2048),
    _spec("smem_vec", "smem_vec_1080.toml", "float32", "smem_vec", rows=6144, cols=3072),
    _spec("matmul_warp", "matmul_warp_1332.toml", "float32", "matmul_warp", m=2048, n=2048, k=2048),
    _spec("matmul_warp", "matmul_warp_1332.toml", "float32", "matmul_warp", m=1024, n=1024, k=1024),
    _spec("matmul_warp", "matmul_warp_1332.toml", "float32", "matmul_warp", m=3333, n=2222, k=1111),
    # a user kernel: the README's example reduction over a widened space of 1,024 configs
    _spec("examples/reduction/reduce.toml", "reduce_sum_1024.toml", "float32", "reduce_sum", n=67108864),
    # issue 35's new spaces of 500+ configs (benchmarks/archive/record_new_tables.sh): matmul_reg widened,
    # the histogram example widened, the softmax example with nvcc flags as tunables
    _spec("matmul_reg", "matmul_reg_1024.toml", "float32", "matmul_reg", m=2048, n=2048, k=2048),
    _spec("examples/histogram/histogram.toml", "histogram_768.toml", "uint8", "histogram256", n=16777216),
    _spec("examples/histogram/histogram.toml", "histogram_768.toml", "uint8", "histogram256", n=1000003),
    _spec("benchmarks/kernels/softmax_flags.toml", "", "float32", "softmax_rows_flags", rows=4096, cols=1024),
    _spec("benchmarks/kernels/softmax_flags.toml", "", "float32", "softmax_rows_flags", rows=1000, cols=3001),
)
"""The tables ``--record`` measures and the replay reads (the first of each group is scored in (b)
at least; every table found is scored)."""
LEGACY = {"smem_vec_4096x4096_float32": "*_time_to_tuned_table.csv"}
"""Tables committed before this benchmark under another name (issue 13's 1,080-config grid)."""


def log(out, text: str = "") -> None:
    print(text, flush=True)
    if out is not None:
        out.write(text + "\n")
        out.flush()


def gpu_tag() -> str:
    name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", name)).strip("_")


def autotune(args: list[str], cache: Path) -> tuple[float, str]:
    """Run ``python -m autotune ARGS`` with the cubin cache ``cache``; (wall s, stdout)."""
    env = {**os.environ, "AUTOTUNE_CACHE_DIR": str(cache), "COLUMNS": "200"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "autotune", *args], env=env, capture_output=True, text=True,
                          cwd=ROOT)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"autotune {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def db_trials(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute("select config_key, status, median_ms, phases, created_at from autotune_trials "
                           "order by id").fetchall()


# --- recording (GPU) -----------------------------------------------------------------------------


def record(out_dir: Path, only: list[str]) -> None:
    from autotune.interchange.table import write_table

    tag, scratch = gpu_tag(), Path(tempfile.mkdtemp())
    for spec in TABLES:
        if only and spec.name not in only:
            continue
        dims = ",".join(f"{n}={v}" for n, v in spec.dims)
        db = scratch / f"{spec.name}.db"
        space = ["--space", str(SPACES / spec.space)] if spec.space else []
        wall, text = autotune(["sweep", "--kernel", spec.kernel, *space, "--dims", dims,
                               "--dtype", spec.dtype, "--top-k", "1", "--rounds", "1", "--db", f"sqlite:///{db}"],
                              scratch / "cubins")
        table: dict[str, float | None] = {}
        for key, status, ms, _, _ in db_trials(db):
            old = table.get(key)
            ms = ms if status == "ok" else None
            table[key] = ms if old is None else old if ms is None else min(old, ms)
        path = out_dir / f"{datetime.now(timezone.utc):%Y-%m-%d}_{tag}_table_{spec.name}.csv"
        write_table(table, path)
        failed = sum(v is None for v in table.values())
        log(None, f"{spec.name}: {len(table)} configs ({failed} failed) in {wall:.0f} s -> {path.name}")


# --- (a) throughput (GPU) ------------------------------------------------------------------------


def throughput(out_dir: Path, batch: int, trials: int) -> None:
    scratch = Path(tempfile.mkdtemp())
    stem = out_dir / f"{datetime.now(timezone.utc):%Y-%m-%d}_{gpu_tag()}_large_space_search_throughput"
    args = ["search", "--kernel", "matmul_warp", "--size", "4096", "--dtype", "float32", "--strategy", "tpe",
            "--batch", str(batch), "--trials", str(trials), "--db", f"sqlite:///{scratch / 'a.db'}"]
    wall, text = autotune(args, scratch / "cubins")
    rows = db_trials(scratch / "a.db")
    phases: dict[str, float] = {}
    for *_, ph, _ in rows:
        for name, ms in (json.loads(ph) if isinstance(ph, str) else ph or {}).items():
            phases[name] = phases.get(name, 0.0) + ms
    stamps = sorted(datetime.fromisoformat(r[4]) for r in rows)
    span = (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else math.nan
    with open(f"{stem}.txt", "w") as out:
        log(out, f"# (a) throughput, {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}, {os.cpu_count()} CPU cores")
        log(out, f"$ autotune {' '.join(args[:-2])}  (fresh database, empty AUTOTUNE_CACHE_DIR)")
        for line in text.splitlines():
            if line.startswith(("stopped:", "best:", "where the time went", "  failed")):
                log(out, line)
        ok = sum(r[1] == "ok" for r in rows)
        log(out, f"wall {wall:.1f} s for {len(rows)} configs measured ({ok} ok): {len(rows) / wall:.2f} configs/s "
                 f"over the wall; {(len(rows) - 1) / span:.2f} configs/s sustained (first to last trial stored, "
                 f"{span:.1f} s)")
        log(out, "per-phase totals over the trials (s): " + ", ".join(f"{n} {ms / 1e3:.1f}" for n, ms in phases.items()))


# --- (b) replay and scores (CPU) -----------------------------------------------------------------


def find_tables(results: Path) -> dict[Spec, Path]:
    """The newest CSV of each :data:`TABLES` entry under ``results``."""
    found = {}
    for spec in TABLES:
        paths = sorted(glob.glob(str(results / f"*_table_{spec.name}.csv")))
        if not paths and spec.name in LEGACY:
            paths = sorted(glob.glob(str(results / LEGACY[spec.name])))
        if paths:
            found[spec] = Path(paths[-1])
    return found


def _kernel(spec: Spec):
    from autotune.kernel.catalog import resolve_kernel

    return resolve_kernel(ROOT / spec.kernel if spec.kernel.endswith(".toml") else spec.kernel)


def _space(spec: Spec):
    from autotune.kernel.catalog import resolve_kernel
    from autotune.kernel.space import load_space

    kernel = resolve_kernel(ROOT / spec.kernel if spec.kernel.endswith('.toml') else spec.kernel)
    return load_space(kernel, SPACES / spec.space) if spec.space else kernel.space()


DEFAULT_FIRST = " +default"
"""Label suffix of a replay that measures the kernel's default first, as ``autotune search`` does."""


def _ours(job):
    spec, path, label, seed, budget = job
    from autotune.interchange.replay import replay
    from autotune.interchange.table import read_table

    name = label.removesuffix(DEFAULT_FIRST)
    first = [_kernel(spec).default_config()] if label.endswith(DEFAULT_FIRST) else []
    try:
        return replay(name, _space(spec), read_table(path), budget, seed=seed, first=first).curve
    except Exception as exc:  # e.g. a strategy whose package is missing here: reported, not fatal
        return f"{type(exc).__name__}: {str(exc)[:160]}"


def _kt(job):
    cache, strategy, seed, budget = job
    from autotune.interchange.kt_cache import simulate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return simulate(cache, strategy, budget, seed=seed)
        except Exception as exc:  # a strategy that cannot run here is reported, not fatal
            return f"{type(exc).__name__}: {str(exc)[:120]}"


def our_strategies(chosen: list[str] | None) -> list[str]:
    """Replay labels: each registry strategy (``transfer`` in (c) only), and the default one
    again with the kernel's default measured first (what ``autotune search`` does)."""
    try:
        from autotune.search.strategies import DEFAULT_STRATEGY, STRATEGIES
    except ImportError:
        return []
    names = [n for n in STRATEGIES if n != "transfer" and (chosen is None or n in chosen)]
    return names + [DEFAULT_STRATEGY + DEFAULT_FIRST]


def replay_all(out_dir: Path, results: Path, seeds: int, kt_seeds: int, ours: list[str] | None, workers: int) -> None:
    from autotune.interchange.kt_cache import write_cache
    from autotune.interchange.score import expected_random_curve, score
    from autotune.interchange.table import read_table

    tables = find_tables(results)
    if not tables:
        raise SystemExit(f"no recorded table under {results} (run --record on a GPU first)")
    tag = re.match(r"\d{4}-\d{2}-\d{2}_(.+?)_(table|time_to_tuned)", next(iter(tables.values())).name).group(1)
    stem = out_dir / f"{datetime.now(timezone.utc):%Y-%m-%d}_{tag}_large_space_search"
    scratch = Path(tempfile.mkdtemp())
    names = our_strategies(ours)
    rows, curves_of = [], {}
    with open(f"{stem}.txt", "w") as out, concurrent.futures.ProcessPoolExecutor(workers) as pool:
        log(out, f"# (b) replay on the CPU ({datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}); tables measured on "
                 f"the GPU ({tag}); autotune's strategies x {seeds} seeds, Kernel Tuner 1.5.0 simulation mode x "
                 f"{kt_seeds} seeds; P: 0 = expected random search, 1 = optimum (mean over the budget)")
        for spec, path in tables.items():
            table, space = read_table(path), _space(spec)
            ok = sorted(v for v in table.values() if v is not None)
            log(out, f"\n## {spec.name}: {path.name}: {len(table)} configs, {len(table) - len(ok)} failed, best "
                     f"{ok[0]:.4f} ms; within 2 %: {sum(v <= ok[0] * (1 + WITHIN) for v in ok)} configs")
            cache = scratch / f"{spec.name}.json"
            write_cache(table, space, cache, kernel_name=spec.kernel_name, problem_size=[v for _, v in spec.dims])
            ours_jobs = {(n, s): pool.submit(_ours, (spec, path, n, s, max(BUDGETS))) for n in names for s in range(seeds)}
            kt_jobs = {(n, b, s): pool.submit(_kt, (cache, n, s, b)) for n in KT_STRATEGIES for b in BUDGETS
                       for s in range(kt_seeds)}
            per, failures = {}, {}
            for (n, s), f in ours_jobs.items():
                per.setdefault(("autotune", n), {b: [] for b in BUDGETS})
                got = f.result()
                if isinstance(got, str):
                    failures.setdefault(("autotune", n), []).append(got)
                    continue
                for b in BUDGETS:
                    per[("autotune", n)][b].append(list(got)[:b])
            for (n, b, s), f in kt_jobs.items():
                got = f.result()
                per.setdefault(("kernel_tuner", n), {bb: [] for bb in BUDGETS})
                if isinstance(got, str):
                    failures.setdefault(("kernel_tuner", n), []).append(got)
                elif got:
                    per[("kernel_tuner", n)][b].append(got)
            for (tool, n), errors in failures.items():
                log(out, f"  {tool} {n}: {len(errors)} run(s) failed, e.g. {errors[0]}")
            log(out, f"{'tool':13s} {'strategy':20s} " + " ".join(f"P@{b:<4d} best%@{b:<4d}" for b in BUDGETS))
            for (tool, n), by_budget in per.items():
                cells = []
                for b in BUDGETS:
                    if not by_budget[b]:
                        cells.append(f"{'-':6s} {'-':9s}")
                        continue
                    s = score(by_budget[b], table, b)
                    rows.append([spec.name, tool, n, b, f"{s.p:.3f}", f"{s.final_pct:.2f}", s.runs])
                    cells.append(f"{s.p:6.3f} {s.final_pct:8.2f}%")
                log(out, f"{tool:13s} {n:20s} " + " ".join(cells))
            curves_of[spec] = (per, expected_random_curve(table, max(BUDGETS)), ok[0])
        transfer(out, tables)
    with open(f"{stem}_scores.csv", "w", newline="") as f:
        csv.writer(f).writerows([["table", "tool", "strategy", "budget", "P", "final_pct_of_best", "runs"]] + rows)
    with open(f"{stem}_scores.md", "w") as f:
        f.write("| table | tool | strategy | " + " | ".join(f"P@{b}" for b in BUDGETS) + " |\n")
        f.write("|---|---|---|" + "---|" * len(BUDGETS) + "\n")
        by = {}
        for t, tool, n, b, p, _, _ in rows:
            by.setdefault((t, tool, n), {})[b] = p
        for (t, tool, n), ps in by.items():
            f.write(f"| {t} | {tool} | {n} | " + " | ".join(ps.get(b, "-") for b in BUDGETS) + " |\n")
    plot(curves_of, stem)


def plot(curves_of, stem: Path) -> None:
    import numpy as np

    from autotune.interchange.score import mean_curve
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    for spec, (per, random_curve, best) in curves_of.items():
        fig, ax = plt.subplots(figsize=(9, 5.5))
        x = np.arange(1, max(BUDGETS) + 1)
        ax.plot(x, 100 * best / random_curve, color="black", ls="--", lw=1.5, label="random search (expected)")
        for (tool, n), by_budget in per.items():
            runs = by_budget[max(BUDGETS)]
            if runs:
                ax.plot(x, 100 * best / mean_curve(runs, max(BUDGETS)), ls="-" if tool == "autotune" else ":",
                        lw=2 if tool == "autotune" else 1.2, label=f"{tool}: {n}")
        ax.set(xlabel="configs measured", ylabel="best so far, % of the table's best speed", xscale="log",
               ylim=(50, 101), title=f"{spec.name}: mean best-so-far over seeds (replayed)")
        ax.legend(fontsize=7, ncol=2, loc="lower right")
        fig.savefig(f"{stem}_{spec.name}_curves.png", dpi=110, bbox_inches="tight")
        plt.close(fig)


# --- (c) transfer (CPU) --------------------------------------------------------------------------


def _distance(a: Spec, b: Spec) -> float:
    return math.sqrt(sum(math.log(x / y) ** 2 for (_, x), (_, y) in zip(a.dims, b.dims)))


def transfer(out, tables: dict) -> None:
    from autotune.interchange.replay import replay
    from autotune.interchange.table import read_table, table_configs

    log(out, f"\n# (c) transfer: each shape held out, the others tuned; configs measured until within "
             f"{100 * WITHIN:g} % of the held-out table's best (budget 10; '>10': not within it)")
    groups: dict[str, list[Spec]] = {}
    for spec in tables:
        groups.setdefault(spec.group, []).append(spec)
    have_transfer = _registry_has("transfer")
    for group, specs in groups.items():
        if len(specs) < 2:
            log(out, f"{group}: only {len(specs)} shape recorded; transfer needs 2 or more")
            continue
        loaded = {s: read_table(tables[s]) for s in specs}
        for held in specs:
            table, space = loaded[held], _space(held)
            ok = [v for v in table.values() if v is not None]
            target = min(ok) * (1 + WITHIN)
            good = sum(v <= target for v in ok)
            chance = 1 - math.comb(len(table) - good, 10) / math.comb(len(table), 10)
            tuned = sorted((s for s in specs if s != held), key=lambda s: _distance(s, held))
            ranked = [sorted(((v, k) for k, v in loaded[s].items() if v is not None)) for s in tuned]
            order = list(dict.fromkeys(k for tier in zip(*ranked) for _, k in tier))  # round-robin, nearest first
            hits = [i + 1 for i, k in enumerate(order[:10]) if table.get(k) is not None and table[k] <= target]
            line = (f"{group} held out {held.shape}: tuned at {', '.join(s.shape for s in tuned)}; bests of the tuned "
                    f"shapes, nearest first: {hits[0] if hits else '>10'}")
            if have_transfer:
                configs = {s: table_configs(loaded[s], _space(s)) for s in tuned}
                history = [(configs[s][k], v, _distance(s, held), s.shape) for s in tuned for k, v in loaded[s].items()]
                default = _kernel(held).default_config()  # measured first, as autotune search does
                counts = []
                for seed in range(TRANSFER_SEEDS):
                    r = replay("transfer", space, table, 10, seed=seed, history=history, first=[default])
                    counts.append(next((i + 1 for i, ms in enumerate(r.curve) if ms <= target), None))
                line += f"; autotune transfer strategy, seeds 0-{TRANSFER_SEEDS - 1}: " + ", ".join(
                    str(c) if c else ">10" for c in counts)
            default_ms = table.get(_kernel(held).default_config().key)
            default = "failed or not in the table" if default_ms is None else f"{100 * min(ok) / default_ms:.1f} %"
            log(out, line + f"; random: {100 * chance:.1f} % chance within 10 ({good} of {len(table)} configs qualify); "
                            f"the default alone: {default} of the best")


def _registry_has(name: str) -> bool:
    try:
        from autotune.search.strategies import STRATEGIES
    except ImportError:
        return False
    return name in STRATEGIES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", str(RESULTS)))
    ap.add_argument("--results", default=str(RESULTS), help="where the recorded tables are (default: %(default)s)")
    ap.add_argument("--record", action="store_true", help="measure the tables on the GPU")
    ap.add_argument("--only", nargs="*", default=[], help="with --record: these tables only (names as "
                                                          + ", ".join(s.name for s in TABLES[:2]) + ", ...)")
    ap.add_argument("--throughput", action="store_true", help="part (a) on the GPU")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=20, help="seeds of each autotune strategy")
    ap.add_argument("--kt-seeds", type=int, default=30, help="seeds of each Kernel Tuner strategy and budget")
    ap.add_argument("--ours", nargs="*", default=None, help="autotune strategies to replay (default: all)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.record:
        record(out, a.only)
    elif a.throughput:
        throughput(out, a.batch, a.trials)
    else:
        replay_all(out, Path(a.results), a.seeds, a.kt_seeds, a.ours, a.workers)


if __name__ == "__main__":
    main()
