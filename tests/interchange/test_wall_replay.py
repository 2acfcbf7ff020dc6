"""The replay in simulated wall seconds (issue 47, target 5): the costs file, what each config
is charged, Kernel Tuner's serial account and the search loop's event simulation, each
checked against timelines worked out by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import get_kernel
from autotune.interchange.kt_cache import evaluated, simulate, write_cache
from autotune.interchange.wall_replay import (
    Charges, ConfigCost, Costs, charges, loop_replay, read_costs, seconds_to, serial_wall,
)


def space():
    return get_kernel("smem_pad").space()


class Listed:
    """A strategy proposing a fixed order (ask/tell/enqueue): configs neither asked nor told,
    up to k; [] when none is left. ``log`` gets each tell, ``asks`` what was known at each ask."""

    def __init__(self, order):
        self.order, self.asked, self.log, self.asks = list(order), set(), [], []

    def enqueue(self, configs, first=False):
        self.order = [c for c in configs] + [c for c in self.order if c not in configs]

    def ask(self, k):
        self.asks.append([key for key, _ in self.log])
        out = [c for c in self.order if c not in self.asked][:k]
        self.asked.update(out)
        return out

    def tell(self, config, ms):
        self.log.append((config.key, ms))


def configs(n):
    return list(space().configs())[:n]


def planted(order, nvcc, gpu_ms):
    """A table of ``order`` (times 1.0, 0.9, ...) and its charges: nvcc s and GPU ms each."""
    table = {c.key: 1.0 - 0.1 * i for i, c in enumerate(order)}
    charged = Charges({c.key: s for c, s in zip(order, nvcc)}, {c.key: ms / 1e3 for c, ms in zip(order, gpu_ms)}, 0)
    return table, charged


def run_listed(order, table, charged, budget, **options):
    made = []

    def factory(name, sp, *, seed, history):
        made.append(Listed(order))
        return made[-1]

    return loop_replay("listed", space(), table, charged, budget, factory=factory, **options), made[0]


# --- the costs file ------------------------------------------------------------------------------


def write_costs(path, rows, first="# 16 compile workers; nvcc_cpu_s: user + system seconds\n"):
    path.write_text(first + "config,nvcc_cpu_s,verify_ms,time_ms,median_ms\n" + "".join(r + "\n" for r in rows))
    return path


def test_read_costs_reads_the_workers_and_leaves_empty_figures_unrecorded(tmp_path):
    a, b = configs(2)
    got = read_costs(write_costs(tmp_path / "c.csv", [f'"{a.key}",1.5,0.3,2.0,0.1', f'"{b.key}",,,,']))
    assert got.workers == 16
    assert got.configs == {a.key: ConfigCost(1.5, 0.3, 2.0), b.key: ConfigCost(None, None, None)}
    no_comment = read_costs(write_costs(tmp_path / "d.csv", [f'"{a.key}",1,2,3,4'], first=""))
    assert no_comment.workers is None and no_comment.configs[a.key] == ConfigCost(1.0, 2.0, 3.0)
    # as benchmarks/record_tables.sh's files are committed: a line on what recorded it, then the workers'
    two = read_costs(write_costs(tmp_path / "e.csv", [f'"{a.key}",1,2,3,4'],
                                 first="# record_tables.sh COSTS=1 on a GPU, 16 cores\n# 12 compile workers; nvcc\n"))
    assert two.workers == 12 and list(two.configs) == [a.key]


@pytest.mark.parametrize("rows, header, message", [
    (['"BLOCK_ROWS=8",1,2,3,4'], "config,nvcc_cpu_s,verify_ms,time_ms,median_ms", None),
    (['"BLOCK_ROWS=8",-1,2,3,4'], "config,nvcc_cpu_s,verify_ms,time_ms,median_ms", "c.csv:3: nvcc_cpu_s is '-1'"),
    (['"BLOCK_ROWS=8",1,,3,4'], "config,nvcc_cpu_s,verify_ms,time_ms,median_ms", None),
    (['"BLOCK_ROWS=8",x,2,3,4'], "config,nvcc_cpu_s,verify_ms,time_ms,median_ms", "nvcc_cpu_s is 'x'"),
    (['"BLOCK_ROWS=8",1,2,3'], "config,nvcc_cpu_s,verify_ms,time_ms,median_ms", "c.csv:3 has 4 fields"),
    (['"BLOCK_ROWS=8",1,2,3,4', '"BLOCK_ROWS=8",1,2,3,4'], "config,nvcc_cpu_s,verify_ms,time_ms,median_ms",
     "c.csv:4: config BLOCK_ROWS=8 appears twice"),
    ([], "config,median_ms", "its header must be"),
])
def test_read_costs_refuses_a_bad_file_naming_the_line(tmp_path, rows, header, message):
    path = tmp_path / "c.csv"
    path.write_text("# 4 compile workers\n" + header + "\n" + "".join(r + "\n" for r in rows))
    if message is None:
        assert read_costs(path).configs["BLOCK_ROWS=8"] == ConfigCost(1.0, 2.0 if rows[0].count(",,") == 0 else None,
                                                                       3.0)
        return
    with pytest.raises(InvalidInputError, match=message):
        read_costs(path)


def test_read_costs_refuses_a_missing_file(tmp_path):
    with pytest.raises(InvalidInputError):
        read_costs(tmp_path / "none.csv")


def test_a_figure_not_recorded_is_charged_the_median_and_counted():
    a, b, c, d, e = (x.key for x in configs(5))
    costs = Costs(16, {a: ConfigCost(1.0, 1.0, 2.0), b: ConfigCost(3.0, 3.0, 4.0), c: ConfigCost(2.0, 2.0, 6.0),
                       d: ConfigCost(None, None, None)})
    table = {a: 0.1, b: 0.2, c: 0.3, d: 0.4, e: None}  # e: failed, in no costs row
    got = charges(table, costs)
    assert got.compile_s == {a: 1.0, b: 3.0, c: 2.0, d: 2.0, e: 2.0}  # d, e: the median nvcc, 2.0
    assert got.gpu_s[a] == pytest.approx(0.003) and got.gpu_s[d] == pytest.approx((2.0 + 4.0) / 1e3)
    assert got.gpu_s[e] == 0.0  # failed, nothing timed: no GPU charged
    assert got.filled == 2
    with pytest.raises(InvalidInputError, match="no config of the costs file has a nvcc_cpu_s figure"):
        charges(table, Costs(None, {a: ConfigCost(None, 1.0, 1.0)}))


# --- Kernel Tuner's way: serial ------------------------------------------------------------------


def test_serial_wall_adds_compile_measurement_and_overhead_one_config_at_a_time():
    order = configs(3)
    table, charged = planted(order, [2.0, 1.0, 3.0], [100.0, 50.0, 10.0])
    keys = [c.key for c in order]
    run = serial_wall(keys, table, charged, overhead_ms=5.0)
    assert run.seconds == pytest.approx((2.105, 3.16, 6.175))
    assert run.curve == (1.0, 0.9, 0.8) and run.gpu_s == pytest.approx(0.16)
    assert seconds_to(run, 0.85) == pytest.approx(6.175) and seconds_to(run, 0.5) is None
    with pytest.raises(InvalidInputError, match="not in the table"):
        serial_wall(["BLOCK_ROWS=3"], table, charged)


# --- the search loop, simulated ------------------------------------------------------------------


def test_the_loop_measures_the_first_proposed_whose_build_has_ended():
    """Worked by hand: 4 workers build D, F1, S (10 s), F2 at once; the default D first, then
    F1 (the loop picks the second before any result is in: the first proposed), then F2 (ready)
    ahead of S. Each measurement 0.1 s; 5 ms of overhead before the next is sent."""
    d, f1, s, f2 = order = configs(4)
    table, charged = planted(order, [1.0, 1.0, 10.0, 1.0], [100.0] * 4)
    run, strategy = run_listed(order, table, charged, 4, workers=4, batch=4, first=[d])
    assert run.measured == (d.key, f1.key, f2.key, s.key)
    # F2 is sent at 1.21 s and ends at 1.31 s, but the loop stores it once S's build has ended
    # (it claims the next config, waiting for its build, before it reads the answer)
    assert run.seconds == pytest.approx((1.105, 1.21, 10.005, 10.11))
    assert strategy.log == [(c, table[c]) for c in run.measured]  # each told, in the order measured
    assert run.gpu_s == pytest.approx(0.4)
    plain, _ = run_listed(order, table, charged, 4, workers=4, batch=4, first=[d], ready_first=False)
    assert plain.measured == (d.key, f1.key, s.key, f2.key)
    assert plain.seconds == pytest.approx((1.105, 10.005, 10.11, 10.215))


def test_the_loop_asks_a_batch_ahead_and_tells_after_the_next_is_sent():
    order = configs(6)
    table, charged = planted(order, [1.0] * 6, [0.0] * 6)
    run, strategy = run_listed(order, table, charged, 6, workers=1, batch=2, overhead_ms=0.0)
    # one worker: builds end at 1, 2, ... 6 s; the GPU costs nothing, so each result is in as
    # its build ends and the next is built: results known at 2, 3, 4, 5, 6 and the last at 6
    assert run.seconds == pytest.approx((2.0, 3.0, 4.0, 5.0, 6.0, 6.0))
    # asks: 2 at the start, 2 more (pending <= batch), then 2 when pending is back to 2, after the
    # first config was told (the second is being measured then)
    assert [len(a) for a in strategy.asks] == [0, 0, 1]
    assert len(run.measured) == 6


def test_the_loop_is_bound_by_the_compile_workers_when_builds_are_the_slowest():
    order = configs(8)
    table, charged = planted(order, [1.0] * 8, [0.0] * 8)
    run, _ = run_listed(order, table, charged, 8, workers=2, batch=2, overhead_ms=0.0)
    assert run.seconds[-1] == pytest.approx(8 * 1.0 / 2)  # the floor: configs x nvcc s / workers


def test_the_loop_charges_proposing_before_the_batch_is_built_and_stops_at_the_budget():
    order = configs(6)
    table, charged = planted(order, [1.0] * 6, [0.0] * 6)
    run, strategy = run_listed(order, table, charged, 3, workers=8, batch=2, overhead_ms=0.0, propose_ms=100.0)
    # an ask of 2 (0.2 s of proposing, then their builds start), one of 1 (the budget less those
    # pending), none after: the third config is built at 0.3 + 1.0 s
    assert run.measured == tuple(c.key for c in order[:3])
    assert run.seconds == pytest.approx((0.2 + 1.0, 1.3, 1.3))
    assert len(strategy.asks) == 2


def test_a_config_the_table_lacks_is_told_failed_and_not_counted():
    order = configs(4)
    table, charged = planted(order[:3], [1.0] * 3, [1.0] * 3)
    order = [order[0], order[3], order[1], order[2]]
    run, strategy = run_listed(order, table, charged, 3, workers=4, batch=4)
    assert run.unrecorded == 1 and len(run.measured) == 3 and (order[1].key, None) in strategy.log


def test_a_real_strategy_in_the_loop_ends_sooner_than_one_config_at_a_time():
    """tpe_local at batch 16 with 16 workers against the same strategy's configs one at a time:
    the loop overlaps the builds, so its wall per config is about a sixteenth."""
    sp = space()
    rng = np.random.default_rng(0)
    table = {c.key: float(rng.uniform(0.1, 1.0)) for c in sp.configs()}
    costs = Costs(16, {k: ConfigCost(float(rng.uniform(0.5, 1.5)), 0.5, 2.0) for k in table})
    charged = charges(table, costs)
    default = get_kernel("smem_pad").default_config()
    run = loop_replay("tpe_local", sp, table, charged, 40, workers=16, seed=1, first=[default])
    assert run.measured[0] == default.key and len(run.measured) == 40
    assert list(run.seconds) == sorted(run.seconds)
    serial = serial_wall(run.measured, table, charged)
    assert run.seconds[-1] < serial.seconds[-1] / 8
    again = loop_replay("tpe_local", sp, table, charged, 40, workers=16, seed=1, first=[default])
    assert again == run  # deterministic for a seed


def test_loop_replay_refuses_a_budget_or_workers_below_one():
    table, charged = planted(configs(2), [1.0, 1.0], [1.0, 1.0])
    for bad in ({"workers": 0}, {"workers": 1, "batch": 0}, {"workers": 1, "ahead": -1}):
        with pytest.raises(ValueError, match="must be >= 1"):
            loop_replay("random", space(), table, charged, 2, **bad)


# --- Kernel Tuner's order of evaluation ----------------------------------------------------------


def test_evaluated_gives_kernel_tuners_order_as_autotune_keys(tmp_path):
    pytest.importorskip("kernel_tuner")
    sp = space()
    rng = np.random.default_rng(2)
    table = {c.key: float(rng.uniform(0.1, 1.0)) for c in sp.configs()}
    path = tmp_path / "c.json"
    write_cache(table, sp, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        order = evaluated(path, "random_sample", 9, seed=3)
        curve = simulate(path, "random_sample", 9, seed=3)
    assert len(order) == 9 and len({k for k, _ in order}) == 9
    assert all(table[k] == ms for k, ms in order)  # autotune's keys, with the table's times
    assert curve == list(np.minimum.accumulate([ms for _, ms in order]))  # simulate: the same run's best so far
