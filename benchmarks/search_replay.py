#!/usr/bin/env python3
"""Issue 35: the default search strategy against tpe, random, a hill climber, transfer and Kernel
Tuner's strategies, replayed on the CPU on the tables recorded whole on the GPU.

Every strategy runs under the same rules on the same table (``autotune.interchange.replay``: each
proposal "measured" by its recorded median; failed configs count): budgets 20, 50 and 100
configs, batches of 16 (one config per compile worker of the GPU machine) and of 1, and the
kernel's default measured first for all of them or for none (both reported). Scored with the
methodology score P (``autotune.interchange.score``: 0 = expected random search, 1 = the optimum,
the mean of P(k) over k = 1..budget), mean +- standard error over seeds; also the configs
measured to within 1 % and 5 % of the table's optimum (median over seeds; '>B': not within the
budget in most seeds), and the regret of the winner (the best measured after 100 configs, as
% slower than the optimum, mean over seeds; no re-timing noise in a replay).

Strategies: autotune's default (``DEFAULT_STRATEGY``), ``tpe``, ``random``, ``hillclimb`` (a
first-improvement hill climber, defined here: neighbours of the best config so far, one macro
to another value, in random order; a random restart once a neighbourhood is exhausted),
``transfer`` (history: the other shapes' tables of the same kernel), and, where Kernel Tuner is
importable, its strategies in simulation mode on the same table (``autotune.interchange.kt_cache``),
``max_fevals`` = the budget (one run per budget); "default first" gives them the default as
their first config measured, then ``budget - 1`` of their own evaluations (not as ``x0``:
greedy_ils given ``x0`` in simulation mode did not end within minutes here). Kernel Tuner proposes one config at a time, so its
rows are the same at both batches. Also: the CPU time the default strategy spends proposing,
per config, at batch 16 on matmul_warp's 22,944-config space (configs/matmul_warp.toml).

    nice python3 benchmarks/search_replay.py [--seeds 20] [--first-seed 0] [--kt-seeds 20] [--kt S ...] [--workers 2]
Writes --out (default benchmarks/results)/<date>_cpu_search_replay.{md,csv}.

``--costs`` (issue 47, target 5): the strategies compared in simulated wall seconds instead of
configs, on the tables that have a costs file beside them (``..._table_<name>_costs.csv``,
``benchmarks/record_tables.sh`` with ``COSTS=1``; the newest per table): each config charged its
recorded nvcc CPU seconds and its verify and time ms (``autotune.interchange.wall_replay``).
autotune's default strategy as ``autotune search`` runs it (``loop_replay``: batch 16, one batch
ahead, the costs file's compile workers, the first proposed config whose build has ended
measured next) and, for reference, one config at a time; the hill climber and Kernel Tuner's
strategies one config at a time, compile then measure (``serial_wall``: Kernel Tuner compiles
in its own process, one config at a time). All start from the kernel's default. Each run goes
to ``--cap`` configs; reported: the simulated seconds to within 1 % and 5 % of the table's
optimum, median and quartiles over seeds ('>cap': not within the cap), and the ratio of
autotune's default to Kernel Tuner's best strategy and to the hill climber. A simulation from
recorded costs, not the search run on a GPU.

    nice python3 benchmarks/search_replay.py --costs [--seeds 20] [--kt-seeds 10] [--cap 400] [--workers 1]
Writes --out/<date>_cpu_search_replay_costs_<device>.{md,csv} (the device the costs came from).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import importlib.util
import math
import multiprocessing
import random
import signal
import statistics
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import large_space_search as L  # noqa: E402

from autotune.kernel.config import Config  # noqa: E402
from autotune.search.strategies.base import Strategy  # noqa: E402

BUDGETS = (20, 50, 100)
BATCHES = (16, 1)
KT_DEFAULT = ("greedy_ils", "mls", "simulated_annealing", "genetic_algorithm", "firefly_algorithm", "dual_annealing")
"""Kernel Tuner strategies replayed by default (``--kt all``: every one of large_space_search's list)."""
KT_TIMEOUT = 20
"""Seconds a Kernel Tuner run may take before it is stopped and reported as an error (its seed
left out): most take under 4 s, but greedy_ils on matmul_warp 1024^3 (seed 1, 100 configs) ran
on without a result (2026-11-27)."""


class HillClimb(Strategy):
    """A first-improvement hill climber: unmeasured neighbours (one macro to another value) of
    the best config so far, in random order; when the best's neighbourhood is exhausted, a
    random valid config (a restart). The baseline of issue 35's target 2."""

    name = "hillclimb"

    def __init__(self, space, seed=None, history=()) -> None:
        self._rng = random.Random(seed)
        super().__init__(space, seed, history)

    def _neighbours(self, centre: Config) -> list[Config]:
        values = centre.as_dict()
        out = []
        for name, options in self.space.params:
            for v in options:
                if v != values[name]:
                    c = Config.of(self.space.kernel, {**values, name: v})
                    if not self.known(c) and not self.space.violations(c):
                        out.append(c)
        self._rng.shuffle(out)
        return out

    def _propose(self, k: int) -> list[Config]:
        best = self.best
        out = self._neighbours(best[0])[:k] if best else []
        while len(out) < k:
            point = {n: self._rng.choice(v) for n, v in self.space.params}
            c = self.nearest_unknown(point, set(out))
            if c is None:
                break
            out.append(c)
        return out


def _factory(name, space, *, seed, history):
    """``name`` is a strategy's name, or ``NAME:KEY=VALUE[,KEY=VALUE...]`` with its options
    (``transfer:then=bandit``); the rows keep the whole text as the strategy's name."""
    if name == "hillclimb":
        return HillClimb(space, seed, history)
    from autotune.search.strategies import make_strategy

    base, _, given = name.partition(":")
    options = dict(item.split("=", 1) for item in given.split(",")) if given else None
    return make_strategy(base, space, seed=seed, history=history, options=options)


def _history(spec, tables):
    """The other shapes' tables of ``spec``'s kernel as transfer's history (config, ms, distance, shape)."""
    from autotune.interchange.table import read_table, table_configs

    out = []
    for other, path in tables.items():
        if other.group == spec.group and other != spec:
            table = read_table(path)
            configs = table_configs(table, L._space(other))
            out += [(configs[k], v, L._distance(other, spec), other.shape) for k, v in table.items()]
    return out


def _ours(job):
    spec, path, name, seed, batch, first, history, (ahead, pipelined) = job
    from autotune.interchange.replay import replay
    from autotune.interchange.table import read_table

    firsts = [L._kernel(spec).default_config()] if first else []
    made = []

    def factory(*args, **kw):
        made.append(_factory(*args, **kw))
        return made[-1]

    try:
        curve = replay(name, L._space(spec), read_table(path), max(BUDGETS), seed=seed, batch=batch,
                       first=firsts, history=history, factory=factory, ahead=ahead,
                       pipelined=pipelined).curve
    except Exception as exc:  # reported, not fatal
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    verdict = getattr(made[0], "verdict", None)  # transfer's: was the prior kept, and how many of its configs
    return curve, None if verdict is None else (verdict, len(made[0].from_prior))


def _kt(job):
    spec, cache, path, strategy, seed, budget, first = job
    from autotune.interchange.kt_cache import simulate
    from autotune.interchange.score import best_so_far
    from autotune.interchange.table import read_table

    options, prefix = {}, []
    if first:
        default = L._kernel(spec).default_config()
        table = read_table(path)
        prefix = [table.get(default.key)]
    def stop(signum, frame):
        raise TimeoutError(f"no result in {KT_TIMEOUT} s (seed {seed}, budget {budget})")

    signal.signal(signal.SIGALRM, stop)  # this process runs this one job (maxtasksperchild=1)
    signal.alarm(KT_TIMEOUT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            curve = simulate(cache, strategy, budget - len(prefix), seed=seed, strategy_options=options) \
                if budget > len(prefix) else []
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc)[:120]}"
        finally:
            signal.alarm(0)
    if not prefix:
        return curve
    worst = max(v for v in read_table(path).values() if v is not None)
    head = best_so_far(prefix, worst)
    return head + [min(head[-1], v) for v in curve]


def proposing_cost(name: str, batch: int = 16, configs: int = 112) -> float:
    """CPU ms per config that ``name`` (with its options, as ``--ours`` takes it) spends in ask+tell
    at ``batch`` on matmul_warp's full space (22,944 valid configs), told synthetic times (a smooth
    function of the macros), the default first."""
    from autotune.kernel.catalog import get_kernel
    from autotune.kernel.space import load_space
    kernel = get_kernel("matmul_warp")
    space = load_space(kernel, HERE.parent / "configs" / "matmul_warp.toml")

    def ms(c: Config) -> float:
        m = c.as_dict()
        return 1 + sum(abs(math.log2(m[n]) - 4) for n in ("BM", "BN", "WM", "WN")) * 0.1 + 0.05 * m["STAGES"] \
            + 0.1 * (m["BK"] != 16) + 0.02 * m["A_SMEM"]

    start = time.process_time()
    s = _factory(name, space, seed=0, history=())
    s.tell(kernel.default_config(), ms(kernel.default_config()))
    done = 1
    while done < configs:
        got = s.ask(batch)
        if not got:
            break
        for c in got:
            s.tell(c, ms(c))
        done += len(got)
    return 1000 * (time.process_time() - start) / done


def _reach(curve, target):
    return next((i + 1 for i, v in enumerate(curve) if v <= target), None)


def _median_reach(curves, target, budget):
    got = sorted(_reach(c[:budget], target) or math.inf for c in curves)
    med = statistics.median(got)
    return f">{budget}" if med == math.inf else f"{med:g}"


PROPOSE_MS = 22.0
"""``--costs``: ms of the loop's own work per config of autotune's strategies (ask, tell, the
study read), charged before each batch is built: the ``propose`` phase of a matmul_warp 4096^3
search on the H200 with 16 cores while nvcc ran on them (22-24 ms a config,
``results/2026-11-28_NVIDIA_H200_search_floor_ready_first.txt``; 5-7 ms on the small spaces
there). Kernel Tuner's strategies and the hill climber are charged none (their own time)."""


def find_costs(results: Path, only=None) -> dict:
    """The newest costs file of each table of ``L.TABLES`` under ``results`` with its table
    beside it: spec -> (table path, costs path, device). Named as ``record_tables.sh`` writes
    them (``<date>_<gpu>_<kernel>_<name-value_...>_<dtype>_costs.csv`` beside ``..._table.csv``)
    or as the plain replay's tables (``<date>_<gpu>_table_<table name>_costs.csv`` beside
    ``..._table_<table name>.csv``)."""
    import glob

    found = {}
    for spec in L.TABLES:
        if only is not None and spec.name not in only:
            continue
        recorded = f"{spec.kernel_name}_{'_'.join(f'{k}-{v}' for k, v in spec.dims)}_{spec.dtype}"
        named = [(p, f"_{recorded}_costs.csv", f"_{recorded}_table.csv")
                 for p in glob.glob(str(results / f"*_{recorded}_costs.csv"))]
        named += [(p, f"_table_{spec.name}_costs.csv", f"_table_{spec.name}.csv")
                  for p in glob.glob(str(results / f"*_table_{spec.name}_costs.csv"))]
        for costs, tail, table_tail in sorted(named, key=lambda n: Path(n[0]).name, reverse=True):
            table = Path(costs[: -len(tail)] + table_tail)
            if table.exists():
                device = Path(costs).name[: -len(tail)].split("_", 1)[1]
                found[spec] = (table, Path(costs), device)
                break
    return found


def _costs_job(job):
    """One run of ``--costs``: (seconds, configs measured, best-so-far ms) per config, or an error's text."""
    spec, table_path, costs_path, tool, name, way, seed, a = job
    from autotune.interchange.replay import replay
    from autotune.interchange.table import read_table
    from autotune.interchange.wall_replay import charges, loop_replay, read_costs, serial_wall

    table = read_table(table_path)
    costs = read_costs(costs_path)
    charged = charges(table, costs)
    default = L._kernel(spec).default_config()
    space = L._space(spec)
    try:
        if tool == "kernel_tuner":
            from autotune.interchange.kt_cache import evaluated

            signal.signal(signal.SIGALRM, _timeout(seed))  # this process runs this one job
            signal.alarm(a.kt_timeout)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    keys = [k for k, _ in evaluated(a.kt_cache[spec], name, a.cap - 1, seed=seed)]
                finally:
                    signal.alarm(0)
            run = serial_wall([default.key] + keys, table, charged, overhead_ms=a.overhead_ms)
        elif way == "loop":
            run = loop_replay(name, space, table, charged, a.cap, workers=costs.workers or a.compile_workers,
                              seed=seed, batch=16, ahead=1, first=[default], overhead_ms=a.overhead_ms,
                              propose_ms=a.propose_ms, factory=_factory)
        else:
            keys = replay(name, space, table, a.cap, seed=seed, batch=1, first=[default], factory=_factory).measured
            run = serial_wall(keys, table, charged, overhead_ms=a.overhead_ms)
    except Exception as exc:  # reported, not fatal
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    return list(run.seconds), list(run.curve), charged.filled


def _timeout(seed):
    def stop(signum, frame):
        raise TimeoutError(f"no result in the time allowed (seed {seed})")
    return stop


def quartiles(values):
    """(median, first quartile, third quartile) of ``values``, interpolated between ranks
    (``math.inf``: not reached; a quantile next to one is ``inf``)."""
    got = sorted(values)

    def at(f):
        x = f * (len(got) - 1)
        lo, hi = got[math.floor(x)], got[math.ceil(x)]
        return math.inf if math.inf in (lo, hi) else lo + (hi - lo) * (x - math.floor(x))

    return at(0.5), at(0.25), at(0.75)


def _secs(v) -> str:
    return ">cap" if v == math.inf else f"{v:.1f}"


def _count(v) -> str:
    return ">cap" if v == math.inf else f"{v:g}"


def costs_main(a) -> None:
    """``--costs`` (module doc)."""
    from autotune.interchange.kt_cache import write_cache
    from autotune.interchange.table import read_table
    from autotune.search.strategies import DEFAULT_STRATEGY

    found = find_costs(Path(a.results), a.only)
    if not found:
        print(f"error: no table under {a.results} has a costs file beside it (..._table_<name>_costs.csv: "
              "benchmarks/record_tables.sh with COSTS=1)", file=sys.stderr)
        raise SystemExit(2)
    kt = list(L.KT_STRATEGIES) if a.kt == ["all"] else a.kt
    if importlib.util.find_spec("kernel_tuner") is None:
        kt = []
    scratch = Path(tempfile.mkdtemp())
    a.kt_cache = {}
    t0 = time.time()
    runs: dict = {}  # (spec, tool, name, way) -> [(seconds, curve)]
    filled: dict = {}
    errors: dict = {}
    for spec, (table_path, costs_path, device) in found.items():
        table = read_table(table_path)
        cache = scratch / f"{spec.name}.json"
        write_cache(table, L._space(spec), cache, kernel_name=spec.kernel_name, problem_size=[v for _, v in spec.dims])
        a.kt_cache[spec] = cache
        jobs = {}
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            jobs[(spec, "autotune", DEFAULT_STRATEGY, "loop", seed)] = None
            jobs[(spec, "autotune", DEFAULT_STRATEGY, "serial", seed)] = None
            jobs[(spec, "autotune", "hillclimb", "serial", seed)] = None
        for name in kt:
            for seed in range(a.kt_seeds):
                jobs[(spec, "kernel_tuner", name, "serial", seed)] = None
        # one process per run (maxtasksperchild=1), as for Kernel Tuner's runs of the plain replay
        with multiprocessing.get_context("fork").Pool(a.workers, maxtasksperchild=1) as pool:
            for key in jobs:
                _, tool, name, way, seed = key
                jobs[key] = pool.apply_async(_costs_job, ((spec, table_path, costs_path, tool, name, way, seed, a),))
            for key, job in jobs.items():
                r = job.get()
                if key[4] == (a.first_seed + a.seeds - 1 if key[1] == "autotune" else a.kt_seeds - 1):
                    print(f"{spec.name}: {key[1]} {key[2]} {key[3]} done, {time.time() - t0:.0f} s", flush=True)
                if isinstance(r, str):
                    errors.setdefault(key[1:3], []).append(r)
                    continue
                runs.setdefault(key[:4], []).append(r[:2])
                filled[spec] = r[2]
        print(f"{spec.name}: done, {time.time() - t0:.0f} s", flush=True)
    checks = {spec: _grid_check(spec, *found[spec][:2], a) for spec in found}
    rows = []
    for (spec, tool, name, way), got in runs.items():
        table = read_table(found[spec][0])
        opt = min(v for v in table.values() if v is not None)
        row = [spec.name, found[spec][2], tool, name, way, len(got)]
        for within in (1.01, 1.05):
            reach = [next((s for s, v in zip(secs, curve) if v <= opt * within), math.inf) for secs, curve in got]
            counts = [next((i + 1 for i, v in enumerate(curve) if v <= opt * within), math.inf) for _, curve in got]
            row += [*quartiles(reach), statistics.median(counts), sum(r < math.inf for r in reach)]
        row += [statistics.median(secs[-1] for secs, _ in got), statistics.median(len(secs) for secs, _ in got)]
        rows.append(row)
    stem = Path(a.out) / (f"{datetime.now(timezone.utc):%Y-%m-%d}_cpu_search_replay_costs_"
                          + "_".join(sorted({d for _, _, d in found.values()})) + (f"_{a.tag}" if a.tag else ""))
    write_costs(stem, rows, errors, found, filled, a, kt, DEFAULT_STRATEGY, time.time() - t0, checks)


def _grid_check(spec, table_path, costs_path, a) -> str:
    """The recording itself simulated: the table's whole grid in the loop (the default first),
    charged its propose phase per config from ``..._record.txt`` (``record_tables.sh``'s output
    beside the costs file, where there is one), against that run's recorded wall."""
    import re

    from autotune.interchange.table import read_table
    from autotune.interchange.wall_replay import charges, loop_replay, read_costs

    table, costs = read_table(table_path), read_costs(costs_path)
    record = Path(str(costs_path)[: -len("_costs.csv")] + "_record.txt")
    text = record.read_text() if record.exists() else ""
    propose = re.search(r"where the time went:.*propose ([\d.]+) s", text)
    wall = re.search(r"this run's wall time ([\d.]+) s", text)
    propose_ms = 1e3 * float(propose[1]) / len(table) if propose else 0.0
    run = loop_replay("grid", L._space(spec), table, charges(table, costs), len(table),
                      workers=costs.workers or a.compile_workers, first=[L._kernel(spec).default_config()],
                      overhead_ms=a.overhead_ms, propose_ms=propose_ms)
    said = f"the recorded run's wall {float(wall[1]):.1f} s (the whole command: start-up and re-timing too)" \
        if wall else "no recorded wall beside the costs file"
    return (f"the recording's own grid of {len(run.measured)} configs simulated in the loop ({propose_ms:.1f} ms "
            f"of proposing a config, its own): {run.seconds[-1]:.1f} s; {said}")


def write_costs(stem, rows, errors, found, filled, a, kt, default, wall, checks=None) -> None:
    """The ``--costs`` results: ``stem``.csv (a row per table and strategy) and ``stem``.md."""
    rows.sort(key=lambda r: (r[0], r[2] != "autotune", r[4] != "loop", r[3]))
    with open(f"{stem}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["table", "costs_device", "tool", "strategy", "way", "seeds",
                    "s_to_1pct_median", "s_to_1pct_q1", "s_to_1pct_q3", "configs_to_1pct_median", "seeds_within_1pct",
                    "s_to_5pct_median", "s_to_5pct_q1", "s_to_5pct_q3", "configs_to_5pct_median", "seeds_within_5pct",
                    "s_at_end_median", "configs_run_median"])
        for r in rows:
            w.writerow([*r[:6], *map(_secs, r[6:9]), _count(r[9]), r[10], *map(_secs, r[11:14]), _count(r[14]), r[15],
                        f"{r[16]:.1f}", f"{r[17]:g}"])
    words = [f"nice python3 benchmarks/search_replay.py --costs --seeds {a.seeds} --kt-seeds {a.kt_seeds} "
             f"--cap {a.cap} --workers {a.workers}", f"--overhead-ms {a.overhead_ms:g}", f"--propose-ms {a.propose_ms:g}",
             f"--kt-timeout {a.kt_timeout}"]
    if a.first_seed:
        words.append(f"--first-seed {a.first_seed}")
    if a.only:
        words.append("--only " + " ".join(a.only))
    words.append("--kt " + " ".join(a.kt) if a.kt else "--kt")
    if a.tag:
        words.append(f"--tag {a.tag}")
    lines = [f"# Issue 47, target 5: strategies in the seconds that pace them, simulated from recorded costs "
             f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC})", "",
             f"`{' '.join(words)}`, {wall / 60:.0f} min on a shared 2-core CPU. The default strategy is `{default}`.",
             "",
             "**A simulation from recorded costs, not the search run on a GPU** (`autotune.interchange.wall_replay`). "
             "Each config is charged the CPU seconds of its nvcc run and its trial's verify and time ms, as recorded "
             "beside the table (`benchmarks/record_tables.sh` with `COSTS=1`), plus "
             f"{a.overhead_ms:g} ms a config on the GPU's path (the trial's row written). autotune `loop`: "
             "`autotune search` as its loop runs: batches of 16, one batch ahead, the compile workers the costs file "
             f"names, the first proposed config whose build has ended measured next, {a.propose_ms:g} ms of the loop's "
             "own work per config asked. `serial`: one config at a time, compiled then measured, nothing overlapped, "
             "as Kernel Tuner runs (Kernel Tuner 1.5's own account of simulated time, `compile_time + "
             "verification_time + benchmark_time` per config, on the order its strategy evaluated in simulation "
             "mode); the strategy's own time not charged. Every run starts from the kernel's default and goes to "
             f"{a.cap} configs. Not simulated: the start-up, the final re-timing, the compile deadline, configs of one "
             "binary measured once, the noise of a fresh run.", "",
             f"Seconds to within 1 % / 5 % of the table's optimum: median over seeds [first quartile, third], "
             f"'>cap': not within the run (at most {a.cap} configs; some of Kernel Tuner's strategies end sooner, "
             "'configs run') in half the seeds or more; (n/N): seeds within, of the seeds run. Seeds: "
             f"{a.seeds} for autotune's and the hill climber, {a.kt_seeds} for each Kernel Tuner strategy; a run that "
             "failed (a Kernel Tuner run past --kt-timeout) is left out, and Kernel Tuner's best is chosen (by the "
             "median seconds to 1 %, then 5 %) among its strategies with at least half their seeds run.", ""]
    for spec, (table, costs, device) in found.items():
        lines.append(f"- {spec.name}: `{'benchmarks/results/' + table.name if table.parent.name == 'results' else table}`, costs "
                     f"`{costs.name}` ({device}); {filled.get(spec, 0)} configs charged a median for a figure not "
                     "recorded" + (f"; check: {checks[spec]}" if checks and spec in checks else ""))
    for (tool, name), errs in errors.items():
        lines.append(f"- {tool} {name}: {len(errs)} run(s) failed, left out, e.g. {errs[0]}")
    lines.append("")
    for t in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == t]
        lines += [f"## {t}", "", "| tool | strategy | way | s to 1 % | configs | s to 5 % | configs | s at the end | "
                  "configs run |", "|---|---|---|---|---|---|---|---|---|"]
        for r in mine:
            lines.append(f"| {r[2]} | {r[3]} | {r[4]} | {_secs(r[6])} [{_secs(r[7])}, {_secs(r[8])}] ({r[10]}/{r[5]}) | "
                         f"{_count(r[9])} | {_secs(r[11])} [{_secs(r[12])}, "
                         f"{_secs(r[13])}] ({r[15]}/{r[5]}) | {'>cap' if r[14] == math.inf else f'{r[14]:g}'} | "
                         f"{r[16]:.1f} | {r[17]:g} |")
        ours = next((r for r in mine if r[2] == "autotune" and r[3] == default and r[4] == "loop"), None)
        hill = next((r for r in mine if r[3] == "hillclimb"), None)
        peers = [r for r in mine if r[2] == "kernel_tuner" and 2 * r[5] >= a.kt_seeds]
        best = min(peers, key=lambda r: (r[6], r[11], r[16]), default=None)  # by 1 %, then 5 %
        if ours is not None:
            lines.append("")
            for label, i in (("1 %", 6), ("5 %", 11)):
                parts = [f"{label}: autotune's default / Kernel Tuner's best ({best[3]}) "
                         f"{_ratio(ours[i], best[i], best[16], ours[16])}" if best else f"{label}: no Kernel Tuner run"]
                if hill is not None:
                    parts.append(f"/ the hill climber {_ratio(ours[i], hill[i], hill[16], ours[16])}")
                lines.append("- " + ", ".join(parts))
        lines.append("")
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _ratio(ours: float, theirs: float, theirs_cap: float, ours_cap: float) -> str:
    """ours / theirs, seconds; where one did not get there within the cap, a bound from its
    median wall at the cap; '-' where neither did."""
    if ours == math.inf and theirs == math.inf:
        return "- (neither within the cap)"
    if ours == math.inf:
        return f"> {ours_cap / theirs:.2f}x (autotune's default not within the cap)"
    if theirs == math.inf:
        return f"< {ours / theirs_cap:.2f}x (theirs not within the cap)"
    return f"{ours / theirs:.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds --first-seed .. --first-seed + --seeds - 1 "
                                                                "(screen on other seeds than those reported)")
    ap.add_argument("--kt-seeds", type=int, default=20)
    ap.add_argument("--kt", nargs="*", default=list(KT_DEFAULT), help="Kernel Tuner strategies ('all': every one)")
    ap.add_argument("--ours", nargs="*", default=None, help="autotune strategies (default: the default, tpe, "
                                                              "random, hillclimb, transfer)")
    ap.add_argument("--only", nargs="*", default=None, help="table names to replay (default: all found)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ahead", type=int, default=0, help="whole batches asked beyond the one measured "
                                                          "(autotune search's compile pool: 1; default 0)")
    ap.add_argument("--pipelined", action="store_true", help="ask one config per config told, keeping "
                                                              "(ahead + 1) * batch in flight (autotune.interchange.replay)")
    ap.add_argument("--tag", default="", help="output name suffix: <date>_cpu_search_replay_<tag>.{md,csv}")
    ap.add_argument("--costs", action="store_true", help="strategies in simulated wall seconds, on the tables with a "
                                                          "costs file (module doc; issue 47, target 5)")
    ap.add_argument("--cap", type=int, default=400, help="--costs: configs each run goes to (default 400)")
    ap.add_argument("--overhead-ms", type=float, default=None, help="--costs: fixed ms per config on the GPU's path "
                                                                    "(default: wall_replay.OVERHEAD_MS)")
    ap.add_argument("--propose-ms", type=float, default=PROPOSE_MS, help="--costs: the loop's ms per config asked "
                                                                          "(default: PROPOSE_MS)")
    ap.add_argument("--compile-workers", type=int, default=16, help="--costs: where the costs file names none")
    ap.add_argument("--kt-timeout", type=int, default=120, help="--costs: seconds a Kernel Tuner run may take")
    ap.add_argument("--results", default=str(L.RESULTS), help="--costs: where the tables and costs files are")
    a = ap.parse_args()
    if a.costs:
        from autotune.interchange.wall_replay import OVERHEAD_MS

        if a.overhead_ms is None:
            a.overhead_ms = OVERHEAD_MS
        if a.cap < 2 or a.seeds < 1 or a.kt_seeds < 0 or a.workers < 1:
            print(f"error: --cap {a.cap} must be >= 2, --seeds {a.seeds} and --workers {a.workers} >= 1, "
                  f"--kt-seeds {a.kt_seeds} >= 0", file=sys.stderr)
            raise SystemExit(2)
        costs_main(a)
        return
    from autotune.interchange.kt_cache import write_cache
    from autotune.interchange.score import score
    from autotune.search.strategies import DEFAULT_STRATEGY
    from autotune.interchange.table import read_table

    ours = a.ours or [DEFAULT_STRATEGY, "tpe", "random", "hillclimb", "transfer"]
    kt = list(L.KT_STRATEGIES) if a.kt == ["all"] else a.kt
    if importlib.util.find_spec("kernel_tuner") is None:
        kt = []
    found = L.find_tables(L.RESULTS)
    tables = {s: p for s, p in found.items() if a.only is None or s.name in a.only}
    scratch = Path(tempfile.mkdtemp())
    t0 = time.time()
    rows = []  # table, tool, strategy, batch, first, budget, P, se, n, within1, within5, regret
    # a fresh pool per table: a run of --seeds 10 --workers 4 had a worker killed by the OOM killer at
    # 6.3 GB after 40 min (memory growing across jobs, not diagnosed), and max_tasks_per_child hung
    # the pool on Python 3.11 once its worker was replaced
    got: dict = {}
    errors: dict = {}
    verdicts: dict = {}  # (table, strategy, batch, first) -> transfer's (verdict, prior configs asked) per seed
    for spec, path in tables.items():
        history = tuple(_history(spec, found))  # every other shape recorded, replayed or not
        cache = scratch / f"{spec.name}.json"
        write_cache(read_table(path), L._space(spec), cache, kernel_name=spec.kernel_name,
                    problem_size=[v for _, v in spec.dims])
        jobs = {}
        with concurrent.futures.ProcessPoolExecutor(a.workers) as pool:
            for first in (True, False):
                for batch in BATCHES:
                    for name in ours:
                        transfer = name.partition(":")[0] == "transfer"
                        if transfer and not history:
                            continue
                        for seed in range(a.first_seed, a.first_seed + a.seeds):
                            jobs[(spec, "autotune", name, batch, first, None, seed)] = pool.submit(
                                _ours, (spec, path, name, seed, batch, first, history if transfer else (),
                                        (a.ahead, a.pipelined)))
        results = {key: f.result() for key, f in jobs.items()}
        # one process per Kernel Tuner run (multiprocessing's maxtasksperchild=1): a process that
        # runs many of them grows and slows (3.4 GB in 3.5 min on a matmul_warp table, 2026-11-27)
        with multiprocessing.get_context("fork").Pool(a.workers, maxtasksperchild=1) as kt_pool:
            for name in kt:
                for first in (True, False):
                    for budget in BUDGETS:
                        for seed in range(a.kt_seeds):
                            jobs[(spec, "kernel_tuner", name, 1, first, budget, seed)] = kt_pool.apply_async(
                                _kt, ((spec, cache, path, name, seed, budget, first),))
            results.update((key, j.get()) for key, j in jobs.items() if key[1] == "kernel_tuner")
        for key, r in results.items():
            spec_, tool, name, batch, first, budget, seed = key
            if isinstance(r, str):
                errors.setdefault((tool, name), []).append(r)
                continue
            if tool == "autotune":
                r, verdict = r
                if verdict is not None:
                    verdicts.setdefault((spec_.name, name, batch, first), []).append(verdict)
            got.setdefault((spec_, tool, name, batch, first, budget), []).append(list(r))
        print(f"{spec.name}: done, {time.time() - t0:.0f} s", flush=True)
    for (spec, tool, name, batch, first, budget), curves in got.items():
        table = read_table(tables[spec])
        opt = min(v for v in table.values() if v is not None)
        batches = BATCHES if tool == "kernel_tuner" else (batch,)
        for b in (BUDGETS if budget is None else (budget,)):
            cut = [c[:b] for c in curves if c]
            if not cut:
                continue
            ps = [score([c], table, b).p for c in cut]
            se = statistics.stdev(ps) / math.sqrt(len(ps)) if len(ps) > 1 else math.nan
            regret = statistics.mean(100 * (c[-1] / opt - 1) for c in cut)
            for bb in batches:
                rows.append([spec.name, tool, name, bb, "yes" if first else "no", b, statistics.mean(ps), se, len(ps),
                             _median_reach(cut, opt * 1.01, b), _median_reach(cut, opt * 1.05, b), regret])
    cost = {name: proposing_cost(name) for name in dict.fromkeys((DEFAULT_STRATEGY, "tpe", *ours))
            if name.partition(":")[0] != "transfer"}
    stem = Path(a.out) / (f"{datetime.now(timezone.utc):%Y-%m-%d}_cpu_search_replay" + (f"_{a.tag}" if a.tag else ""))
    write(stem, rows, errors, cost, tables, a, ours, kt, DEFAULT_STRATEGY, time.time() - t0, verdicts)


def _command(a) -> str:
    """The command line that wrote the results, as given."""
    words = ["nice python3 benchmarks/search_replay.py", f"--seeds {a.seeds}", f"--workers {a.workers}"]
    if a.first_seed:
        words.append(f"--first-seed {a.first_seed}")
    if a.ours:
        words.append("--ours " + " ".join(a.ours))
    if a.only:
        words.append("--only " + " ".join(a.only))
    if a.ahead:
        words.append(f"--ahead {a.ahead}")
    if a.pipelined:
        words.append("--pipelined")
    words.append("--kt " + " ".join(a.kt) if a.kt else "--kt")
    if a.kt:
        words.append(f"--kt-seeds {a.kt_seeds}")
    if a.tag:
        words.append(f"--tag {a.tag}")
    return " ".join(words)


def write(stem, rows, errors, cost, tables, a, ours, kt, default, wall, verdicts=None) -> None:
    rows.sort(key=lambda r: (r[0], r[3] != 16, r[4] != "yes", r[1], r[2], r[5]))
    with open(f"{stem}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["table", "tool", "strategy", "batch", "default_first", "budget", "P", "P_se", "seeds",
                    "configs_to_1pct", "configs_to_5pct", "regret_pct"])
        w.writerows([*r[:6], f"{r[6]:.3f}", f"{r[7]:.3f}", *r[8:11], f"{r[11]:.2f}"] for r in rows)
    by = {}
    for r in rows:
        by.setdefault((r[0], r[3], r[4], r[1], r[2]), {})[r[5]] = r
    lines = [f"# Issue 35: search strategies replayed on the CPU ({datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC})", "",
             f"`{_command(a)}`, {wall / 60:.0f} min on a shared 2-core CPU ({a.workers} worker process(es)); "
             f"seeds {a.first_seed}..{a.first_seed + a.seeds - 1}. The default strategy is `{default}`. "
             "Tables (recorded whole on the H100, "
             "committed under benchmarks/results/): " + ", ".join(s.name for s in tables) + ".", "",
             *([f"**{len(tables)} tables, not the 12 issue 35 asks for.**", ""] if len(tables) < 12 else []),
             "P: 0 = expected random search, 1 = the optimum (mean of P(k), k = 1..budget), mean ± standard error "
             f"over seeds ({a.seeds} for autotune's strategies, {a.kt_seeds} per budget for Kernel Tuner's, which "
             "propose one config at a time: the same rows at both batches). 1%/5%: configs measured to within 1 % / "
             "5 % of the optimum, median over seeds. Regret: the winner after the budget, % slower than the "
             "optimum, mean over seeds. 'default first': the kernel's default is every strategy's first config "
             "measured (Kernel Tuner's: measured before their own budget - 1 evaluations).", "",
             "Proposing cost (CPU ms per config, ask + tell, batch 16, 112 configs, matmul_warp's 22,944-config "
             "space): " + ", ".join(f"{n} {ms:.1f} ms" for n, ms in cost.items()), ""]
    for (tool, name), errs in errors.items():
        lines.append(f"- {tool} {name}: {len(errs)} run(s) failed, e.g. {errs[0]}")
    lines.append("")
    # the mean over tables, per batch, default first, strategy
    lines += ["## Mean over tables", "",
              "| batch | default first | tool | strategy | P@20 | P@50 | P@100 |", "|---|---|---|---|---|---|---|"]
    means = {}
    for (t, batch, first, tool, name), cells in by.items():
        for b, r in cells.items():
            means.setdefault((batch, first, tool, name, b), []).append(r[6])
    keys = sorted({k[:4] for k in means}, key=lambda k: (k[0] != 16, k[1] != "yes", k[2], k[3]))
    for k in keys:
        cells = [means.get((*k, b)) for b in BUDGETS]
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(
            f"{statistics.mean(c):.2f} ({len(c)})" if c else "-" for c in cells) + " |")
    lines += ["", "(n): tables averaged (transfer: the tables with another shape of their kernel).", ""]
    for t in sorted({k[0] for k in by}):
        for batch in BATCHES:
            for first in ("yes", "no"):
                lines += [f"## {t}, batch {batch}, default first: {first}", "",
                          "| tool | strategy | " + " | ".join(f"P@{b}" for b in BUDGETS)
                          + " | 1% (median) | 5% (median) | regret@100 |", "|---|---|---|---|---|---|---|---|"]
                for (tt, bb, ff, tool, name), cells in by.items():
                    if (tt, bb, ff) != (t, batch, first):
                        continue
                    last = cells.get(max(BUDGETS))
                    lines.append(f"| {tool} | {name} | " + " | ".join(
                        f"{cells[b][6]:.2f} ± {cells[b][7]:.2f}" if b in cells else "-" for b in BUDGETS)
                        + (f" | {last[9]} | {last[10]} | {last[11]:.2f}% |" if last else " | - | - | - |"))
                lines.append("")
    if verdicts:
        lines += ["## Transfer's verdicts", "",
                  "Per run (seed): whether the prior (the nearest shapes' bests) was kept ('trusted') or dropped "
                  "on the evidence of the plain search's configs measured beside it, and how many prior configs "
                  "transfer asked in 100 configs (the default, where it is one of them, not counted).", "",
                  "| table | strategy | batch | default first | trusted / dropped / open | prior configs asked (per seed) |",
                  "|---|---|---|---|---|---|"]
        for (t, name, batch, first), got in sorted(verdicts.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2],
                                                                                      not kv[0][3])):
            count = {v: sum(1 for g in got if g[0] == v) for v in ("trusted", "dropped", "open")}
            lines.append(f"| {t} | {name} | {batch} | {'yes' if first else 'no'} | {count['trusted']} / "
                         f"{count['dropped']} / {count['open']} | {', '.join(str(g[1]) for g in got)} |")
        lines.append("")
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:40]))


if __name__ == "__main__":
    main()
