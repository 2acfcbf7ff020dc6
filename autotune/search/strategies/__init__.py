"""Search strategies behind one small registry: ``name -> factory(space, seed, history)`` and
its :class:`Traits` (what the search loop asks instead of the name).

::

    from autotune.search.strategies import STRATEGIES, make_strategy, Strategy
    s = make_strategy("tpe", space, seed=0, history=())  # or any optuna.samplers.BaseSampler
    batch = s.ask(16)          # up to 16 valid, distinct, unknown configs; [] when exhausted
    s.tell(batch[0], 0.153)    # median ms, or None for a failed config

The contract is :class:`~autotune.search.strategies.base.Strategy`'s; :func:`register` adds
a strategy (:mod:`autotune.search.strategies.registry`); the built-ins are
:mod:`autotune.search.strategies.builtin`'s. The search loop
(:class:`autotune.search.tuner.Tuner`) and a replay of a recorded table use the same objects.
"""

from __future__ import annotations

from autotune.search.strategies import builtin  # noqa: F401 - registers the built-ins
from autotune.search.strategies.base import Known, Strategy
from autotune.search.strategies.registry import (DEFAULT_STRATEGY, PARETO_STRATEGY, STRATEGIES, SWEEP_STRATEGY,
                                                 TRAITS, Factory, check_strategy, check_strategy_options, make_strategy,
                                                 needs_prior, pareto_strategies, register, traits_of)
from autotune.search.strategies.traits import StrategyOption, StrategyOptions, Traits

__all__ = ["DEFAULT_STRATEGY", "PARETO_STRATEGY", "STRATEGIES", "SWEEP_STRATEGY", "TRAITS", "Factory", "Known", "Strategy",
           "StrategyOption", "StrategyOptions", "Traits", "check_strategy", "check_strategy_options",
           "make_strategy", "needs_prior", "pareto_strategies", "register", "traits_of"]
