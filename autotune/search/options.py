"""The options of one search, gathered into one frozen value checked once where it is built.

:class:`SearchOptions` is built once at the edge (the CLI from its flags, :func:`autotune.tune`
from its keywords) and handed down whole: the search loop (:class:`autotune.search.tuner.Tuner`),
the workers of several GPUs and the op search read its fields, and never check them again.
Messages name the parameter (``trials 0 is not allowed``); the CLI says its flag instead
(:data:`FLAGS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.measure.isolation import DEFAULT_TRIAL_TIMEOUT_S

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler

__all__ = ["SearchOptions", "OptionError", "FLAGS"]

MAX_SEED = 2**32 - 1
"""Largest seed: Optuna's samplers seed NumPy's ``RandomState``, which takes 0..2**32-1."""

FLAGS = {"trials": "--trials", "timeout": "--timeout", "seed": "--seed", "strategy": "--strategy",
         "batch": "--batch", "resume": "--resume", "space": "--space", "repeats": "--repeats",
         "top_k": "--top-k", "rounds": "--rounds", "trial_timeout": "--trial-timeout", "db": "--db"}
"""Each field's command-line flag (``autotune search``), for the CLI's messages."""


class OptionError(InvalidInputError):
    """A search option outside what is allowed: ``param`` names the field, ``text`` the rest
    of the message after ``<param> <value>``."""

    def __init__(self, param: str, value: Any, text: str) -> None:
        self.param, self.value, self.text = param, value, text
        super().__init__(f"{param} {_show(value)} {text}")

    def as_flag(self) -> InvalidInputError:
        """The same refusal naming the command-line flag (``--top-k 0 ...``)."""
        return InvalidInputError(f"{FLAGS.get(self.param, self.param)} {_show(self.value)} {self.text}")


def _show(value: Any) -> str:
    from autotune.kernel.arguments import shown

    if isinstance(value, float):
        return f"{value:g}"
    return shown(value) if isinstance(value, str) or not isinstance(value, (int, type(None))) else str(value)


def _text(value: Any, path: bool = False) -> bool:
    """A name, path (``path``: a ``PathLike`` too) or URL: :func:`autotune.kernel.arguments.check_text_arg`."""
    from autotune.kernel.arguments import check_path_arg, check_text_arg

    try:
        (check_path_arg if path else check_text_arg)(value, "", "")
    except InvalidInputError:
        return False
    return True


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
    [`tune`][autotune.search.tune.tune]'s keywords) and checked there. Frozen and hashable;
    [`replace`][autotune.search.options.SearchOptions.replace] gives a copy.

    Attributes:
        trials: configs to measure (1 .. ``MAX_COUNT``; fewer when the space runs out). A config is
            measured once per study: repeats and constraint breakers are never proposed.
        timeout: seconds after which no new config starts measuring (``None``: no limit).
        seed: seeds the strategy (and the benchmark's random inputs); ``None``: random.
        strategy: a name of [`STRATEGIES`][autotune.search.strategies.STRATEGIES] (``bandit``, the default, ``tpe``,
            ``random``, ``grid``, ``gp``, ``cmaes``, ``transfer``) or an
            ``optuna.samplers.BaseSampler``.
        batch: configs the strategy proposes at once, compiled on every core while the GPU
            measures the batch before (``None``: as many as the compile workers,
            ``autotune.measure.pipeline.workers()``, at least 1).
        resume: continue the key's existing study instead of refusing to touch it.
        space: a space TOML file instead of the kernel's own space (``None``).
        repeats: timed samples per config (20 .. ``MAX_REPEATS``).
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
        OptionError: (an [`InvalidInputError`][autotune.errors.InvalidInputError]) naming the
            first field outside what is allowed, and what is.
    """

    trials: int = 100
    timeout: float | None = None
    seed: int | None = None
    strategy: str | BaseSampler = "bandit"  # DEFAULT_STRATEGY (the registry imports this module: no import)
    batch: int | None = None
    resume: bool = False
    space: str | None = None
    repeats: int = 50
    top_k: int = 5
    rounds: int = 5
    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S
    db: str | None = None
    queue: tuple[Config, ...] = ()

    def __post_init__(self) -> None:
        from autotune.search.strategies import check_strategy

        if not _int(self.trials) or not 1 <= self.trials <= MAX_COUNT:
            raise OptionError("trials", self.trials, f"is not allowed; give 1 or more, at most {MAX_COUNT}")
        if self.timeout is not None and not _seconds(self.timeout):
            raise OptionError("timeout", self.timeout,
                              f"is not allowed; give a positive number of seconds, at most {MAX_SECONDS}")
        if self.seed is not None and not (_int(self.seed) and 0 <= self.seed <= MAX_SEED):
            raise OptionError("seed", self.seed, f"is not allowed; give an integer 0..{MAX_SEED}")
        check_strategy(self.strategy)
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

    @classmethod
    def of(cls, options: SearchOptions | None = None, **given: Any) -> SearchOptions:
        """``options`` (default: the defaults) with the keywords ``given`` over them, ``sampler=``
        taken as the deprecated name of ``strategy`` (what [`tune`][autotune.search.tune.tune] takes).

        Raises:
            OptionError: a bad value.
            InvalidInputError: an unknown keyword.
        """
        if "sampler" in given:
            sampler = given.pop("sampler")
            given.setdefault("strategy", sampler)
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
