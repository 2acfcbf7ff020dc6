"""Search spaces: the values each tunable macro may take, and the constraints between them.

A space is a TOML file in ``configs/`` (one per kernel) that users can copy and edit::

    kernel = "smem_pad"
    constraints = ["TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"]

    [params]
    TILE_DIM = [16, 32, 64]
    BLOCK_ROWS = [2, 4, 8, 16]
    IPAD = [1, 2]

Constraints are integer expressions over the macro names, evaluated by the kernel model's one
safe evaluator (:mod:`autotune.kernel.expr`), never ``eval``. A kernel file may hold its space
inline (``[space]`` with ``params`` and ``constraints``) or name such a file.
"""

from __future__ import annotations

import itertools
import math
import random
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from autotune.kernel.config import Config
from autotune.base.files import read_text
from autotune.errors import InvalidInputError, SearchSpaceError
from autotune.kernel.expr import Expr, ExprError, Verdicts, parse_expr

__all__ = ["SearchSpace", "load_space", "kernel_space", "MAX_MACRO_VALUE", "SAMPLE_WHOLE", "WALK_LIMIT", "PRUNE_LIMIT"]

MAX_MACRO_VALUE = 4096
"""Largest value a macro may take in a space file (no kernel needs more; keeps nvcc sane)."""
PRUNE_LIMIT = 100_000
"""Most combinations of its own macros' values a constraint is tried on to prune their values
(:meth:`SearchSpace.domains`); a constraint over more is checked only during the walk."""
SAMPLE_WHOLE = 100_000
"""Spaces of at most this many valid configs are sampled from the whole list of them."""
WALK_LIMIT = 2_000_000
"""A space of at most this many combinations (of the values :meth:`SearchSpace.domains` leaves)
is walked whole where needed; in a larger one, at most this many constraint checks are spent
looking for one config (the first valid config, or one of a sample) or counting: a space whose
constraints leave none within them is refused (or the sample is smaller), never enumerated
whole. At about a microsecond a check: a few seconds."""


class _OutOfSteps(Exception):
    """The walk spent its budget of constraint checks."""


@dataclass(frozen=True)
class SearchSpace:
    """The values of each tunable macro of one kernel and the constraints between them.

    Attributes:
        kernel: name of the kernel.
        params: ``(macro, allowed values)`` pairs, sorted by macro name.
        constraints: expressions every config must satisfy.
        path: the file it was read from (for messages), or ``None``.
        tunables: the kernel's tunable macros (``None``: take the params' names); a space
            must give values for exactly these.

    Raises:
        SearchSpaceError: unknown or missing macro, empty range, bad value, bad constraint.
    """

    kernel: str
    params: tuple[tuple[str, tuple[int, ...]], ...]
    constraints: tuple[str, ...] = ()
    path: str | None = None
    tunables: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        names = [n for n, _ in self.params]
        tunables = sorted(self.tunables if self.tunables is not None else names)
        where = f" in {self.path}" if self.path else ""
        for name in names:
            if name not in tunables:
                raise SearchSpaceError(f"unknown macro {name!r}{where}; {self.kernel} takes {', '.join(tunables)}")
        missing = sorted(set(tunables) - set(names))
        if missing:
            raise SearchSpaceError(f"search space{where} gives no values for {', '.join(missing)}; "
                                   f"{self.kernel} takes {', '.join(tunables)}")
        for name, values in self.params:
            _check_values(name, values, where)
        _ = self._trees  # parse the constraints now, so a bad one fails on load

    @cached_property
    def _trees(self) -> list[Expr]:
        names = {n for n, _ in self.params}
        out = []
        for c in self.constraints:
            try:
                out.append(parse_expr(c, names))
            except ExprError as exc:
                raise SearchSpaceError(f"constraint {exc}") from None
        return out

    def violations(self, config: Config) -> list[str]:
        """The constraints ``config`` breaks, and values outside the space (empty if valid)."""
        out = [f"{n}={v} is not one of {list(vals)}" for (n, vals), v in
               zip(self.params, (config.as_dict().get(n) for n, _ in self.params)) if v not in vals]
        if out or config.kernel != self.kernel:
            return out or [f"config is for {config.kernel}, space for {self.kernel}"]
        env = config.as_dict()
        return [c for c, held in zip(self.constraints, self._verdicts) if not held(env)]

    def holds(self, values: Mapping[str, int]) -> bool:
        """Whether ``values`` (a value for each macro, each one of its listed values) satisfy
        every constraint: :meth:`violations` without building a config, for a strategy that
        draws combinations and keeps the valid ones."""
        return all(held(values) for held in self._verdicts)

    @cached_property
    def _verdicts(self) -> list[Verdicts]:
        return [Verdicts(tree) for tree in self._trees]

    @property
    def raw_size(self) -> int:
        """Combinations of the params' values before the constraints (their product)."""
        return math.prod(len(values) for _, values in self.params)

    def configs(self) -> list[Config]:
        """Every config of the space that satisfies all constraints, in a fixed order (that of
        ``itertools.product`` over the params), built once and kept. Each constraint is tested
        as soon as the macros it names are set, so a branch that breaks it is never expanded.
        For a large space, walk :meth:`iter_configs` instead: this builds the whole list."""
        return list(self._valid)

    @cached_property
    def _valid(self) -> tuple[Config, ...]:
        return tuple(self.iter_configs())

    def iter_configs(self, near: Mapping[str, int] | None = None) -> Iterator[Config]:
        """The valid configs in the order of :meth:`configs`, one at a time: the first comes
        at once however large the space (only the branches before it are expanded, over the
        values left by :meth:`domains`).

        ``near`` (macro values, valid or not): each macro's values are tried in the order of
        their distance from ``near``'s value instead, in positions of the macro's list (the
        ordinal distance; ties: the earlier value), so the first config is a valid one close
        to ``near``: the same depth-first walk, a constraint solver for a proposal that
        breaks the constraints (:mod:`autotune.search.strategies`)."""
        return self._walk(self.domains(), near=near)

    @cached_property
    def _domains(self) -> tuple[tuple[int, ...], ...]:
        domains = {n: list(values) for n, values in self.params}
        changed = True
        while changed:  # generalised arc consistency, each constraint over at most PRUNE_LIMIT combinations
            changed = False
            for tree in self._trees:
                names = sorted(tree.names & domains.keys())
                if math.prod(len(domains[n]) for n in names) > PRUNE_LIMIT:
                    continue
                supported: dict[str, set[int]] = {n: set() for n in names}
                held = False
                for values in itertools.product(*(domains[n] for n in names)):
                    if tree.holds(dict(zip(names, values))):
                        held = True
                        for n, v in zip(names, values):
                            supported[n].add(v)
                if not held:  # no combination of its macros satisfies it: the space is empty
                    return tuple(() for _ in self.params)
                for n in names:
                    kept = [v for v in domains[n] if v in supported[n]]
                    if len(kept) < len(domains[n]):
                        domains[n], changed = kept, True
        return tuple(tuple(domains[n]) for n, _ in self.params)

    def domains(self) -> tuple[tuple[int, ...], ...]:
        """The values of each macro (in :attr:`params` order) that can be part of a valid
        config as far as each constraint alone tells: a value no combination of a constraint's
        own macros supports is dropped (arc consistency, for constraints over at most
        :data:`PRUNE_LIMIT` combinations), so ``TILE_DIM > 5000`` empties the space without
        a walk over the others. An empty tuple: no config is valid."""
        return self._domains

    @staticmethod
    def _budget(domains: tuple[tuple[int, ...], ...], limit: int) -> list[int] | None:
        """No budget for a walk of at most :data:`WALK_LIMIT` combinations (it ends), else ``limit`` checks."""
        return None if math.prod(map(len, domains)) <= WALK_LIMIT else [limit]

    def _walk(self, domains: tuple[tuple[int, ...], ...], budget: list[int] | None = None,
              reverse: bool = False, near: Mapping[str, int] | None = None) -> Iterator[Config]:
        """The valid configs over ``domains`` in the space's order (``reverse``: last first);
        ``budget`` (a one-item list, decremented per constraint check): raise
        :class:`_OutOfSteps` once spent; ``near``: as in :meth:`iter_configs`."""
        names = [n for n, _ in self.params]
        orders = [tuple(reversed(d)) if reverse else d for d in domains]
        if near is not None:
            orders = [o if name not in near or not o else _by_distance(o, near[name])
                      for (name, _), o in zip(self.params, orders)]
        depth_of = {n: i for i, n in enumerate(names)}
        checks: list[list[Verdicts]] = [[] for _ in names]
        for held in self._verdicts:  # each constraint at the depth where its last macro is set
            checks[max((depth_of[n] for n in held.names if n in depth_of), default=0)].append(held)
        env: dict[str, int] = {}

        def expand(depth: int) -> Iterator[Config]:
            if depth == len(names):
                yield Config.of(self.kernel, env)
                return
            name, tests = names[depth], checks[depth]
            for value in orders[depth]:
                env[name] = value
                if budget is not None:
                    budget[0] -= len(tests) + 1
                    if budget[0] < 0:
                        raise _OutOfSteps
                for held in tests:  # a loop, not all() over a generator: the walk's innermost step
                    if not held(env):
                        break
                else:
                    yield from expand(depth + 1)
            del env[name]

        if names and all(domains):
            yield from expand(0)

    def first(self, limit: int = WALK_LIMIT, *, fixed: dict[str, int] | None = None,
              reverse: bool = False) -> Config | None:
        """The first valid config (``reverse``: the last), with the macros of ``fixed`` at
        those values; ``None`` where there is none.

        Raises:
            SearchSpaceError: none was found within ``limit`` constraint checks (the space is
                neither shown empty nor shown to hold a config: the message says what to do).
        """
        domains = tuple((fixed[n],) if fixed and n in fixed else d for (n, _), d in zip(self.params, self.domains()))
        try:
            return next(self._walk(domains, self._budget(domains, limit), reverse), None)
        except _OutOfSteps:
            where = f" in {self.path}" if self.path else ""
            raise SearchSpaceError(
                f"no config of the space{where} satisfying its constraints was found in {limit:,} checks "
                f"({self.raw_size:,} combinations before its constraints); narrow the ranges, or write the "
                "constraints over fewer macros each (each is then applied to its macros' values alone)") from None

    def count(self, limit: int) -> int:
        """The number of valid configs, counting no further than ``limit + 1`` (so a result
        over ``limit`` means "more than ``limit``"): cheap for a space of any raw size whose
        constraints leave many configs valid."""
        if "_valid" in self.__dict__ or math.prod(map(len, self.domains())) <= limit:
            return len(self._valid)
        return sum(1 for _ in itertools.islice(self.iter_configs(), limit + 1))

    def sample(self, n: int, always: tuple[Config, ...] = ()) -> list[Config]:
        """A deterministic sample of at most ``n`` valid configs (all of them if there are no
        more), in the space's order. Chosen in this priority: ``always`` (e.g. the default)
        where valid, the first and the last config, for each macro the first config holding
        each of its values (the corners of every listed value), then configs at evenly spaced
        positions. For checking a space too large to build whole (e.g. compiling it in CI).

        A space of more than :data:`SAMPLE_WHOLE` valid configs is never built whole: the
        first and last configs and the corners are found by bounded walks (:meth:`first`),
        and the rest are drawn at random (seeded: the same sample every time), each
        check of its constraints counted against :data:`WALK_LIMIT`.
        """
        if self.first() is None:  # bounded: refused where it cannot be told
            return []
        size = self.count_within(SAMPLE_WHOLE)
        if size is None or size > SAMPLE_WHOLE:
            return self._sample_large(n, always)
        configs = self.configs()
        if len(configs) <= n:
            return configs
        valid = set(configs)
        chosen = dict.fromkeys(c for c in always if c in valid)
        chosen.update(dict.fromkeys((configs[0], configs[-1])))
        seen: set[tuple[str, int]] = set()
        for c in configs:  # the first config holding each value of each macro
            new = [pair for pair in c.macros if pair not in seen]
            if new:
                seen.update(new)
                chosen.setdefault(c)
        step = len(configs) / n
        chosen.update(dict.fromkeys(configs[int(i * step)] for i in range(n)))
        order = {c: i for i, c in enumerate(configs)}
        return sorted(list(chosen)[:n], key=order.__getitem__)


    def count_within(self, limit: int) -> int | None:
        """:meth:`count` (up to ``limit + 1``): exact for a space of at most :data:`WALK_LIMIT`
        combinations of its :meth:`domains`; in a larger one within :data:`WALK_LIMIT`
        constraint checks, else ``None`` (not counted: a huge space whose valid configs are sparse).
        A count that walked the whole space keeps what it found: :meth:`configs` is then not walked again."""
        if "_valid" in self.__dict__:
            return len(self._valid)
        domains = self.domains()
        try:
            found = list(itertools.islice(self._walk(domains, self._budget(domains, WALK_LIMIT)), limit + 1))
        except _OutOfSteps:
            return None
        if len(found) <= limit:  # the whole space, in the order of configs(): kept, not walked again
            self.__dict__["_valid"] = tuple(found)
        return len(found)

    def _sample_large(self, n: int, always: tuple[Config, ...]) -> list[Config]:
        chosen = dict.fromkeys(c for c in always if not self.violations(c))
        for reverse in (False, True):
            found = self.first(reverse=reverse)
            if found is not None:
                chosen.setdefault(found)
        domains = self.domains()
        for (name, _), values in zip(self.params, domains):  # corners: the first config holding each value
            for value in values:
                if len(chosen) >= n or any(c.as_dict()[name] == value for c in chosen):
                    continue
                try:
                    found = self.first(WALK_LIMIT // max(1, sum(map(len, domains))), fixed={name: value})
                except SearchSpaceError:
                    found = None
                if found is not None:
                    chosen.setdefault(found)
        rng, steps = random.Random(0), WALK_LIMIT
        while len(chosen) < n and steps > 0:
            values = {name: rng.choice(d) for (name, _), d in zip(self.params, domains)}
            steps -= len(self._trees) + 1
            if all(t.holds(values) for t in self._trees):
                chosen.setdefault(Config.of(self.kernel, values))
        return sorted(list(chosen)[:n], key=lambda c: tuple(
            d.index(c.as_dict()[name]) for (name, _), d in zip(self.params, domains)))


def _by_distance(values: tuple[int, ...], value: int) -> list[int]:
    """``values`` in the order of their position's distance from ``value``'s position (a value
    not in the list: from that of the nearest value), ties the earlier first."""
    at = values.index(value) if value in values else min(range(len(values)), key=lambda i: abs(values[i] - value))
    return [values[i] for i in sorted(range(len(values)), key=lambda i: (abs(i - at), i))]


def _check_values(name: str, values: object, where: str) -> None:
    if not isinstance(values, tuple) or not values:
        raise SearchSpaceError(f"{name}{where} has an empty range; give a list of integers")
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_MACRO_VALUE:
            raise SearchSpaceError(
                f"{name}={v!r}{where} is not allowed; values are integers 0..{MAX_MACRO_VALUE}")


def space_of(kernel, params: object, constraints: object, where: str) -> SearchSpace:
    """A :class:`SearchSpace` of ``kernel`` (a :class:`~autotune.kernel.model.Kernel`) from a
    ``params`` table and a ``constraints`` list as read from TOML (``where`` names the source).

    Raises:
        SearchSpaceError: no params, constraints not a list of strings, a bad space, or no
            config satisfying the constraints.
    """
    if not isinstance(params, dict) or not params:
        raise SearchSpaceError(f"search space {where} has no [params] table")
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise SearchSpaceError(f"constraints in {where} must be a list of strings")
    space = SearchSpace(kernel.name, tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                                  for k, v in params.items())),
                        tuple(constraints), where, kernel.tunables)
    if space.first() is None:  # bounded: a huge space is never walked whole
        raise SearchSpaceError(f"no config in {where} satisfies its constraints")
    return space


def kernel_space(kernel) -> SearchSpace:
    """The space written inline in ``kernel``'s own file (``[space]`` params and constraints).

    Raises:
        SearchSpaceError: see :func:`space_of`.
    """
    where = str(kernel.path or kernel.name)
    return space_of(kernel, {n: list(v) for n, v in kernel.params}, list(kernel.constraints), where)


def load_space(kernel, path: str | Path) -> SearchSpace:
    """Read a search space of ``kernel`` (a :class:`~autotune.kernel.model.Kernel`; resolve a
    catalog name first with :func:`autotune.kernel.catalog.get_kernel`) from the TOML file
    ``path`` (``[params]``, ``constraints``, an optional ``kernel = "name"`` that must match).

    Raises:
        SearchSpaceError: missing or malformed file, unknown or missing macro, empty range,
            bad value, bad constraint, or no config satisfying the constraints.
    """
    file = Path(path)
    try:
        doc = tomllib.loads(read_text(file, "search space"))
    except InvalidInputError as exc:
        raise SearchSpaceError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SearchSpaceError(f"search space {file} is not valid TOML: {exc}") from None
    if doc.get("kernel", kernel.name) != kernel.name:
        raise SearchSpaceError(f"search space {file} is for kernel {doc['kernel']!r}, not {kernel.name!r}")
    return space_of(kernel, doc.get("params"), doc.get("constraints", []), str(file))
