"""The options of one search, gathered into one frozen value checked once where it is built.

:class:`SearchOptions` is built once at the edge (the CLI from its flags, :func:`autotune.tune`
from its keywords) and handed down whole: the search loop (:class:`autotune.search.tuner.Tuner`),
the workers of several GPUs and the op search read its fields, and never check them again.
Messages name the parameter (``trials 0 is not allowed``); the CLI says its flag instead
(:data:`FLAGS`). The refusal, :class:`OptionError`, lives in :mod:`autotune.measure.option_error`,
which the strategies' registry imports too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.measure.isolation import DEFAULT_TRIAL_TIMEOUT_S
from autotune.measure.option_error import FLAGS, OptionError
from autotune.search.strategies.registry import (DEFAULT_STRATEGY, PARETO_STRATEGY, check_strategy,
                                                 check_strategy_options, pareto_strategies, traits_of)
from autotune.search.strategies.traits import StrategyOptions, Traits

if TYPE_CHECKING:
    from autotune.measure.timing import Precision
    from optuna.samplers import BaseSampler

__all__ = ["SearchOptions", "OptionError", "FLAGS", "OBJECTIVES", "PARETO_OBJECTIVES"]

PARETO_OBJECTIVES = ("time,energy",)
"""The objectives minimised together (a Pareto front, ``--objective time,energy``): the median
time per launch (ms) and the energy per launch (J), neither traded for the other."""

OBJECTIVES = ("time", "energy", "edp") + PARETO_OBJECTIVES
"""What a search may minimise: the median time per launch (ms), the energy per launch (J),
their product, the energy-delay product (J s), or time and energy together
(:data:`PARETO_OBJECTIVES`)."""

MAX_SEED = 2**32 - 1
"""Largest seed: Optuna's samplers seed NumPy's ``RandomState``, which takes 0..2**32-1."""


def _text(value: Any, path: bool = False) -> bool:
    """A name, path (``path``: a ``PathLike`` too) or URL: :func:`autotune.kernel.arguments.check_text_arg`."""
    from autotune.kernel.arguments import check_path_arg, check_text_arg

    try:
        (check_path_arg if path else check_text_arg)(value, "", "")
    except InvalidInputError:
        return False
    return True


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


MAX_COUNT = 2**31 - 1
"""Largest trials (a trial's number is a 32-bit integer column)."""
MAX_REPEATS = 100_000
"""Most timed samples per config (the median of more tells nothing new, and they are held in memory)."""
MAX_RETIMED = 1000
"""Most configs re-timed, and most rounds of that re-timing."""
MAX_SECONDS = 10**7
"""Longest timeout, seconds (about 116 days; far longer ones overflow the waits' timers)."""


def _seconds(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and 0 < value <= MAX_SECONDS)


@dataclass(frozen=True)
class SearchOptions:
    """How one search runs: built once where the search is asked for (the CLI's flags,
    `tune`'s keywords) and checked there. Frozen and hashable;
    `SearchOptions.replace` gives a copy.

    Attributes:
        trials: configs to measure (1 .. ``MAX_COUNT``; fewer when the space runs out). A config is
            measured once per study: repeats and constraint breakers are never proposed.
        timeout: seconds after which no new config starts measuring (``None``: no limit).
        seed: seeds the strategy (and the benchmark's random inputs); ``None``: random.
        strategy: a name of `STRATEGIES` (``bandit``, ``tpe``,
            ``random``, ``grid``, ``gp``, ``cmaes``, ``transfer``, ``nsga2``, or one
            `register`-ed) or an
            ``optuna.samplers.BaseSampler``; default (``None``)
            `DEFAULT_STRATEGY`, or
            `PARETO_STRATEGY` (``nsga2``)
            for ``objective="time,energy"``. With that objective the strategy's traits must
            say ``pareto`` (``nsga2``, ``random``, ``grid``); an Optuna sampler given is told
            both values and must handle a multi-objective study (NSGA-II, TPE, random do).
        strategy_options: the strategy's own options, name -> value (or its text, as
            ``--strategy-option KEY=VALUE`` gives it): those its
            `Traits` name (``tpe``: ``startup``;
            ``transfer``: ``queue``, ``shapes``; ``bandit`` takes none), kept parsed
            as a read-only, hashable mapping. Changing ``strategy`` through
            `SearchOptions.replace` without giving these
            drops them (they were the old strategy's).
        batch: configs the strategy proposes at once, compiled on every core while the GPU
            measures the batch before (``None``: as many as the compile workers,
            ``autotune.measure.pipeline.workers()``, at least 1).
        resume: continue the key's existing study instead of refusing to touch it.
        space: a space TOML file instead of the kernel's own space (``None``).
        repeats: timed samples per config when ``ci`` is 0, and per config and round of the
            final re-timing (20 .. ``MAX_REPEATS``).
        ci: certified timing (`autotune.measure.timing.Precision`): each config is sampled
            until half the 95 % CI of its median is within this fraction of it (0 < ci < 1;
            default 0.01), or within ``ci_floor_us``; 0 turns it off (``repeats`` samples).
        ci_floor_us: the absolute floor of that half-width, µs (>= 0; default 0.5).
        min_samples: the fewest samples of a config with ``ci`` (``PROBE`` .. ``MAX_REPEATS``).
        max_samples: the most samples of a config with ``ci`` (``min_samples`` .. ``MAX_REPEATS``).
        objective: what is minimised (``OBJECTIVES``): ``time``, ``energy`` (J per launch,
            NVML's total-energy counter), ``edp`` (energy x time), or ``time,energy``: both at
            once, a Pareto front (each config's ms and J told to a multi-objective strategy;
            the key's best is the front's re-timed fastest); all but ``time`` meter energy.
        energy: meter energy per launch with the ``time`` objective too (stored beside the time).
        top_k: how many of the fastest configs are re-timed, interleaved, after the trials
            (1 .. ``MAX_RETIMED``).
        rounds: over how many rounds they are re-timed (1 .. ``MAX_RETIMED``).
        trial_timeout: seconds one trial may take before its measuring process is killed (> 0).
        db: results database URL (``None``: ``AUTOTUNE_DB`` or the platformdirs default).
        queue: configs to measure first, after the kernel's default, in order (e.g. a
            dispatch's configs, so that its regret at the new shape is measured: ``autotune
            tune-shapes``); those that break the space's constraints or were measured are skipped.

    Every field is checked by type and range where the value is built: integers are never
    booleans, seconds are finite and at most ``MAX_SECONDS``, ``resume`` is a bool (``"no"``
    is a truthy string), ``space`` a path and ``db`` a URL (non-empty strings without control
    characters: an empty ``db`` would silently mean the default).

    Raises:
        OptionError: (an `InvalidInputError`) naming the
            first field outside what is allowed, and what is.
    """

    trials: int = 100
    timeout: float | None = None
    seed: int | None = None
    strategy: str | BaseSampler | None = None
    batch: int | None = None
    resume: bool = False
    space: str | None = None
    repeats: int = 50
    top_k: int = 5
    rounds: int = 5
    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S
    db: str | None = None
    queue: tuple[Config, ...] = ()
    strategy_options: Mapping[str, Any] = StrategyOptions()
    ci: float = 0.01
    ci_floor_us: float = 0.5
    min_samples: int = 20
    max_samples: int = 200
    objective: str = "time"
    energy: bool = False

    def __post_init__(self) -> None:
        if not _int(self.trials) or not 1 <= self.trials <= MAX_COUNT:
            raise OptionError("trials", self.trials, f"is not allowed; give 1 or more, at most {MAX_COUNT}")
        if self.timeout is not None and not _seconds(self.timeout):
            raise OptionError("timeout", self.timeout,
                              f"is not allowed; give a positive number of seconds, at most {MAX_SECONDS}")
        if self.seed is not None and not (_int(self.seed) and 0 <= self.seed <= MAX_SEED):
            raise OptionError("seed", self.seed, f"is not allowed; give an integer 0..{MAX_SEED}")
        if not isinstance(self.objective, str) or self.objective not in OBJECTIVES:  # before the strategy it picks
            raise OptionError("objective", self.objective, f"is not allowed; give one of {' | '.join(OBJECTIVES)}")
        if self.strategy is None:  # the default, by objective
            object.__setattr__(self, "strategy", PARETO_STRATEGY if self.pareto else DEFAULT_STRATEGY)
        check_strategy(self.strategy)
        if self.pareto and isinstance(self.strategy, str) and not self.traits.pareto:
            raise OptionError("strategy", self.strategy, f"cannot minimise {self.objective} together (its traits "
                                                         f"do not say pareto); give one of "
                                                         f"{', '.join(pareto_strategies())}")
        object.__setattr__(self, "strategy_options", check_strategy_options(self.strategy, self.strategy_options))
        if self.batch is not None and (not _int(self.batch) or not 1 <= self.batch <= 1024):
            raise OptionError("batch", self.batch, "is not allowed; give 1..1024 configs")
        if not _int(self.repeats) or not 20 <= self.repeats <= MAX_REPEATS:
            raise OptionError("repeats", self.repeats, f"is not allowed; give 20 or more, at most {MAX_REPEATS}")
        for name in ("top_k", "rounds"):
            value = getattr(self, name)
            if not _int(value) or not 1 <= value <= MAX_RETIMED:
                raise OptionError(name, value, f"is not allowed; give 1 or more, at most {MAX_RETIMED}")
        if not _seconds(self.trial_timeout):
            raise OptionError("trial_timeout", self.trial_timeout,
                              f"is not allowed; give a positive number of seconds, at most {MAX_SECONDS}")
        if not isinstance(self.resume, bool):  # resume="no" is a truthy string
            raise OptionError("resume", self.resume, "is not allowed; give True or False")
        if self.space is not None and not _text(self.space, path=True):
            raise OptionError("space", self.space, "is not allowed; give the path of a space file (.toml)")
        if self.db is not None and not _text(self.db):
            raise OptionError("db", self.db, "is not allowed; give a SQLAlchemy URL (sqlite:///PATH, "
                                             "postgresql+psycopg://USER@HOST/DB)")
        if not isinstance(self.queue, tuple) or not all(isinstance(c, Config) for c in self.queue):
            raise OptionError("queue", self.queue, "is not allowed; give a tuple of Config")
        self._check_sampling()

    def _check_sampling(self) -> None:
        from autotune.measure.timing import PROBE

        if not _number(self.ci) or not 0 <= self.ci < 1:
            raise OptionError("ci", self.ci, "is not allowed; give a fraction 0 <= ci < 1 (e.g. 0.01 for 1 %; "
                                             "0: a fixed number of samples, --repeats)")
        if not _number(self.ci_floor_us) or not 0 <= self.ci_floor_us <= 1e6:
            raise OptionError("ci_floor_us", self.ci_floor_us, "is not allowed; give 0 to 1000000 µs")
        for name in ("min_samples", "max_samples"):
            value = getattr(self, name)
            if not _int(value) or not PROBE <= value <= MAX_REPEATS:
                raise OptionError(name, value, f"is not allowed; give {PROBE} or more, at most {MAX_REPEATS}")
        if self.max_samples < self.min_samples:
            raise OptionError("max_samples", self.max_samples,
                              f"is not allowed; give at least the minimum count of samples ({self.min_samples})")
        if not isinstance(self.energy, bool):
            raise OptionError("energy", self.energy, "is not allowed; give True or False")

    @property
    def precision(self) -> Precision | None:
        """The ``autotune.measure.timing.Precision`` of ``ci`` (``None``: ``ci`` is 0,
        ``repeats`` samples per config)."""
        from autotune.measure.timing import Precision

        if self.ci == 0:
            return None
        return Precision(self.ci, self.ci_floor_us * 1e-3, self.min_samples, self.max_samples)

    @property
    def objectives(self) -> tuple[str, ...]:
        """The objectives minimised, in order: ``("time",)``, or ``("time", "energy")`` for a
        Pareto front."""
        return tuple(self.objective.split(","))

    @property
    def pareto(self) -> bool:
        """Whether several objectives are minimised together (``PARETO_OBJECTIVES``: ``time,energy``)."""
        return self.objective in PARETO_OBJECTIVES

    @property
    def meters_energy(self) -> bool:
        """Whether the benchmark meters energy (``energy``, or an objective that needs it)."""
        return self.energy or self.objective != "time"

    def benchmark_options(self) -> dict[str, Any]:
        """The keywords of the benchmark these options open (``open_benchmark``): repeats, seed,
        precision, energy, and the early stop (a time rule: off for the energy objectives)."""
        options = {"repeats": self.repeats, "seed": self.seed, "precision": self.precision,
                   "energy": self.meters_energy}
        if self.objective != "time":
            options["early_stop"] = False
        return options

    @classmethod
    def of(cls, options: SearchOptions | None = None, **given: Any) -> SearchOptions:
        """``options`` (default: the defaults) with the keywords ``given`` over them, ``sampler=``
        taken as the deprecated name of ``strategy`` (what `tune` takes).
        A new ``strategy`` without ``strategy_options`` drops the old strategy's options.

        Raises:
            OptionError: a bad value.
            InvalidInputError: an unknown keyword.
        """
        if "sampler" in given:
            sampler = given.pop("sampler")
            given.setdefault("strategy", sampler)
        if options is not None and "strategy" in given and "strategy_options" not in given \
                and given["strategy"] is not options.strategy and given["strategy"] != options.strategy:
            given["strategy_options"] = None  # the old strategy's options are not the new one's
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise InvalidInputError(f"unknown search option {unknown[0]!r}; allowed: {', '.join(sorted(known))}")
        return replace(options, **given) if options is not None else cls(**given)

    def replace(self, **changes: Any) -> SearchOptions:
        """A copy with ``changes`` (checked again; an unknown name is an InvalidInputError)."""
        return SearchOptions.of(self, **changes)

    @property
    def strategy_name(self) -> str:
        """The strategy's name, or the class name of a sampler given instead (stored with the search)."""
        return self.strategy if isinstance(self.strategy, str) else type(self.strategy).__name__

    @property
    def traits(self) -> Traits:
        """What the strategy is (`Traits`): what the
        search loop asks, never the strategy's name."""
        return traits_of(self.strategy)

    def batch_size(self) -> int:
        """``batch``, or the compile workers (``autotune.measure.pipeline.workers()``), at least 1."""
        if self.batch is not None:
            return self.batch
        from autotune.measure.pipeline import workers

        return max(1, workers())


def _bound(init):
    """The dataclass's ``__init__``, its arguments bound first: an unknown keyword
    (``SearchOptions(bogus=1)``), a field given twice or too many positional values is an
    :class:`~autotune.errors.InvalidInputError` naming them, like a bad value, not a TypeError."""
    import functools
    import inspect

    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            known = ", ".join(f.name for f in fields(SearchOptions))
            raise InvalidInputError(f"SearchOptions: {exc}; allowed: {known}") from None
        init(self, *args, **kwargs)

    return __init__


SearchOptions.__init__ = _bound(SearchOptions.__init__)  # type: ignore[method-assign]
