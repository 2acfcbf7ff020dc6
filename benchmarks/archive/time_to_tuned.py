#!/usr/bin/env python3
"""Issue 13, "time to tuned": autotune against Kernel Tuner on one GPU, in one run.

(a) Kernel Tuner 1.5.0 brute force (``kernel_tuner.tune_kernel``, ``lang="PYCUDA"``: its default
    CUDA backend failed with CUDA_ERROR_INVALID_IMAGE on the H100 and ``lang="CUPY"`` rejects
    -O3) of smem_pad's 54-config space (configs/smem_pad.toml) at 8192^2 float32: the same
    source (kernels/smem.cu with its includes inlined, as autotune compiles it), the same fixed
    macros and -O3 as autotune passes, the same constraints, its default iterations (7), its
    output checked against the transpose (``answer``; autotune verifies too).
(b) ``autotune sweep --kernel smem_pad --size 8192`` and (c) the README main job, ``autotune
    search --kernel smem_pad --device 0 --size 8192`` (TPE, 100 trials), each from a cold start
    (a fresh database, an empty cubin cache: AUTOTUNE_CACHE_DIR), wall time and where it went.
(d) Each tool's best config re-measured by one common timer in this run: the configs compiled
    by autotune's nvcc path, verified, and timed interleaved over 7 rounds with CUDA events
    (PyCUDA; autotune.measure's re-timing), GB/s of the pooled median.
(e) Efficiency: a space of 1,080 valid configs (benchmarks/spaces/smem_vec_1080.toml, 4096^2
    float32) measured once by a grid search bounded in time; then the ``tpe`` and ``random``
    strategies of autotune.search.strategies (several seeds) replayed against that measured table
    by autotune.interchange.replay (a surrogate: no kernel runs during the replay; the replay of
    benchmarks/large_space_search.py too) the way autotune searches (the default first); configs measured until the best so far
    is within 2 % (and 1 %, 0 %) of the table's best, and the best-so-far curves as CSV (PNG with
    matplotlib); each sampler also without the default first (where the default is near the
    best, measuring it first finds it at once and says nothing of the sampler).

    python3 benchmarks/time_to_tuned.py [--out DIR] [--quick]
    python3 benchmarks/time_to_tuned.py --replay DIR/<date>_<gpu>_time_to_tuned_table.csv   (CPU only)
Writes <DIR>/<date>_<gpu>_time_to_tuned.txt, ..._table.csv, ..._curves.csv, ..._curves.png.
``--quick`` shrinks every part (a smoke test of the script, not a result).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LARGE_SPACE = ROOT / "benchmarks" / "spaces" / "smem_vec_1080.toml"
WITHIN = 0.02


def log(out, text: str = "") -> None:
    print(text, flush=True)
    out.write(text + "\n")
    out.flush()


def autotune(args: list[str], cache: Path) -> tuple[float, str]:
    """Run ``python -m autotune ARGS`` with an empty cubin cache; (wall s, its output)."""
    env = {**os.environ, "AUTOTUNE_CACHE_DIR": str(cache), "COLUMNS": "200"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "autotune", *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"autotune {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def summary_lines(output: str) -> list[str]:
    keep = ("stopped:", "best:", "where the time went", "smem_", "device-to-device", "  failed")
    notes = ("(early stop)", "the sampler was not asked")
    return [l for l in output.splitlines() if l.startswith(keep) or any(n in l for n in notes)][:20]


def best_of(output: str) -> str:
    return re.search(r"^best: (\S+)", output, re.M).group(1)


# --- (a) Kernel Tuner ---------------------------------------------------------------------------


def kernel_tuner(size: int, quick: bool) -> dict:
    """Kernel Tuner's brute force of smem_pad's space (run in a process of its own)."""
    import kernel_tuner

    from autotune.kernel.catalog import get_kernel
    from autotune.kernel.config import Config
    from autotune.kernel.dtypes import get_dtype
    from autotune.measure.compile import nvcc_options

    k, dt = get_kernel("smem_pad"), get_dtype("float32")
    space = k.space()
    names = [n for n, _ in space.params]
    fixed = [o for o in nvcc_options(k, k.default_config(), dt) if o.split("=")[0][2:] not in names]
    rng = np.random.default_rng(0)
    src = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    # out, src, rows, cols, ld (the row pitch), batch_stride: the kernel's six arguments
    args = [np.zeros((size, size), np.float32), src, np.int32(size), np.int32(size), np.int64(size),
            np.int64(size * size)]
    allowed = {n: list(v) for n, v in space.params}
    if quick:
        allowed["IPAD"], allowed["DIAGONAL"] = [1], [0]

    def valid(p) -> bool:
        return not space.violations(Config.of("smem_pad", {n: int(p[n]) for n in names}))

    start = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        k.function, k.source_text(), (size * size,), args, allowed, grid_div_x=["TILE_DIM", "TILE_DIM"],
        restrictions=valid, answer=[src.T.copy(), None, None, None, None, None], lang="PYCUDA",
        compiler_options=fixed,
        block_size_names=["TILE_DIM", "BLOCK_ROWS", "block_size_z"], quiet=True)
    wall = time.perf_counter() - start
    ok = [r for r in results if isinstance(r.get("time"), (int, float))]
    best = min(ok, key=lambda r: r["time"])
    return {"wall_s": wall, "configs": len(results), "ok": len(ok), "options": fixed,
            "best": Config.of("smem_pad", {n: int(best[n]) for n in names}).key, "best_ms": best["time"],
            "iterations": 7}


# --- (d) one common timer ------------------------------------------------------------------------


def common_timer(keys: list[str], size: int) -> dict:
    """Verify and re-time ``keys`` (smem_pad configs) interleaved over 7 rounds."""
    from autotune.kernel.catalog import get_kernel
    from autotune.kernel.config import Config
    from autotune.kernel.dtypes import get_dtype
    from autotune.kernel.problem import Problem
    from autotune.measure.benchmark import open_benchmark
    from autotune.measure.measure_options import MeasureOptions

    k = get_kernel("smem_pad")
    configs = [Config.of("smem_pad", params_of(key)) for key in dict.fromkeys(keys)]
    with open_benchmark(0, Problem.of(k, {"rows": size, "cols": size}, get_dtype("float32")),
                        MeasureOptions(seed=0, ci=0)) as bench:
        for c in configs:
            bench.verify(*bench.compile(c))
        timed = bench.retime(configs, rounds=7)
        return {r.config.key: {"ms": r.pooled_median_ms, "gbps": bench.figures(r.pooled_median_ms)[0],
                               "spread": r.spread, "rounds": list(r.round_medians_ms)} for r in timed}


# --- (e) the measured table and its replay -------------------------------------------------------


def params_of(key: str) -> dict[str, int]:
    """``{"BLOCK_ROWS": 8, ...}`` of a config key ``BLOCK_ROWS=8,...``."""
    return {n: int(v) for n, v in (kv.split("=") for kv in key.split(","))}


def measured_table(db: Path) -> dict[str, float | None]:
    """config key -> median ms (``None``: the config failed) of every trial in ``db``."""
    with sqlite3.connect(db) as con:
        rows = con.execute("select config_key, status, median_ms from autotune_trials").fetchall()
    return {key: (ms if status == "ok" else None) for key, status, ms in rows}


METHODS = {"tpe": ("tpe", True), "random": ("random", True), "tpe, no default": ("tpe", False),
           "random, no default": ("random", False)}
"""Replays: the sampler, and whether the kernel's default is measured first (autotune's way)."""
THRESHOLDS = (0.02, 0.01, 0.0)
"""Report configs measured until the best so far is within these of the table's best."""


def replay(method: str, seed: int, table: dict[str, float | None], budget: int,
           default_first: bool = True) -> list[float]:
    """Best-so-far median ms after each config measured, for ``method`` (a strategy of
    ``autotune.search.strategies``: ``tpe``, ``random``, ...) replayed on ``table`` by
    :func:`autotune.interchange.replay.replay` (the library's replay, shared with
    benchmarks/large_space_search.py): the kernel's default measured first when
    ``default_first``, as autotune searches."""
    from autotune.kernel.catalog import get_kernel
    from autotune.kernel.space import load_space
    from autotune.interchange.replay import replay as replay_table

    k = get_kernel("smem_vec")
    first = [k.default_config()] if default_first else []
    return list(replay_table(method, load_space(k, LARGE_SPACE), table, budget, seed=seed, first=first).curve)


def until_within(curve: list[float], best: float, within: float) -> int | None:
    """Configs measured until the best so far is within ``within`` of ``best`` (None: never)."""
    return next((i + 1 for i, ms in enumerate(curve) if ms <= best * (1 + within)), None)


def curves(table: dict, out, stem: Path, seeds: dict[str, int], budget: int, title: str) -> None:
    """Replay every :data:`METHODS` entry ``seeds[sampler]`` times; write the curves (CSV, PNG)
    and log configs measured until within each of :data:`THRESHOLDS` of the table's best."""
    best = min(ms for ms in table.values() if ms is not None)
    jobs = [(name, s) for name, (m, _) in METHODS.items() for s in range(seeds[m])]
    args = [(METHODS[n][0], s, table, budget, METHODS[n][1]) for n, s in jobs]
    with concurrent.futures.ProcessPoolExecutor(min(len(jobs), os.cpu_count() or 1)) as pool:
        done = dict(zip(jobs, pool.map(_replay_job, args)))
    with open(f"{stem}_curves.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["method", "default_first", "seed", "configs_measured", "best_so_far_ms", "pct_of_table_best"])
        for (name, s), curve in done.items():
            for i, ms in enumerate(curve):
                w.writerow([METHODS[name][0], int(METHODS[name][1]), s, i + 1, f"{ms:.6f}", f"{100 * best / ms:.3f}"])
    near = {t: sum(ms is not None and ms <= best * (1 + t) for ms in table.values()) for t in THRESHOLDS}
    log(out, f"surrogate replay against the measured table ({len(table)} configs, best {best:.4f} ms; within 2%: "
             f"{near[0.02]} configs, within 1%: {near[0.01]}): no kernel ran; budget {budget} configs per replay")
    log(out, "configs measured until the best so far is within 2% / 1% / 0% of the table's best: median over seeds "
             f"(per seed for 2%; >{budget}: not within budget)")
    for name, (m, _) in METHODS.items():
        medians = []
        for t in THRESHOLDS:
            counts = [until_within(done[(name, s)], best, t) for s in range(seeds[m])]
            medians.append(f"{np.median([c or budget + 1 for c in counts]):g}")
            if t == 0.02:
                shown = ", ".join(str(c) if c else f">{budget}" for c in counts)
        log(out, f"  {name:18s} {' / '.join(medians):16s} (2%, per seed: {shown})")
    _plot(done, best, stem, out, title)


def _replay_job(job):
    return replay(*job)


def _plot(done: dict, best: float, stem: Path, out, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log(out, "  (matplotlib not available here: CSV only)")
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, color, style in (("tpe, no default", "tab:blue", "-"), ("random, no default", "tab:orange", "-"),
                               ("tpe", "tab:blue", ":"), ("random", "tab:orange", ":")):
        lines = [np.array([100 * best / ms for ms in c]) for (nn, _), c in done.items() if nn == name]
        n = min(map(len, lines))
        if style == "-":
            for y in lines:
                ax.plot(np.arange(1, len(y) + 1), y, color=color, alpha=0.12, lw=0.7)
        ax.plot(np.arange(1, n + 1), np.median([y[:n] for y in lines], axis=0), color=color, lw=2, ls=style,
                label=f"{name} (median of {len(lines)} seeds)")
    ax.axhline(100 / (1 + WITHIN), color="grey", ls="--", lw=1, label=f"within {100 * WITHIN:g}% of the best")
    ax.set(xlabel="configs measured", ylabel="best so far, % of the table's best bandwidth", xscale="log",
           ylim=(50, 101), title=title)
    ax.legend(loc="lower right")
    fig.savefig(f"{stem}_curves.png", dpi=120, bbox_inches="tight")
    log(out, f"  plot: {Path(f'{stem}_curves.png').name}")


def replay_only(table_csv: Path, seeds: dict[str, int], budget: int) -> None:
    """Replay a table written by an earlier run (``..._table.csv``) again, on this machine's CPU:
    the replay runs no kernel, so it needs no GPU; writes ``<stem>_replay.txt`` and the curves."""
    with open(table_csv) as f:
        table = {row["config"]: float(row["median_ms"]) if row["median_ms"] else None for row in csv.DictReader(f)}
    stem = Path(str(table_csv).removesuffix("_table.csv"))
    with open(f"{stem}_replay.txt", "w") as out:
        log(out, f"# replay of {table_csv.name} on the CPU of {os.uname().nodename} "
                 f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}); the table was measured on the GPU of the run")
        curves(table, out, stem, seeds, budget, f"smem_vec: {len(table):,} measured configs, replayed (surrogate)")


# --- the run -------------------------------------------------------------------------------------


def gpu_name() -> tuple[str, str]:
    q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader", "-i", "0"],
                       capture_output=True, text=True, check=True).stdout.strip().split(", ")
    return q[0], q[1]


def child(part: str, *args) -> dict:
    """Run a part in a fresh process (its own CUDA context); its JSON answer."""
    proc = subprocess.run([sys.executable, __file__, "--part", part, *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"part {part} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "benchmarks" / "results")))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", help=argparse.SUPPRESS)
    ap.add_argument("--replay", metavar="TABLE_CSV", help="only replay a measured table (no GPU)")
    ap.add_argument("--no-large", action="store_true", help="parts (a)-(d) only; (e), the 1,080-config grid and "
                                                             "its replays, is skipped (its last output stands)")
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.replay:
        replay_only(Path(a.replay), {"tpe": 8, "random": 50}, 300)
        return
    if a.part == "kt":
        print(json.dumps(kernel_tuner(int(a.rest[0]), a.rest[1] == "1")))
        return
    if a.part == "timer":
        print(json.dumps(common_timer(a.rest[1:], int(a.rest[0]))))
        return
    size, large, bound = (2048, 1024, 30) if a.quick else (8192, 4096, 220)
    gpu, driver = gpu_name()
    tag = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", gpu)).strip("_")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    stem = Path(a.out) / f"{datetime.now(timezone.utc):%Y-%m-%d}_{tag}_time_to_tuned{'_quick' * a.quick}{'_a_to_d' * a.no_large}"
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    scratch = Path(tempfile.mkdtemp())
    with open(f"{stem}.txt", "w") as out:
        log(out, f"# time to tuned (issue 13){' -- QUICK smoke run, not a result' * a.quick}")
        log(out, f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}  {gpu}  driver {driver}  {nvcc}  "
                 f"CPU cores {os.cpu_count()}")
        log(out, f"\n## (a) Kernel Tuner brute force, smem_pad {size}^2 float32")
        kt = child("kt", size, int(a.quick))
        log(out, f"Kernel Tuner 1.5.0 lang=PYCUDA, compiler_options {kt['options']}, default iterations "
                 f"({kt['iterations']}), output checked: {kt['configs']} configs, {kt['ok']} timed; best {kt['best']} "
                 f"{kt['best_ms']:.4f} ms (its own mean)")
        log(out, f"# wall time of Kernel Tuner: {kt['wall_s']:.1f} s")
        runs = {}
        for label, args in (
                ("sweep", ["sweep", "--kernel", "smem_pad", "--size", str(size)]),
                ("search", ["search", "--kernel", "smem_pad", "--device", "0", "--size", str(size)]
                 + (["--trials", "10"] if a.quick else []))):
            log(out, f"\n## ({'b' if label == 'sweep' else 'c'}) autotune {' '.join(args)}: cold start")
            wall, text = autotune(args + ["--db", f"sqlite:///{scratch}/{label}.db"], scratch / f"cache-{label}")
            runs[label] = (wall, best_of(text))
            for line in summary_lines(text):
                log(out, line)
            log(out, f"# wall time of autotune {label}: {wall:.1f} s")
        log(out, f"\n## (d) the bests re-measured by one common timer ({size}^2 float32, 7 interleaved rounds)")
        bests = {"Kernel Tuner": kt["best"], "autotune sweep": runs["sweep"][1], "autotune search": runs["search"][1]}
        timed = child("timer", size, *bests.values())
        top = max(v["gbps"] for v in timed.values())
        for tool, key in bests.items():
            t = timed[key]
            log(out, f"{tool:16s} {key:44s} {t['ms']:.4f} ms  {t['gbps']:.0f} GB/s  {100 * t['gbps'] / top:.1f}% of the "
                     f"fastest  spread {100 * t['spread']:.2f}%")
        if a.no_large:
            log(out, "\n## (e) not run (--no-large): the large-space curves are those of the last full run")
        else:
            large_space(out, stem, scratch, large, bound, a.quick)
        log(out, "\n## summary")
        log(out, f"Kernel Tuner {kt['wall_s']:.1f} s; autotune sweep {runs['sweep'][0]:.1f} s "
                 f"({kt['wall_s'] / runs['sweep'][0]:.1f}x faster); README main job {runs['search'][0]:.1f} s "
                 f"(issue 13's targets: sweep <= 12 s and >= 6x faster than Kernel Tuner, main job <= 15 s)")


def large_space(out, stem, scratch: Path, large: int, bound: int, quick: bool) -> None:
    """Part (e): the 1,080-config grid of smem_vec, its table, and the samplers' replays on it."""
    log(out, f"\n## (e) efficiency on {LARGE_SPACE.name}, smem_vec {large}^2 float32")
    wall, text = autotune(["search", "--kernel", "smem_vec", "--space", str(LARGE_SPACE), "--size", str(large),
                           "--sampler", "grid", "--trials", "2000", "--timeout", str(bound), "--top-k", "1",
                           "--rounds", "1", "--db", f"sqlite:///{scratch}/large.db"], scratch / "cache-large")
    for line in summary_lines(text):
        log(out, line)
    table = measured_table(scratch / "large.db")
    log(out, f"# wall time of the grid (bounded at {bound} s): {wall:.1f} s; {len(table)} configs in the table, "
             f"{sum(v is None for v in table.values())} failed")
    with open(f"{stem}_table.csv", "w", newline="") as f:
        csv.writer(f).writerows([["config", "median_ms"]] + [[k, "" if v is None else v] for k, v in table.items()])
    seeds = {"tpe": 2, "random": 4} if quick else {"tpe": 8, "random": 50}
    curves(table, out, stem, seeds, 50 if quick else 300,
           f"smem_vec {large}^2 float32: {len(table):,} measured configs, replayed (surrogate)")


if __name__ == "__main__":
    main()
