"""What a strategy is, declared once where it is registered: its :class:`Traits`.

The search loop asks a strategy's traits, never its name (``tests/search/strategies/test_registry.py`` fails
where a strategy's name is compared outside ``autotune/search/strategies/``):

- ``needs_prior``: it reads other shapes' trials (:class:`~autotune.search.strategies.base.Known`
  at a distance), which the loop then reads from the store (``transfer``);
- ``in_order``: it proposes every valid config in the space's order
  (:meth:`~autotune.kernel.space.SearchSpace.iter_configs`), known before any time is told:
  the loop compiles its first batches before the measuring child starts, refuses a space over
  :data:`~autotune.search.proposals.GRID_LIMIT` valid configs, and never swaps it for a walk
  of the whole space (``grid``);
- ``partitions``: worker ``i`` of ``n`` on one study walks its own share first (positions
  ``i`` modulo ``n`` of the order): its factory takes ``part=(i, n)`` and ``last=`` (a config
  to propose after all others: another worker measures it first) (``grid``);
- ``packages``: modules it imports besides Optuna, each installed by ``pip install`` of the same
  name, checked when the options are built, before any GPU work (``gp``: ``torch``; ``cmaes``);
- ``options``: the :class:`StrategyOption` values it takes (``SearchOptions.strategy_options``,
  ``--strategy-option KEY=VALUE``), passed to its factory as keywords, defaults filled in;
- ``pareto``: it minimises several objectives together (``--objective time,energy``): it is told
  a tuple of values per config (ms, J), or ignores what it is told (``nsga2``; ``random``, ``grid``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["StrategyOption", "StrategyOptions", "Traits"]

Value = int | float | bool | str


@dataclass(frozen=True)
class StrategyOption:
    """One option a strategy takes (``SearchOptions.strategy_options``,
    ``--strategy-option KEY=VALUE``), declared in its `Traits`.

    Attributes:
        name: the key (``startup``).
        default: its value where none is given; its type is the option's: ``int``, ``float``,
            ``bool`` or ``str`` (a bool is not taken for an int).
        low: the least value of a number, inclusive (``None``: unbounded).
        high: the largest value of a number, inclusive (``None``: unbounded).
        choices: the values a string may take (empty: any non-empty string).
        doc: what it sets, in words.

    ``parse`` takes a value of that type, or its text (the command line's ``KEY=VALUE``):
    ``"8"``, ``"0.5"``, ``"true"``/``"false"`` (``yes``/``no``, ``1``/``0``).
    """

    name: str
    default: Value
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    doc: str = ""

    @property
    def allowed(self) -> str:
        """What the option takes, in words (``an integer 1..1000``)."""
        kind = type(self.default)
        if kind is bool:
            return "true or false"
        if kind is str:
            return f"one of {', '.join(self.choices)}" if self.choices else "a text"
        what = "an integer" if kind is int else "a number"
        low = "" if self.low is None else f"{self.low:g}"
        high = "" if self.high is None else f"{self.high:g}"
        return f"{what} {low}..{high}" if low or high else what

    def parse(self, value: Any) -> Value:
        """``value`` (of the default's type, or its text) checked; raises ``ValueError`` saying
        nothing (the caller names the option and ``allowed``)."""
        kind = type(self.default)
        if isinstance(value, str) and kind is not str:
            text = value.strip().lower()
            if kind is bool:
                if text not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                value = text in ("true", "1", "yes")
            else:
                value = kind(text)  # ValueError for "8x", "1.5" as an int
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not kind:  # bool is not an int here
            raise ValueError
        if kind is float and not math.isfinite(value):
            raise ValueError
        if kind in (int, float) and (self.low is not None and value < self.low
                                     or self.high is not None and value > self.high):
            raise ValueError
        if kind is str and (self.choices and value not in self.choices or not value):
            raise ValueError
        return value


class StrategyOptions(Mapping):
    """A strategy's options, name -> value: a read-only mapping, hashable (a field of the
    frozen :class:`~autotune.search.options.SearchOptions`) and picklable (to the workers of
    several GPUs). Built from any mapping; iterates in the names' order."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._items = dict(sorted(dict(items or {}).items()))

    def __getitem__(self, name: str) -> Any:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"StrategyOptions({self._items!r})"

    def __reduce__(self):
        return StrategyOptions, (self._items,)


@dataclass(frozen=True)
class Traits:
    """What a strategy is, declared once where it is registered
    (`register`); the search loop asks these,
    never the strategy's name. The defaults describe a plain ask/tell strategy (and any Optuna
    sampler given instead of a name): no prior, its own order, one share, no package, no option.

    Attributes:
        needs_prior: it reads other shapes' trials (history at a distance), which the search
            then reads from the store (``transfer``).
        in_order: it proposes every valid config in the space's order, known before any time is
            told: its first batches compile before the measuring child starts, a space over
            ``GRID_LIMIT`` valid configs is refused, and a search whose trials cover the space
            keeps it (``grid``).
        partitions: worker ``i`` of ``n`` on one study walks positions ``i`` modulo ``n`` of the
            order first; its factory takes ``part=(i, n)`` and ``last=`` (``grid``).
        packages: modules it needs besides Optuna, each installed by ``pip install`` of that
            name; checked when the options are built, before any GPU work (``gp``: ``torch``;
            ``cmaes``: ``cmaes``).
        options: the `StrategyOption` values
            it takes, passed to its factory as keywords, defaults filled in.
        pareto: it minimises several objectives together (``objective="time,energy"``): its
            ``tell`` takes a tuple of values, one per objective (ms, J), or ``None`` for a
            failed config, and its factory takes ``objectives=`` (how many); a strategy that
            ignores what it is told (``random``, ``grid``) may say so too (``nsga2``).
    """

    needs_prior: bool = False
    in_order: bool = False
    partitions: bool = False
    packages: tuple[str, ...] = ()
    options: tuple[StrategyOption, ...] = ()
    pareto: bool = False

    def option(self, name: str) -> StrategyOption | None:
        """The option called ``name``, or ``None``."""
        return next((o for o in self.options if o.name == name), None)
