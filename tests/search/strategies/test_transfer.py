"""The ``transfer`` strategy (autotune/search/strategies/transfer.py) on hand-built tables: CPU
only, no GPU. Where the nearest shape's best is this shape's optimum, it is measured within 5
configs; a prior that misleads is dropped on the evidence of the plain search's configs
measured beside it, at a cost of at most FIRST configs (the default counting, where it is
measured first and is the prior's best)."""

import pytest

from autotune.interchange.replay import replay
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.search.strategies import DEFAULT_STRATEGY, Known, make_strategy
from autotune.search.strategies.simple import Random
from autotune.search.strategies.transfer import FIRST, PATIENCE, PROBE, QUEUE, SHARE, SLACK, nearest_bests

SPACE = SearchSpace("smem_vec", (("BLOCK_ROWS", (1, 2, 4, 8, 16, 32)), ("GROUP", (0, 4, 8, 16)),
                                 ("IPAD", (1, 2, 4)), ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0",))
DEFAULT = Config.of("smem_vec", {"BLOCK_ROWS": 8, "GROUP": 0, "IPAD": 1, "TILE_DIM": 32})
OPTIMUM = Config.of("smem_vec", {"BLOCK_ROWS": 4, "GROUP": 8, "IPAD": 2, "TILE_DIM": 64})
FAR = Config.of("smem_vec", {"BLOCK_ROWS": 1, "GROUP": 16, "IPAD": 4, "TILE_DIM": 16})


def ms(config: Config, best: Config = OPTIMUM) -> float:
    """A synthetic table with one optimum, ``best``: each macro's distance from it costs time."""
    m, b = config.as_dict(), best.as_dict()
    return 1.0 + abs(m["BLOCK_ROWS"].bit_length() - b["BLOCK_ROWS"].bit_length()) * 0.3 \
        + abs(m["GROUP"] - b["GROUP"]) * 0.02 + (m["IPAD"] != b["IPAD"]) * 0.1 \
        + abs(m["TILE_DIM"].bit_length() - b["TILE_DIM"].bit_length()) * 0.5


TABLE = {c.key: ms(c) for c in SPACE.configs()}


def shape(times: dict[Config, float], dims=(("rows", 2048),), distance=0.7) -> list[Known]:
    """Another shape's observations: config -> ms."""
    return [Known(c, t, distance, dims) for c, t in times.items()]


def like(best: Config, **kw) -> list[Known]:
    """Another shape whose table is this one's with its optimum at ``best``."""
    return shape({c: ms(c, best) for c in SPACE.configs()}, **kw)


def reversed_(**kw) -> list[Known]:
    """Another shape whose order is this one's reversed: its bests are the slowest here."""
    return shape({c: 10.0 - ms(c) for c in SPACE.configs()}, **kw)


def prior_measured(r, history) -> list[str]:
    queued = {c.key for c in nearest_bests(history, SPACE)}
    return [k for k in r.measured if k in queued]


def test_the_queue_takes_the_nearest_shapes_bests_twice_as_often_skipping_failed_and_invalid():
    configs = SPACE.configs()
    invalid = Config.of("smem_vec", {"BLOCK_ROWS": 32, "GROUP": 0, "IPAD": 1, "TILE_DIM": 16})
    assert SPACE.violations(invalid)
    near = shape({invalid: 0.5, configs[0]: None, **{c: 1.0 + i for i, c in enumerate(configs[1:6])}}, distance=0.3)
    far = shape({c: 2.0 + i for i, c in enumerate(configs[10:14])}, dims=(("rows", 64),), distance=1.5)
    got = nearest_bests(near + far, SPACE)
    assert got == [configs[1], configs[2], configs[10], configs[3], configs[4], configs[11], configs[5], configs[12]]
    assert len(nearest_bests(near + far, SPACE, limit=3)) == 3 and len(got) == QUEUE
    assert nearest_bests(near + far, SPACE, shapes=1) == configs[1:6]


@pytest.mark.parametrize("batch", [1, 16])
@pytest.mark.parametrize("default_first", [True, False])
@pytest.mark.parametrize("rank", [0, 1])
def test_the_optimum_is_measured_within_5_configs_where_it_is_one_of_the_nearest_shapes_two_bests(
        batch, default_first, rank):
    """rank 0: the nearest shape's best is this shape's optimum; rank 1: its second best is
    (its best: the kernel's default, measured first or not)."""
    times = {c: ms(c) + 1 for c in SPACE.configs()}
    times[OPTIMUM] = 0.9 if rank == 0 else 0.95
    if rank == 1:
        times[DEFAULT] = 0.9
    history = shape(times) + like(FAR, dims=(("rows", 64),), distance=2.0)
    r = replay("transfer", SPACE, TABLE, 20, seed=0, batch=batch, history=history,
               first=[DEFAULT] if default_first else [])
    assert OPTIMUM.key in r.measured[:5]
    assert OPTIMUM.key in r.measured[:1 + PROBE + FIRST]


def test_a_prior_that_misleads_is_dropped_after_the_controls_having_cost_at_most_first_configs():
    history = reversed_()
    s = make_strategy("transfer", SPACE, 0, history)
    s.tell(DEFAULT, ms(DEFAULT))  # not among the prior's bests: a control
    measured = [DEFAULT]
    while len(measured) < 40:
        c = s.ask(1)[0]
        s.tell(c, ms(c))
        measured.append(c)
    queued = set(nearest_bests(history, SPACE))
    from_prior = [i for i, c in enumerate(measured) if c in queued]
    assert s.verdict == "dropped" and s.prior_left == []
    assert len(from_prior) <= FIRST and min(from_prior) >= PROBE  # the controls first, the default among them


@pytest.mark.parametrize("batch", [1, 16])
def test_a_misleading_prior_whose_best_is_the_default_measured_first_costs_one_config_more(batch):
    """The default (measured first, the prior's best) is slow here: the plain search's first
    configs beat it, the prior's second best is asked after them (FIRST prior configs in all,
    the default counting), is slow too, and the prior is dropped: nothing more of it is asked.
    At batch 1, until then, the configs measured are those the plain search measures alone."""
    table = {c.key: ms(c, FAR) for c in SPACE.configs()}  # the default is slow here
    times = {c: 10.0 - ms(c, FAR) for c in SPACE.configs()}
    times[DEFAULT] = 0.5
    history = shape(times)
    assert nearest_bests(history, SPACE)[0] == DEFAULT and table[DEFAULT.key] > sorted(table.values())[len(table) // 2]
    kw = dict(seed=3, batch=batch, first=[DEFAULT])
    made = []

    def factory(name, space, seed, history):
        made.append(make_strategy(name, space, seed, history))
        return made[-1]

    r = replay("transfer", SPACE, table, 40, history=history, factory=factory, **kw)
    s = made[0]
    assert s.verdict == "dropped" and len(s.from_prior) == FIRST - 1
    assert r.measured.index(s.from_prior[0].key) == 1 + PROBE  # after the default and the controls
    assert table[s.from_prior[0].key] > min(table[k] for k in r.measured[:1 + PROBE])
    if batch == 1:
        alone = replay(DEFAULT_STRATEGY, SPACE, table, 40, **kw)
        assert r.measured[:1 + PROBE] == alone.measured[:1 + PROBE]


def test_a_prior_that_beats_the_controls_is_trusted_and_kept_while_it_pays():
    history = like(OPTIMUM)
    s = make_strategy("transfer", SPACE, 1, history)
    s.tell(DEFAULT, ms(DEFAULT))  # not among the prior's bests: the first control
    measured = []
    for _ in range(1 + PROBE + QUEUE):
        c = s.ask(1)[0]
        s.tell(c, ms(c))
        measured.append(c)
    queue = nearest_bests(history, SPACE)
    assert s.verdict == "trusted" and measured.index(OPTIMUM) == PROBE - 1 and queue[0] == OPTIMUM
    # after the optimum, every other slot is the prior's (SHARE), its own first; its next
    # configs do not pay: PATIENCE of them, then the plain search alone
    assert SHARE == 0.5
    assert s.from_prior == queue[:1 + PATIENCE] == [measured[PROBE - 1], measured[PROBE], measured[PROBE + 2]]
    assert s.prior_left == [] and s.verdict == "trusted"
    after = s.ask(4)
    assert s.from_prior == queue[:1 + PATIENCE] and all(s.plain.known(c) for c in after)


def test_a_shape_whose_configs_do_not_pay_is_dropped_after_patience_misses_the_other_kept():
    near = like(OPTIMUM, distance=0.3)
    far = reversed_(dims=(("rows", 64),), distance=0.4)  # its bests are the slowest here
    near_best = {k.config for k in sorted(near, key=lambda k: k.ms)[:16]}
    here = {c: 1.0 if c in near_best else ms(c) + 1 for c in SPACE.configs()}  # the near shape's bests all pay
    s = make_strategy("transfer", SPACE, 0, near + far, options={"queue": 16})
    s.tell(DEFAULT, here[DEFAULT])
    for _ in range(30):
        c = s.ask(1)[0]
        s.tell(c, here[c])
    queue = nearest_bests(near + far, SPACE, limit=16)
    assert s.verdict == "trusted"
    assert len([c for c in s.from_prior if c not in near_best]) == PATIENCE
    assert {c for c in queue if c in near_best} <= set(s.told)


def test_the_search_loops_queued_default_is_in_flight_in_the_plain_search_too():
    s = make_strategy("transfer", SPACE, 1, like(OPTIMUM))
    s.enqueue([DEFAULT])  # what the search loop does (Tuner) before any proposal
    assert s.ask(1) == [DEFAULT] and s.plain.known(DEFAULT)
    batch = s.ask(16)
    assert DEFAULT not in batch and len(set(batch)) == 16
    assert OPTIMUM in batch  # the nearest shape's best: within the first batch, after PROBE controls
    assert batch.index(OPTIMUM) == PROBE - 1  # the default is the first control


def test_the_options_probe_and_then():
    s = make_strategy("transfer", SPACE, 0, like(OPTIMUM), options={"probe": "1", "then": "random"})
    assert isinstance(s.plain, Random) and s.probe == 1
    first = s.ask(3)
    assert first[1] == OPTIMUM and first[0] != OPTIMUM  # one control, then the prior


@pytest.mark.parametrize(("prior_ms", "verdict"), [(0.9, "trusted"), (1.0 + SLACK - 0.001, "trusted"),
                                                   (1.0 + SLACK + 0.001, "dropped"), (None, "dropped")])
def test_the_verdict_compares_the_priors_best_with_the_controls_best_within_slack(prior_ms, verdict):
    """With ``first`` 1, the verdict on the prior's first config measured."""
    s = make_strategy("transfer", SPACE, 0, like(OPTIMUM), options={"probe": 1, "first": 1})
    s.tell(DEFAULT, 1.0)  # the one control (the default is not among the prior's bests)
    assert s.verdict == "open"
    first = s.ask(1)
    assert first == [OPTIMUM]
    s.tell(OPTIMUM, prior_ms)
    assert s.verdict == verdict
    assert (s.prior_left != []) == (verdict == "trusted")


@pytest.mark.parametrize("second_ms", [0.9, 1.1])
def test_a_prior_whose_first_config_loses_is_judged_on_its_second_too(second_ms):
    """FIRST (2): a prior whose first config is slower than the controls' best is not dropped
    before its second one is measured (the nearest shape's second best is the optimum here on
    some tables); it is trusted if that one wins, dropped if it loses too."""
    s = make_strategy("transfer", SPACE, 0, like(OPTIMUM), options={"probe": 1})
    s.tell(DEFAULT, 1.0)  # the one control
    first = s.ask(1)
    s.tell(first[0], 1.2)
    assert s.verdict == "open" and FIRST == 2
    second = s.ask(1)
    assert second[0] in s.from_prior and second[0] != first[0]
    s.tell(second[0], second_ms)
    assert s.verdict == ("trusted" if second_ms < 1.0 else "dropped")


@pytest.mark.parametrize("then", [None, "tpe"])
def test_without_a_prior_transfer_measures_what_its_plain_search_measures_alone(then):
    """The plain search is the default strategy (``tpe_local``) unless ``then`` names another:
    without tuned shapes (or once the prior is dropped) transfer is that search."""
    options = {"then": then} if then else None
    alone = replay(then or DEFAULT_STRATEGY, SPACE, TABLE, 30, seed=2, batch=4, first=[DEFAULT]).measured
    from autotune.interchange.replay import replay as run

    got = run("transfer", SPACE, TABLE, 30, seed=2, batch=4, first=[DEFAULT],
              factory=lambda name, space, seed, history: make_strategy(name, space, seed, history, options=options))
    assert got.measured == alone
    if then:
        assert got.measured != replay(DEFAULT_STRATEGY, SPACE, TABLE, 30, seed=2, batch=4, first=[DEFAULT]).measured


@pytest.mark.parametrize("first", [1, 3])
def test_the_option_first_bounds_the_prior_configs_before_the_verdict(first):
    s = make_strategy("transfer", SPACE, 0, reversed_(), options={"first": first})
    batch = s.ask(16)  # nothing measured: the verdict is open for the whole batch
    assert s.verdict == "open" and len([c for c in batch if c in set(s.from_prior)]) == first
    assert batch.index(s.from_prior[0]) == PROBE


def test_a_trusted_prior_takes_every_other_slot_and_is_dropped_once_a_control_beats_it():
    """The verdict is renewed at every config told: a prior that beat the first controls (by
    luck) loses its place as soon as the plain search, measured beside it, finds better."""
    history = like(FAR)
    queue = nearest_bests(history, SPACE)
    s = make_strategy("transfer", SPACE, 0, history)
    s.tell(DEFAULT, 2.0)
    for _ in range(PROBE - 1):  # the controls first
        c = s.ask(1)[0]
        assert c not in queue
        s.tell(c, 2.0)
    assert s.ask(1) == [queue[0]]
    s.tell(queue[0], 1.5)
    assert s.verdict == "trusted"
    batch = s.ask(4)  # SHARE: the prior, then a control, in turn
    assert [c in s.from_prior for c in batch] == [True, False, True, False] and batch[0] == queue[1]
    s.tell(batch[0], 1.5)
    s.tell(batch[1], 1.5 / (1 + SLACK) - 0.01)  # a control beats the prior's best by more than SLACK
    assert s.verdict == "dropped" and s.prior_left == []
    for c in batch[2:]:
        s.tell(c, 2.0)
    s.ask(8)
    assert s.from_prior == queue[:3] == [queue[0], batch[0], batch[2]]  # none after the drop


@pytest.mark.parametrize("default_first", [True, False])
def test_a_trusted_prior_asks_its_next_config_first_so_its_second_comes_within_5_at_batch_1(default_first):
    """smem_vec 6144x3072's case: the default is the nearest shape's best, 0.1 % slower here than
    the optimum, its second best: once trusted after the controls, the prior's next config is the
    next one measured (the 5th at most), not a control."""
    here = {c: ms(c) + 1 for c in SPACE.configs()}  # every config slower here than the prior's two bests
    here[OPTIMUM], here[DEFAULT] = 1.0, 1.001
    times = {c: ms(c) + 1 for c in SPACE.configs()}
    times[DEFAULT], times[OPTIMUM] = 0.9, 0.95
    s = make_strategy("transfer", SPACE, 0, shape(times))
    measured = []
    if default_first:
        s.enqueue([DEFAULT])
    while len(measured) < 8:
        c = s.ask(1)[0]
        s.tell(c, here[c])
        measured.append(c)
    assert s.verdict == "trusted" and measured.index(OPTIMUM) < 5 and measured.index(DEFAULT) < 5
