"""The built-in strategies, registered by name (Helion's ``search_algorithms``): each factory and
its options live beside its class (:mod:`~autotune.search.strategies.sampled`,
:mod:`~autotune.search.strategies.simple`, :mod:`~autotune.search.strategies.bandit`,
:mod:`~autotune.search.strategies.transfer`); this module only says which names they take and
their :class:`~autotune.search.strategies.traits.Traits`. Importing
:mod:`autotune.search.strategies` imports it, so the registry holds them before any look-up.

The order of the calls is the order of :data:`~autotune.search.strategies.registry.STRATEGIES`
(the names an error message lists).
"""

from __future__ import annotations

from autotune.search.strategies import sampled, simple, transfer
from autotune.search.strategies.bandit import Bandit
from autotune.search.strategies.registry import PARETO_STRATEGY, SWEEP_STRATEGY, register
from autotune.search.strategies.traits import Traits

__all__: list[str] = []

register("bandit", Bandit)
register("tpe", sampled.tpe, Traits(options=sampled.TPE_OPTIONS))
register("random", simple.random_configs, Traits(pareto=True))  # values are not read: any number of objectives
register(SWEEP_STRATEGY, simple.grid, Traits(in_order=True, partitions=True, pareto=True))
register("gp", sampled.gp, Traits(packages=("torch",), options=sampled.GP_OPTIONS))
register("cmaes", sampled.cmaes, Traits(packages=("cmaes",)))
register("transfer", transfer.transfer, Traits(needs_prior=True, options=transfer.OPTIONS))
register(PARETO_STRATEGY, sampled.nsga2, Traits(options=sampled.NSGA2_OPTIONS, pareto=True))
register("tpe_local", sampled.tpe_local, Traits(options=sampled.TPE_LOCAL_OPTIONS))
