"""Search strategies behind one small registry: ``name -> factory(space, seed, history)``.

::

    from autotune.search.strategies import STRATEGIES, make_strategy, Strategy
    s = make_strategy("tpe", space, seed=0, history=())  # or any optuna.samplers.BaseSampler
    batch = s.ask(16)          # up to 16 valid, distinct, unknown configs; [] when exhausted
    s.tell(batch[0], 0.153)    # median ms, or None for a failed config

The contract is :class:`~autotune.search.strategies.base.Strategy`'s. The search loop
(:class:`autotune.search.tuner.Tuner`) and a replay of a recorded table use the same objects.
"""

from __future__ import annotations

from autotune.search.strategies.base import Known, Strategy
from autotune.search.strategies.registry import (DEFAULT_STRATEGY, STRATEGIES, check_strategy, make_strategy,
                                                 needs_prior)

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Known", "Strategy", "check_strategy", "make_strategy",
           "needs_prior"]
