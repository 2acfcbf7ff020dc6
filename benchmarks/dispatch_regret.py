"""Issues 36 and 48: the held-out regret of the dispatch (and of the nearest_shape rung), per kernel.

Two parts. The GPU part only records trials into a results database; the regret is arithmetic
on those trials (autotune.dispatch, tested on the CPU).

    record   (GPU) for one kernel and a declared range of shapes: tune at most 12 training
             shapes picked as `autotune tune-shapes` picks them (log-spaced farthest points, then
             regret-weighted; autotune.dispatch.next_shapes), each search a `transfer`
             search of --trials configs (a whole sweep where the space is smaller) that first
             measures the configs of the dispatch learned so far; then search each of the
             --held-out shapes (log-uniform in the range, seeded, none a training shape) the same
             way, first measuring the configs of the dispatch learned from the training shapes
             and the nearest training shape's best (so the regret of both is measured). Between
             the two, the dense matrix (issue 48; --no-matrix: none): every training shape's winner
             and runner-up timed at every training shape where it was not measured
             (autotune.search.shapes.matrix_configs), its GPU seconds per training shape kept in
             the plan. Every trial goes to --db; the plan (range, training and held-out shapes) to
             <out>/<kernel>_plan.json, the trials to <out>/<date>_<gpu>_dispatch_<kernel>_trials.csv
             and, once held-out shapes are measured, the report beside them (_report.txt).
    fill     (GPU) measure at each held-out shape the configs the dispatch and nearest_shape pick
             there that are not measured yet (after a change of the model, say).
    report   (CPU) read a trials CSV: learn the dispatch from the training shapes, score it on
             the held-out ones (autotune.dispatch.evaluate), and print median and worst
             regret, shapes below the default beyond 1 %, beside nearest_shape and the default,
             and the same for each rule the dispatch chooses from (knn, tree, nearest) forced.

The GPU part measures in this process, one CUDA context for every shape (the library's
Benchmark, compile pool and strategies; no measuring child and no Optuna study per shape: a
search's fixed cost, ~4 s, times 32 shapes would not fit the time on the GPU). Each config is
built once (the cubin cache is per config, not per shape) and verified at every shape.

    python benchmarks/dispatch_regret.py record --kernel matmul_warp --range m=256:4096,n=256:4096,k=256:4096 \
        --multiple 32 --space benchmarks/spaces/matmul_warp_1332.toml --db sqlite:///$OUT/dispatch.db --out $OUT
    python benchmarks/dispatch_regret.py report benchmarks/results/..._dispatch_matmul_warp_trials.csv
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autotune.kernel.catalog import resolve_kernel  # noqa: E402
from autotune.kernel.config import Config  # noqa: E402
from autotune.dispatch import (ShapeTable, best_of, build_dispatch, evaluate, leave_one_out,  # noqa: E402
                               next_shapes, regret_weights, shape_order, summarize, tables_from_trials, winners)

FIELDS = ("role", "dims", "config", "status", "median_ms", "trial_id")
"""Columns of a trials CSV: role (train / held_out), dims (m=..,n=..), config key, status, median ms."""


# --- the plan -----------------------------------------------------------------------------

def parse_range(text: str) -> dict[str, tuple[int, int]]:
    """``m=256:2048,n=256:2048`` -> ``{"m": (256, 2048), ...}``."""
    out = {}
    for part in text.split(","):
        name, _, span = part.partition("=")
        lo, _, hi = span.partition(":")
        out[name.strip()] = (int(lo), int(hi))
    return out


def held_out_shapes(ranges: list[tuple[int, int]], count: int, avoid: set, multiple: int, seed: int) -> list:
    """``count`` distinct shapes, each dim log-uniform in its range, rounded to ``multiple``."""
    rnd = random.Random(seed)
    out: list[tuple[int, ...]] = []
    while len(out) < count:
        shape = []
        for lo, hi in ranges:
            v = math.exp(rnd.uniform(math.log(lo), math.log(hi)))
            v = min(hi // multiple * multiple, max(-(-lo // multiple) * multiple, round(v / multiple) * multiple))
            shape.append(int(v))
        shape = tuple(shape)
        if shape not in avoid and shape not in out:
            out.append(shape)
    return out


# --- the GPU part -------------------------------------------------------------------------

class FakeBench:
    """A stand-in for the GPU (``--fake``, a CPU dry run of the recorder's logic): a smooth,
    shape-dependent landscape over the macros' positions, no failures."""

    def __init__(self, space, problem) -> None:
        self.values = dict(space.params)
        self.logs = [math.log(v) for v in problem.shape]

    def measure(self, config):
        from autotune.measure.measurement import Measurement

        cost = 0.0
        for i, (name, value) in enumerate(config.macros):
            pos = self.values[name].index(value) / max(1, len(self.values[name]) - 1)
            target = (math.sin(sum(self.logs) * 0.7 + i) + 1) / 2
            cost += (pos - target) ** 2
        ms = math.exp(sum(self.logs) / len(self.logs) * 0.3 + cost * 0.5) * 1e-3
        return Measurement(ms, ms * 0.99, ms * 1.01, None, None, 32, 0, 50)

    def free(self) -> None:
        pass


class Recorder:
    """Measures configs of one kernel at many shapes in one CUDA context, into a Store."""

    def __init__(self, kernel, dtype: str, db: str, space: str | None, batch: int, seed: int, fake: bool = False):
        from autotune.kernel.dtypes import get_dtype
        from autotune.store.opening import open_store

        self.kernel, self.dtype, self.fake = kernel, get_dtype(dtype), fake
        self.store = open_store(db)
        self.space = kernel.space(space)
        self.batch, self.seed = batch, seed
        self.stack = contextlib.ExitStack()

    def __enter__(self):
        from autotune.measure.pipeline import Feed, compile_ahead, helper_builds
        from autotune.measure.toolchain import Toolchain

        if self.fake:
            from autotune.measure.device import DeviceInfo

            self.info = DeviceInfo("fake GPU", "9.0", 132, 85_000_000_000, "13.0", "13.0")
        else:
            from autotune.measure.device import open_device

            self.info = self.stack.enter_context(open_device(0))
        self.toolchain = Toolchain.of(self.info.arch)
        self.feed = Feed([self.kernel.default_config()])
        if not self.fake:
            self.stack.enter_context(compile_ahead(self.kernel, self.dtype, self.info.arch, self.feed,
                                                   first=helper_builds(self.kernel, self.dtype, self.info.arch)))
        return self

    def __exit__(self, *exc):
        self.stack.close()
        self.store.close()

    def key(self, shape):
        from autotune.kernel.problem import Problem
        from autotune.store.key import TuningKey

        problem = Problem.of(self.kernel, shape, self.dtype)
        return problem, TuningKey.of(problem, self.info, self.toolchain)

    def tables(self, shapes) -> list[ShapeTable]:
        """The tables of ``shapes`` from the store (this device model's trials)."""
        want = {tuple(s) for s in shapes}
        if not want:
            return []
        _, key = self.key(next(iter(want)))
        return [t for t in tables_from_trials(self.store.shape_trials(key)) if t.shape in want]

    def search(self, shape, strategy: str, trials: int, first: list[Config], history_shapes) -> dict:
        """Measure the default, then ``first``, then the strategy's proposals, until ``trials``
        configs besides ``first`` are measured at ``shape`` (or the space is done); returns
        counts and seconds."""
        from autotune.errors import TrialFailed
        from autotune.kernel.dims import shape_distance
        from autotune.measure.benchmark import Benchmark
        from autotune.measure.measure_options import MeasureOptions
        from autotune.search.strategies import make_strategy
        from autotune.search.strategies.base import Known

        started = time.perf_counter()
        problem, key = self.key(shape)
        seen = {t.config: (t.median_ms if t.status == "ok" else None) for t in self.store.key_trials(key)}
        history: list = [Known(c, ms) for c, ms in seen.items()]
        if strategy == "transfer":
            for t in self.tables(history_shapes):
                dims = tuple(zip(self.kernel.dims, t.shape))
                distance = shape_distance(dims, key.dims)
                history += [Known(c, ms, distance, dims) for c, ms in t.times.items()]
        s = make_strategy(strategy, self.space, self.seed, history)
        first = [Config(self.space.kernel, c.macros) for c in first]
        s.enqueue(first, first=True)
        s.enqueue([self.kernel.default_config()], first=True)
        sid = self.store.start_search(key, study_name=key.study_name, sampler=f"{strategy}+dispatch_regret",
                                      seed=self.seed, memcpy_gbps=None)
        bench = FakeBench(self.space, problem) if self.fake else Benchmark(  # 50 samples a config, as recorded
            self.info, problem, MeasureOptions(seed=self.seed, ci=0), bounds=False)
        measured = failed = number = 0
        wanted = trials + len({c for c in first if c not in seen and not self.space.violations(c)})
        try:
            while measured + failed < wanted:
                asked = s.ask(min(self.batch, wanted - measured - failed))
                if not asked:
                    break
                self.feed.put(asked)
                for c in asked:
                    try:
                        m = bench.measure(c)
                    except TrialFailed as exc:
                        s.tell(c, None)
                        self.store.record_trial(sid, number, c, status=exc.status, reason=exc.reason)
                        failed += 1
                        if exc.status == "crash":  # the context is gone: stop here, the trials so far are kept
                            raise
                    else:
                        s.tell(c, m.median_ms)
                        self.store.record_trial(sid, number, c, status="ok", measurement=m)
                        measured += 1
                    number += 1
        finally:
            bench.free()
            self.store.finish_search(sid, "finished")
        return {"measured": measured, "failed": failed, "seconds": time.perf_counter() - started}


def record(args) -> int:
    kernel = resolve_kernel(args.kernel)
    ranges_by_name = parse_range(args.range)
    if list(ranges_by_name) != list(kernel.dims):
        raise SystemExit(f"error: --range names {', '.join(ranges_by_name)}; {kernel.name} takes {', '.join(kernel.dims)}")
    ranges = list(ranges_by_name.values())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plan_path = out / f"{kernel.name}_plan.json"
    plan = json.loads(plan_path.read_text()) if plan_path.exists() else {
        "kernel": args.kernel, "dtype": args.dtype, "range": args.range, "multiple": args.multiple,
        "space": args.space, "trials": args.trials, "batch": args.batch, "seed": args.seed, "train": [], "held_out": []}
    default = kernel.default_config()
    deadline = time.monotonic() + args.seconds
    log = open(out / f"{kernel.name}_record.log", "a")

    def say(text: str) -> None:
        line = f"{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S} {text}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    with Recorder(kernel, args.dtype, args.db, args.space, args.batch, args.seed, args.fake) as rec:
        try:
            train, held = _record(rec, args, kernel, ranges, plan, plan_path, default, deadline, say)
        finally:  # also after a crash: what was measured is written
            train, held = [tuple(s) for s in plan["train"]], [tuple(s) for s in plan["held_out"]]
            if train:
                path = write_trials(rec, kernel, train, held, out, args.dtype)
                say(f"done: {len(rec.tables(train))} training and {len(rec.tables(held))} held-out shapes "
                    f"measured; {path}")
                if rec.tables(held):
                    text = report_text(path, kernel, plan)
                    path.with_name(path.name.replace("_trials.csv", "_report.txt")).write_text(text)
                    print(text, end="", flush=True)
    return 0


def _record(rec, args, kernel, ranges, plan, plan_path, default, deadline, say):
    """Tune the training shapes, then the held-out ones (module doc); returns both lists."""
    n_space = len(list(rec.space.iter_configs()))
    strategy, trials = ("grid", n_space) if n_space <= args.trials else ("transfer", args.trials)
    say(f"{kernel.name} {args.dtype} on {rec.info.name}: {n_space} valid configs; strategy {strategy}, "
        f"{trials} configs a shape; range {args.range} (multiples of {args.multiple})")
    train = [tuple(s) for s in plan["train"]]
    while len(train) < args.train and time.monotonic() < deadline:
        tables = rec.tables(train)
        weights = regret_weights(leave_one_out(tables, default, kernel.dims)) if len(tables) >= 3 else {}
        shape = next_shapes(ranges, train, 1, weights=weights, multiple=args.multiple)[0]
        first = list(build_dispatch(tables, default, kernel.dims).configs) if tables else []
        got = rec.search(shape, strategy, trials, first, train)
        train.append(shape)
        plan["train"] = [list(s) for s in train]
        plan_path.write_text(json.dumps(plan, indent=1))
        say(f"train {len(train)}/{args.train} {shape}: {got['measured']} ok, {got['failed']} failed, "
            f"{got['seconds']:.1f} s")
    if args.matrix and train and time.monotonic() < deadline:
        _matrix(rec, train, plan, plan_path, say)
    tables = rec.tables(train)
    dispatch = build_dispatch(tables, default, kernel.dims)
    held = [tuple(s) for s in plan["held_out"]] or held_out_shapes(ranges, args.held_out, set(train),
                                                                   args.multiple, args.seed + 1)
    plan["held_out"] = [list(s) for s in held]
    plan_path.write_text(json.dumps(plan, indent=1))
    done = {t.shape for t in rec.tables(held)}
    for i, shape in enumerate(held):
        if shape in done or time.monotonic() >= deadline:
            continue
        near = min(tables, key=lambda t: (round(_log_distance(t.shape, shape), 9), -math.prod(t.shape)))
        first = [dispatch.config_for(shape), near.best_config, *dispatch.configs]
        got = rec.search(shape, strategy, trials, first, train)
        say(f"held out {i + 1}/{len(held)} {shape}: {got['measured']} ok, {got['failed']} failed, "
            f"{got['seconds']:.1f} s")
    return train, held


def _matrix(rec, train, plan, plan_path, say) -> None:
    """Time every training shape's winner and runner-up at every training shape where it is not
    measured yet (the dense matrix of ``tune-shapes``), adding the seconds and trials to the plan."""
    from autotune.search.shapes import matrix_configs

    tables = rec.tables(train)
    configs = matrix_configs(tables)
    seconds = trials = 0.0
    for t in tables:
        missing = [c for c in configs if t.ms(c) is None]
        if missing:
            got = rec.search(t.shape, "grid", 0, missing, [])
            seconds += got["seconds"]
            trials += got["measured"] + got["failed"]
    done = plan.setdefault("matrix", {"seconds": 0.0, "trials": 0, "configs": 0})
    done.update(seconds=done["seconds"] + seconds, trials=int(done["trials"] + trials), configs=len(configs))
    plan_path.write_text(json.dumps(plan, indent=1))
    say(f"dense matrix: {len(configs)} winners and runners-up at {len(tables)} training shapes, {int(trials)} "
        f"trials, {seconds:.1f} s ({seconds / max(1, len(tables)):.1f} s per training shape)")


def _log_distance(a, b) -> float:
    return math.sqrt(sum(math.log(x / y) ** 2 for x, y in zip(a, b)))


def write_trials(rec: Recorder, kernel, train, held, out: Path, dtype: str) -> Path:
    """Every trial of the plan's shapes as a CSV (:data:`FIELDS`)."""
    role = {**{tuple(s): "train" for s in train}, **{tuple(s): "held_out" for s in held}}
    _, key = rec.key(train[0])
    when = datetime.datetime.now(datetime.timezone.utc)
    gpu = rec.info.name.replace(" ", "_")
    path = out / f"{when:%Y-%m-%d}_{gpu}_dispatch_{kernel.name}_{dtype}_trials.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for t in rec.store.shape_trials(key):
            shape = tuple(v for _, v in t.dims)
            if shape in role:
                w.writerow([role[shape], ",".join(f"{n}={v}" for n, v in t.dims), t.config.key, t.status,
                            "" if t.median_ms is None else repr(t.median_ms), t.trial_id])
    return path


def fill(args) -> int:
    """Measure, at each held-out shape, the dispatch's and nearest_shape's picks not measured there."""
    kernel = resolve_kernel(args.kernel)
    plan = json.loads((Path(args.out) / f"{kernel.name}_plan.json").read_text())
    train, held = [tuple(s) for s in plan["train"]], [tuple(s) for s in plan["held_out"]]
    default = kernel.default_config()
    with Recorder(kernel, plan["dtype"], args.db, plan["space"], plan["batch"], plan["seed"], args.fake) as rec:
        tables = rec.tables(train)
        dispatch = build_dispatch(tables, default, kernel.dims)
        measured = {t.shape: t for t in rec.tables(held)}
        for shape in held:
            t = measured.get(shape)
            near = min(tables, key=lambda u: (round(_log_distance(u.shape, shape), 9), -math.prod(u.shape)))
            want = [c for c in (dispatch.config_for(shape), near.best_config, default) if t is None or t.ms(c) is None]
            if want:
                got = rec.search(shape, "grid", 0, want, [])
                print(f"filled {shape}: {got['measured']} ok, {got['failed']} failed", flush=True)
        write_trials(rec, kernel, train, held, Path(args.out), plan["dtype"])
    return 0


# --- the CPU part -------------------------------------------------------------------------

def read_trials(path: Path):
    """``(kernel name, train tables, held-out tables)`` of a trials CSV."""
    from autotune.interchange.table import params_of
    from autotune.store.key import parse_dims_key
    from types import SimpleNamespace

    rows = list(csv.DictReader(open(path, newline="")))
    name = path.name.split("_dispatch_", 1)[1].rsplit("_trials", 1)[0]
    kernel = name.rsplit("_", 1)[0]
    by_role: dict[str, list] = {"train": [], "held_out": []}
    for r in rows:
        by_role[r["role"]].append(SimpleNamespace(
            dims=parse_dims_key(r["dims"]), config=Config.of(kernel, params_of(r["config"])), status=r["status"],
            median_ms=float(r["median_ms"]) if r["median_ms"] else None))
    return kernel, tables_from_trials(by_role["train"]), tables_from_trials(by_role["held_out"])


def pct(value) -> str:
    if value is None:
        return "-"
    return "failed" if math.isinf(value) else f"{100 * value:.1f} %"


def report(args) -> int:
    path = Path(args.trials)
    kernel = resolve_kernel(args.kernel or read_trials(path)[0])
    plan_path = Path(args.plan) if args.plan else None
    text = report_text(path, kernel, json.loads(plan_path.read_text()) if plan_path else None)
    print(text, end="")
    if args.write:
        Path(args.write).write_text(text)
    return 0


def report_text(path: Path, kernel, plan: dict | None = None) -> str:
    """The report of a trials CSV (module doc); ``plan``: the recorder's, for the matrix's cost."""
    _, train, held = read_trials(path)
    default = kernel.default_config()
    started = time.perf_counter()
    dispatch = build_dispatch(train, default, kernel.dims)
    built_ms = (time.perf_counter() - started) * 1e3
    rows = evaluate(train, held, default, kernel.dims)
    cv = ", ".join(f"{k} {100 * math.expm1(v):.1f} % ({dispatch.cv_below.get(k, 0)} below the default)"
                   for k, v in dispatch.cv_regret.items())
    lines = [f"# benchmarks/dispatch_regret.py report {path.name}",
             f"# {kernel.name}: {len(train)} training shapes, {len(held)} held-out shapes; dispatch of "
             f"{len(dispatch.configs)} configs, rule: {dispatch.rule()} (kept by leave-one-shape-out: {cv})"
             f"; learned in {built_ms:.0f} ms",
             "", "configs (0 = the kernel's default):"]
    lines += [f"  {i}: {c.key}" for i, c in enumerate(dispatch.configs)]
    lines += ["", "training shapes (the config the rule picks there):"]
    lines += [f"  {'x'.join(map(str, s))}: {dispatch.choose(s)[0]}" for s in dispatch.shapes]
    lines += ["", f"{'held-out shape':>18} {'configs':>7} {'dispatch':>9} {'nearest':>9} {'default':>9}  pick"]
    measured = {t.shape: len(t.times) for t in held}
    for r in sorted(rows, key=lambda r: shape_order([r.shape])[0]):
        lines.append(f"{'x'.join(map(str, r.shape)):>18} {measured[r.shape]:>7} {pct(r.dispatch_regret):>9} "
                     f"{pct(r.nearest_regret):>9} {pct(r.default_regret):>9}  {dispatch.configs.index(r.dispatch)}")
    lines.append("")
    for which, label in (("dispatch", "dispatch"), ("nearest", "nearest_shape"), ("default", "default")):
        s = summarize(rows, which)
        lines.append(f"{label:>13}: median regret {pct(s.median)}, worst {pct(s.worst)} over {s.measured} of "
                     f"{s.shapes} held-out shapes measured; slower than the default by > 1 % at {s.below_default}")
    for rule in ("knn", "tree", "nearest"):  # each rule the dispatch chooses from, forced
        s = summarize(evaluate(train, held, default, kernel.dims, rules=(rule,)))
        lines.append(f"{'rule ' + rule:>13}: median regret {pct(s.median)}, worst {pct(s.worst)} over {s.measured} "
                     f"of {s.shapes}; slower than the default by > 1 % at {s.below_default}")
    for configs, label in ((dispatch.configs, f"the dispatch's {len(dispatch.configs)} configs"),
                           (winners(train), f"the {len(winners(train))} training winners and runners-up")):
        s = best_of(held, configs, default)
        lines.append(f"{'bound':>13}: best of {label} at each held-out shape: median regret {pct(s.median)}, "
                     f"worst {pct(s.worst)} over {s.measured} of {s.shapes}")
    dense = sum(t.ms(c) is not None for t in train for c in dispatch.configs) / max(1, len(train) * len(dispatch.configs))
    lines.append(f"dense: {100 * dense:.0f} % of the dispatch's configs measured at every training shape")
    m = (plan or {}).get("matrix")
    if m:
        lines.append(f"dense matrix: {m['configs']} winners and runners-up, {m['trials']} trials, {m['seconds']:.1f} s "
                     f"of GPU, {m['seconds'] / max(1, len(train)):.1f} s per tuned shape")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("record", "fill"):
        p = sub.add_parser(name)
        p.add_argument("--kernel", required=True)
        p.add_argument("--db", required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--seconds", type=float, default=540.0, help="start no new shape after this many seconds")
        p.add_argument("--fake", action="store_true", help="no GPU: a made-up landscape (a dry run of the logic)")
        if name == "record":
            p.add_argument("--range", required=True, help="e.g. m=256:2048,n=256:2048,k=256:2048")
            p.add_argument("--dtype", default="float32")
            p.add_argument("--multiple", type=int, default=1)
            p.add_argument("--space")
            p.add_argument("--train", type=int, default=12)
            p.add_argument("--held-out", type=int, default=20)
            p.add_argument("--trials", type=int, default=100)
            p.add_argument("--batch", type=int, default=16)
            p.add_argument("--seed", type=int, default=0)
            p.add_argument("--no-matrix", dest="matrix", action="store_false",
                           help="no dense matrix between the training and the held-out shapes")
    p = sub.add_parser("report")
    p.add_argument("trials")
    p.add_argument("--kernel", help="the kernel (name or file) if the file name does not say it")
    p.add_argument("--write")
    p.add_argument("--plan", help="the recorder's <kernel>_plan.json, for the dense matrix's cost")
    args = ap.parse_args()
    return {"record": record, "fill": fill, "report": report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
