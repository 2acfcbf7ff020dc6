"""Replay and scoring on the CPU (issue 22): the methodology score P, the exact expected random
curve, the replay's counting, recorded tables and Kernel Tuner's cache file."""

from __future__ import annotations

import itertools
import json
import random
import warnings

import numpy as np
import pytest

from autotune.store.opening import open_results

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import get_kernel
from autotune.interchange.kt_cache import FAILED, cache_key, simulate, write_cache
from autotune.interchange.replay import replay
from autotune.interchange.score import best_so_far, expected_random_curve, score
from autotune.interchange.table import read_table, table_from_trials, write_table


def space():
    return get_kernel("smem_pad").space()


def planted_table(seed: int = 0, failed: int = 3) -> dict[str, float | None]:
    """smem_pad's whole space with random times, ``failed`` of them failed."""
    rng = np.random.default_rng(seed)
    keys = [c.key for c in space().configs()]
    table = {k: float(rng.uniform(0.1, 1.0)) for k in keys}
    for k in keys[:failed]:
        table[k] = None
    return table


class ListStrategy:
    """A strategy that proposes the configs of a fixed order (the registry's ask/tell contract):
    up to k distinct configs not told before, [] when exhausted."""

    def __init__(self, order, told_log=None):
        self.order, self.told, self.log = list(order), set(), told_log if told_log is not None else []

    def ask(self, k):
        return [c for c in self.order if c.key not in self.told][:k]

    def tell(self, config, ms):
        self.told.add(config.key)
        self.log.append((config.key, ms))


def factory_of(order, log=None):
    return lambda name, sp, *, seed, history: ListStrategy(order, log)


# --- the score -----------------------------------------------------------------------------------


def brute_force_expected(values: list[float | None], k: int, worst: float) -> float:
    """Mean best of every k-subset (the definition of the expectation, no formula)."""
    bests = [min((v for v in combo if v is not None), default=worst) for combo in itertools.combinations(values, k)]
    return sum(bests) / len(bests)


@pytest.mark.parametrize("values", [[0.5, 0.2, 0.9, 0.4, 0.7, 0.3], [0.5, None, 0.9, 0.2, 0.2, None, 0.6]])
def test_expected_random_curve_is_the_average_over_every_subset(values):
    worst = max(v for v in values if v is not None)
    curve = expected_random_curve(values, len(values) + 2)
    for k in range(1, len(values) + 1):
        assert curve[k - 1] == pytest.approx(brute_force_expected(values, k, worst), rel=1e-12)
    assert curve[-1] == min(v for v in values if v is not None)  # past the table's size: the optimum


def test_random_search_scores_about_zero_and_the_optimum_first_scores_one():
    table = planted_table()
    keys = list(table)
    best = min((v, k) for k, v in table.items() if v is not None)[1]
    rng = random.Random(1)
    curves = []
    for _ in range(4000):
        order = rng.sample(keys, 20)
        curves.append(best_so_far([table[k] for k in order], max(v for v in table.values() if v is not None)))
    random_score = score(curves, table, 20)
    assert abs(random_score.p) < 0.03, random_score.p
    first = score([best_so_far([table[best]] + [None] * 19, 1.0)], table, 20)
    assert first.p == 1.0 and first.final_pct == 100.0
    worst_first = sorted((k for k in keys if table[k] is not None), key=lambda k: -table[k])[:20]
    assert score([best_so_far([table[k] for k in worst_first], 1.0)], table, 20).p < 0


def test_score_refuses_a_table_without_valid_configs():
    with pytest.raises(ValueError, match="no valid"):
        expected_random_curve([None, None], 2)


# --- the replay ----------------------------------------------------------------------------------


def test_replay_counts_failed_configs_as_measured_and_skips_unrecorded_ones():
    table = planted_table(failed=3)
    configs = space().configs()
    missing = configs[5].key
    del table[missing]
    log = []
    r = replay("list", space(), table, 10, factory=factory_of(configs, log), batch=4)
    assert r.measured == tuple(c.key for c in configs[:5] + configs[6:11])  # the 3 failed ones counted
    assert r.times[:3] == (None, None, None) and len(r.curve) == 10
    assert r.unrecorded == 1 and (missing, None) in log  # told failed, not counted
    worst = max(v for v in table.values() if v is not None)
    assert r.curve[:3] == (worst, worst, worst) and r.curve[3] == table[configs[3].key]
    assert list(r.curve) == sorted(r.curve, reverse=True)


def test_configs_measured_first_count_and_are_told():
    table = planted_table(failed=0)
    configs = space().configs()
    log = []
    r = replay("list", space(), table, 3, factory=factory_of(configs, log), first=[configs[7]])
    assert r.measured == (configs[7].key, configs[0].key, configs[1].key)
    assert log[0] == (configs[7].key, table[configs[7].key])


@pytest.mark.parametrize(("ahead", "pipelined", "asks"), [
    (0, False, [(0, 4), (4, 4), (8, 2)]),  # each batch once the last is told
    (1, False, [(0, 4), (0, 4), (4, 2)]),  # the search loop's: the next batch asked while one is measured
    (0, True, [(0, 4)] + [(t, 1) for t in range(1, 7)]),  # a batch in flight, one asked per config told
    (1, True, [(0, 8)] + [(t, 1) for t in range(1, 3)]),
])
def test_a_replay_keeps_ahead_batches_in_flight_in_whole_batches_or_one_per_config_told(ahead, pipelined, asks):
    table = planted_table(failed=0)
    configs = space().configs()
    got = []  # (configs told, k) at each ask

    class Pending(ListStrategy):
        def __init__(self, order):
            super().__init__(order)
            self.asked = set()

        def ask(self, k):
            got.append((len(self.told), k))
            out = [c for c in self.order if c.key not in self.asked][:k]
            self.asked.update(c.key for c in out)
            return out

    r = replay("list", space(), table, 10, batch=4, ahead=ahead, pipelined=pipelined,
               factory=lambda name, sp, *, seed, history: Pending(configs))
    assert r.measured == tuple(c.key for c in configs[:10])
    assert got == asks


def test_replay_stops_when_the_strategy_is_exhausted_and_refuses_foreign_configs():
    table = planted_table()
    configs = space().configs()[:4]
    r = replay("list", space(), table, 50, factory=factory_of(configs))
    assert len(r.measured) == 4
    with pytest.raises(InvalidInputError, match="not in the space"):
        replay("list", space(), {"BLOCK_ROWS=3,IPAD=1,TILE_DIM=32": 1.0}, 5, factory=factory_of(configs))


# --- tables --------------------------------------------------------------------------------------


def test_table_csv_round_trip_and_bad_rows(tmp_path):
    table = planted_table()
    path = tmp_path / "t.csv"
    write_table(table, path)
    assert read_table(path) == table
    path.write_text("config,median_ms\nTILE_DIM=32,-1\n")
    with pytest.raises(InvalidInputError, match="t.csv:2"):
        read_table(path)
    path.write_text("a,b\n")
    with pytest.raises(InvalidInputError, match="config,median_ms"):
        read_table(path)


def test_table_from_trials_keeps_the_fastest_ok_median():
    from types import SimpleNamespace as T

    c = space().configs()
    trials = [T(config=c[0], status="ok", median_ms=2.0), T(config=c[0], status="ok", median_ms=1.5),
              T(config=c[1], status="compile_error", median_ms=None), T(config=c[0], status="crash", median_ms=None)]
    assert table_from_trials(trials) == {c[0].key: 1.5, c[1].key: None}


# --- Kernel Tuner's cache file -------------------------------------------------------------------


def test_cache_file_holds_every_config_keyed_in_tune_params_order(tmp_path):
    table = planted_table(failed=2)
    doc = write_cache(table, space(), tmp_path / "c.json", problem_size=(1024, 1024))
    names = doc["tune_params_keys"]
    assert names == [n for n, _ in space().params] and len(doc["cache"]) == len(table)
    for c in space().configs():
        entry = doc["cache"][cache_key(names, c.as_dict())]
        assert entry["time"] == (FAILED if table[c.key] is None else table[c.key])
    assert json.loads((tmp_path / "c.json").read_text()) == doc


def test_kernel_tuner_reads_the_cache_file_and_its_simulation_replays_it(tmp_path):
    util = pytest.importorskip("kernel_tuner.util")
    table = planted_table(failed=2)
    path = tmp_path / "c.json"
    write_cache(table, space(), path, problem_size=(1024, 1024))
    cached = util.read_cache(str(path), open_cache=False)
    names = cached["tune_params_keys"]
    errors = [e for e in cached["cache"].values() if "__error__" in e]
    assert len(errors) == 2 and len(cached["cache"]) == len(table)
    for c in space().configs():
        if table[c.key] is not None:
            assert cached["cache"][cache_key(names, c.as_dict())]["time"] == table[c.key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curve = simulate(path, "brute_force", len(table))
    best = min(v for v in table.values() if v is not None)
    assert len(curve) == len(table) and curve[-1] == best  # brute force visits all, the failed ones counted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = [simulate(path, "random_sample", 7, seed=s) for s in (0, 0, 1)]
    assert [len(r) for r in runs] == [7, 7, 7] and runs[0] == runs[1]  # max_fevals = budget; seeded


# --- a stored key as Kernel Tuner's cache file: autotune export --kt-cache -----------------------


def test_export_kt_cache_writes_one_keys_trials_and_refuses_several(tmp_path):
    from typer.testing import CliRunner

    from autotune.cli import app
    from stored_results import A100, configs, key, tune

    url = f"sqlite:///{tmp_path / 'a.db'}"
    store = open_results(url)
    c = configs()
    tune(store, key(), [(c[0], 2500.0), (c[1], 2700.0)])  # plus one failed trial (compile_error)
    tune(store, key(device=A100), [(c[1], 1400.0)])
    path = tmp_path / "kt.json"
    run = CliRunner().invoke(app, ["export", "--kt-cache", str(path), "--kernel", "smem_pad", "--db", url])
    assert run.exit_code == 2 and "2 stored keys of smem_pad match" in run.output and not path.exists()
    run = CliRunner().invoke(app, ["export", "--kt-cache", str(path), "--kernel", "smem_pad", "--device", "H100",
                                   "--db", url])
    assert run.exit_code == 0, run.output
    assert "wrote 3 config(s) (1 failed)" in run.output
    # issue 49 item 10: Kernel Tuner's simulation fails on a config not cached; said where the cache is partial
    assert "note: the cache holds 3 of the space's 54 configs; Kernel Tuner's simulation mode fails" in run.output
    doc = json.loads(path.read_text())
    names = doc["tune_params_keys"]
    first = store.key_trials(key())[0]
    assert doc["cache"][cache_key(names, first.config.as_dict())]["time"] == first.median_ms
    assert doc["device_name"] == key().device.name and doc["problem_size"] == [1024, 1024]
    assert sum(e["time"] == FAILED for e in doc["cache"].values()) == 1
    run = CliRunner().invoke(app, ["export", "--out", str(tmp_path / "x.json"), "--dtype", "float32", "--db", url])
    assert run.exit_code == 2 and "--dtype applies to --t4 and --kt-cache only" in run.output


@pytest.mark.parametrize("ms", [float("inf"), float("-inf"), float("nan"), 0.0, -1.0, True, "1.0"])
def test_a_cache_file_holds_no_time_json_cannot_carry(tmp_path, ms):
    """Issue 41 item 4: an infinite time was written as ``Infinity``, which is not JSON; every
    time that is not a finite number > 0 is refused, and no file is written."""
    table = planted_table()
    table[next(iter(table))] = ms
    path = tmp_path / "c.json"
    with pytest.raises(InvalidInputError, match=r"has time .* ms; a Kernel Tuner cache holds a finite time > 0 ms"):
        write_cache(table, space(), path)
    assert list(tmp_path.iterdir()) == []


def test_export_kt_cache_of_a_stale_key_names_it_and_the_option(tmp_path):
    """Issue 41 item 14: the cause is staleness, not the filters: the error says so, and
    --include-stale writes the key."""
    from typer.testing import CliRunner

    from autotune.cli import app
    from stored_results import configs, key, tune

    url = f"sqlite:///{tmp_path / 'a.db'}"
    c = configs()
    tune(open_results(url), key(source_hash="0" * 64), [(c[0], 2500.0), (c[1], 2700.0)])
    path = tmp_path / "kt.json"
    run = CliRunner().invoke(app, ["export", "--kt-cache", str(path), "--kernel", "smem_pad", "--db", url])
    assert run.exit_code == 2 and not path.exists()
    assert run.output.strip() == ("error: a Kernel Tuner cache holds one key; no current stored key of smem_pad "
                                  "matches: left out 1 stale result (1 kernel source changed); --include-stale "
                                  "writes them")
    run = CliRunner().invoke(app, ["export", "--kt-cache", str(path), "--kernel", "smem_pad", "--include-stale",
                                   "--db", url])
    assert run.exit_code == 0 and "wrote 3 config(s) (1 failed)" in run.output
