"""The registry of strategies: names, their factories, and the default (one place to change it)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping

from autotune.errors import InvalidInputError
from autotune.kernel.space import SearchSpace
from autotune.search.strategies.base import Strategy

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "check_strategy", "make_strategy", "needs_prior"]

DEFAULT_STRATEGY = "bandit"
"""The strategy of a search that names none (``autotune search``, :func:`autotune.tune`)."""


def _tpe(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    """Optuna's TPESampler (Bergstra et al., NeurIPS 2011), multivariate (Falkner et al., 2018),
    in its constant-liar mode: configs asked and not yet told count as bad, so a batch spreads."""
    import optuna

    from autotune.search.strategies.sampled import Sampled

    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True)
    return Sampled(space, sampler, seed, history, name="tpe")


def _gp(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    """Optuna's GPSampler: Bayesian optimisation with a Gaussian process and log expected
    improvement (needs PyTorch: ``pip install torch``; not in an extra, being large)."""
    import optuna

    from autotune.search.strategies.sampled import Sampled

    _needs("gp", *_PACKAGES["gp"])
    return Sampled(space, optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False), seed, history,
                   name="gp")


def _cmaes(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    """Optuna's CmaEsSampler: CMA-ES (Hansen, 2016) with margin for integer parameters
    (Hamano et al., GECCO 2022); needs the ``cmaes`` package (``pip install 'cuda-autotune[strategies]'``)."""
    import optuna

    from autotune.search.strategies.sampled import Sampled

    _needs("cmaes", *_PACKAGES["cmaes"])
    with warnings.catch_warnings():  # with_margin is "experimental" in Optuna's words
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.CmaEsSampler(seed=seed, with_margin=True, warn_independent_sampling=False)
    return Sampled(space, sampler, seed, history, name="cmaes")


def _bandit(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    from autotune.search.strategies.bandit import Bandit

    return Bandit(space, seed, history)


def _grid(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    from autotune.search.strategies.simple import Grid

    return Grid(space, seed, history)


def _random(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    from autotune.search.strategies.simple import Random

    return Random(space, seed, history)


def _transfer(space: SearchSpace, seed: int | None, history: Iterable) -> Strategy:
    from autotune.search.strategies.transfer import Transfer

    return Transfer(space, seed, history)


_PACKAGES = {"gp": ("torch", "torch"), "cmaes": ("cmaes", "cmaes")}
"""Strategies that need a package besides Optuna: (module, package to install)."""


def _needs(strategy: str, module: str, package: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise InvalidInputError(f"strategy {strategy!r} needs the package {package!r}, which is not installed: "
                                f"pip install {package}, or give another strategy")


Factory = Callable[[SearchSpace, "int | None", Iterable], Strategy]

STRATEGIES: Mapping[str, Factory] = {"bandit": _bandit, "tpe": _tpe, "random": _random, "grid": _grid, "gp": _gp, "cmaes": _cmaes,
                                     "transfer": _transfer}
"""Strategy name -> ``factory(space, seed, history)``; ``make_strategy`` also takes any
Optuna sampler. ``grid``: the space's order; ``random``: uniform over the valid configs;
``tpe``, ``gp``, ``cmaes``: Optuna's samplers over the macros' ordinals; ``transfer``: the
bests of the nearest tuned shapes first, then TPE warm-started with their trials."""


def check_strategy(strategy: object) -> None:
    """Refuse what is neither a name of :data:`STRATEGIES` nor an Optuna sampler.

    Raises:
        OptionError: naming the parameter ``strategy`` and the names allowed.
        InvalidInputError: a strategy whose package is not installed (naming it).
    """
    from autotune.search.options import OptionError

    if isinstance(strategy, str):
        if strategy not in STRATEGIES:
            raise OptionError("strategy", strategy, f"is not known; allowed: {', '.join(STRATEGIES)} "
                                                    "(or an optuna sampler)")
        if strategy in _PACKAGES:  # said before any GPU work, not when the search starts
            _needs(strategy, *_PACKAGES[strategy])
        return
    import sys

    optuna = sys.modules.get("optuna")  # a sampler exists only where Optuna was imported: none is imported here
    if optuna is None or not isinstance(strategy, optuna.samplers.BaseSampler):
        raise OptionError("strategy", strategy, f"({type(strategy).__name__}) is not allowed; give one of "
                                                f"{', '.join(STRATEGIES)} or an optuna sampler")


def needs_prior(strategy: object) -> bool:
    """Whether the strategy reads other shapes' trials (the search loop then reads them from the store)."""
    return strategy == "transfer"


def make_strategy(strategy: object, space: SearchSpace, seed: int | None = 0, history: Iterable = ()) -> Strategy:
    """The :class:`Strategy` named ``strategy`` (a key of :data:`STRATEGIES`), or one over
    an ``optuna.samplers.BaseSampler`` instance, for ``space``.

    Args:
        seed: seeds its proposals (``None``: random).
        history: what is known before: ``(config, ms | None)`` of this problem (never
            proposed again), or ``(config, ms | None, distance)`` /
            :class:`~autotune.search.strategies.base.Known` of other shapes.

    Raises:
        OptionError: an unknown name; InvalidInputError: a strategy whose package is missing.
    """
    check_strategy(strategy)
    if isinstance(strategy, str):
        return STRATEGIES[strategy](space, seed, history)
    from autotune.search.strategies.sampled import Sampled

    return Sampled(space, strategy, seed, history)
