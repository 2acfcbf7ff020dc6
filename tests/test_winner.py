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
    close = timed(cfg(32, 8), 1.004, 1.000, 1.008)    # 256 threads, within 1 %: a tie
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
