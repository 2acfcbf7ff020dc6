"""Issue 34's benchmark: record the example application, plan it, tune it with a budget on one
GPU, and measure what the tuning bought, against the defaults and against a longer search.

    python3 benchmarks/app_tuning.py [--budget 10m] [--call-limit 540] [--long-cap 40] [--steps 3]
    python3 benchmarks/app_tuning.py --scaling [--budget 10m]      # a machine with 2+ GPUs

Phases, each run once and kept in the state folder (``--state``, default
``benchmarks/.state/app_tuning``, git-ignored: it outlives one call on a machine that stays up),
so the script is run again until it says it is done (exit 0; exit 3: "run me again"). Each
call stops starting work ``--call-limit`` seconds after it began (a tuning still running then
gets SIGINT, which keeps what it measured: the next call resumes it, its wall time summed):

1. ``record``: ``examples/app/app.py --record app --check --steps N`` into a fresh database
   (the first step sees every shape first: builds and loads), then ``autotune workloads`` and
   ``autotune plan app --budget B --plot``.
2. ``tune``: ``autotune tune app --budget B --device 0``; its table: every problem's GPU time
   per call at the default and the tuned config, measured (interleaved re-timing), and the
   workload's total over its recorded calls.
3. ``long``: each problem's own best from a longer search at that shape: its study (in a copy
   of the tuned database) resumed for ``--long-cap`` more seconds of TPE (a problem whose
   space the tuning measured whole is its own long search), then the tuned config and that
   best re-timed against each other (10 rounds, one measuring process per problem): the tuned
   config's % of its own best, and their time-weighted mean (weights: each problem's tuned
   GPU time over its recorded calls).
4. ``scaling`` (``--scaling``, 2+ GPUs of one model): the application recorded once more, and
   the same workload tuned from two copies of that database, ``--device 0`` and
   ``--device all``, with the same budget: the wall times and their ratio.

Output: ``OUT/<date>_<gpu>_app_tuning.txt`` (``--out``, default ``$OUT``, else
benchmarks/results/), rewritten from the state after every call, the plot of the plan before
and after, and a copy of the state's databases in ``OUT/state/`` (to carry to another call if
the machine was given back: put them in the state folder again).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXIT_AGAIN = 3
"""Exit code of a call that stopped at its time limit: run the same command again."""
NAME = "app"
MARGIN_S = 20.0
"""Seconds kept at the end of a call for writing the report."""


class Clock:
    """The call's time limit."""

    def __init__(self, limit_s: float) -> None:
        self.start, self.limit = time.monotonic(), limit_s

    def left(self) -> float:
        return self.limit - MARGIN_S - (time.monotonic() - self.start)


class State:
    """``state.json`` in the state folder: what each phase produced."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.file = folder / "state.json"
        self.data = json.loads(self.file.read_text()) if self.file.exists() else {}

    def save(self) -> None:
        part = self.file.with_suffix(".part")
        part.write_text(json.dumps(self.data, indent=1))
        os.replace(part, self.file)

    def url(self, name: str) -> str:
        return f"sqlite:///{self.folder / name}"


def autotune_cmd(*args: str) -> list[str]:
    """``python -m autotune ARGS``, or ``$AUTOTUNE ARGS`` (how the other drivers choose it;
    the CPU test runs the CLI on fake GPUs so)."""
    given = os.environ.get("AUTOTUNE")
    return [*(given.split() if given else [sys.executable, "-m", "autotune"]), *args]


def run(cmd: list[str], clock: Clock | None = None, log: list[str] | None = None, env: dict | None = None
        ) -> tuple[int, float, str]:
    """Run ``cmd``; at the clock's limit send it SIGINT (it keeps what it measured). Returns
    its exit code, wall seconds and output (stdout and stderr, as they came)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})
    try:
        output, _ = proc.communicate(timeout=None if clock is None else max(1.0, clock.left()))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            output, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
    wall = time.monotonic() - started
    if log is not None:
        shown = " ".join(cmd).replace(f"{sys.executable} -m ", "").replace(sys.executable, "python3")
        log.append(f"$ {shown}   # {wall:.1f} s, exit {proc.returncode}")
        log.extend(output.rstrip().splitlines())
        log.append("")
    return proc.returncode, wall, output


def record(state: State, options, clock: Clock, db: str, key: str) -> bool:
    """Phase 1 (or the scaling's recording into ``db``): the app recorded, planned."""
    if state.data.get(key, {}).get("done"):
        return True
    log: list[str] = []
    rc, wall, _ = run([*options.app.split(), "--steps", str(options.steps), "--record", NAME, "--db", db, "--check"],
                      clock, log)
    if rc != 0:
        raise SystemExit(f"the example application failed (exit {rc}):\n" + "\n".join(log))
    run(autotune_cmd("workloads", "--db", db), None, log)
    plot = state.folder / f"{key}_plan_before.png"
    run(autotune_cmd("plan", NAME, "--budget", options.budget, "--db", db, "--plot", str(plot), "--wide"), None, log)
    state.data[key] = {"done": True, "log": log, "wall_s": wall}
    state.save()
    return True


def tune(state: State, options, clock: Clock, db: str, key: str, device: str) -> bool:
    """Phase 2 (and the scaling's runs): ``autotune tune`` until it finishes, over as many
    calls as it takes; its wall time is the tuning's (summed over resumed runs)."""
    entry = state.data.setdefault(key, {"parts": [], "log": []})
    if entry.get("done"):
        return True
    if clock.left() < 10:
        return False
    rc, wall, _ = run(autotune_cmd("tune", NAME, "--budget", options.budget, "--device", device, "--db", db,
                                   "--wide"), clock, entry["log"])
    entry["parts"].append({"wall_s": wall, "exit": rc})
    if rc == 0:
        entry["done"] = True
        entry["outcome"] = outcome(db)
    elif rc not in (130, 143):
        state.save()
        raise SystemExit(f"autotune tune failed (exit {rc}):\n" + "\n".join(entry["log"][-40:]))
    state.save()
    return rc == 0


def outcome(db: str) -> dict:
    """The last tuning of the workload, from the database: per problem its calls, status,
    trials, configs and measured times; and the tuning's wall and spent seconds."""
    from autotune.store.opening import open_reader
    from autotune.store.workload_records import merged
    from autotune.store.workloads import latest_tuning, workload_problems

    store = open_reader(db)
    try:
        tuning = latest_tuning(store, NAME)
        problems = {p.ident: p for p in merged(workload_problems(store, NAME))}
    finally:
        store.close()
    rows = []
    for r in tuning.results:
        p = problems[r.ident]
        rows.append({"label": r.label, "kernel_ref": p.kernel_ref or r.kernel, "dims": dict(r.dims),
                     "dtype": r.dtype, "calls": p.calls, "status": r.status, "reason": r.reason,
                     "trials": r.trials, "spent_s": r.spent_s, "budget_s": r.budget_s, "config": r.config_key,
                     "default_ms": r.default_ms, "tuned_ms": r.tuned_ms, "gpu": r.gpu_ordinal,
                     "recorded_ms": p.ms_per_call})
    return {"rows": rows, "wall_s": tuning.wall_s, "spent_s": tuning.spent_s, "budget_s": tuning.budget_s,
            "status": tuning.status,
            "gpus": tuning.gpus, "device": tuning.device.name}


def long_searches(state: State, options, clock: Clock) -> bool:
    """Phase 3: each problem's own best from a longer search, and the tuned config's % of it."""
    from autotune.kernel.problem import Problem

    entry = state.data.setdefault("long", {"rows": {}, "log": []})
    if entry.get("done"):
        return True
    long_db = state.folder / "long.db"
    if not long_db.exists():
        shutil.copy2(state.folder / "app.db", long_db)
    for row in state.data["tune"]["outcome"]["rows"]:
        label = row["label"]
        if label in entry["rows"] or row["config"] is None:
            continue
        if clock.left() < options.long_cap + 30:
            return False
        problem = Problem.of(row["kernel_ref"], row["dims"], row["dtype"])
        valid = problem.kernel.space().count(100_000)
        dims = ",".join(f"{k}={v}" for k, v in row["dims"].items())
        own = {"space": valid, "tune_trials": row["trials"]}
        if row["trials"] < valid:
            rc, wall, _ = run(autotune_cmd("search", "--kernel", row["kernel_ref"], "--dims", dims, "--dtype",
                                           row["dtype"], "--strategy", "tpe", "--trials", "100000", "--timeout",
                                           str(options.long_cap), "--resume", "--db", f"sqlite:///{long_db}"),
                              clock, entry["log"])
            own["long_search_s"] = wall
        own.update(compare(problem, row["config"], f"sqlite:///{long_db}"))
        entry["rows"][label] = own
        state.save()
    entry["done"] = True
    state.save()
    return True


def compare(problem, tuned_key: str, long_db: str) -> dict:
    """The tuned config and the long search's best re-timed against each other on GPU 0."""
    import autotune
    from autotune.kernel.config import Config
    from autotune.measure import benchmark, isolation
    from autotune.measure.measure_options import MeasureOptions
    from autotune.workload.job import measure_pair

    autotune.clear_cache()
    best = autotune.lookup(problem, device=0, db=long_db)
    tuned = Config.of(problem.kernel.name, {k: int(v) for k, v in (kv.split("=") for kv in tuned_key.split(","))})
    measure = MeasureOptions(repeats=50, seed=0, ci=0)
    with isolation.open_isolated(benchmark.open_benchmark, 0, problem, measure) as bench:
        t, b, reason = measure_pair(bench, tuned, best.config, rounds=10)
    return {"long_best": best.config.key, "long_rung": best.rung, "tuned_ms": t.pooled_median_ms if t else None,
            "best_ms": b.pooled_median_ms if b else None, "reason": reason,
            "pct_of_best": 100 * b.pooled_median_ms / t.pooled_median_ms if t and b else None}


def scaling(state: State, options, clock: Clock) -> bool:
    """Phase 4: the same workload tuned on 1 GPU and on every GPU, from copies of one recording."""
    if not record(state, options, clock, state.url("scaling.db"), "scaling_record"):
        return False
    for name in ("scaling_1gpu.db", "scaling_all.db"):
        if not (state.folder / name).exists():
            shutil.copy2(state.folder / "scaling.db", state.folder / name)
    return (tune(state, options, clock, state.url("scaling_1gpu.db"), "scaling_1gpu", "0")
            and tune(state, options, clock, state.url("scaling_all.db"), "scaling_all", "all"))


def report(state: State, options, out: Path, device: str) -> Path:
    """The results file, from everything the state holds so far."""
    lines = [f"app_tuning (issue 34) on {device}; budget {options.budget}; long-search cap {options.long_cap} s per "
             f"problem; {options.steps} recorded steps after a first one",
             f"written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
             f"{'complete' if state.data.get('complete') else 'NOT complete: run again'}", ""]
    for key in ("record", "scaling_record"):
        if key in state.data:
            lines += [f"## {key}: the application recorded ({state.data[key]['wall_s']:.0f} s), planned", "",
                      *state.data[key]["log"]]
    tuned = state.data.get("tune", {})
    if tuned.get("log"):
        lines += ["## tune (one GPU)", "", *tuned["log"]]
    if "outcome" in tuned:
        lines += summary(tuned["outcome"], state.data.get("long", {}).get("rows", {}))
    for key, what in (("scaling_1gpu", "--device 0"), ("scaling_all", "--device all")):
        if key in state.data:
            lines += [f"## scaling: {what}", "", *state.data[key]["log"]]
    one, every = state.data.get("scaling_1gpu", {}), state.data.get("scaling_all", {})
    if "outcome" in one and "outcome" in every:
        w1, w2 = one["outcome"]["wall_s"], every["outcome"]["wall_s"]
        lines += ["## scaling: wall time of the same workload's tuning, same budget",
                  f"1 GPU: {w1:.0f} s; {every['outcome']['gpus']} GPUs: {w2:.0f} s; ratio {w2 / w1:.2f} "
                  "(target: at most 0.55)", ""]
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{datetime.date.today():%Y-%m-%d}_{device.replace(' ', '_')}_app_tuning.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def summary(result: dict, long_rows: dict) -> list[str]:
    """Per problem: default and tuned GPU time per call (measured), over its recorded calls, the
    tuned config's % of its own best; the totals; the problems slower than their default."""
    rows = result["rows"]
    lines = ["## measured kernel time, defaults against tuned (final interleaved re-timing of each problem)", "",
             f"{'problem':<30} {'status':<8} {'calls':>6} {'default ms':>11} {'tuned ms':>10} {'speed-up':>8} "
             f"{'trials':>6} {'% own best':>10}"]
    total_d = total_t = 0.0
    weighted, weights, slower = 0.0, 0.0, []
    for r in sorted(rows, key=lambda r: -(r["calls"] * (r["default_ms"] or 0))):
        d, t = r["default_ms"], r["tuned_ms"]
        own = long_rows.get(r["label"], {})
        pct = own.get("pct_of_best")
        if d is not None and t is not None:
            total_d += d * r["calls"]
            total_t += t * r["calls"]
            if t > d * 1.01:
                slower.append(f"{r['label']} ({t / d - 1:.1%} slower)")
        if pct is not None and t is not None:
            weighted += pct * t * r["calls"]
            weights += t * r["calls"]
        lines.append(f"{r['label']:<30} {r['status']:<8} {r['calls']:>6} {_f(d):>11} {_f(t):>10} "
                     f"{(f'{d / t:.2f}x' if d and t else ''):>8} {r['trials']:>6} "
                     f"{(f'{pct:.1f}' if pct is not None else ''):>10}")
    lines += ["", f"workload GPU time over its recorded calls: default configs {total_d:.4g} ms, tuned {total_t:.4g} "
                  f"ms: {100 * (1 - total_t / total_d):.1f} % less ({total_d / total_t:.2f}x)" if total_t else "",
              f"tuning: {result['spent_s']:.0f} s of GPU time spent, wall {result['wall_s']:.0f} s on "
              f"{result['gpus']} GPU(s)" + (f"; budget {result['budget_s']:.0f} s, spent "
                                           f"{result['spent_s'] - result['budget_s']:+.1f} s past it (target: spent "
                                           "unless every space was measured whole, at most +5 s; the tune log's "
                                           "'further rounds' line says what the first round left)"
                                           if result.get("budget_s") else ""),
              f"slower than their default by more than 1 %: {', '.join(slower) or 'none'}"]
    if weights:
        lines.append(f"tuned config's % of its own best from a longer search, weighted by tuned GPU time: "
                     f"{weighted / weights:.1f} % (target: at least 97 %)")
    lines.append("")
    for label, own in long_rows.items():
        lines.append(f"  {label}: space {own['space']} valid configs, tuning measured {own['tune_trials']}; "
                     + (f"long search {own['long_search_s']:.0f} s; " if "long_search_s" in own else
                        "the tuning measured the space whole; ")
                     + f"own best {own['long_best']} {_f(own['best_ms'])} ms against tuned {_f(own['tuned_ms'])} ms"
                     + (f" ({own['reason']})" if own.get("reason") else ""))
    return lines + [""]


def _f(v) -> str:
    return "" if v is None else f"{v:.4g}"


def main(argv: list[str] | None = None) -> None:
    global MARGIN_S
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--call-limit", type=float, default=540.0, help="seconds this call may run")
    parser.add_argument("--long-cap", type=float, default=40.0, help="seconds of longer search per problem")
    parser.add_argument("--steps", type=int, default=3, help="recorded steps of the application")
    parser.add_argument("--scaling", action="store_true", help="the 1-GPU against all-GPU tuning (2+ GPUs)")
    parser.add_argument("--state", type=Path, default=ROOT / "benchmarks/.state/app_tuning")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks/results"))
    parser.add_argument("--app", default=f"{sys.executable} examples/app/app.py", help="the application's command")
    parser.add_argument("--margin", type=float, default=MARGIN_S, help="seconds kept for the report")
    options = parser.parse_args(argv)
    MARGIN_S = options.margin
    clock = Clock(options.call_limit)
    state = State(options.state / ("scaling" if options.scaling else "one_gpu"))
    from autotune.measure.device import query_device

    device = query_device(0).name
    try:
        if options.scaling:
            done = scaling(state, options, clock)
        else:
            done = (record(state, options, clock, state.url("app.db"), "record")
                    and tune(state, options, clock, state.url("app.db"), "tune", "0")
                    and long_searches(state, options, clock))
    finally:
        options.out.mkdir(parents=True, exist_ok=True)
        before = state.folder / "record_plan_before.png"
        if before.exists():
            shutil.copy2(before, options.out / "app_plan_before.png")
        if state.data.get("tune", {}).get("done"):
            run(autotune_cmd("plan", NAME, "--db", state.url("app.db"), "--plot",
                             str(options.out / "app_plan_after.png")))
        saved = options.out / "state"
        saved.mkdir(parents=True, exist_ok=True)
        for f in state.folder.iterdir():
            if f.suffix in (".db", ".json"):
                shutil.copy2(f, saved / f.name)
    state.data["complete"] = bool(done)
    state.save()
    path = report(state, options, options.out, device)
    print(f"written: {path}")
    if not done:
        print(f"stopped at the call's limit ({options.call_limit:.0f} s): run the same command again to go on")
        raise SystemExit(EXIT_AGAIN)


if __name__ == "__main__":
    main()
