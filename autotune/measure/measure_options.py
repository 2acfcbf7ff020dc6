"""How one config is measured, as one frozen value checked once where it is built.

:class:`MeasureOptions` is what a benchmark opens with
(:func:`autotune.measure.benchmark.open_benchmark`), what the measuring child process is
started with (:func:`autotune.measure.isolation.open_isolated`, which reads its
``trial_timeout``), and what a search holds as its ``measure`` group
(:class:`autotune.search.options.SearchOptions`). It is handed down whole, pickled to the
measuring process as it is, and never checked again. A bad value is an
:class:`~autotune.measure.option_error.OptionError` naming the parameter (``repeats 19 is not
allowed; ...``); the command line says its flag instead (``--repeats 19 ...``).
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

from autotune.errors import InvalidInputError
from autotune.measure.option_error import OptionError

if TYPE_CHECKING:
    from autotune.measure.timing import Precision

__all__ = ["MeasureOptions", "MAX_REPEATS", "MAX_SECONDS", "MAX_SEED", "DEFAULT_TRIAL_TIMEOUT_S"]

MAX_SEED = 2**32 - 1
"""Largest seed: Optuna's samplers seed NumPy's ``RandomState``, which takes 0..2**32-1."""
MAX_REPEATS = 100_000
"""Most timed samples per config (the median of more tells nothing new, and they are held in memory)."""
MAX_SECONDS = 10**7
"""Longest timeout, seconds (about 116 days; far longer ones overflow the waits' timers)."""
DEFAULT_TRIAL_TIMEOUT_S = 60.0
"""Seconds one trial (compile, verify, time) may take before its process is killed."""


def is_int(value: Any) -> bool:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite ``int`` or ``float`` that is not a ``bool``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_seconds(value: Any) -> bool:
    """A number of seconds a wait can take: finite, above 0, at most :data:`MAX_SECONDS`."""
    return is_number(value) and 0 < value <= MAX_SECONDS


def check_seed(value: Any) -> None:
    """Refuse a seed that is neither ``None`` nor an integer 0..:data:`MAX_SEED`.

    Raises:
        OptionError: naming ``seed``.
    """
    if value is not None and not (is_int(value) and 0 <= value <= MAX_SEED):
        raise OptionError("seed", value, f"is not allowed; give an integer 0..{MAX_SEED}")


_Class = TypeVar("_Class", bound=type)


def refuse_misplaced(cls: _Class) -> _Class:
    """``cls`` with its ``__init__``'s arguments bound first: an unknown keyword
    (``MeasureOptions(bogus=1)``), a field given twice or too many positional values is an
    :class:`~autotune.errors.InvalidInputError` naming them, like a bad value, not a TypeError."""
    init = cls.__init__
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            known = ", ".join(p for p in signature.parameters if p != "self")
            raise InvalidInputError(f"{cls.__name__}: {exc}; allowed: {known}") from None
        init(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
    return cls


@refuse_misplaced
@dataclass(frozen=True)
class MeasureOptions:
    """How one config is measured: samples, certified timing, energy, early stop, time limit.
    Frozen and hashable; `MeasureOptions.replace` gives a checked copy.

    Attributes:
        repeats: timed samples per config when ``ci`` is 0, and per config and round of a
            re-timing (20 .. ``MAX_REPEATS``; default 50).
        seed: seeds the benchmark's random inputs (``None``: fresh entropy; 0 .. ``MAX_SEED``).
            In a search it is always the search's ``seed``.
        ci: certified timing (`autotune.measure.timing.Precision`): each config is sampled
            until half the 95 % CI of its median is within this fraction of it (0 <= ci < 1;
            default 0.01), or within ``ci_floor_us``; 0 turns it off (``repeats`` samples).
        ci_floor_us: the absolute floor of that half-width, µs (0 .. 1e6; default 0.5).
        min_samples: the fewest samples of a config with ``ci`` (``PROBE`` .. ``MAX_REPEATS``; default 20).
        max_samples: the most samples of a config with ``ci`` (``min_samples`` .. ``MAX_REPEATS``; default 200).
        energy: meter joules per launch where NVML has the total-energy counter (default off).
        early_stop: stop timing a config clearly slower than the best so far
            (`autotune.measure.timing.EarlyStop`; default on).
        trial_timeout: seconds one trial (compile, verify, time) may take before its
            measuring process is killed (> 0, at most ``MAX_SECONDS``; default 60).
        warmup: launches before a config's timed samples (0 .. ``MAX_REPEATS``; default 10).

    Raises:
        OptionError: (an `InvalidInputError`) naming the first field outside what is allowed,
            and what is: integers are never booleans, numbers are finite.
    """

    repeats: int = 50
    seed: int | None = None
    ci: float = 0.01
    ci_floor_us: float = 0.5
    min_samples: int = 20
    max_samples: int = 200
    energy: bool = False
    early_stop: bool = True
    trial_timeout: float = DEFAULT_TRIAL_TIMEOUT_S
    warmup: int = 10

    def __post_init__(self) -> None:
        from autotune.measure.timing import PROBE

        if not is_int(self.repeats) or not 20 <= self.repeats <= MAX_REPEATS:
            raise OptionError("repeats", self.repeats, f"is not allowed; give 20 or more, at most {MAX_REPEATS}")
        check_seed(self.seed)
        if not is_number(self.ci) or not 0 <= self.ci < 1:
            raise OptionError("ci", self.ci, "is not allowed; give a fraction 0 <= ci < 1 (e.g. 0.01 for 1 %; "
                                             "0: a fixed number of samples, --repeats)")
        if not is_number(self.ci_floor_us) or not 0 <= self.ci_floor_us <= 1e6:
            raise OptionError("ci_floor_us", self.ci_floor_us, "is not allowed; give 0 to 1000000 µs")
        for name in ("min_samples", "max_samples"):
            value = getattr(self, name)
            if not is_int(value) or not PROBE <= value <= MAX_REPEATS:
                raise OptionError(name, value, f"is not allowed; give {PROBE} or more, at most {MAX_REPEATS}")
        if self.max_samples < self.min_samples:
            raise OptionError("max_samples", self.max_samples,
                              f"is not allowed; give at least the minimum count of samples ({self.min_samples})")
        for name in ("energy", "early_stop"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(name, getattr(self, name), "is not allowed; give True or False")
        if not is_seconds(self.trial_timeout):
            raise OptionError("trial_timeout", self.trial_timeout,
                              f"is not allowed; give a positive number of seconds, at most {MAX_SECONDS}")
        if not is_int(self.warmup) or not 0 <= self.warmup <= MAX_REPEATS:
            raise OptionError("warmup", self.warmup, f"is not allowed; give 0 or more, at most {MAX_REPEATS}")

    @property
    def precision(self) -> Precision | None:
        """The `autotune.measure.timing.Precision` of ``ci`` (``None``: ``ci`` is 0,
        ``repeats`` samples per config)."""
        from autotune.measure.timing import Precision

        if self.ci == 0:
            return None
        return Precision(self.ci, self.ci_floor_us * 1e-3, self.min_samples, self.max_samples)

    def replace(self, **changes: Any) -> MeasureOptions:
        """A copy with ``changes`` (checked again).

        Raises:
            OptionError: a bad value.
            InvalidInputError: an unknown name.
        """
        known = [f.name for f in fields(self)]
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise InvalidInputError(f"unknown measure option {unknown[0]!r}; allowed: {', '.join(known)}")
        return replace(self, **changes)
