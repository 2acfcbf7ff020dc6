"""The options of one search, gathered into one frozen value checked once where it is built.

:class:`SearchOptions` is built once at the edge (the CLI from its flags, :func:`autotune.tune`
from its keywords) and handed down whole: the search loop (:class:`autotune.search.tuner.Tuner`),
the workers of several GPUs and the op search read its fields, and never check them again.
It holds two groups that travel whole: ``measure`` (:class:`MeasureOptions`, what the benchmark
opens with) and ``retime`` (:class:`RetimeOptions`); their fields are also given and read flat
(:data:`MEASURE_FIELDS`, :data:`RETIME_FIELDS`), mapped into the groups in ``SearchOptions``'s
constructor only. Messages name the parameter (``trials 0 is not allowed``); the CLI says its
flag instead (:data:`FLAGS`). The refusal, :class:`OptionError`, lives in
:mod:`autotune.measure.option_error`, which the measuring options and the strategies' registry
import too.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.measure.measure_options import (MAX_REPEATS, MAX_SECONDS, MAX_SEED, MeasureOptions, is_int,
                                              is_seconds, refuse_misplaced)
from autotune.measure.option_error import FLAGS, OptionError
from autotune.search.strategies.registry import (DEFAULT_STRATEGY, PARETO_STRATEGY, check_strategy,
                                                 check_strategy_options, pareto_strategies, traits_of)
from autotune.search.strategies.traits import StrategyOptions, Traits

if TYPE_CHECKING:
    from autotune.measure.timing import Precision
    from optuna.samplers import BaseSampler

__all__ = ["SearchOptions", "MeasureOptions", "RetimeOptions", "OptionError", "FLAGS", "OBJECTIVES",
           "PARETO_OBJECTIVES", "MEASURE_FIELDS", "RETIME_FIELDS", "REMOVED", "MAX_COUNT", "MAX_RETIMED", "MAX_REPEATS",
           "MAX_SECONDS", "MAX_SEED"]

PARETO_OBJECTIVES = ("time,energy",)
"""The objectives minimised together (a Pareto front, ``--objective time,energy``): the median
time per launch (ms) and the energy per launch (J), neither traded for the other."""

OBJECTIVES = ("time", "energy", "edp") + PARETO_OBJECTIVES
"""What a search may minimise: the median time per launch (ms), the energy per launch (J),
their product, the energy-delay product (J s), or time and energy together
(:data:`PARETO_OBJECTIVES`)."""


def _text(value: Any, path: bool = False) -> bool:
    """A name, path (``path``: a ``PathLike`` too) or URL: :func:`autotune.kernel.arguments.check_text_arg`."""
    from autotune.kernel.arguments import check_path_arg, check_text_arg

    try:
        (check_path_arg if path else check_text_arg)(value, "", "")
    except InvalidInputError:
        return False
    return True


MAX_COUNT = 2**31 - 1
"""Largest trials (a trial's number is a 32-bit integer column)."""
MAX_RETIMED = 1000
"""Most configs re-timed, and most rounds of that re-timing."""


@refuse_misplaced
@dataclass(frozen=True)
class RetimeOptions:
    """How the fastest configs are re-timed, interleaved, after the trials
    (``autotune.search.retiming``). Frozen and hashable.

    Attributes:
        top_k: how many of the fastest configs are re-timed (1 .. ``MAX_RETIMED``; default 5).
        rounds: over how many rounds, each config getting the measure options' ``repeats``
            samples a round (1 .. ``MAX_RETIMED``; default 5).

    Raises:
        OptionError: (an `InvalidInputError`) naming the first field outside what is allowed.
    """

    top_k: int = 5
    rounds: int = 5

    def __post_init__(self) -> None:
        for name in ("top_k", "rounds"):
            value = getattr(self, name)
            if not is_int(value) or not 1 <= value <= MAX_RETIMED:
                raise OptionError(name, value, f"is not allowed; give 1 or more, at most {MAX_RETIMED}")


MEASURE_FIELDS = ("repeats", "ci", "ci_floor_us", "min_samples", "max_samples", "energy", "trial_timeout")
"""The flat names of a search (``tune``'s keywords, the CLI's flags) that set its ``measure``
group (:class:`MeasureOptions`); ``seed`` sets the group's seed too."""
RETIME_FIELDS = ("top_k", "rounds")
"""The flat names that set a search's ``retime`` group (:class:`RetimeOptions`)."""
_UNSET: Any = object()  # a flat name not given: the group's value stands

REMOVED = {"db": "the results database is no search option since 0.4.0: give db= beside the options, to the call "
                 "that opens it (autotune.tune(..., db=URL), tune_workload(..., db=URL); the CLI's --db)"}
"""Keywords that were fields of :class:`SearchOptions` and are no longer, each with where it
goes now: given to ``SearchOptions(...)``, ``SearchOptions.of`` or ``replace``, each is an
``InvalidInputError`` saying so, not a bare unknown keyword."""


def _refuse_removed(given: Mapping[str, Any]) -> None:
    """Refuse a keyword of :data:`REMOVED` in ``given``, saying where it goes now.

    Raises:
        InvalidInputError: naming the keyword and its value.
    """
    from autotune.kernel.arguments import shown

    for name in sorted(set(given) & set(REMOVED)):
        raise InvalidInputError(f"SearchOptions: {name} {shown(given[name])} is not allowed; {REMOVED[name]}")


def _refusing_removed(cls):
    """``cls`` whose ``__init__`` refuses a keyword of :data:`REMOVED` first (:func:`_refuse_removed`)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse_removed(kwargs)
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


@_refusing_removed
@refuse_misplaced
@dataclass(frozen=True, init=False)
class SearchOptions:
    """How one search runs: built once where the search is asked for (the CLI's flags,
    `tune`'s keywords) and checked there. Frozen and hashable;
    `SearchOptions.replace` gives a copy.

    The search's own fields sit beside two groups it hands down whole: ``measure``
    (`MeasureOptions`: how one config is measured, what the benchmark opens with) and
    ``retime`` (`RetimeOptions`: how the fastest are re-timed). Their fields are also
    given flat, as ``tune``'s keywords and the CLI's flags give them (``repeats=30``,
    ``top_k=3``: ``MEASURE_FIELDS``, ``RETIME_FIELDS``), over the group given (or the
    group's defaults), and read flat (``options.repeats``, read-only).

    Attributes:
        trials: configs to measure (1 .. ``MAX_COUNT``; fewer when the space runs out). A config is
            measured once per study: repeats and constraint breakers are never proposed.
        timeout: seconds after which no new config starts measuring (``None``: no limit).
        seed: seeds the strategy and the benchmark's random inputs (``measure.seed`` is always
            this seed); ``None``: random.
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
        objective: what is minimised (``OBJECTIVES``): ``time``, ``energy`` (J per launch,
            NVML's total-energy counter), ``edp`` (energy x time), or ``time,energy``: both at
            once, a Pareto front (each config's ms and J told to a multi-objective strategy;
            the key's best is the front's re-timed fastest); all but ``time`` meter energy
            and turn the early stop off (`SearchOptions.benchmark_options`).
        queue: configs to measure first, after the kernel's default, in order (e.g. a
            dispatch's configs, so that its regret at the new shape is measured: ``autotune
            tune-shapes``); those that break the space's constraints or were measured are skipped.
        measure: how one config is measured (`MeasureOptions`: ``repeats``, ``ci``,
            ``ci_floor_us``, ``min_samples``, ``max_samples``, ``energy``: meter energy with
            the ``time`` objective too, ``trial_timeout``: seconds).
        retime: how the fastest configs are re-timed after the trials (`RetimeOptions`:
            ``top_k`` and ``rounds``).

    Every field is checked by type and range where the value is built: integers are never
    booleans, seconds are finite and at most ``MAX_SECONDS``, ``resume`` is a bool (``"no"``
    is a truthy string), ``space`` a path (a non-empty string without control characters).

    The results database is no option of the search (``REMOVED``): it is given beside the
    options, once, to what opens it (``tune(..., db=URL)``, the CLI's ``--db``).

    Raises:
        OptionError: (an `InvalidInputError`) naming the
            first field outside what is allowed, and what is (a group's field by its flat
            name: ``repeats 19 is not allowed; ...``).
        InvalidInputError: an unknown keyword, a field given twice, too many positional values;
            a keyword of ``REMOVED`` (``db``), saying where it goes now.
    """

    trials: int
    timeout: float | None
    seed: int | None
    strategy: str | BaseSampler | None
    batch: int | None
    resume: bool
    space: str | None
    queue: tuple[Config, ...]
    strategy_options: Mapping[str, Any]
    objective: str
    measure: MeasureOptions
    retime: RetimeOptions

    def __init__(self, trials: int = 100, timeout: float | None = None, seed: int | None = None,
                 strategy: str | BaseSampler | None = None, batch: int | None = None, resume: bool = False,
                 space: str | None = None, repeats: int = _UNSET, top_k: int = _UNSET, rounds: int = _UNSET,
                 trial_timeout: float = _UNSET, queue: tuple[Config, ...] = (),
                 strategy_options: Mapping[str, Any] = StrategyOptions(), ci: float = _UNSET,
                 ci_floor_us: float = _UNSET, min_samples: int = _UNSET, max_samples: int = _UNSET,
                 objective: str = "time", energy: bool = _UNSET, *, measure: MeasureOptions | None = None,
                 retime: RetimeOptions | None = None) -> None:
        """The one place where the flat names map into the groups (class doc): each flat
        value given goes over ``measure`` (``seed`` too) or ``retime`` (default: the group's
        defaults)."""
        flat = {"repeats": repeats, "ci": ci, "ci_floor_us": ci_floor_us, "min_samples": min_samples,
                "max_samples": max_samples, "energy": energy, "trial_timeout": trial_timeout}
        if measure is not None and not isinstance(measure, MeasureOptions):
            raise OptionError("measure", measure, "is not allowed; give a MeasureOptions")
        if retime is not None and not isinstance(retime, RetimeOptions):
            raise OptionError("retime", retime, "is not allowed; give a RetimeOptions")
        measure = replace(measure or MeasureOptions(), seed=seed,
                          **{k: v for k, v in flat.items() if v is not _UNSET})
        retime = replace(retime or RetimeOptions(),
                         **{k: v for k, v in (("top_k", top_k), ("rounds", rounds)) if v is not _UNSET})
        for name, value in (("trials", trials), ("timeout", timeout), ("seed", seed), ("strategy", strategy),
                            ("batch", batch), ("resume", resume), ("space", space), ("queue", queue),
                            ("strategy_options", strategy_options), ("objective", objective),
                            ("measure", measure), ("retime", retime)):
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not is_int(self.trials) or not 1 <= self.trials <= MAX_COUNT:
            raise OptionError("trials", self.trials, f"is not allowed; give 1 or more, at most {MAX_COUNT}")
        if self.timeout is not None and not is_seconds(self.timeout):
            raise OptionError("timeout", self.timeout,
                              f"is not allowed; give a positive number of seconds, at most {MAX_SECONDS}")
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
        if self.batch is not None and (not is_int(self.batch) or not 1 <= self.batch <= 1024):
            raise OptionError("batch", self.batch, "is not allowed; give 1..1024 configs")
        if not isinstance(self.resume, bool):  # resume="no" is a truthy string
            raise OptionError("resume", self.resume, "is not allowed; give True or False")
        if self.space is not None and not _text(self.space, path=True):
            raise OptionError("space", self.space, "is not allowed; give the path of a space file (.toml)")
        if not isinstance(self.queue, tuple) or not all(isinstance(c, Config) for c in self.queue):
            raise OptionError("queue", self.queue, "is not allowed; give a tuple of Config")

    # the groups' fields, read flat (read-only), as callers read them before the groups existed

    @property
    def repeats(self) -> int:
        """``measure.repeats``: timed samples per config (with ``ci`` 0) and per re-timing round."""
        return self.measure.repeats

    @property
    def ci(self) -> float:
        """``measure.ci``: the certified timing's half-width, a fraction of the median (0: off)."""
        return self.measure.ci

    @property
    def ci_floor_us(self) -> float:
        """``measure.ci_floor_us``: the half-width's absolute floor, µs."""
        return self.measure.ci_floor_us

    @property
    def min_samples(self) -> int:
        """``measure.min_samples``: the fewest samples of a config with ``ci``."""
        return self.measure.min_samples

    @property
    def max_samples(self) -> int:
        """``measure.max_samples``: the most samples of a config with ``ci``."""
        return self.measure.max_samples

    @property
    def energy(self) -> bool:
        """``measure.energy``: meter energy with the ``time`` objective too (as asked; `meters_energy`
        says whether the benchmark meters it)."""
        return self.measure.energy

    @property
    def trial_timeout(self) -> float:
        """``measure.trial_timeout``: seconds one trial may take, then its process is killed."""
        return self.measure.trial_timeout

    @property
    def top_k(self) -> int:
        """``retime.top_k``: how many of the fastest configs are re-timed."""
        return self.retime.top_k

    @property
    def rounds(self) -> int:
        """``retime.rounds``: over how many rounds they are re-timed."""
        return self.retime.rounds

    @property
    def precision(self) -> Precision | None:
        """The ``autotune.measure.timing.Precision`` of ``ci`` (``None``: ``ci`` is 0,
        ``repeats`` samples per config): ``measure.precision``."""
        return self.measure.precision

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

    def benchmark_options(self) -> MeasureOptions:
        """What the benchmark of this search opens with (``open_benchmark``, ``open_isolated``):
        ``measure``, metering energy where the objective needs it (`meters_energy`) and
        without the early stop (a time rule) for an objective other than ``time``."""
        return replace(self.measure, energy=self.meters_energy,
                       early_stop=self.measure.early_stop and self.objective == "time")

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
        _refuse_removed(given)
        known = {f.name for f in fields(cls)} | set(MEASURE_FIELDS) | set(RETIME_FIELDS)
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


