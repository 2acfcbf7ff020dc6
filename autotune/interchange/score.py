"""Scoring a search strategy against random search: the methodology score P.

Source: F.-J. Willemsen, R. V. van Nieuwpoort, B. van Werkhoven, "A methodology for comparing
optimization algorithms for auto-tuning" (Future Generation Computer Systems, 2024) and
"Tuning the Tuner" (arXiv:2509.26300, 2025), as implemented in their ``autotuning_methodology``
package (``Baseline.get_standardised_curves`` and ``report_experiments.get_strategy_scores``).
For a minimised objective (kernel time, ms) and a budget axis of ``k`` configs measured:

* ``f_s(k)``: the strategy's best-so-far time after ``k`` configs measured, averaged over runs
  (seeds);
* ``f_r(k)``: the expected best-so-far of random search without replacement;
* ``f_opt``: the best time of the whole space;

the standardised performance is ``P(k) = (f_s(k) - f_r(k)) / (f_opt - f_r(k))``: 0 where the
strategy does as well as expected random search, 1 where it holds the optimum, negative where
it does worse than random. The score over a budget ``B`` is the mean ``P = (1/B) sum_{k=1..B}
P(k)`` (the package averages the same curve over its evaluation range; it scores on a time axis
by default, we score on configs measured, as the issue's budgets are in configs).

Differences from the package, on purpose:

* ``f_r`` is exact here, not the package's approximation ``dist[round(k (N+1)/(k+1))]``: with
  the table's ``N`` values sorted ascending, ``v_1 <= ... <= v_N``, the best of ``k`` draws
  without replacement is ``v_i`` with probability ``C(N-i, k-1) / C(N, k)`` (order statistics),
  so ``f_r(k) = sum_i v_i C(N-i, k-1) / C(N, k)``.
* Failed configs (compile error, out of resources, wrong result, ...) are part of ``N`` and cost
  a measurement, as they do on a GPU; a best-so-far with nothing valid yet counts as the
  slowest valid time of the table (``worst``), for the strategy and for random alike.
* Where ``f_r(k) = f_opt`` (random search is sure to hold the optimum), ``P(k)`` is 1 if the
  strategy holds it too, else 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["best_so_far", "slowest", "expected_random_curve", "mean_curve", "standardised", "Score", "score"]


def _valid(table: Mapping[str, float | None] | Iterable[float | None]) -> tuple[np.ndarray, int]:
    values = list(table.values()) if isinstance(table, Mapping) else list(table)
    ok = np.sort(np.array([v for v in values if v is not None], dtype=float))
    if ok.size == 0:
        raise ValueError("the table has no valid (measured) config: there is nothing to score against")
    return ok, len(values)


def slowest(times: Iterable[float | None]) -> float:
    """The slowest valid time (ms) of a table's ``times`` (``None``: failed): the ``worst`` that
    :func:`best_so_far` starts from.

    Raises:
        ValueError: no valid (measured) time.
    """
    valid = [ms for ms in times if ms is not None]
    if not valid:
        raise ValueError("the table has no valid (measured) config")
    return max(valid)


def best_so_far(times: Iterable[float | None], worst: float) -> list[float]:
    """The best-so-far curve of a sequence of measured configs: element ``k-1`` is the lowest
    time (ms) among the first ``k``; ``None`` (a failed config) counts as measured and changes
    nothing; before any valid one the curve holds ``worst`` (ms)."""
    best, out = worst, []
    for ms in times:
        if ms is not None and ms < best:
            best = ms
        out.append(best)
    return out


def expected_random_curve(table: Mapping[str, float | None] | Iterable[float | None], budget: int) -> np.ndarray:
    """Expected best-so-far time (ms) of random search without replacement over the table's
    configs after ``k = 1..budget`` configs measured (exact order statistics, see the module
    docstring; failed configs are drawn too and count as the table's slowest valid time while
    nothing valid is drawn). Shape ``(budget,)``; beyond the table's size it stays at the optimum.

    Raises:
        ValueError: the table has no valid config, or ``budget`` < 1.
    """
    if budget < 1:
        raise ValueError(f"budget is {budget}; it must be >= 1")
    ok, n = _valid(table)
    values = np.concatenate([ok, np.full(n - ok.size, ok[-1])])  # failed last, valued as the worst
    out = np.empty(budget)
    i = np.arange(1, n + 1)
    for k in range(1, budget + 1):
        if k >= n:
            out[k - 1] = ok[0]
            continue
        # P(min rank = i) = C(N-i, k-1) / C(N, k): first k/N, then times (N-i-k+1)/(N-i)
        ratios = np.where(i[:-1] <= n - k, (n - i[:-1] - k + 1) / (n - i[:-1]), 0.0)
        prob = np.concatenate([[k / n], (k / n) * np.cumprod(ratios)])
        out[k - 1] = float(prob @ values)
    return out


def mean_curve(curves: Sequence[Sequence[float]], budget: int) -> np.ndarray:
    """Mean over runs of best-so-far curves (ms), each cut or extended to ``budget`` configs (a
    run that ended early, having measured the whole space, keeps its last value)."""
    if not curves:
        raise ValueError("no curves to average")
    rows = []
    for c in curves:
        if not len(c):
            raise ValueError("a curve is empty: the run measured no config")
        c = list(c)[:budget]
        rows.append(c + [c[-1]] * (budget - len(c)))
    return np.mean(np.array(rows, dtype=float), axis=0)


def standardised(strategy: np.ndarray, random: np.ndarray, optimum: float) -> np.ndarray:
    """``P(k) = (f_s(k) - f_r(k)) / (f_opt - f_r(k))`` per budget step (module docstring)."""
    strategy, random = np.asarray(strategy, dtype=float), np.asarray(random, dtype=float)
    gap = optimum - random
    safe = np.where(gap == 0, -1.0, gap)
    return np.where(gap == 0, (strategy <= optimum).astype(float), (strategy - random) / safe)


@dataclass(frozen=True)
class Score:
    """The methodology score of one strategy on one table at one budget.

    Attributes:
        budget: configs measured, ``B``.
        p: ``P``, the mean of ``P(k)`` over ``k = 1..B`` (0: expected random search, 1: optimum).
        p_curve: ``P(k)``, shape ``(B,)``.
        final_pct: the mean final best as % of the optimum's speed (100 * f_opt / f_s(B)).
        runs: the number of runs (seeds) averaged.
    """

    budget: int
    p: float
    p_curve: tuple[float, ...]
    final_pct: float
    runs: int


def score(curves: Sequence[Sequence[float]], table: Mapping[str, float | None], budget: int) -> Score:
    """Score best-so-far curves (ms per config measured, one per run; e.g. from
    :func:`best_so_far` or :func:`autotune.interchange.replay.replay`) of one strategy on ``table``
    (config key -> median ms, ``None`` = failed) at ``budget`` configs measured.

    Raises:
        ValueError: no curves, an empty curve, a table with no valid config, ``budget`` < 1.
    """
    ok, _ = _valid(table)
    strategy = mean_curve(curves, budget)
    p = standardised(strategy, expected_random_curve(table, budget), float(ok[0]))
    return Score(budget, float(np.mean(p)), tuple(float(x) for x in p), float(100 * ok[0] / strategy[-1]), len(curves))
