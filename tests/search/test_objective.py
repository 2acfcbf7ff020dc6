"""What a search minimises (autotune/search/objective.py): time, energy or the energy-delay
product, on the fake timer with a planted energy landscape (no GPU)."""

from __future__ import annotations

import dataclasses

import optuna
import pytest

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.measure.measurement import Measurement
from autotune.search.objective import value
from autotune.search.options import SearchOptions
from autotune.search.tuner import search
from autotune.store.key import ProblemKey, TuningKey

from fakes import FakeTimer, fake_retime

SPACE = SearchSpace("smem_pad", (("BLOCK_ROWS", (4, 8, 16, 32)), ("DIAGONAL", (0,)), ("IPAD", (1, 2)),
                                 ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"))


@pytest.fixture
def key(device_info) -> TuningKey:
    return TuningKey(device_info, ProblemKey("smem_pad", "f" * 64, "e" * 64,
                                             (("rows", 1024), ("cols", 1024)), "float32"),
                     "13.0.88", "-O3 -arch=sm_90")


def test_the_value_of_each_objective():
    m = Measurement(0.5, 0.49, 0.52, None, None, 32, 0, 50, energy_j=0.002)
    assert value(m, "time") == 0.5 and value(m, "energy") == 0.002
    assert value(m, "edp") == pytest.approx(0.002 * 0.5e-3)
    assert value(dataclasses.replace(m, energy_j=None), "energy") is None
    assert value(dataclasses.replace(m, energy_j=None), "edp") is None
    with pytest.raises(ValueError, match="unknown objective 'power'"):
        value(m, "power")


class EnergyTimer(FakeTimer):
    """The fake timer's times, and an energy per launch lowest for the fewest threads per block:
    the energy optimum is not the time optimum."""

    @staticmethod
    def joules(config: Config) -> float:
        return 1e-3 * (1 + config["TILE_DIM"] * config["BLOCK_ROWS"] / 256) * (1 + 0.01 * config["IPAD"])

    def __call__(self, config: Config) -> Measurement:
        return dataclasses.replace(super().__call__(config), energy_j=self.joules(config))


def test_an_energy_search_tells_optuna_joules_and_stores_the_lowest_energy_of_the_re_timed(store, key):
    timer = EnergyTimer()
    options = SearchOptions(trials=100, strategy="grid", objective="energy", top_k=4, rounds=3)
    result = search(key, SPACE, timer, store, options, retime=fake_retime())
    measured = {c: EnergyTimer.joules(c) for c in set(timer.calls)}
    assert result.measured == pytest.approx(measured)  # what the strategy and the top-k saw: joules
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert sorted(t.value for t in study.trials) == pytest.approx(sorted(measured.values()))
    lowest = min(measured, key=lambda c: (measured[c], c["TILE_DIM"] * c["BLOCK_ROWS"], c.key))
    assert result.decision.winner.config == lowest
    best = store.best(key)
    assert best.config == lowest and best.energy_j == pytest.approx(measured[lowest])
    time_best = min(set(timer.calls), key=lambda c: -timer.gbps(c))
    assert time_best != lowest  # the planted landscapes differ


def test_an_edp_search_weighs_energy_by_time(store, key):
    timer = EnergyTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="grid", objective="edp"),
                    retime=fake_retime())
    ms = {c: timer(c).median_ms for c in set(timer.calls)}
    edp = {c: EnergyTimer.joules(c) * ms[c] * 1e-3 for c in ms}
    assert result.measured == pytest.approx(edp)


def test_without_energy_an_energy_search_measures_nothing_it_can_rank(store, key):
    result = search(key, SPACE, FakeTimer(), store, SearchOptions(trials=5, strategy="grid", objective="energy"),
                    retime=fake_retime())
    assert result.measured == {} and result.decision is None
    assert all(o.status == "ok" for o in result.outcomes)  # stored with their times all the same


def test_the_energy_objectives_turn_the_time_rule_of_the_early_stop_off():
    assert SearchOptions().benchmark_options().early_stop is True
    assert SearchOptions(objective="energy").benchmark_options().early_stop is False
    assert SearchOptions(objective="edp").benchmark_options().energy is True
    assert SearchOptions(objective="edp").energy is False  # what was asked stays as asked
    assert SearchOptions(objective="edp").replace(objective="time").benchmark_options().energy is False
