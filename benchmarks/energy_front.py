"""Issue 40's energy target: the time-energy Pareto front of two kernels on one GPU, with the
time-optimal and energy-optimal configs named.

    python3 benchmarks/energy_front.py [--trials 40] [--max-seconds 170] [--problem NAME=KERNEL:DIMS:DTYPE]

Per problem (``--problem``, repeated; default smem_pad 8192x8192 float32 and matmul_warp
2048x2048x2048 float32): one ``autotune search --objective time,energy`` (NSGA-II, ``--trials``
configs, ``--population`` per generation, ``--seed``) into a fresh SQLite database under
``OUT/energy_front_dbs/``; its front is read back from the stored trials
(``Store.pareto_front``: the non-dominated valid configs over median ms and J per launch). Each
search gets an equal share of what is left of ``--max-seconds`` as its ``--timeout`` (no config
starts measuring after it), so the whole call stays bounded. A GPU without NVML's total-energy
counter: the search's one ``error:`` line is reported and the problem has no front.

Output: ``OUT/<date>_<gpu>_energy_front.txt`` (``--out``, default ``$OUT``, else
benchmarks/results/) with the device, the date, each front member's ms and J per launch, the
time-optimal and energy-optimal configs named and how they trade; the data as ``.json`` beside it.
The report is rewritten after each problem, so a call cut short still leaves one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_PROBLEMS = ("smem_pad=smem_pad:rows=8192,cols=8192:float32",
                    "matmul_warp=matmul_warp:m=2048,n=2048,k=2048:float32")


def parse_problem(spec: str) -> dict:
    """``NAME=KERNEL:DIMS:DTYPE`` (``smem=smem_pad:rows=8192,cols=8192:float32``) as a dict with
    ``name``, ``kernel`` (a catalog name, or a kernel file's path made absolute from the
    repository root), ``dims`` (name -> int) and ``dtype``.

    Raises:
        ValueError: a spec not of that form (naming ``--problem``).
    """
    try:
        name, rest = spec.split("=", 1)
        kernel, dims, dtype = rest.rsplit(":", 2)
        parsed = {k: int(v) for k, v in (pair.split("=") for pair in dims.split(","))}
    except ValueError:
        raise ValueError(f"--problem {spec!r} is not NAME=KERNEL:DIMS:DTYPE "
                         "(smem=smem_pad:rows=8192,cols=8192:float32)") from None
    if not name or not kernel or not dtype or not parsed:
        raise ValueError(f"--problem {spec!r} is not NAME=KERNEL:DIMS:DTYPE")
    if kernel.endswith(".toml") and not os.path.isabs(kernel):
        kernel = str(ROOT / kernel)
    return {"name": name, "kernel": kernel, "dims": parsed, "dtype": dtype}


def autotune_cmd(*args: str) -> list[str]:
    """``python -m autotune ARGS``, or ``$AUTOTUNE ARGS`` (the CPU test runs the CLI on a fake GPU)."""
    given = os.environ.get("AUTOTUNE")
    return [*(given.split() if given else [sys.executable, "-m", "autotune"]), *args]


def execute(cmd: list[str]) -> subprocess.CompletedProcess:
    """Run one command from the repository root, its output captured (the CPU test runs the CLI
    in its own process instead)."""
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


def front_of(db: Path, kernel: str) -> dict:
    """The stored best's device and objective, and the Pareto front of its study (from the
    trials: ``Store.pareto_front``) with the time-optimal and energy-optimal members named."""
    from autotune.kernel.catalog import resolve_kernel
    from autotune.store.opening import open_results
    from autotune.store.pareto import named_ends

    store = open_results(f"sqlite:///{db}", "read")
    try:
        name = resolve_kernel(kernel).name
        bests = store.find_best(kernel=name)
        if not bests:
            return {"error": "no best stored"}
        best = bests[-1]
        trials = store.study_trials(best.search_id)
        members = store.pareto_front(best.search_id)
    finally:
        store.close()
    ends = named_ends(members)
    row = lambda t: {"config": t.config.key, "ms": t.median_ms, "j_per_launch": t.energy_j}  # noqa: E731
    return {"device": best.device_name, "objective": best.objective, "stored_best": best.config.key,
            "trials": len(trials), "ok": sum(t.status == "ok" for t in trials),
            "with_energy": sum(t.status == "ok" and t.energy_j is not None for t in trials),
            "front": [row(t) for t in members],
            "time_optimal": row(ends[0]) if ends else None, "energy_optimal": row(ends[1]) if ends else None}


def run_problem(problem: dict, options, timeout_s: float) -> dict:
    """One time,energy search of ``problem`` into a fresh database, then its front (``front_of``);
    ``wall_s``, ``exit`` and, where the search failed, ``error`` (its last lines)."""
    folder = options.out / "energy_front_dbs"
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"{problem['name']}.db"
    db.unlink(missing_ok=True)
    dims = ",".join(f"{k}={v}" for k, v in problem["dims"].items())
    cmd = autotune_cmd("search", "--kernel", problem["kernel"], "--dims", dims, "--dtype", problem["dtype"],
                       "--device", str(options.device), "--objective", "time,energy",
                       "--trials", str(options.trials), "--seed", str(options.seed),
                       "--strategy-option", f"population={options.population}",
                       "--timeout", f"{max(1.0, timeout_s):.0f}", "--db", f"sqlite:///{db}")
    started = time.monotonic()
    proc = execute(cmd)
    out = {"problem": problem, "wall_s": round(time.monotonic() - started, 1), "exit": proc.returncode,
           "command": " ".join(cmd[cmd.index("search"):])}
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        out["error"] = [line for line in lines if line.startswith("error:")] or lines[-3:]
        return out
    out.update(front_of(db, problem["kernel"]))
    return out


def report(results: list[dict], options) -> Path:
    """Write ``OUT/<date>_<gpu>_energy_front.txt`` and the data as ``.json`` beside it."""
    device = next((r["device"] for r in results if r.get("device")), "unknown_gpu")
    today = f"{datetime.date.today():%Y-%m-%d}"
    lines = [f"# time-energy Pareto fronts (issue 40), {today}, {device}",
             f"# autotune search --objective time,energy (NSGA-II, population {options.population}), "
             f"--trials {options.trials} --seed {options.seed} per problem; J per launch from NVML's "
             "total-energy counter; clocks and power limits left as they were", ""]
    for r in results:
        p = r["problem"]
        shape = "x".join(str(v) for v in p["dims"].values())
        lines.append(f"## {p['name']}: {Path(p['kernel']).stem} {shape} {p['dtype']}  ({r['wall_s']} s)")
        lines.append(f"command: autotune {r['command']}")
        if "error" in r:
            lines += [f"no front: exit {r['exit']}", *r["error"], ""]
            continue
        lines.append(f"trials: {r['trials']} ({r['ok']} ok, {r['with_energy']} with energy); "
                     f"stored best (re-timed fastest, what lookup launches): {r['stored_best']}")
        lines.append(f"front: {len(r['front'])} configs")
        lines.append(f"  {'ms':>10}  {'J/launch':>11}  config")
        for m in r["front"]:
            mark = " <- time-optimal" if m == r["time_optimal"] else ""
            mark += " <- energy-optimal" if m == r["energy_optimal"] else ""
            lines.append(f"  {m['ms']:10.5f}  {m['j_per_launch']:11.6g}  {m['config']}{mark}")
        t, e = r["time_optimal"], r["energy_optimal"]
        if t and e:
            lines.append(f"time-optimal:   {t['config']} ({t['ms']:.5f} ms, {t['j_per_launch']:.6g} J)")
            lines.append(f"energy-optimal: {e['config']} ({e['ms']:.5f} ms, {e['j_per_launch']:.6g} J)")
            if t != e:
                lines.append(f"trade: the energy-optimal spends {100 * (1 - e['j_per_launch'] / t['j_per_launch']):.1f}% "
                             f"less energy per launch and takes {100 * (e['ms'] / t['ms'] - 1):.1f}% longer")
            else:
                lines.append("one config is both time- and energy-optimal here")
        lines.append("")
    options.out.mkdir(parents=True, exist_ok=True)
    path = options.out / f"{today}_{device.replace(' ', '_')}_energy_front.txt"
    path.write_text("\n".join(lines) + "\n")
    path.with_suffix(".json").write_text(json.dumps({"device": device, "date": today, "results": results},
                                                    indent=1, default=str))
    return path


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", action="append", help=f"NAME=KERNEL:DIMS:DTYPE (repeated; default "
                                                           f"{' '.join(DEFAULT_PROBLEMS)})")
    parser.add_argument("--trials", type=int, default=40, help="configs per search (default 40)")
    parser.add_argument("--population", type=int, default=8, help="NSGA-II configs per generation (default 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=170.0,
                        help="the whole call's cap: each search's --timeout is its share of what is left")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks/results"))
    options = parser.parse_args(argv)
    try:
        problems = [parse_problem(s) for s in options.problem or DEFAULT_PROBLEMS]
    except ValueError as exc:
        parser.error(str(exc))
    start, results, path = time.monotonic(), [], None
    for i, problem in enumerate(problems):
        left = options.max_seconds - (time.monotonic() - start)
        # the share of what is left, less ~25 s for each search's start and final re-timing after its timeout
        share = left / (len(problems) - i) - 25.0
        results.append(run_problem(problem, options, share))
        path = report(results, options)
        print(f"{problem['name']}: {results[-1]['wall_s']} s; report {path}", flush=True)
    print(path.read_text())
    return path


if __name__ == "__main__":
    main()
