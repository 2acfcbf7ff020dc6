"""The dispatch's decision tree (autotune.dispatch.tree): its features, splits fit to regret,
leaves that never answer a config slower than the default at their shapes, and uncertain leaves
answering their minimax config; cross-validation keeps it where it wins."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from autotune.dispatch import ShapeTable, build_dispatch, leave_one_out, summarize
from autotune.dispatch.tree import UNCERTAIN, Node, describe, feature_value, features, fit_tree, leaf_of, mark_uncertain
from autotune.kernel.catalog import get_kernel

SMEM = get_kernel("smem_pad")
DEFAULT = SMEM.default_config()
A, B, C = [c for c in SMEM.space().configs() if c != DEFAULT][:3]
DIMS = ("rows", "cols")
MARGIN = math.log1p(0.01)


def test_features_are_each_dim_each_pairs_product_and_ratio_and_the_volume():
    assert features(1) == [(1,)]
    assert features(2) == [(1, 0), (0, 1), (1, 1), (1, -1)]
    assert features(3)[-1] == (1, 1, 1) and len(features(3)) == 10
    assert feature_value((1, -1), (4096, 64)) == pytest.approx(math.log(64))
    assert feature_value((1, 1), (0, 8)) == pytest.approx(math.log(8))  # below 1 counts as 1


def test_a_split_follows_the_shapes_ratio_when_that_is_what_the_times_say():
    # A is fast on tall shapes, B on wide ones, the default in between: a ratio split, both sides
    # exact; the nearest neighbours err near the diagonal, where the nearest tuned shape is across it
    rnd = random.Random(4)
    shapes = {(int(2 ** rnd.uniform(6, 14)), int(2 ** rnd.uniform(6, 14))) for _ in range(16)}
    tables = [ShapeTable((r, c), {DEFAULT: 1.2, A: 1.0 if r > c else 1.5, B: 1.5 if r > c else 1.0})
              for r, c in shapes]
    d = build_dispatch(tables, DEFAULT, DIMS)
    assert d.kind == "tree" and "ln(rows/cols)" in describe(d.nodes, DIMS)
    assert d.config_for((20000, 100)) == A and d.config_for((100, 20000)) == B
    s = summarize(leave_one_out(tables, DEFAULT, DIMS, rules=("tree",)))  # the tree, each shape held out: exact
    assert s.worst == pytest.approx(0.0) and s.below_default == 0
    assert min(d.cv_regret, key=d.cv_regret.get).startswith("tree") and d.cv_below["tree depth=1"] == 0


def test_a_leaf_never_answers_a_config_slower_than_the_default_at_one_of_its_shapes():
    # A wins the sum by far at three shapes but is 30 % slower than the default at the fourth
    shapes = [(512, 512), (1024, 1024), (2048, 2048), (4096, 4096)]
    regrets = np.log(np.array([[2.0, 1.0], [2.0, 1.0], [2.0, 1.0], [1.0, 1.3]]))
    nodes = fit_tree(shapes, regrets, depth=1, margin_log=MARGIN)
    assert leaf_of(nodes, (4096, 4096)).config == 0 and leaf_of(nodes, (512, 512)).config == 1
    assert fit_tree(shapes, regrets, depth=0, margin_log=MARGIN) == (Node(config=0),)  # one leaf: only the default is safe


def test_an_uncertain_leaf_answers_its_minimax_config():
    shapes = [(512, 512), (1024, 1024)]
    # config 1: least sum (0 + 0.09); config 2: least worst (0.05, 0.05); both never slower than the default
    regrets = np.array([[0.2, 0.0, 0.05], [0.2, 0.09, 0.05]])
    nodes = fit_tree(shapes, regrets, depth=0, margin_log=MARGIN)
    assert nodes == (Node(config=1),)
    assert mark_uncertain(nodes, shapes, regrets, [0.0, 0.05], MARGIN) == nodes  # held out within 8 %: kept
    marked = mark_uncertain(nodes, shapes, regrets, [0.0, UNCERTAIN + 0.01], MARGIN)
    assert marked == (Node(config=2, uncertain=True),)
    assert mark_uncertain(nodes, shapes, regrets, [math.inf, 0.0], MARGIN)[0].uncertain  # went below the default
    assert describe(marked, DIMS) == "config 3, uncertain: minimax"


def test_the_dispatch_says_which_pick_is_an_uncertain_leaf():
    tables = [ShapeTable((s, s), {DEFAULT: 1.0, A: 0.9}) for s in (256, 1024)]
    d = build_dispatch(tables, DEFAULT, DIMS, rules=("tree",))
    nodes = (Node((1, 0), math.log(512), 1, 2), Node(config=0), Node(config=1, uncertain=True))
    from dataclasses import replace

    d = replace(d, nodes=nodes)
    assert d.pick((300, 300)) == (0, d.shapes.index((256, 256)), False)
    assert d.pick((900, 900)) == (1, d.shapes.index((1024, 1024)), True)
    assert "uncertain: minimax" in d.rule()
