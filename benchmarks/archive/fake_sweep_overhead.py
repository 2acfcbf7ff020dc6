#!/usr/bin/env python3
"""Issue 13, "time to tuned", host side: what ``autotune sweep`` and ``autotune search`` spend
outside the measured phases, timed on a CPU through the fake GPU of ``tests/workers.py`` (no
GPU, no nvcc: the fake benchmark answers each measurement at once from its measuring child).

Each run is the real CLI (``python tests/workers.py cli 0 ...``: typer, the measuring child
process, the store, Optuna's study and sampler) on a fresh SQLite database and an empty cubin
cache, timed three ways:

- wall: the whole command, interpreter start to exit (what a user waits for);
- where it went, from inside (this script is the process that runs the CLI, its functions
  wrapped): importing the CLI, opening the measuring child (spawn + its imports + the fake
  GPU), opening the store (migrations), opening Optuna's storage and the study, the trial loop
  (``Tuner._loop``), the time inside ``measure`` (the pipe round trip to the child), the
  re-timing and the rest;
- bookkeeping per trial: (trial loop - measure) / Optuna trials (duplicates proposed by TPE
  are trials too), and SQL statements and commits per trial on every engine.

    python benchmarks/fake_sweep_overhead.py [--repeat 3] [--out FILE] [--label TEXT] [--base OTHER_CHECKOUT]

The figures are this machine's; compare before/after on the same machine only.

``--gpu SIZE`` runs the same breakdown on a GPU machine with the real benchmark (no fake, nvcc
compiling ahead on every core) at ``--size SIZE``: what the 8192^2 sweep of issue 13 spends
outside its measured phases. There "measure" is the real trial (compile wait, load, verify,
time in the child) and "open measuring child" the CUDA context, buffers and bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "sweep": ["sweep", "--kernel", "smem_pad", "--size", "64"],
    "search": ["search", "--kernel", "smem_pad", "--size", "64", "--trials", "100", "--seed", "0"],
}


def child(out: str, args: list[str], root: Path, gpu: bool = False) -> None:
    """Run the CLI of the checkout ``root`` in this process with its steps timed; write the
    figures to ``out``."""
    t0 = time.perf_counter()
    sys.path[:0] = [str(root / "tests"), str(root)]
    import autotune.cli  # noqa: F401  (the CLI's imports, timed)

    t_import = time.perf_counter() - t0
    import sqlalchemy
    from sqlalchemy import event

    import workers
    from autotune.measure import isolation
    from autotune.search import retiming, study, trials, tuner
    from autotune.store import repository

    spent: dict[str, float] = {"import": t_import}
    counts = {"sql": 0, "commit": 0, "trials": 0}

    def timed(owner, name, label):
        original = getattr(owner, name)

        def wrapper(*a, **k):
            started = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - started

        setattr(owner, name, wrapper)

    timed(isolation.IsolatedBenchmark, "_start", "open measuring child")
    timed(isolation.IsolatedBenchmark, "measure", "measure (pipe round trip)")
    timed(isolation.IsolatedBenchmark, "retime", "retime")
    timed(repository.Store, "__init__", "open store (migrations)")
    timed(repository.Store, "optuna_storage", "open Optuna storage")
    timed(study, "open_study", "open study")
    timed(tuner.Tuner, "_loop", "trial loop")
    timed(retiming, "decide", "decide (interleaved re-timing, best stored)")

    def _maybe(*a):
        return event.listens_for(*a) if os.environ.get("COUNT_SQL", "1") == "1" else (lambda f: f)

    @_maybe(sqlalchemy.engine.Engine, "before_cursor_execute")
    def _sql(*_a):
        counts["sql"] += 1

    @_maybe(sqlalchemy.engine.Engine, "commit")
    def _commit(*_a):
        counts["commit"] += 1

    original_run_trial = trials.run_trial

    def run_trial(*a, **k):
        counts["trials"] += 1
        return original_run_trial(*a, **k)

    tuner.run_trial = run_trial
    code = 0
    try:
        if gpu:
            from autotune.cli import app

            app(list(args), prog_name="autotune")
        else:
            workers.cli("0", *args)
    except SystemExit as exc:
        code = exc.code or 0
    spent["in process"] = time.perf_counter() - t0
    Path(out).write_text(json.dumps({"spent": spent, "counts": counts, "code": code}))


def run_once(name: str, root: Path = ROOT, gpu: int | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp, "figures.json")
        env = {**os.environ, "AUTOTUNE_CACHE_DIR": str(Path(tmp, "cache")), "COLUMNS": "200"}
        if gpu is None:
            env["AUTOTUNE_COMPILE_WORKERS"] = "0"  # no nvcc builds ahead: the fake GPU uses none
        command = [sys.executable, __file__, "--child" if gpu is None else "--gpu-child", str(figures), str(root), "--",
                   *_command(name, gpu), "--db", f"sqlite:///{tmp}/a.db"]
        started = time.perf_counter()
        before = os.times()
        proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=root)
        wall = time.perf_counter() - started
        after = os.times()
        if proc.returncode != 0 or not figures.exists():
            raise SystemExit(f"{name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        data = json.loads(figures.read_text())
        data["wall"] = wall
        data["cpu"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        data["stopped"] = next((l for l in proc.stdout.splitlines() if l.startswith("stopped:")), "")
        data["phases"] = next((l for l in proc.stdout.splitlines() if l.startswith("where the time went")), "")
        data["command"] = " ".join(_command(name, gpu))
        data["gpu"] = gpu is not None
        return data


def _command(name: str, gpu: int | None) -> list[str]:
    args = list(COMMANDS[name])
    if gpu is not None:
        args[args.index("--size") + 1] = str(gpu)
    return args


def report(name: str, runs: list[dict]) -> list[str]:
    med = statistics.median
    what = "real GPU" if runs[0].get("gpu") else "fake GPU"
    lines = [f"## {name}: {runs[0]['command']} ({what}, fresh database, {len(runs)} runs, medians)",
             runs[0]["stopped"], *(r["phases"] for r in runs if r["phases"]),
             f"wall {med(r['wall'] for r in runs):.2f} s (runs: {', '.join(format(r['wall'], '.2f') for r in runs)}); "
             f"CPU of the command and its children {med(r['cpu'] for r in runs):.2f} s"]
    labels = list(runs[0]["spent"])
    parts = []
    for label in labels:
        parts.append(f"{label} {1e3 * med(r['spent'].get(label, 0.0) for r in runs):.0f} ms")
    lines.append("inside: " + "; ".join(parts))
    trials = runs[0]["counts"]["trials"]
    loop = med(r["spent"].get("trial loop", 0.0) - r["spent"].get("measure (pipe round trip)", 0.0) for r in runs)
    lines.append(f"trials {trials}; bookkeeping per trial (trial loop - measure) {1e3 * loop / trials:.1f} ms; "
                 f"SQL statements per trial {runs[0]['counts']['sql'] / trials:.1f}, commits per trial "
                 f"{runs[0]['counts']['commit'] / trials:.1f} (whole run: {runs[0]['counts']['sql']} statements, "
                 f"{runs[0]['counts']['commit']} commits)")
    return lines


def main() -> None:
    for flag in ("--child", "--gpu-child"):
        if flag in sys.argv:
            i = sys.argv.index(flag)
            child(sys.argv[i + 1], sys.argv[sys.argv.index("--") + 1:], Path(sys.argv[i + 2]), flag == "--gpu-child")
            return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="append the report to this file")
    parser.add_argument("--label", default="", help="a heading for this report (e.g. before/after)")
    parser.add_argument("--only", choices=sorted(COMMANDS), help="one command only")
    parser.add_argument("--base", type=Path, help="another checkout (e.g. `git archive main`) timed too, its runs "
                                                  "alternating with this one's (a loaded machine drifts)")
    parser.add_argument("--gpu", type=int, metavar="SIZE", help="the real GPU benchmark at --size SIZE (a GPU machine)")
    args = parser.parse_args()
    head = [f"# {args.label}".rstrip(),
            f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {platform.processor() or platform.machine()}  "
            f"CPUs {os.cpu_count()}  load average {os.getloadavg()[0]:.1f}  git {_git()}"]
    lines = list(head)
    for name in [args.only] if args.only else COMMANDS:
        if args.base is None:
            lines += report(name, [run_once(name, gpu=args.gpu) for _ in range(args.repeat)])
            continue
        pairs = [(run_once(name, args.base), run_once(name)) for _ in range(args.repeat)]
        lines += [f"# base: {args.base}"] + report(name, [b for b, _ in pairs])
        lines += [f"# this checkout: {ROOT} ({_git()})"] + report(name, [a for _, a in pairs])
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n")


def _git() -> str:
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
