"""Issue 40's benchmark: flip rate, selection regret and time per config of certified (adaptive)
timing, against an oracle and against the old fixed sampling.

    python3 benchmarks/certify_regret.py [--reruns 5] [--fixed-reruns 2] [--max-seconds 140]

Per problem (``--problem NAME=KERNEL:DIMS:DTYPE``, repeated; default the README's main job
smem_pad 8192x8192 float32, the reduction example at n=2^24 float32 and the histogram example
at n=2^26 uint8):

1. ``--reruns`` cold runs of the same search (``autotune search --seed S --format json``, the
   space's default trials), each into a fresh SQLite database under ``OUT/certify_dbs/``, all
   with the same on-disk cubin cache (the first run of a problem may build its cubins: the
   report gives the median of the runs' seconds per config); ``--fixed-reruns`` more with the
   old fixed sampling (``--ci 0 --repeats 50``). Each run's wall time, configs measured, stored
   winner and its certificate (95 % CI of the winner's pooled median) come from its JSON.
2. The oracle: the union of every run's top 10 configs re-timed over ``--oracle-rounds`` (20)
   paired interleaved rounds in one measuring process (``Benchmark.retime``); the oracle's time
   of a config is the median of its round medians, the oracle best the fastest. Each run's
   selection regret = its winner's oracle time / the oracle best - 1.
3. Flips: every pair of runs (of one mode) whose winners differ, and whether the two winners'
   CIs overlap (each run's certificate; the oracle's CIs beside).

The work is interleaved over the problems (every problem's first two adaptive runs come first),
and no search starts that would not end (by the median wall time of the problem's runs so far)
before ``--max-seconds`` minus ``--oracle-reserve`` (one still running then gets SIGINT: it counts
as incomplete), no oracle past ``--max-seconds``; the report is rewritten after every step, so a
call killed at a harder limit still leaves one.

Output: ``OUT/<date>_<gpu>_certify_regret.txt`` (``--out``, default ``$OUT``, else
benchmarks/results/) and its data as ``.json`` beside it.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_PROBLEMS = ("smem_pad=smem_pad:rows=8192,cols=8192:float32",
                    "reduction=examples/reduction/reduce.toml:n=16777216:float32",
                    "histogram=examples/histogram/histogram.toml:n=67108864:uint8")
TOP = 10
"""Configs of each run's top taken into the oracle."""
REGRET_TARGET = 0.005
FIXED_ARGS = ("--ci", "0", "--repeats", "50")


def parse_problem(spec: str) -> dict:
    """``NAME=KERNEL:DIMS:DTYPE`` (``smem=smem_pad:rows=8192,cols=8192:float32``) as a dict
    ``{"name", "kernel", "dims": {dim: int}, "dtype"}``; a relative kernel file path is taken
    from the repository root where it exists there.

    Raises:
        ValueError: the spec is not of that form (the message names it).
    """
    try:
        name, rest = spec.split("=", 1)
        kernel, dims, dtype = rest.split(":")
        parsed = {k.strip(): int(v) for k, v in (kv.split("=") for kv in dims.split(","))}
    except ValueError:
        raise ValueError(f"--problem {spec!r} is not allowed; give NAME=KERNEL:DIM=N[,DIM=N...]:DTYPE, e.g. "
                         f"{DEFAULT_PROBLEMS[0]}") from None
    if not name or not kernel or not dtype or not parsed:
        raise ValueError(f"--problem {spec!r} is not allowed; NAME, KERNEL, DIMS and DTYPE must not be empty")
    if kernel.endswith(".toml") and not Path(kernel).is_absolute() and (ROOT / kernel).exists():
        kernel = str(ROOT / kernel)
    return {"name": name, "kernel": kernel, "dims": parsed, "dtype": dtype}


def autotune_cmd(*args: str) -> list[str]:
    """``python -m autotune ARGS``, or ``$AUTOTUNE ARGS`` (the CPU test runs the CLI on fake GPUs)."""
    given = os.environ.get("AUTOTUNE")
    return [*(given.split() if given else [sys.executable, "-m", "autotune"]), *args]


class Clock:
    """The whole call's time cap (``--max-seconds``)."""

    def __init__(self, limit_s: float) -> None:
        self.start, self.limit = time.monotonic(), limit_s

    def left(self) -> float:
        return self.limit - (time.monotonic() - self.start)


def parse_run(stdout: str) -> dict:
    """What one ``autotune search --format json`` printed, reduced to: ``measured`` (configs),
    ``winner`` (config key or ``None``), ``ms``, ``ci_low``/``ci_high`` (the winner's 95 % CI of
    its pooled median, ms, ``None`` if unknown), ``tied``, ``top`` (config keys, fastest first,
    at most :data:`TOP`) and ``samples`` (median samples per config of the top rows, ``None``
    if not reported).

    Raises:
        ValueError: stdout is not that JSON document.
    """
    try:
        doc = json.loads(stdout)
    except ValueError:  # a stray line printed to stdout beside the document
        doc = json.loads(stdout[stdout.index("{"):stdout.rindex("}") + 1])
    best = doc.get("best") or {}
    cert = best.get("certificate") or {}
    w = cert.get("winner") or {}
    rows = doc.get("top") or []
    samples = [r["samples"] for r in rows if r.get("samples") is not None]
    key = lambda c: ",".join(f"{k}={v}" for k, v in c.items()) if isinstance(c, dict) else c  # noqa: E731
    return {"measured": int(doc.get("measured") or 0), "winner": key(best.get("config")),
            "ms": w.get("pooled_median_ms", best.get("ms")), "ci_low": w.get("ci_low_ms"),
            "ci_high": w.get("ci_high_ms"), "tied": bool(cert.get("tied")),
            "top": [key(r["config"]) for r in rows[:TOP]], "samples": statistics.median(samples) if samples else None}


def search(problem: dict, mode: str, index: int, options, clock: Clock) -> dict:
    """One cold search (``mode`` ``adaptive`` or ``fixed``) into a fresh database; stopped
    with SIGINT when the cap (less the oracle's reserve) comes. The run's dict: ``mode``,
    ``index``, ``wall_s``, ``exit``, ``complete`` and :func:`parse_run`'s fields (or ``error``)."""
    folder = options.out / "certify_dbs"
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"{problem['name']}_{mode}_{index}.db"
    db.unlink(missing_ok=True)
    dims = ",".join(f"{k}={v}" for k, v in problem["dims"].items())
    cmd = autotune_cmd("search", "--kernel", problem["kernel"], "--dims", dims, "--dtype", problem["dtype"],
                       "--device", str(options.device), "--seed", str(options.seed), "--db", f"sqlite:///{db}",
                       "--format", "json", *(FIXED_ARGS if mode == "fixed" else ()))
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=max(1.0, clock.left() - options.oracle_reserve))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    run = {"mode": mode, "index": index, "wall_s": time.monotonic() - started, "exit": proc.returncode}
    try:
        run.update(parse_run(out))
    except (ValueError, KeyError, TypeError):
        run["error"] = (err or out or "").strip().splitlines()[-3:]
    run["complete"] = run.get("winner") is not None and proc.returncode not in (130, -signal.SIGINT)
    return run


def oracle(problem: dict, configs: list[str], options) -> dict:
    """The configs re-timed over ``options.oracle_rounds`` paired interleaved rounds in one
    measuring process on GPU ``options.device``: ``{config key: {"ms": median of the round
    medians, "ci_low", "ci_high": the pooled median's 95 % CI, ms}}``; a config that fails is
    left out (the others are then re-timed without it), its failure under ``"failed"``."""
    from autotune.errors import TrialFailed
    from autotune.kernel.config import Config
    from autotune.kernel.problem import Problem
    from autotune.measure import benchmark, isolation
    from autotune.measure.measure_options import MeasureOptions

    p = Problem.of(problem["kernel"], problem["dims"], problem["dtype"])
    todo = [Config.of(p.kernel.name, {k: int(v) for k, v in (kv.split("=") for kv in key.split(","))})
            for key in configs]
    failed: dict[str, str] = {}
    measure = MeasureOptions(repeats=50, seed=options.seed, ci=0)
    with isolation.open_isolated(benchmark.open_benchmark, options.device, p, measure) as bench:
        while True:
            if not todo:
                timed = []
                break
            try:
                timed = bench.retime(todo, options.oracle_rounds)
                break
            except TrialFailed:
                before = len(failed)
                for c in list(todo):  # which one fails: each alone, once
                    try:
                        bench.retime([c], 1)
                    except TrialFailed as failure:
                        failed[c.key] = f"{failure.status}: {failure.reason}"
                        todo.remove(c)
                if len(failed) == before:
                    raise
    out: dict = {r.config.key: {"ms": statistics.median(r.round_medians_ms), "ci_low": r.ci_low_ms,
                                "ci_high": r.ci_high_ms} for r in timed}
    if failed:
        out["failed"] = failed
    return out


def overlap(a: tuple, b: tuple) -> bool | None:
    """Whether the intervals ``a`` and ``b`` (``(low, high)``) overlap; ``None`` if a bound is unknown."""
    if None in a or None in b:
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def analyse(runs: list[dict], timed: dict | None) -> dict:
    """The numbers of one problem from its runs and its oracle (``None``: not measured):
    per mode the complete runs' count, median s/config and winners; per run its regret; the
    flips (pairs of complete runs of one mode whose winners differ) with CI overlap by the
    runs' certificates and by the oracle; the targets' verdicts (``True``/``False``/``None``:
    not measured)."""
    timed = {k: v for k, v in (timed or {}).items() if k != "failed"}
    best = min((v["ms"] for v in timed.values()), default=None)
    out: dict = {"oracle_best": min(timed, key=lambda k: timed[k]["ms"]) if timed else None, "modes": {}}
    for mode in ("adaptive", "fixed"):
        done = [r for r in runs if r["mode"] == mode and r["complete"]]
        per = [r["wall_s"] / r["measured"] for r in done if r["measured"]]
        regrets = []
        for r in done:
            r["regret"] = timed[r["winner"]]["ms"] / best - 1 if best and r["winner"] in timed else None
            if r["regret"] is not None:
                regrets.append(r["regret"])
        flips = []
        for a, b in itertools.combinations(done, 2):
            if a["winner"] != b["winner"]:
                ta, tb = timed.get(a["winner"], {}), timed.get(b["winner"], {})
                flips.append({"runs": (a["index"], b["index"]), "winners": (a["winner"], b["winner"]),
                              "ci_overlap": overlap((a["ci_low"], a["ci_high"]), (b["ci_low"], b["ci_high"])),
                              "oracle_overlap": overlap((ta.get("ci_low"), ta.get("ci_high")),
                                                        (tb.get("ci_low"), tb.get("ci_high")))})
        out["modes"][mode] = {"runs": len(done), "s_per_config": statistics.median(per) if per else None,
                              "winners": sorted({r["winner"] for r in done}), "regrets": regrets,
                              "mean_regret": statistics.fmean(regrets) if regrets else None,
                              "max_regret": max(regrets) if regrets else None, "flips": flips}
    a, f = out["modes"]["adaptive"], out["modes"]["fixed"]
    flip_ok = None
    if a["runs"] >= 2:
        known = [fl["ci_overlap"] if fl["ci_overlap"] is not None else fl["oracle_overlap"] for fl in a["flips"]]
        flip_ok = False if False in known else (None if None in known else True)
    out["targets"] = {
        "regret": None if a["max_regret"] is None else a["max_regret"] <= REGRET_TARGET,
        "flip": flip_ok,
        "time_per_config": (None if a["s_per_config"] is None or f["s_per_config"] is None
                            else a["s_per_config"] <= f["s_per_config"]),
        "time_ratio": a["s_per_config"] / f["s_per_config"] if a["s_per_config"] and f["s_per_config"] else None,
    }
    return out


def _f(v, spec: str = ".4g") -> str:
    return "-" if v is None else format(v, spec)


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def _yn(v) -> str:
    return {True: "yes", False: "no", None: "unknown"}[v]


def report(results: list[dict], options, device: str, note: str) -> Path:
    """``OUT/<date>_<gpu>_certify_regret.txt`` (and the raw data as ``.json`` beside it)
    from ``results`` (per problem: ``problem``, ``runs``, ``oracle``, ``analysis``)."""
    from autotune.measure.cubin_cache import cache_dir

    lines = [f"certify_regret (issue 40) on {device}, device {options.device}; seed {options.seed}; "
             f"written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"cold reruns: adaptive (default --ci 0.01) x{options.reruns}, fixed ({' '.join(FIXED_ARGS)}) "
             f"x{options.fixed_reruns}; each into a fresh SQLite database, one cubin cache ({cache_dir()}) for all",
             f"oracle: the union of the runs' top {TOP} re-timed over {options.oracle_rounds} paired interleaved rounds "
             "in one measuring process; its time = the median of the round medians", note, ""]
    for res in results:
        p, an, timed = res["problem"], res.get("analysis") or {}, res.get("oracle")
        dims = "x".join(str(v) for v in p["dims"].values())
        lines += [f"## {p['name']}: {Path(p['kernel']).name} {dims} {p['dtype']}", "",
                  f"{'run':<11} {'exit':>4} {'wall s':>7} {'configs':>7} {'s/config':>8} {'samples':>7} "
                  f"{'winner ms':>10} {'95% CI ms':>21} {'regret':>7}  winner"]
        for r in res["runs"]:
            ci = f"{_f(r.get('ci_low'))} .. {_f(r.get('ci_high'))}"
            per = r["wall_s"] / r["measured"] if r.get("measured") else None
            lines.append(f"{r['mode'] + ' ' + str(r['index']):<11} {r['exit']:>4} {r['wall_s']:>7.1f} "
                         f"{r.get('measured', 0):>7} {_f(per, '.3f'):>8} {_f(r.get('samples'), '.0f'):>7} "
                         f"{_f(r.get('ms')):>10} {ci:>21} {_pct(r.get('regret')):>7}  "
                         + (r.get("winner") or f"(none{': ' + ' | '.join(r['error']) if r.get('error') else ''})")
                         + (" [tied]" if r.get("tied") else ""))
        lines.append("")
        if timed is None:
            lines.append(f"oracle: failed: {res['oracle_error']}" if res.get("oracle_error") else
                         "oracle: not measured (no complete run, or the time cap)")
        else:
            ok = {k: v for k, v in timed.items() if k != "failed"}
            lines.append(f"oracle: {len(ok)} configs, {_f(res.get('oracle_s'), '.1f')} s; best {an.get('oracle_best')} {_f(min(v['ms'] for v in ok.values()) if ok else None)} ms"
                         + (f"; failed: {timed['failed']}" if timed.get("failed") else ""))
        for mode, m in an.get("modes", {}).items():
            if not m["runs"]:
                continue
            lines.append(f"{mode}: {m['runs']} complete runs, median {_f(m['s_per_config'], '.3f')} s/config; "
                         f"{len(m['winners'])} distinct winner(s); regret mean {_pct(m['mean_regret'])}, "
                         f"max {_pct(m['max_regret'])}")
            for fl in m["flips"]:
                lines.append(f"  flip runs {fl['runs'][0]}/{fl['runs'][1]}: {fl['winners'][0]} vs {fl['winners'][1]}; "
                             f"CIs overlap: {_yn(fl['ci_overlap'])} (certificates), "
                             f"{_yn(fl['oracle_overlap'])} (oracle)")
        t = an.get("targets", {})
        met = lambda v: {True: "met", False: "NOT met", None: "not measured"}[v]  # noqa: E731
        lines += [f"target: selection regret <= {_pct(REGRET_TARGET)} (adaptive, max): {met(t.get('regret'))}",
                  f"target: winners differ only within each other's CI (adaptive): {met(t.get('flip'))}",
                  f"target: time per config no more than fixed sampling: {met(t.get('time_per_config'))}"
                  + (f" (adaptive/fixed {t['time_ratio']:.2f})" if t.get("time_ratio") else ""), ""]
    options.out.mkdir(parents=True, exist_ok=True)
    path = options.out / f"{datetime.date.today():%Y-%m-%d}_{device.replace(' ', '_')}_certify_regret.txt"
    path.write_text("\n".join(lines) + "\n")
    path.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str))
    return path


def plan(problems: list[dict], reruns: int, fixed: int) -> list[tuple[int, str, int]]:
    """The searches in the order they run: ``(problem index, mode, run index)``, every
    problem's adaptive run i before its next, the fixed runs after the second adaptive round."""
    rank = [(i, "adaptive", i) for i in range(reruns)] + [(j + 1.5, "fixed", j) for j in range(fixed)]
    return [(p, mode, i) for _, mode, i in sorted(rank) for p in range(len(problems))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", action="append", help=f"NAME=KERNEL:DIMS:DTYPE (repeated; default "
                                                           f"{' '.join(DEFAULT_PROBLEMS)})")
    parser.add_argument("--reruns", type=int, default=5, help="cold adaptive searches per problem")
    parser.add_argument("--fixed-reruns", type=int, default=2, help="cold fixed-sampling searches per problem")
    parser.add_argument("--oracle-rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=600.0, help="total cap; the report is written anyway")
    parser.add_argument("--oracle-reserve", type=float, default=20.0,
                        help="seconds of the cap kept for the oracles: no search starts or runs into them")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks/results"))
    options = parser.parse_args(argv)
    try:
        problems = [parse_problem(s) for s in options.problem or DEFAULT_PROBLEMS]
    except ValueError as exc:
        parser.error(str(exc))
    if options.reruns < 1 or options.fixed_reruns < 0 or options.oracle_rounds < 1:
        parser.error("--reruns and --oracle-rounds must be >= 1, --fixed-reruns >= 0")
    clock = Clock(options.max_seconds)
    from autotune.measure.device import query_device

    try:
        device = query_device(options.device).name
    except Exception as exc:  # noqa: BLE001 (the report is written anyway)
        device = "unknown_gpu"
        print(f"warning: device {options.device} not queried: {exc}", file=sys.stderr)
    results = [{"problem": p, "runs": [], "oracle": None} for p in problems]
    skipped = [0]

    def write(final: bool) -> Path:
        """The report from what was measured so far (after every step: a call killed at a hard
        limit still leaves one)."""
        for res in results:
            res["analysis"] = analyse(res["runs"], res["oracle"])
        used = options.max_seconds - clock.left()
        note = (f"total {used:.0f} s of a {options.max_seconds:.0f} s cap"
                + (f"; {skipped[0]} searches not started (cap)" if skipped[0] else "")
                + ("" if final else "; NOT finished (written while running)"))
        return report(results, options, device, note)

    try:
        for p, mode, i in plan(problems, options.reruns, options.fixed_reruns):
            walls = [r["wall_s"] for r in results[p]["runs"] if r["complete"]]
            if clock.left() - options.oracle_reserve < (statistics.median(walls) if walls else 5.0):
                skipped[0] += 1  # it would not finish before the oracles' reserve
                continue
            run = search(problems[p], mode, i, options, clock)
            results[p]["runs"].append(run)
            print(f"{problems[p]['name']} {mode} {i}: {run['wall_s']:.1f} s, exit {run['exit']}, "
                  f"winner {run.get('winner')}", flush=True)
            write(False)
        for res in results:
            configs = list(dict.fromkeys(k for r in res["runs"] if r["complete"] for k in [r["winner"], *r["top"]]))
            if not configs or clock.left() < 5:
                continue
            started = time.monotonic()
            try:
                res["oracle"] = oracle(res["problem"], configs, options)
                res["oracle_s"] = time.monotonic() - started
            except Exception as exc:  # noqa: BLE001 (one problem's failure leaves the others)
                res["oracle_error"] = f"{type(exc).__name__}: {exc}"
                print(f"{res['problem']['name']} oracle failed: {res['oracle_error']}", file=sys.stderr)
            write(False)
    finally:
        path = write(True)
        print(f"written: {path}")

if __name__ == "__main__":
    main()
