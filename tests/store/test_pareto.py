"""The Pareto front of time and energy (autotune/store/pareto.py) and the search that finds it
(``--objective time,energy``: NSGA-II through the strategy registry), on the fake timer with a
planted energy landscape (no GPU): the front is exactly the non-dominated set, failed trials are
never on it, ``best`` shows it and ``report`` plots it."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import random
from types import SimpleNamespace

import optuna
import pytest
from typer.testing import CliRunner

from autotune.cli import app
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.measure import benchmark, device
from autotune.measure.measurement import Measurement
from autotune.search.objective import told, values
from autotune.search.options import SearchOptions
from autotune.search.strategies import DEFAULT_STRATEGY, STRATEGIES, TRAITS, make_strategy
from autotune.search.tuner import search
from autotune.store.key import ProblemKey, TuningKey
from autotune.store.pareto import dominates, front, named_ends

from fakes import FakeTimer, fake_retime

SPACE = SearchSpace("smem_pad", (("BLOCK_ROWS", (4, 8, 16, 32)), ("DIAGONAL", (0,)), ("IPAD", (1, 2)),
                                 ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"))

runner = CliRunner()


@pytest.fixture
def key(device_info) -> TuningKey:
    return TuningKey(device_info, ProblemKey("smem_pad", "f" * 64, "e" * 64,
                                             (("rows", 1024), ("cols", 1024)), "float32"),
                     "13.0.88", "-O3 -arch=sm_90")


class EnergyTimer(FakeTimer):
    """The fake timer's times, and an energy per launch lowest for the fewest threads per block:
    the energy optimum is not the time optimum (as in tests/test_objective.py)."""

    @staticmethod
    def joules(config: Config) -> float:
        return 1e-3 * (1 + config["TILE_DIM"] * config["BLOCK_ROWS"] / 256) * (1 + 0.01 * config["IPAD"])

    def __call__(self, config: Config) -> Measurement:
        return dataclasses.replace(super().__call__(config), energy_j=self.joules(config))


def brute_force(points: dict) -> set:
    """The non-dominated names of ``points`` (name -> (ms, J)), by comparing every pair."""
    return {a for a, p in points.items() if not any(dominates(q, p) for b, q in points.items() if b != a)}


def trial(name: str, ms: float | None, joules: float | None, status: str = "ok"):
    return SimpleNamespace(config=name, median_ms=ms, energy_j=joules, status=status)


# --- the front of a hand-built trial list ------------------------------------------------------------

def test_the_front_is_exactly_the_non_dominated_set_of_a_hand_built_list():
    trials = [trial("a", 1.0, 5.0), trial("b", 2.0, 3.0), trial("c", 3.0, 1.0),  # the front
              trial("d", 2.5, 3.5), trial("e", 3.0, 1.5), trial("f", 1.5, 5.0),  # each dominated
              trial("g", 2.0, 3.0)]  # equal to b: neither dominates, both on it
    assert [t.config for t in front(trials)] == ["a", "b", "g", "c"]
    ends = named_ends(front(trials))
    assert (ends[0].config, ends[1].config) == ("a", "c")


def test_the_front_agrees_with_brute_force_on_random_lists():
    rng = random.Random(7)
    for n in range(1, 60):
        points = {f"c{i}": (rng.choice([0.5, 1.0, 1.5, 2.0, rng.random()]), rng.choice([1.0, 2.0, rng.random()]))
                  for i in range(n)}
        got = {t.config for t in front([trial(c, *p) for c, p in points.items()])}
        assert got == brute_force(points)


def test_failed_trials_and_trials_without_energy_are_never_on_the_front():
    trials = [trial("slow", 2.0, 2.0), trial("crashed", None, None, status="crash"),
              trial("fast_but_failed", 0.1, 0.1, status="wrong_result"), trial("no_energy", 0.5, None)]
    assert [t.config for t in front(trials)] == ["slow"]
    assert front([trial("x", None, None, status="compile_error")]) == [] and named_ends([]) is None


def test_a_config_measured_twice_counts_once_by_its_fastest_trial():
    got = front([trial("a", 2.0, 1.0), trial("a", 1.0, 1.2), trial("b", 1.5, 1.1)])
    assert [(t.config, t.median_ms) for t in got] == [("a", 1.0), ("b", 1.5)]  # a's slower trial is not a's point


# --- options, traits and the strategy -----------------------------------------------------------------

def test_time_energy_picks_the_pareto_strategy_through_its_traits():
    options = SearchOptions(objective="time,energy")
    assert options.strategy == "nsga2" and options.traits.pareto and options.pareto
    assert options.objectives == ("time", "energy") and options.meters_energy
    assert options.benchmark_options().early_stop is False  # a slow config may spend the least energy
    assert SearchOptions(objective="time,energy", strategy="random").strategy == "random"
    assert SearchOptions().strategy == DEFAULT_STRATEGY and not SearchOptions().pareto
    assert TRAITS["nsga2"].pareto and not TRAITS["tpe"].pareto and "nsga2" in STRATEGIES
    with pytest.raises(InvalidInputError, match=r"strategy 'tpe' cannot minimise time,energy together .*nsga2"):
        SearchOptions(objective="time,energy", strategy="tpe")
    with pytest.raises(InvalidInputError, match="strategy_options 'population=1' is not allowed.*2..10000"):
        SearchOptions(objective="time,energy", strategy_options={"population": 1})


def test_the_values_told_of_a_pareto_search():
    m = Measurement(0.5, 0.49, 0.52, None, None, 32, 0, 50, energy_j=0.002)
    assert values(m, "time,energy") == (0.5, 0.002) and told(m, "time,energy") == (0.5, 0.002)
    assert told(m, "time") == 0.5 and told(dataclasses.replace(m, energy_j=None), "time,energy") is None


def test_nsga2_proposes_valid_new_configs_and_learns_from_pairs_and_failures():
    s = make_strategy("nsga2", SPACE, seed=3, options={"population": 4}, objectives=2)
    timer, seen = EnergyTimer(), set()
    for round_ in range(5):
        batch = s.ask(4)
        assert batch and not (set(batch) & seen) and not any(SPACE.violations(c) for c in batch)
        seen.update(batch)
        for i, c in enumerate(batch):
            m = timer(c)
            s.tell(c, None if (round_, i) == (1, 0) else (m.median_ms, m.energy_j))
    assert len(s._study.directions) == 2
    with pytest.raises(InvalidInputError, match="cannot minimise 2 objectives together"):
        make_strategy("tpe", SPACE, seed=0, objectives=2)


# --- a search on the fake timer ---------------------------------------------------------------------------

def test_a_time_energy_search_stores_both_values_and_its_front_is_the_non_dominated_trials(store, key):
    timer = EnergyTimer(failures={"BLOCK_ROWS=4,DIAGONAL=0,IPAD=1,TILE_DIM=16": "crash"})
    options = SearchOptions(trials=14, seed=1, objective="time,energy", batch=4,
                            strategy_options={"population": 4}, top_k=3, rounds=2)
    result = search(key, SPACE, timer, store, options, retime=fake_retime())
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert len(study.directions) == 2 and study.metric_names == ["median ms", "J per launch"]
    ok = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert ok and all(len(t.values) == 2 for t in ok)
    stored = store.key_trials(key)
    assert all(t.energy_j is not None for t in stored if t.status == "ok")  # every trial stores time and energy
    points = {t.config: (t.median_ms, t.energy_j) for t in stored if t.status == "ok"}
    members = store.pareto_front(result.search_id)
    assert {t.config for t in members} == brute_force(points) and members
    assert all(t.status == "ok" for t in members)
    assert result.scores == points  # what NSGA-II was told: (ms, J), as stored
    # the key's best (what lookup launches) is the re-timed fastest, as for --objective time
    assert store.best(key).objective == "time,energy"
    assert {r.config for r in result.retimings} == {c for c, _ in result.top(3)}  # the fastest 3 by time
    assert result.top(3)[0][1] == min(ms for ms, _ in points.values())
    # a resume with another number of objectives is refused, naming both
    with pytest.raises(InvalidInputError, match="objective time is not allowed with --resume here"):
        search(key, SPACE, timer, store, SearchOptions(trials=2, resume=True), retime=fake_retime())


def test_a_pareto_search_resumed_tells_its_strategy_the_pairs_measured_before(store, key):
    options = SearchOptions(trials=6, seed=2, objective="time,energy", batch=2, strategy_options={"population": 2},
                            top_k=1, rounds=1)
    search(key, SPACE, EnergyTimer(), store, options, retime=fake_retime())
    result = search(key, SPACE, EnergyTimer(), store, options.replace(trials=10, resume=True), retime=fake_retime())
    assert len(result.scores) == len(result.measured) >= 10
    assert all(isinstance(v, tuple) and len(v) == 2 for v in result.scores.values())


# --- the command line: search, best, report --------------------------------------------------------------

class FakeBench:
    def __init__(self, device_info, timer):
        self.device, self.measure, self.memcpy_gbps = device_info, timer, timer.memcpy_gbps
        self.copy_gbps, self.l2_mode, self.retime = 2900.0, "single", fake_retime()


@pytest.fixture
def energy_gpu(monkeypatch, device_info):
    @contextlib.contextmanager
    def open_benchmark(ordinal, problem, measure=None, also=()):
        yield FakeBench(device_info, EnergyTimer())

    monkeypatch.setattr(benchmark, "open_benchmark", open_benchmark)
    monkeypatch.setattr(device, "query_device", lambda ordinal: device_info)


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def test_search_then_best_shows_the_front_with_the_time_and_energy_optimal_named(energy_gpu, db_url, store):
    r = run("search", "--kernel", "smem_pad", "--size", 256, "--trials", 12, "--objective", "time,energy",
            "--strategy-option", "population=4", "--seed", 0, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "objective: time,energy" in r.output
    r = run("best", "--kernel", "smem_pad", "--size", 256, "--db", db_url)
    assert r.exit_code == 0, r.output
    b = store.find_best(kernel="smem_pad")[0]
    members = store.pareto_front(b.search_id)
    assert members
    assert f"Pareto front of time and energy for smem_pad 256x256 float32: {len(members)} config" in r.output
    assert "time-optimal" in r.output and "energy-optimal" in r.output
    for t in members:
        assert t.config.key in r.output and f"{t.energy_j:.4g}" in r.output
    r = run("best", "--kernel", "smem_pad", "--size", 256, "--db", db_url, "--format", "json")
    doc = json.loads(r.output)
    record = doc["records"][0]
    assert record["objective"] == "time,energy"
    assert [m["config"] for m in record["pareto_front"]] == [t.config.as_dict() for t in members]
    assert record["pareto_front"][0]["role"].startswith("time-optimal")


def test_report_plots_the_front(energy_gpu, db_url, tmp_path):
    r = run("search", "--kernel", "smem_pad", "--size", 256, "--trials", 10, "--objective", "time,energy",
            "--strategy-option", "population=4", "--seed", 0, "--db", db_url)
    assert r.exit_code == 0, r.output
    out = tmp_path / "report"
    r = run("report", "--out", out, "--db", db_url)
    assert r.exit_code == 0, r.output
    plots = sorted(p.name for p in out.glob("pareto_*.png"))
    assert plots == ["pareto_smem_pad_256x256_float32.png"], sorted(p.name for p in out.iterdir())
    assert (out / plots[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("bad", ["time,time", "energy,time,edp", "", "speed", "energy,time"])
def test_a_bad_objective_is_one_error_line_naming_it(bad, db_url):
    r = run("search", "--kernel", "smem_pad", "--size", 256, "--objective", bad, "--db", db_url)
    assert r.exit_code == 2
    errors = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: --objective {bad!r} is not allowed; give one of time | energy | edp | time,energy"]


def test_no_pairwise_order_hides_a_member():
    """Every member of a front is dominated by no trial, and every non-member by one."""
    pts = list(itertools.product([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    trials = [trial(f"p{i}", *p) for i, p in enumerate(pts)]
    assert [(t.median_ms, t.energy_j) for t in front(trials)] == [(1.0, 1.0)]
