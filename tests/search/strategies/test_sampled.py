"""Optuna samplers as strategies (autotune/search/strategies/sampled.py): the ``tpe`` options
``candidates``, ``local`` (a share of the proposals from the best config's one-macro
neighbours), ``centres`` and ``local_first`` (where that share comes from, where it stands in a
batch) and ``start`` (a design over the valid configs for the first configs). CPU only, a
synthetic table; the registry-wide contract (valid, distinct, unknown configs; exhausting a
space; history) is tests/search/strategies/test_registry.py's."""

import pytest

from autotune.interchange.replay import replay
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.measure.option_error import OptionError
from autotune.search.strategies import make_strategy
from autotune.search.strategies.sampled import Sampled

SPACE = SearchSpace("smem_vec", (("BLOCK_ROWS", (1, 2, 4, 8, 16, 32)), ("GROUP", (0, 4, 8, 16)),
                                 ("IPAD", (1, 2, 4)), ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0",))
DEFAULT = Config.of("smem_vec", {"BLOCK_ROWS": 8, "GROUP": 0, "IPAD": 1, "TILE_DIM": 32})


def ms(config: Config) -> float:
    """A synthetic table whose optimum is BLOCK_ROWS 4, GROUP 8, IPAD 2, TILE_DIM 64."""
    m = config.as_dict()
    return 1.0 + abs(m["BLOCK_ROWS"].bit_length() - 3) * 0.3 + abs(m["GROUP"] - 8) * 0.02 \
        + (m["IPAD"] != 2) * 0.1 + abs(m["TILE_DIM"].bit_length() - 7) * 0.5


def one_macro_from(a: Config, b: Config) -> bool:
    return sum(x != y for x, y in zip(a.macros, b.macros)) == 1


def test_local_share_of_a_batch_is_the_best_configs_neighbours_nearest_ordinals_first():
    s = make_strategy("tpe", SPACE, 0, options={"local": 0.5, "startup": 1})
    s.tell(DEFAULT, ms(DEFAULT))
    batch = s.ask(8)
    near = [c for c in batch if one_macro_from(c, DEFAULT)]
    assert len(set(batch)) == 8 and DEFAULT not in batch and len(near) >= 4
    values = dict(SPACE.params)
    steps = [max(abs(values[n].index(v) - values[n].index(w)) for (n, v), (_, w) in zip(c.macros, DEFAULT.macros))
             for c in batch[1::2]]  # proposals 2, 4, 6, 8 are the local ones at a share of 1/2
    assert steps == [1, 1, 1, 1]  # 6 valid neighbours of DEFAULT lie one ordinal away


def test_local_proposals_follow_the_best_as_it_moves_and_are_told_to_the_model():
    s = make_strategy("tpe", SPACE, 1, options={"local": 1.0, "startup": 1})
    s.tell(DEFAULT, ms(DEFAULT))
    for _ in range(5):
        best = s.best[0]
        got = s.ask(1)
        assert one_macro_from(got[0], best)
        s.tell(got[0], ms(got[0]))
    assert isinstance(s, Sampled)
    assert len(s._study.trials) == 5 + 1  # each local proposal is a trial of the model; the default added


def test_local_one_finds_the_optimum_of_a_smooth_table_as_a_hill_climber_does():
    table = {c.key: ms(c) for c in SPACE.configs()}

    def factory(name, space, *, seed, history):
        return make_strategy(name, space, seed, history, options={"local": 1.0, "startup": 1})

    r = replay("tpe", SPACE, table, 30, seed=2, batch=1, first=[DEFAULT], factory=factory)
    assert min(v for v in r.curve if v is not None) == min(table.values())


def test_no_local_proposal_before_the_random_start_is_told():
    s = make_strategy("tpe", SPACE, 4, options={"local": 1.0, "startup": 6})
    s.tell(DEFAULT, ms(DEFAULT))
    first = s.ask(5)  # 1 told of the 6 of the start: the model's (random) proposals, not DEFAULT's neighbours
    assert sum(one_macro_from(c, DEFAULT) for c in first) < 5
    for c in first:
        s.tell(c, ms(c))
    best = s.best[0]
    assert all(one_macro_from(c, best) for c in s.ask(4))  # 6 told: the climb from the best of them


def test_a_local_share_exhausts_the_space_each_config_once():
    s = make_strategy("tpe", SPACE, 3, options={"local": 0.5, "startup": 2, "candidates": 64})
    seen: set[Config] = set()
    while batch := s.ask(16):
        assert len(batch) == len(set(batch)) and not set(batch) & seen
        assert all(not SPACE.violations(c) for c in batch)
        seen.update(batch)
        for c in batch:
            s.tell(c, ms(c))
    assert len(seen) == len(SPACE.configs())


def test_no_local_share_proposes_what_plain_tpe_proposes():
    a, b = make_strategy("tpe", SPACE, 0), make_strategy("tpe", SPACE, 0, options={"local": 0.0})
    for s in (a, b):
        s.tell(DEFAULT, ms(DEFAULT))
    assert a.ask(12) == b.ask(12)


@pytest.mark.parametrize("given", [{"local": "1.5"}, {"local": "-0.1"}, {"candidates": "0"}])
def test_out_of_range_options_are_refused_naming_the_value(given):
    with pytest.raises(OptionError, match="=".join(next(iter(given.items())))):
        make_strategy("tpe", SPACE, 0, options=given)


def test_a_share_outside_0_1_given_to_sampled_is_refused():
    import optuna

    with pytest.raises(ValueError, match="local=2"):
        Sampled(SPACE, optuna.samplers.RandomSampler(seed=0), 0, local=2)


def _distance(a: Config, b: Config) -> float:
    values = dict(SPACE.params)
    return sum(((values[n].index(v) - values[n].index(w)) / (len(values[n]) - 1)) ** 2
               for (n, v), (_, w) in zip(a.macros, b.macros))


@pytest.mark.parametrize("start", ["random", "spread", "latin", "blend"])
def test_a_start_design_fills_the_first_batch_with_valid_configs_told_to_the_model(start):
    s = make_strategy("tpe", SPACE, 0, options={"start": start, "startup": 5})
    s.tell(DEFAULT, ms(DEFAULT))
    batch = s.ask(16)  # 1 told of the 5 of the start: all 16 from the design, none from the sampler
    assert len(set(batch)) == 16 and DEFAULT not in batch and not any(SPACE.violations(c) for c in batch)
    assert isinstance(s, Sampled) and len(s._study.trials) == 16 + 1  # each a fixed trial: no failed draws
    for c in batch:
        s.tell(c, ms(c))
    assert len(s._study.trials) == 17 and s.ask(4)  # 17 told: the sampler's turn


def test_latin_covers_every_value_of_every_macro_in_a_batch():
    for seed in range(3):
        s = make_strategy("tpe", SPACE, seed, options={"start": "latin", "startup": 16})
        batch = s.ask(12)
        for name, values in SPACE.params:
            assert {c.as_dict()[name] for c in batch} == set(values), (seed, name)


def test_spread_keeps_the_batch_further_apart_than_uniform_draws():
    def nearest(start, seed):
        s = make_strategy("tpe", SPACE, seed, options={"start": start, "startup": 16})
        batch = s.ask(12)
        return sum(min(_distance(a, b) for b in batch if b != a) for a in batch) / len(batch)

    spread = sum(nearest("spread", seed) for seed in range(5))
    uniform = sum(nearest("random", seed) for seed in range(5))
    assert spread > 1.3 * uniform


def test_the_start_design_gives_way_to_the_local_climb_once_startup_configs_are_told():
    s = make_strategy("tpe", SPACE, 5, options={"start": "blend", "startup": 3, "local": 1.0})
    s.tell(DEFAULT, ms(DEFAULT))
    first = s.ask(2)
    for c in first:
        s.tell(c, ms(c))
    best = s.best[0]
    assert all(one_macro_from(c, best) for c in s.ask(4))


def test_a_start_design_draws_by_rejection_in_a_space_too_large_to_list(monkeypatch):
    from autotune.search.strategies import sampled

    monkeypatch.setattr(sampled, "ENUMERATE_RAW", 0)
    s = make_strategy("tpe", SPACE, 0, options={"start": "spread", "startup": 300})
    seen: set[Config] = set()
    while batch := s.ask(16):  # to the last config: a space nearly spent is solved, not drawn
        assert not set(batch) & seen and not any(SPACE.violations(c) for c in batch)
        seen.update(batch)
        for c in batch:
            s.tell(c, ms(c))
    assert len(seen) == len(SPACE.configs())


def test_centres_spread_the_local_share_over_the_best_configs_neighbourhoods():
    s = make_strategy("tpe", SPACE, 0, options={"local": 1.0, "startup": 1, "centres": 2})
    second = Config.of("smem_vec", {"BLOCK_ROWS": 2, "GROUP": 16, "IPAD": 4, "TILE_DIM": 16})
    s.tell(DEFAULT, 1.0)
    s.tell(second, 1.1)
    batch = s.ask(6)
    assert [one_macro_from(c, DEFAULT) for c in batch] == [True, False] * 3
    assert all(one_macro_from(c, second) for c in batch[1::2])


def test_an_unknown_start_design_is_refused_naming_it():
    import optuna

    with pytest.raises(OptionError, match="start=grid"):
        make_strategy("tpe_local", SPACE, 0, options={"start": "grid"})
    with pytest.raises(ValueError, match="start='grid'"):
        Sampled(SPACE, optuna.samplers.RandomSampler(seed=0), 0, start="grid")


def test_local_first_lists_a_batchs_local_proposals_before_the_models():
    plain = make_strategy("tpe", SPACE, 0, options={"local": 0.5, "startup": 1})
    first = make_strategy("tpe", SPACE, 0, options={"local": 0.5, "startup": 1, "local_first": True})
    for s in (plain, first):
        s.tell(DEFAULT, ms(DEFAULT))
    a, b = plain.ask(8), first.ask(8)
    assert set(a) == set(b) and a != b
    assert [one_macro_from(c, DEFAULT) for c in b[:4]] == [True] * 4 and b[:4] == a[1::2]


def test_tpe_locals_start_is_the_blend_design_and_tpes_is_optunas():
    local, plain = make_strategy("tpe_local", SPACE, 0), make_strategy("tpe", SPACE, 0)
    assert (local._start, local._start_until, plain._start) == ("blend", 5, "sampler")
    blend = make_strategy("tpe", SPACE, 0, options={"startup": 5, "local": 0.5, "start": "blend"})
    for s in (local, blend):
        s.tell(DEFAULT, ms(DEFAULT))
    assert local.ask(16) == blend.ask(16)
