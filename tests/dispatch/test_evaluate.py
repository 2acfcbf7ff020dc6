"""Held-out regret's bound (autotune.dispatch.evaluate): the best a rule could do choosing among
a set of configs at each held-out shape, and the training shapes' winners and runners-up."""

from __future__ import annotations

import math

import pytest

from autotune.dispatch import ShapeTable, best_of, winners
from autotune.kernel.catalog import get_kernel

SMEM = get_kernel("smem_pad")
DEFAULT = SMEM.default_config()
A, B, C = [c for c in SMEM.space().configs() if c != DEFAULT][:3]


def table(shape, times, failed=()):
    return ShapeTable(tuple(shape), dict(times), frozenset(failed))


def test_winners_are_each_shapes_two_fastest_once_in_the_tables_order():
    tables = [table((8, 8), {A: 1.0, B: 2.0, C: 3.0, DEFAULT: 4.0}),
              table((64, 64), {C: 1.0, A: 1.5, B: 9.0}),
              table((16, 16), {DEFAULT: 1.0, B: 1.0})]  # a tie: the smaller key first
    assert winners(tables) == [A, B, C, DEFAULT]
    assert winners(tables, top=1) == [A, C, min((DEFAULT, B), key=lambda c: c.key)]
    assert winners([]) == []


def test_best_of_is_the_least_regret_among_the_configs_measured_at_each_shape():
    test = [table((8, 8), {A: 1.2, B: 1.1, C: 1.0, DEFAULT: 1.05}),  # best of A, B: 10 %, slower than the default
            table((64, 64), {A: 2.0, C: 1.0, DEFAULT: 1.5}),  # A only: 100 %, slower than the default
            table((16, 16), {C: 1.0, DEFAULT: 1.0}),  # neither measured: not counted
            table((32, 32), {B: 1.0, C: 1.0}, failed=[A])]  # A failed, B the best: 0 %
    s = best_of(test, [A, B], DEFAULT)
    assert (s.shapes, s.measured) == (4, 3)
    assert s.median == pytest.approx(0.1) and s.worst == pytest.approx(1.0)
    assert s.below_default == 2  # 1.1 > 1.05 * 1.01 and 2.0 > 1.5 * 1.01; no default time at 32x32
    assert best_of(test, [C], DEFAULT).worst == 0.0
    failed = best_of([table((8, 8), {DEFAULT: 1.0}, failed=[A])], [A], DEFAULT)  # only a failure: inf
    assert (failed.measured, failed.worst, failed.below_default) == (1, math.inf, 1)
    empty = best_of(test, [], DEFAULT)
    assert (empty.measured, empty.median, empty.worst, empty.below_default) == (0, None, None, 0)
