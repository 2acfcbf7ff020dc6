"""The strategy registry: every strategy proposes only valid, distinct, unknown configs, finds
the best of a small synthetic table, and starts at once on a space of 10^8 combinations;
``transfer`` queues the nearest shapes' bests (tests/search/strategies/test_transfer.py: when it
measures them, and when it drops them)."""

import importlib.util

import optuna
import pytest

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies import DEFAULT_STRATEGY, STRATEGIES, Known, Strategy, make_strategy

SPACE = SearchSpace("smem_pad", (("BLOCK_ROWS", (1, 2, 4, 8, 16, 32)), ("DIAGONAL", (0, 1)), ("IPAD", (0, 1, 2)),
                                 ("TILE_DIM", (8, 16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024", "2 * BLOCK_ROWS <= TILE_DIM"))
LARGE = SearchSpace("smem_pad", (("BLOCK_ROWS", tuple(range(1, 2001))), ("DIAGONAL", (0, 1, 2, 3, 4)),
                                 ("IPAD", (0, 1, 2, 3, 4)), ("TILE_DIM", tuple(range(1, 2001)))),
                    ("TILE_DIM % BLOCK_ROWS == 0",))  # 10^8 combinations

AVAILABLE = [name for name in STRATEGIES
             if not (name == "gp" and importlib.util.find_spec("torch") is None)
             and not (name == "cmaes" and importlib.util.find_spec("cmaes") is None)]
EVERY = AVAILABLE + ["sampler"]  # "sampler": an Optuna sampler instance instead of a name


def table_ms(config: Config) -> float:
    """A synthetic table: one optimum at BLOCK_ROWS=4, DIAGONAL=1, IPAD=1, TILE_DIM=32."""
    m = config.as_dict()
    return 1.0 + abs(m["BLOCK_ROWS"].bit_length() - 3) + abs(m["TILE_DIM"].bit_length() - 6) * 0.7 \
        + (m["DIAGONAL"] != 1) * 0.3 + (m["IPAD"] != 1) * 0.2


def strategy(name, space=SPACE, seed=0, history=()) -> Strategy:
    return make_strategy(optuna.samplers.RandomSampler(seed=seed) if name == "sampler" else name, space, seed, history)


@pytest.mark.parametrize("name", EVERY)
def test_proposes_only_valid_distinct_unknown_configs_and_exhausts_the_space(name):
    s = strategy(name)
    valid, asked = set(SPACE.configs()), []
    while batch := s.ask(4):
        assert len(batch) <= 4 and len(set(batch)) == len(batch)
        assert set(batch) <= valid and not set(batch) & set(asked)
        asked += batch
        for c in batch:
            s.tell(c, table_ms(c))
    assert set(asked) == valid and len(asked) == len(valid)
    assert s.ask(3) == [] and s.best == (min(valid, key=table_ms), 1.0)


@pytest.mark.parametrize("name", EVERY)
def test_failed_configs_and_asks_before_tells_keep_the_contract(name):
    s = strategy(name, seed=3)
    first = s.ask(5)
    second = s.ask(5)  # nothing told yet: still new configs (the constant liar for TPE)
    assert not set(first) & set(second) and len(first + second) == 10
    for c in first:
        s.tell(c, None)  # failed: data, never the best
    for c in second:
        s.tell(c, table_ms(c))
    assert s.best[0] in second and not set(s.ask(20)) & set(first + second)


@pytest.mark.parametrize("name", [n for n in EVERY if n != "grid"])
def test_a_guided_search_of_a_third_of_the_space_finds_the_best(name):
    """Not a score (benchmarks/ replays real tables against random search): a sanity check
    that the loop of ask and tell reaches the optimum of a smooth table within its budget."""
    s = strategy(name, seed=1)
    budget = len(SPACE.configs()) * 2 // 3
    for _ in range(budget // 4):
        for c in s.ask(4):
            s.tell(c, table_ms(c))
    assert s.best[1] == 1.0


@pytest.mark.parametrize("name", EVERY)
def test_history_of_this_problem_is_never_proposed_again(name):
    configs = SPACE.configs()
    history = [(c, table_ms(c)) for c in configs[::2]]
    s = strategy(name, history=history)
    proposed = s.ask(len(configs))
    assert set(proposed) == set(configs[1::2])
    assert s.best == min(((c, ms) for c, ms in history), key=lambda p: p[1])


@pytest.mark.parametrize("name", EVERY)
def test_a_space_of_10_to_the_8_combinations_starts_at_once(name, monkeypatch):
    """What a test can hold without timing: nothing builds the whole list of valid configs."""
    monkeypatch.setattr(SearchSpace, "configs", lambda self: pytest.fail("the strategy enumerated the space"))
    if name == "random":  # enumerates only up to GRID_LIMIT + 1 configs, then draws at random
        from autotune.search.strategies import simple

        monkeypatch.setattr(simple, "GRID_LIMIT", 1000)
    s = strategy(name, space=LARGE)
    for _ in range(3):
        batch = s.ask(8)
        assert len(batch) == 8 and all(not LARGE.violations(c) for c in batch)
        for c in batch:
            s.tell(c, 1.0 + c["BLOCK_ROWS"] / 1000)


def test_enqueued_configs_come_first_and_invalid_or_known_ones_are_skipped():
    s = strategy("tpe")
    good, bad = SPACE.configs()[5], Config.of("smem_pad", {"BLOCK_ROWS": 32, "DIAGONAL": 0, "IPAD": 0,
                                                             "TILE_DIM": 8})
    assert SPACE.violations(bad)
    s.tell(SPACE.configs()[7], 2.0)
    s.enqueue([bad, SPACE.configs()[7], good])
    assert s.ask(1) == [good]


def test_a_sampler_proposal_that_breaks_the_constraints_is_solved_to_its_nearest_valid_config():
    class Corner(optuna.samplers.RandomSampler):
        def sample_independent(self, study, trial, name, distribution):
            return distribution.high  # BLOCK_ROWS=32, TILE_DIM=64: 2048 threads, invalid

    s = make_strategy(Corner(), SPACE, 0)
    first = s.ask(1)[0]
    assert not SPACE.violations(first)
    assert first.as_dict() == {"BLOCK_ROWS": 16, "DIAGONAL": 1, "IPAD": 2, "TILE_DIM": 64}  # one step down
    assert len(s._study.trials) == 2  # the raw proposal failed in memory, the valid one in flight


def test_transfer_queues_the_nearest_shapes_bests_first():
    configs = SPACE.configs()
    near, far = (("rows", 2048), ("cols", 2048)), (("rows", 256), ("cols", 256))
    history = ([Known(c, 10.0 + i, 0.69, near) for i, c in enumerate(configs[3:8])]
               + [Known(c, 1.0 + i, 2.77, far) for i, c in enumerate(configs[20:24])]
               + [(configs[3], 5.0)])  # this problem: measured already, not queued
    s = make_strategy("transfer", SPACE, 0, history)
    # the near shape's bests twice as often as the far one's (its best, configs[3], is measured
    # here already); none before the plain search's first configs (test_transfer.py)
    assert s.prior_left[:4] == [configs[4], configs[20], configs[5], configs[6]]
    for c in s.ask(30):
        assert not SPACE.violations(c)


def test_transfer_without_other_shapes_is_the_plain_search():
    s = make_strategy("transfer", SPACE, 0)
    batch = s.ask(6)
    assert batch == make_strategy(DEFAULT_STRATEGY, SPACE, 0).ask(6)  # the plain search as it is alone
    assert s.prior_left == []


def test_a_missing_package_is_said_naming_it(monkeypatch):
    from autotune.errors import InvalidInputError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cmaes" else real(name, *a))
    with pytest.raises(InvalidInputError, match="strategy 'cmaes' needs the package 'cmaes'"):
        make_strategy("cmaes", SPACE)


def test_a_failed_config_counts_in_the_model_as_twice_the_slowest_time_so_far():
    """So that TPE, GP and CMA-ES steer away from where configs fail; before any time is
    known, a failure is a failed in-memory trial (left out of the model)."""
    from optuna.trial import TrialState

    s = make_strategy("tpe", SPACE, 0)
    first, second, third = s.ask(3)
    s.tell(first, None)
    s.tell(second, 0.5)
    s.tell(third, None)
    values = {n: v for n, v in SPACE.params}
    complete = {Config.of("smem_pad", {n: values[n][i] for n, i in t.params.items()}): t.value
                for t in s._study.trials if t.state == TrialState.COMPLETE}
    assert complete == {second: 0.5, third: 1.0}  # first: a FAIL trial, as are raw proposals solved elsewhere
    assert s.told == {first: None, second: 0.5, third: None} and s.best == (second, 0.5)
