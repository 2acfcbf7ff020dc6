"""Shapes nobody tuned: a dispatch learned from every stored trial of a kernel's tuned shapes.

A pure function of trials, which the store supplies (the package and the store never import
each other): :mod:`~autotune.dispatch.tables` (the evidence per tuned shape),
:mod:`~autotune.dispatch.fit` (the configs kept and the rule that picks one), on
:mod:`~autotune.dispatch.rules` (the regret matrix, the set cover, the neighbours' picks),
:mod:`~autotune.dispatch.tree` (the decision tree) and :mod:`~autotune.dispatch.crossval` (the rule
and the noise floor kept by leave-one-shape-out),
:mod:`~autotune.dispatch.evaluate` (held-out regret), :mod:`~autotune.dispatch.next_shapes`
(where to tune next) and :mod:`~autotune.dispatch.cache` (one fit per store change).
"""

from autotune.dispatch.evaluate import (NOISE as NOISE, HeldOut as HeldOut, Summary as Summary, best_of as best_of,
                                        evaluate as evaluate, winners as winners,
                                        leave_one_out as leave_one_out, nearest_shape_config as nearest_shape_config,
                                        regret_weights as regret_weights, summarize as summarize)
from autotune.dispatch.fit import (EPS as EPS, KS as KS, MARGIN as MARGIN, MAX_CONFIGS as MAX_CONFIGS,
                                   Dispatch as Dispatch, build_dispatch as build_dispatch, fit_trials as fit_trials)
from autotune.dispatch.next_shapes import log_grid as log_grid, next_shapes as next_shapes
from autotune.dispatch.tables import (FAILED_REGRET as FAILED_REGRET, Shape as Shape, ShapeTable as ShapeTable,
                                      regret as regret, shape_order as shape_order,
                                      tables_from_trials as tables_from_trials)

__all__ = ["MAX_CONFIGS", "MARGIN", "NOISE", "EPS", "KS", "FAILED_REGRET", "Dispatch", "fit_trials", "HeldOut", "Shape",
           "ShapeTable", "Summary", "build_dispatch", "evaluate", "leave_one_out", "next_shapes",
           "nearest_shape_config", "regret", "regret_weights", "shape_order", "summarize", "tables_from_trials",
           "log_grid", "best_of", "winners"]
