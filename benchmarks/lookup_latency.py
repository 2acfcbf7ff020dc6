"""Latency of ``autotune.lookup``: warm (cached) calls and cold calls (after ``clear_cache``).

No GPU is needed: a ``DeviceInfo`` is passed in and the results live in a temporary SQLite
database holding a few tuned keys, written with ``Store.start_search``/``record_trial``.
``nvcc`` must be on PATH (its version is part of every key).

    python benchmarks/lookup_latency.py [--calls 200000] [--cold 30] [--out-dir benchmarks/results]

Warm: after a warm-up, each of ``--calls`` calls is timed alone with ``time.perf_counter_ns``
(the timer's own cost, measured the same way, is shown and not subtracted); median and p99.
Cold: ``clear_cache()`` then one call, ``--cold`` times per rung; median and max (for the
``dispatch`` rung this includes reading every trial of the kernel and learning its dispatch).
``dispatch, learned``: a shape not asked before in a process whose dispatch is learned (and
the database unchanged): one state query and the rule. The ``nearest_shape`` row is the same
lookup with ``shape_rung="nearest_shape"`` (the rung the dispatch replaced). Each tuned key
holds --configs trials (a grid search's worth), the evidence a dispatch is learned from. The very
first call of the process also opens (and migrates) the database and is shown apart.
Fresh process: ``--fresh`` new Python processes each import autotune and make one exact-rung
lookup in the existing database, as a program's first ``autotune.transpose`` does (its GPU
part, the CUDA context and module load, is not in this figure); median and max of the import
and of the lookup, and the heavy modules the process had imported by then.
The rule alone: each rule a dispatch may keep (``knn``, ``tree``, ``nearest``), fit from the same
trials, its ``Dispatch.pick`` of a new shape timed as the warm calls are (what a cold lookup of a
shape in a process whose dispatch is fit pays beyond its state query), and the fit itself.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from autotune import clear_cache, lookup
from autotune.measure.device import DeviceInfo
from autotune.store.key import tuning_key
from autotune.measure.measurement import Measurement
from autotune.kernel.catalog import get_kernel
from autotune.store.repository import Store

KERNEL = "smem_pad"
DEVICE = DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                    total_memory=85_000_000_000, driver_version="13.0", cuda_version="13.0", uuid="GPU-bench")
OTHER = replace(DEVICE, name="NVIDIA H100 PCIe", sm_count=114, total_memory=80_000_000_000, uuid="GPU-other")
TUNED = [(DEVICE, (1024, 1024)), (DEVICE, (4096, 4096)), (DEVICE, (8192, 8192)), (DEVICE, (1000, 3001)),
         (OTHER, (2048, 2048)), (OTHER, (8192, 8192))]
"""The tuned keys in the database (float32)."""
NEW = replace(DEVICE, name="NVIDIA H200", sm_count=132, total_memory=150_000_000_000, uuid="GPU-new")
CASES = [("exact", DEVICE, (4096, 4096), "float32"), ("dispatch", DEVICE, (3000, 3000), "float32"),
         ("nearest_shape", DEVICE, (3000, 3000), "float32"),
         ("same_arch", NEW, (2048, 512), "float32"), ("default", DEVICE, (4096, 4096), "float64")]
"""(expected rung, device, shape, dtype) looked up; NEW has nothing tuned itself."""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def fill(db: str, per_key: int) -> None:
    """Each tuned key gets ``per_key`` trials (the default first, as a search measures it), made-up
    times that favour another config at each shape."""
    store = Store(db)
    k = get_kernel(KERNEL)
    configs = [k.default_config()] + [c for c in k.space().configs() if c != k.default_config()]
    for i, (device, (rows, cols)) in enumerate(TUNED):
        key = tuning_key(KERNEL, device, (rows, cols), "float32")
        sid = store.start_search(key, study_name=key.study_name, sampler="grid", seed=None, memcpy_gbps=3000.0)
        base = 2 * rows * cols * 4 / 2.5e12 * 1e3
        for n, config in enumerate(configs[:per_key]):
            ms = base * (1.0 + 0.01 * ((n * 7 + i * 13) % per_key)) * (1.0 if n else 1.3)
            store.record_trial(sid, n, config, status="ok",
                               measurement=Measurement(ms, ms, ms, 2500.0 * base / ms, 83.3, 20, 4000, 50))
        store.finish_search(sid, "finished")


def rung_of(case: str) -> str:
    """The ``shape_rung`` a case asks for."""
    return "nearest_shape" if case == "nearest_shape" else "dispatch"


def warm_ns(device: DeviceInfo, shape, dtype: str, db: str, calls: int, rung: str = "dispatch") -> list[int]:
    clock = time.perf_counter_ns
    for _ in range(10_000):
        lookup(KERNEL, shape, dtype, device=device, db=db, shape_rung=rung)
    out = [0] * calls
    for i in range(calls):
        t0 = clock()
        lookup(KERNEL, shape, dtype, device=device, db=db, shape_rung=rung)
        out[i] = clock() - t0
    return out


def learned_us(device: DeviceInfo, db: str, times: int) -> list[float]:
    """Cold answers of new shapes in a process whose dispatch is learned: µs each."""
    clear_cache()
    lookup(KERNEL, (3000, 3000), device=device, db=db)
    out = []
    for i in range(times):
        t0 = time.perf_counter_ns()
        got = lookup(KERNEL, (3001 + i, 2999), device=device, db=db)
        out.append((time.perf_counter_ns() - t0) / 1e3)
        assert got.rung == "dispatch", got
    return out


def rule_ns(db: str, calls: int) -> list[tuple[str, float, float, float]]:
    """``(rule, pick median ns, pick p99 ns, fit ms)`` of each rule a dispatch may keep, fit from
    the database's trials of DEVICE."""
    from autotune.dispatch import build_dispatch, tables_from_trials

    k = get_kernel(KERNEL)
    store = Store(db)
    tables = tables_from_trials(store.shape_trials(tuning_key(KERNEL, DEVICE, (1, 1), "float32")))
    store.close()
    out = []
    clock = time.perf_counter_ns
    for rule in ("knn", "tree", "nearest"):
        t0 = clock()
        d = build_dispatch(tables, k.default_config(), k.dims, rules=(rule,))
        fit_ms = (clock() - t0) / 1e6
        times = [0] * calls
        for i in range(calls):
            shape = (3001 + i % 97, 2999)
            t0 = clock()
            d.pick(shape)
            times[i] = clock() - t0
        out.append((rule, statistics.median(times), pct(times, 99), fit_ms))
    return out


FRESH = """
import sys, time
t0 = time.perf_counter()
import autotune
from autotune.measure.device import DeviceInfo
t1 = time.perf_counter()
got = autotune.lookup({kernel!r}, {shape!r}, device=DeviceInfo(**{device!r}), db={db!r})
t2 = time.perf_counter()
heavy = [m for m in ("sqlalchemy", "alembic", "optuna", "pycuda", "torch", "cupy") if m in sys.modules]
print(got.rung, (t1 - t0) * 1e3, (t2 - t1) * 1e3, ",".join(heavy) or "-")
"""


def fresh_process(db: str, times: int) -> tuple[list[float], list[float], set[str]]:
    """Import and first-lookup times (ms) of ``times`` new processes, and what they imported."""
    code = FRESH.format(kernel=KERNEL, shape=CASES[0][2], device=DEVICE.__dict__, db=db)
    imports, lookups, heavy = [], [], set()
    for _ in range(times):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        assert out[0] == "exact", out
        imports.append(float(out[1]))
        lookups.append(float(out[2]))
        heavy |= set(out[3].split(",")) - {"-"}
    return imports, lookups, heavy


def pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200_000, help="timed warm calls per rung (>= 100000)")
    ap.add_argument("--cold", type=int, default=30, help="cold calls per rung")
    ap.add_argument("--fresh", type=int, default=20, help="fresh processes, one first lookup each")
    ap.add_argument("--configs", type=int, default=54, help="trials stored per tuned key (<= 54)")
    ap.add_argument("--out-dir", type=Path, help="write the table to <dir>/<date>_lookup_latency_<host>.txt")
    args = ap.parse_args()
    if args.calls < 100_000:
        ap.error("--calls must be >= 100000")

    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/bench.db"
        fill(db, args.configs)
        clear_cache()
        t0 = time.perf_counter_ns()
        lookup(KERNEL, CASES[0][2], device=DEVICE, db=db)
        first_us = (time.perf_counter_ns() - t0) / 1e3
        imports, firsts, heavy = fresh_process(db, args.fresh)

        clock = time.perf_counter_ns
        timer = []
        for _ in range(100_000):
            t0 = clock()
            timer.append(clock() - t0)

        rows = []
        for rung, device, shape, dtype in CASES:
            got = lookup(KERNEL, shape, dtype, device=device, db=db, shape_rung=rung_of(rung))
            assert got.rung == rung, (rung, got)
            cold = []
            for _ in range(args.cold):
                clear_cache()
                t0 = time.perf_counter_ns()
                lookup(KERNEL, shape, dtype, device=device, db=db, shape_rung=rung_of(rung))
                cold.append(time.perf_counter_ns() - t0)
            warm = warm_ns(device, shape, dtype, db, args.calls, rung_of(rung))
            rows.append((rung, f"{shape[0]}x{shape[1]} {dtype}", statistics.median(warm) / 1e3, pct(warm, 99) / 1e3,
                         statistics.median(cold) / 1e3, max(cold) / 1e3))
        learned = learned_us(DEVICE, db, args.cold)
        rules = rule_ns(db, min(args.calls, 100_000))

    when = datetime.datetime.now(datetime.timezone.utc)
    lines = [
        "# benchmarks/lookup_latency.py: autotune.lookup latency (DeviceInfo passed in, temporary SQLite DB)",
        f"# date: {when:%Y-%m-%d %H:%M UTC}  host: {socket.gethostname()}  CPU: {cpu_model()}",
        f"# Python {platform.python_version()} ({platform.python_implementation()}) on {platform.platform()}; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (1 min)",
        f"# warm: {args.calls} timed calls per rung after 10000 warm-up calls; cold: clear_cache() then one "
        f"call, {args.cold} times per rung",
        f"# tuned keys in the DB: {len(TUNED)} (float32), {args.configs} trials each; timer overhead per sample: median "
        f"{statistics.median(timer) / 1e3:.3f} us (not subtracted)",
        "",
        f"{'rung':<14} {'shape, dtype':>18} {'warm median us':>15} {'warm p99 us':>12} {'cold median us':>15} "
        f"{'cold max us':>12}",
    ]
    for rung, shape, wmed, wp99, cmed, cmax in rows:
        lines.append(f"{rung:<14} {shape:>18} {wmed:>15.2f} {wp99:>12.2f} {cmed:>15.0f} {cmax:>12.0f}")
    lines.append(f"{'dispatch, learned':<18} {'new shapes':>14} {'':>15} {'':>12} {statistics.median(learned):>15.0f} "
                 f"{max(learned):>12.0f}")
    warm = {r[0]: r[2] for r in rows}
    lines.append(f"warm dispatch - warm nearest_shape: {warm['dispatch'] - warm['nearest_shape']:+.2f} us "
                 f"(issue 36 target: within 0.5 us)")
    lines.append(f"warm dispatch rung {warm['dispatch']:.2f} us: issue 48's target <= 2 us "
                 f"{'met' if warm['dispatch'] <= 2 else 'NOT met'} (the dispatch is fit once per store change)")
    lines += ["", f"{'rule':<14} {'pick median us':>15} {'pick p99 us':>12} {'fit ms':>8}   (the rule alone, "
                  f"{len(TUNED) - 2} tuned shapes)"]
    lines += [f"{rule:<14} {med / 1e3:>15.2f} {p99 / 1e3:>12.2f} {fit:>8.1f}" for rule, med, p99, fit in rules]
    lines += ["", f"first lookup of this process (it filled the DB: its modules are loaded): {first_us / 1e3:.1f} ms",
              f"fresh process, existing DB, {args.fresh} processes: import autotune median "
              f"{statistics.median(imports):.1f} ms (max {max(imports):.1f}); first lookup median "
              f"{statistics.median(firsts):.1f} ms (max {max(firsts):.1f}); heavy modules imported: "
              f"{', '.join(sorted(heavy)) or 'none'}",
              f"warm target <= 20 us: {'met' if max(r[2] for r in rows) <= 20 else 'NOT met'} "
              f"(worst warm median {max(r[2] for r in rows):.2f} us, worst p99 {max(r[3] for r in rows):.2f} us)"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out_dir:
        tag = re.sub(r"[^A-Za-z0-9]+", "_", f"{socket.gethostname()} {cpu_model()}").strip("_")
        out = args.out_dir / f"{when:%Y-%m-%d}_lookup_latency_{tag}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
