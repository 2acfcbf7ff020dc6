"""The registry of strategies, its mechanism: names, their factories and
:class:`~autotune.search.strategies.traits.Traits`, and the default (:data:`DEFAULT_STRATEGY`,
the one place to change it). The built-ins are registered by
:mod:`autotune.search.strategies.builtin`, each factory and its options beside its class.

A user's strategy is one :func:`register` call away from ``autotune search --strategy NAME``
and ``autotune.tune(..., strategy=NAME)`` (its docstring has an example). The factory is called
``factory(space, seed, history, **options)``: ``options`` are the traits' options, each the
value given (``strategy_options``) or its default; a strategy whose traits say ``partitions``
also gets ``part=(i, n)`` and ``last=`` where several workers share one study. The command
line sees a strategy registered when its module is imported: by the program that calls
:func:`autotune.tune`, or by ``AUTOTUNE_STRATEGIES=module[,module...]``: each module is
imported when a name is not registered (:func:`check_strategy`), so ``autotune search`` and
the worker process of each GPU of a search over several GPUs find it.
"""

from __future__ import annotations

import importlib
import importlib.util
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from autotune import settings
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.measure.option_error import OptionError
from autotune.search.strategies.base import Strategy
from autotune.search.strategies.traits import StrategyOptions, Traits

__all__ = ["DEFAULT_STRATEGY", "PARETO_STRATEGY", "SWEEP_STRATEGY", "pareto_strategies", "STRATEGIES", "TRAITS", "Factory", "check_strategy",
           "check_strategy_options", "import_user_strategies", "make_strategy", "needs_prior", "register",
           "traits_of"]

DEFAULT_STRATEGY = "tpe_local"
"""The strategy of a search that names none (``autotune search``, `tune`,
`SearchOptions`, a workload's problem without tuned
shapes): written here only, so that a new default is this one line. ``tpe_local``: TPE, half
of its proposals after a start of 5 one-macro steps from the best so far, the start a ``blend``
design over the valid configs (why it is the default: benchmarks/README.md, "The search
strategies' evidence")."""

SWEEP_STRATEGY = "grid"
"""The strategy that measures every valid config in the space's order (its traits:
``in_order``, ``partitions``): ``autotune sweep``, and a search whose trials cover its space
(:func:`autotune.search.on_gpu.whole_space`)."""

PARETO_STRATEGY = "nsga2"
"""The strategy of a search over several objectives together (``--objective time,energy``) that
names none: one whose traits say ``pareto``."""

Factory = Callable[..., Strategy]
"""``factory(space, seed, history, **options)`` -> :class:`Strategy` (module doc)."""


_FACTORIES: dict[str, Factory] = {}
_TRAITS: dict[str, Traits] = {}

STRATEGIES: Mapping[str, Factory] = types.MappingProxyType(_FACTORIES)
"""Strategy name -> ``factory(space, seed, history, **options)`` (read-only;
`register` adds one); ``make_strategy`` also
takes any Optuna sampler. ``grid``: the space's order; ``random``: uniform over the valid
configs; ``tpe``, ``gp``, ``cmaes``: Optuna's samplers over the macros' ordinals;
``transfer``: the bests of the nearest tuned shapes, tried while they beat the default
strategy's configs measured beside them, and that strategy."""

TRAITS: Mapping[str, Traits] = types.MappingProxyType(_TRAITS)
"""Strategy name -> its :class:`~autotune.search.strategies.traits.Traits` (read-only)."""


def register(name: str, factory: Factory, traits: Traits = Traits(), *, replace: bool = False) -> None:
    """Make ``factory`` the strategy called ``name``, with ``traits``: selectable by name from
    `tune`, `SearchOptions`,
    ``autotune search --strategy NAME`` and a replay.

    ```python
    from autotune.search.strategies import Strategy, StrategyOption, Traits, register

    class Descent(Strategy):               # the ask/tell contract
        def __init__(self, space, seed=None, history=(), step=1):
            self.step = step
            super().__init__(space, seed, history)

        def _propose(self, k):             # up to k valid configs, neither told nor asked
            ...

    register("descent", Descent, Traits(options=(StrategyOption("step", 1, low=1, high=8),)))
    ```

    The command line sees it where the module that registers it is imported: name the module
    in ``AUTOTUNE_STRATEGIES`` (comma-separated, importable from the command's Python, e.g. by
    ``PYTHONPATH``); each name not registered makes the search import those modules first, in
    the worker process of each GPU too.

    Args:
        name: letters, digits, ``_`` and ``-``, starting with a letter, at most 64 characters.
        factory: called ``factory(space, seed, history, **options)``, where ``space`` is the
            ``SearchSpace``, ``seed`` an int or ``None``, ``history`` the observations known
            before the search and ``options`` every option of ``traits``, given or its default
            (a strategy whose traits say ``partitions`` also gets ``part=(i, n)`` and
            ``last=`` where several workers share one study); returns a ``Strategy``
            (``autotune.search.strategies.base``).
        traits: what the search loop needs to know of it
            (`Traits`); default: a plain ask/tell
            strategy without options.
        replace: allow replacing a strategy registered already (else that is refused).

    Raises:
        InvalidInputError: a bad name, a name taken (without ``replace``), a factory that is
            not callable, or ``traits`` that is not a ``Traits``.
    """
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,63}", name):
        raise InvalidInputError(f"strategy name {name!r} is not allowed; give letters, digits, _ or -, "
                                "starting with a letter, at most 64 characters")
    if name in _FACTORIES and not replace:
        raise InvalidInputError(f"strategy {name!r} is registered already; give replace=True to replace it")
    if not callable(factory):
        raise InvalidInputError(f"strategy {name!r}: factory {factory!r} is not callable")
    if not isinstance(traits, Traits):
        raise InvalidInputError(f"strategy {name!r}: traits {traits!r} is not allowed; give a Traits")
    _FACTORIES[name], _TRAITS[name] = factory, traits


def pareto_strategies() -> list[str]:
    """The names of the registered strategies whose traits say ``pareto`` (for messages)."""
    return [name for name, traits in _TRAITS.items() if traits.pareto]


def import_user_strategies(modules: str | None = None) -> None:
    """Import the modules named in ``modules`` (default: ``AUTOTUNE_STRATEGIES``), comma-separated,
    so that their :func:`register` calls run (the command line's way to a user's strategy).

    Raises:
        InvalidInputError: a module that cannot be imported (naming it).
    """
    modules = settings.STRATEGIES.get() if modules is None else modules
    for module in filter(None, (m.strip() for m in modules.split(","))):
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any failure of a user's module is one line
            raise InvalidInputError(f"{settings.STRATEGIES.name} module {module!r} cannot be imported: "
                                    f"{type(exc).__name__}: {exc}") from None


def _needs(strategy: str, package: str) -> None:
    if importlib.util.find_spec(package) is None:
        raise InvalidInputError(f"strategy {strategy!r} needs the package {package!r}, which is not installed: "
                                f"pip install {package}, or give another strategy")


def traits_of(strategy: object) -> Traits:
    """The traits of ``strategy``: a registered name's, or a plain strategy's (an Optuna sampler,
    or a name not registered: :func:`check_strategy` refuses those)."""
    return _TRAITS.get(strategy, Traits()) if isinstance(strategy, str) else Traits()


def check_strategy(strategy: object) -> None:
    """Refuse what is neither a name of :data:`STRATEGIES` nor an Optuna sampler.

    Raises:
        OptionError: naming the parameter ``strategy`` and the names allowed.
        InvalidInputError: a strategy whose package is not installed (naming it).
    """
    if isinstance(strategy, str):
        if strategy not in _FACTORIES:
            import_user_strategies()  # a user's strategy, in a module AUTOTUNE_STRATEGIES names
        if strategy not in _FACTORIES:
            raise OptionError("strategy", strategy, f"is not known; allowed: {', '.join(_FACTORIES)} "
                                                    "(or an optuna sampler)")
        for package in _TRAITS[strategy].packages:  # said before any GPU work, not when the search starts
            _needs(strategy, package)
        return
    import sys

    optuna = sys.modules.get("optuna")  # a sampler exists only where Optuna was imported: none is imported here
    if optuna is None or not isinstance(strategy, optuna.samplers.BaseSampler):
        raise OptionError("strategy", strategy, f"({type(strategy).__name__}) is not allowed; give one of "
                                                f"{', '.join(_FACTORIES)} or an optuna sampler")


def check_strategy_options(strategy: object, given: Mapping[str, Any] | None) -> StrategyOptions:
    """``given`` (option name -> value, or its text) checked against what ``strategy`` takes
    (its traits' options); returns them parsed, as a :class:`StrategyOptions`.

    Raises:
        OptionError: (parameter ``strategy_options``) a value that is not a mapping, a name the
            strategy does not take (naming those it takes), or a value outside what the option
            allows (naming it), each shown as ``KEY=VALUE``.
    """
    if given is None:
        return StrategyOptions()
    if not isinstance(given, Mapping):
        raise OptionError("strategy_options", given, "is not allowed; give a mapping of option name to value")
    name = strategy if isinstance(strategy, str) else type(strategy).__name__
    takes = traits_of(strategy).options
    parsed = {}
    for key, value in given.items():
        option = traits_of(strategy).option(key) if isinstance(key, str) else None
        if option is None:
            allowed = ", ".join(f"{o.name} ({o.allowed})" for o in takes) if takes else "no option"
            raise OptionError("strategy_options", f"{key}={value}", f"is not allowed; strategy {name} takes {allowed}")
        try:
            parsed[key] = option.parse(value)
        except (ValueError, TypeError, OverflowError):
            raise OptionError("strategy_options", f"{key}={value}",
                              f"is not allowed; option {key} of strategy {name} takes {option.allowed}") from None
    return StrategyOptions(parsed)


def needs_prior(strategy: object) -> bool:
    """Whether the strategy reads other shapes' trials (the search loop then reads them from the
    store): its traits' ``needs_prior``."""
    return traits_of(strategy).needs_prior


def make_strategy(strategy: object, space: SearchSpace, seed: int | None = 0, history: Iterable = (), *,
                  options: Mapping[str, Any] | None = None, part: tuple[int, int] = (0, 1),
                  last: Config | None = None, objectives: int = 1) -> Strategy:
    """The :class:`Strategy` named ``strategy`` (a key of :data:`STRATEGIES`), or one over
    an ``optuna.samplers.BaseSampler`` instance, for ``space``.

    Args:
        seed: seeds its proposals (``None``: random).
        history: what is known before: ``(config, ms | None)`` of this problem (never
            proposed again), or ``(config, ms | None, distance)`` /
            :class:`~autotune.search.strategies.base.Known` of other shapes.
        options: the strategy's options (:func:`check_strategy_options`); the others keep
            their defaults.
        part: worker ``(i, n)`` of a study shared by ``n`` workers; given to a strategy whose
            traits say ``partitions`` (others ignore it).
        last: a config that worker proposes after all others (another worker measures it
            first); given with ``part``.
        objectives: how many values each config is told (2: time and energy, a Pareto front);
            above 1, given to a strategy whose traits say ``pareto`` (refused for others), and
            an Optuna sampler is wrapped in a study of that many directions.

    Raises:
        OptionError: an unknown name or option, a bad option value; InvalidInputError: a
            strategy whose package is missing.
    """
    check_strategy(strategy)
    given = check_strategy_options(strategy, options)
    if isinstance(strategy, str):
        traits = _TRAITS[strategy]
        keywords: dict[str, Any] = {o.name: given.get(o.name, o.default) for o in traits.options}
        if traits.partitions and part[1] > 1:
            keywords.update(part=part, last=last)
        if objectives > 1:
            if not traits.pareto:
                raise OptionError("strategy", strategy, f"cannot minimise {objectives} objectives together; give one "
                                                        f"of {', '.join(pareto_strategies())}")
            keywords["objectives"] = objectives
        return _FACTORIES[strategy](space, seed, history, **keywords)
    from autotune.search.strategies.sampled import Sampled

    return Sampled(space, strategy, seed, history, objectives=objectives)
