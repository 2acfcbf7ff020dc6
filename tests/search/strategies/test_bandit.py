"""The ``bandit`` strategy (autotune/search/strategies/bandit.py): CPU only, synthetic tables,
no GPU (``transfer``'s: tests/search/strategies/test_transfer.py). The registry-wide contract
(valid, distinct, unknown configs; exhausting a space; history; a space of 10^8 combinations) is
tests/search/strategies/test_registry.py's, which runs every strategy of the registry."""

from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.interchange.replay import replay
from autotune.search.strategies import DEFAULT_STRATEGY, make_strategy
from autotune.search.strategies.bandit import Bandit

SPACE = SearchSpace("smem_vec", (("BLOCK_ROWS", (1, 2, 4, 8, 16, 32)), ("GROUP", (0, 4, 8, 16)),
                                 ("IPAD", (1, 2, 4)), ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0",))
DEFAULT = Config.of("smem_vec", {"BLOCK_ROWS": 8, "GROUP": 0, "IPAD": 1, "TILE_DIM": 32})


def ms(config: Config, best=(4, 8, 2, 64)) -> float:
    """A synthetic table with one optimum, ``best`` (BLOCK_ROWS, GROUP, IPAD, TILE_DIM)."""
    m = config.as_dict()
    b, g, i, t = best
    return 1.0 + abs(m["BLOCK_ROWS"].bit_length() - b.bit_length()) * 0.3 + abs(m["GROUP"] - g) * 0.02 \
        + (m["IPAD"] != i) * 0.1 + abs(m["TILE_DIM"].bit_length() - t.bit_length()) * 0.5


def test_bandit_is_selectable_and_not_the_default():
    """tpe led bandit in every setting of benchmarks/search_replay.py (2026-11-27), and tpe_local leads tpe."""
    from autotune.search.options import SearchOptions

    assert DEFAULT_STRATEGY == "tpe_local" and isinstance(make_strategy("bandit", SPACE, 0), Bandit)
    assert SearchOptions().strategy == DEFAULT_STRATEGY  # autotune.tune's default too


def test_the_default_queued_first_is_measured_first_and_the_batch_after_it_holds_its_neighbours():
    s = make_strategy("bandit", SPACE, 0)
    s.enqueue([DEFAULT])  # what the search loop does (Tuner) before any proposal
    assert s.ask(1) == [DEFAULT]
    s.tell(DEFAULT, ms(DEFAULT))
    batch = s.ask(8)
    assert len(set(batch)) == 8 and DEFAULT not in batch
    one_macro = [c for c in batch if sum(a != b for a, b in zip(c.macros, DEFAULT.macros)) == 1]
    assert one_macro  # local search around the default has its share of the batch


def test_a_batch_spreads_over_distinct_top_configs_and_never_repeats():
    s = make_strategy("bandit", SPACE, 3)
    seen: set[Config] = set()
    while batch := s.ask(16):
        assert len(batch) == len(set(batch)) and not set(batch) & seen
        assert all(not SPACE.violations(c) for c in batch)
        seen.update(batch)
        for c in batch:
            s.tell(c, ms(c))
    assert len(seen) == len(SPACE.configs())  # finished the space, each config once
    assert s.ask(4) == []


def test_finds_the_optimum_of_a_small_space_well_before_its_end():
    valid = SPACE.configs()
    r = replay("bandit", SPACE, {c.key: ms(c) for c in valid}, len(valid) // 2, seed=1, batch=4, first=[DEFAULT])
    assert min(r.curve) == min(ms(c) for c in valid)


def test_the_same_seed_proposes_the_same_configs_and_another_seed_others():
    def run(seed):
        return replay("bandit", SPACE, {c.key: ms(c) for c in SPACE.configs()}, 30, seed=seed, batch=4).measured

    assert run(5) == run(5) and run(5) != run(6)


def test_history_of_this_problem_is_told_and_local_search_starts_from_its_best():
    near_best = Config.of("smem_vec", {"BLOCK_ROWS": 4, "GROUP": 8, "IPAD": 1, "TILE_DIM": 64})
    history = [(DEFAULT, ms(DEFAULT)), (near_best, ms(near_best))]
    s = make_strategy("bandit", SPACE, 0, history)
    assert s.best == (near_best, ms(near_best))
    batch = s.ask(16)
    assert DEFAULT not in batch and near_best not in batch
    optimum = Config.of("smem_vec", {"BLOCK_ROWS": 4, "GROUP": 8, "IPAD": 2, "TILE_DIM": 64})
    assert optimum in batch  # one step of one macro from the best told


def test_failed_configs_are_data_and_never_the_best():
    s = make_strategy("bandit", SPACE, 0)
    for c in s.ask(5):
        s.tell(c, None)
    assert s.best is None
    batch = s.ask(5)
    assert len(batch) == 5
    s.tell(batch[0], 2.0)
    assert s.best == (batch[0], 2.0)
