"""The last step of a search: the study's fastest configs re-timed interleaved, the winner stored.

Timings taken one config after another drift with the GPU's clocks and temperature, so the
``top_k`` fastest configs of a key are timed again in ``rounds`` rounds (the search's
:class:`~autotune.search.options.RetimeOptions`), every config once a round (the benchmark's
``retime``), and :func:`autotune.search.winner.choose` picks the winner
from the pooled medians with its fixed tie rule. :func:`decide` is the step of one search
(:class:`autotune.search.tuner.Tuner`); :func:`retime_study` runs it once after several workers
searched one key (:func:`autotune.search.tune.tune` with ``devices``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from autotune.kernel.catalog import get_kernel
from autotune.kernel.config import Config
from autotune.kernel.problem import Problem
from autotune.measure.measurement import Decision, Retiming
from autotune.base import signals as stop
from autotune.search.objective import winner_by_objective
from autotune.search.options import RetimeOptions
from autotune.search.outcome import SearchResult
from autotune.search.winner import choose
from autotune.store.key import TuningKey

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported when a search opens it
    from autotune.store.repository import Store

__all__ = ["Retime", "decide", "retime_study"]

Retime = Callable[[list[Config], int], list[Retiming]]
"""``retime(configs, rounds) -> list[Retiming]``: e.g. :meth:`autotune.measure.benchmark.Benchmark.retime`."""


def retime_study(key: TuningKey, store: Store, retime: Retime, search_id: int,
                 options: RetimeOptions = RetimeOptions(), *, objective: str = "time") -> SearchResult:
    """Re-time the ``options.top_k`` fastest configs stored for ``key`` (by every search of
    it, on any GPU of its model) over ``options.rounds`` interleaved rounds and store the
    winner as the key's best: the last step of :func:`search`, run once after a search by
    several workers.

    Returns:
        A :class:`SearchResult` (``search_id`` as given; no outcomes) with ``measured``,
        ``decision`` and ``retimings``; ``decision`` is ``None`` when nothing was measured.
    """
    result = SearchResult(key, search_id)
    for t in store.key_trials(key):
        if t.status == "ok":
            result.measured[t.config] = min(t.median_ms, result.measured.get(t.config, math.inf))
    if result.measured:
        result.decision = decide(key, store, result, retime, options, objective)
    return result


def decide(key: TuningKey, store: Store, result: SearchResult, retime: Retime, options: RetimeOptions,
           objective: str = "time") -> Decision:
    """Re-time the study's ``options.top_k`` best configs (by ``result.measured``: the
    objective's values) over ``options.rounds`` rounds and store the chosen winner: by time, the rule of
    :func:`autotune.search.winner.choose`; by energy or EDP,
    :func:`autotune.search.objective.winner_by_objective`."""
    problem = key.problem or Problem.of(get_kernel(key.kernel), key.dims, key.dtype)  # (a key read back: by name)
    ok = [t for t in store.key_trials(key) if t.status == "ok"]
    shared = {t.config: t.shared_bytes or 0 for t in ok}
    with stop.interruptible():  # measures only: a signal may cut it anywhere
        result.retimings = retime([c for c, _ in result.top(options.top_k)], options.rounds)
    threads = lambda c: problem.geometry(c).threads  # noqa: E731
    decision = choose(result.retimings, threads=threads, shared_bytes=lambda c: shared.get(c, 0))
    if objective != "time":
        energy: dict[Config, float] = {}
        for t in ok:
            if t.energy_j is not None:
                energy[t.config] = min(t.energy_j, energy.get(t.config, t.energy_j))
        decision = winner_by_objective(decision, result.retimings, energy, objective, threads,
                                       lambda c: shared.get(c, 0))
    store.set_winner(key, decision, options.rounds)
    return decision
