"""The refusal of an option, shared by the measuring options
(:mod:`autotune.measure.measure_options`), the search options (:mod:`autotune.search.options`)
and the strategies' registry (:mod:`autotune.search.strategies.registry`), which all import it
and none imports another's refusals: one message, naming the parameter in the library and its
flag on the command line (:data:`FLAGS`). It lives on the measuring floor, the lowest of them."""

from __future__ import annotations

from typing import Any

from autotune.errors import InvalidInputError

__all__ = ["FLAGS", "OptionError"]

FLAGS = {"trials": "--trials", "timeout": "--timeout", "seed": "--seed", "strategy": "--strategy",
         "strategy_options": "--strategy-option", "batch": "--batch", "resume": "--resume", "space": "--space",
         "repeats": "--repeats", "top_k": "--top-k", "rounds": "--rounds", "trial_timeout": "--trial-timeout",
         "ci": "--ci", "ci_floor_us": "--ci-floor-us", "min_samples": "--min-samples",
         "max_samples": "--max-samples", "objective": "--objective", "energy": "--energy"}
"""Each field's command-line flag (``autotune search``), for the CLI's messages."""


class OptionError(InvalidInputError):
    """A search option outside what is allowed: ``param`` names the field, ``text`` the rest
    of the message after ``<param> <value>``."""

    def __init__(self, param: str, value: Any, text: str) -> None:
        self.param, self.value, self.text = param, value, text
        super().__init__(f"{param} {show(value)} {text}")

    def as_flag(self) -> InvalidInputError:
        """The same refusal naming the command-line flag (``--top-k 0 ...``)."""
        return InvalidInputError(f"{FLAGS.get(self.param, self.param)} {show(self.value)} {self.text}")


def show(value: Any) -> str:
    """``value`` as a message shows it: a float by ``%g``, an int or ``None`` as is, anything
    else by its (cut) ``repr`` (:func:`autotune.kernel.arguments.shown`)."""
    from autotune.kernel.arguments import shown

    if isinstance(value, float):
        return f"{value:g}"
    return shown(value) if isinstance(value, str) or not isinstance(value, (int, type(None))) else str(value)
