import pytest

from autotune.kernel.config import Config
from autotune.measure.measurement import Retiming
from autotune.search.winner import choose


def cfg(tile, rows):
    return Config.of("copy_row", {"TILE_DIM": tile, "BLOCK_ROWS": rows})


def timed(config, pooled, low, high):
    return Retiming(config, (low, pooled, high), pooled)


THREADS = lambda c: c["TILE_DIM"] * c["BLOCK_ROWS"]  # noqa: E731
SHARED = lambda c: 0  # noqa: E731


def test_a_clear_winner_is_the_fastest():
    a, b = timed(cfg(32, 8), 1.00, 0.999, 1.001), timed(cfg(32, 4), 1.10, 1.099, 1.101)
    d = choose([b, a], THREADS, SHARED)
    assert d.winner is a and d.fastest is a and d.tie_group == (a,)


def test_configs_inside_the_spread_tie_and_the_rule_breaks_it():
    fast = timed(cfg(64, 8), 1.000, 0.995, 1.005)     # 512 threads, spread 1 %
    close = timed(cfg(32, 8), 1.004, 0.990, 1.008)    # 256 threads, faster in one round: a tie
    far = timed(cfg(32, 4), 1.030, 1.029, 1.031)      # outside everyone's spread
    d = choose([far, close, fast], THREADS, SHARED)
    assert d.fastest is fast
    assert d.tie_group == (fast, close)
    assert d.winner is close  # fewer threads per block


def test_tie_break_order_threads_then_shared_memory_then_key():
    a = timed(cfg(32, 8), 1.0, 0.99, 1.01)
    b = timed(Config.of("copy_row", {"TILE_DIM": 16, "BLOCK_ROWS": 16}), 1.0, 0.99, 1.01)  # same 256 threads
    shared = {a.config: 4096, b.config: 1024}
    assert choose([a, b], THREADS, shared.get).winner is b  # less shared memory
    assert choose([a, b], THREADS, SHARED).winner is b      # equal: smaller key ("BLOCK_ROWS=16" < "BLOCK_ROWS=8")


def test_the_decision_does_not_depend_on_input_order():
    rs = [timed(cfg(t, r), 1 + 0.001 * i, 0.99 + 0.001 * i, 1.01 + 0.001 * i)
          for i, (t, r) in enumerate([(64, 8), (32, 8), (64, 4), (32, 4), (16, 16)])]
    first = choose(rs, THREADS, SHARED)
    assert all(choose(order, THREADS, SHARED) == first for order in (rs[::-1], rs[2:] + rs[:2]))


def test_nothing_to_choose_from():
    with pytest.raises(ValueError):
        choose([], THREADS, SHARED)


def test_a_paired_interval_holding_one_ties_configs_whose_spreads_do_not_overlap():
    # the GPU drifts between rounds; both configs drift alike, and b is faster in 2 of 5 rounds
    drift = (1.00, 1.05, 0.97, 1.02, 1.08)
    a = Retiming(cfg(64, 8), tuple(1.000 * d for d in drift), 1.000)
    b = Retiming(cfg(32, 8), tuple(v * d for v, d in zip((1.001, 0.999, 1.002, 0.998, 1.003), drift)), 1.0015)
    d = choose([a, b], THREADS, SHARED)
    assert d.fastest is a and d.tied and d.tie_group == (a, b)
    assert d.winner is b  # tied: fewer threads
    pa, pb = d.paired
    assert pa.ratio == 1.0 and pa.tied and pb.low <= 1.0 <= pb.high and pb.tied
    assert d.runner_up is a


def test_a_paired_interval_above_one_separates_configs_despite_a_drifting_gpu():
    drift = (1.00, 1.05, 0.97, 1.02, 1.08)  # a spread of 11 %: the spread rule would tie them
    a = Retiming(cfg(64, 8), tuple(1.000 * d for d in drift), 1.000)
    b = Retiming(cfg(32, 8), tuple(1.02 * d for d in drift), 1.02)  # fewer threads, 2 % slower in every round
    d = choose([b, a], THREADS, SHARED)
    assert d.paired[1].low == pytest.approx(1.02) == d.paired[1].high and not d.paired[1].tied
    assert not d.tied and d.winner is a and d.runner_up is b
    two = [Retiming(r.config, r.round_medians_ms[:2], r.pooled_median_ms) for r in (a, b)]
    assert choose(two, THREADS, SHARED).tied  # 2 rounds: the spread rule, which ties them
