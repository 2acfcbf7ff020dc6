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
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from autotune.kernel.config import Config
from autotune.errors import SearchSpaceError
from autotune.kernel.expr import Expr, ExprError, parse_expr

__all__ = ["SearchSpace", "load_space", "kernel_space", "MAX_MACRO_VALUE"]

MAX_MACRO_VALUE = 4096
"""Largest value a macro may take in a space file (no kernel needs more; keeps nvcc sane)."""


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
        return [c for c, t in zip(self.constraints, self._trees) if not t.holds(env)]

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
        at once however large the space (only the branches before it are expanded).

        ``near`` (macro values, valid or not): each macro's values are tried in the order of
        their distance from ``near``'s value instead, in positions of the macro's list (the
        ordinal distance; ties: the earlier value), so the first config is a valid one close
        to ``near``: the same depth-first walk, a constraint solver for a proposal that
        breaks the constraints (:mod:`autotune.search.strategies`)."""
        names = [n for n, _ in self.params]
        orders = [values if near is None or name not in near else _by_distance(values, near[name])
                  for name, values in self.params]
        depth_of = {n: i for i, n in enumerate(names)}
        checks: list[list[Expr]] = [[] for _ in names]
        for tree in self._trees:  # each constraint at the depth where its last macro is set
            checks[max((depth_of[n] for n in tree.names if n in depth_of), default=0)].append(tree)
        env: dict[str, int] = {}

        def expand(depth: int) -> Iterator[Config]:
            if depth == len(names):
                yield Config.of(self.kernel, env)
                return
            name, tests = names[depth], checks[depth]
            for value in orders[depth]:
                env[name] = value
                if all(t.holds(env) for t in tests):
                    yield from expand(depth + 1)
            del env[name]

        if names:
            yield from expand(0)

    def count(self, limit: int) -> int:
        """The number of valid configs, counting no further than ``limit + 1`` (so a result
        over ``limit`` means "more than ``limit``"): cheap for a space of any raw size whose
        constraints leave many configs valid."""
        if "_valid" in self.__dict__ or self.raw_size <= limit:
            return len(self._valid)
        return sum(1 for _ in itertools.islice(self.iter_configs(), limit + 1))

    def sample(self, n: int, always: tuple[Config, ...] = ()) -> list[Config]:
        """A deterministic sample of at most ``n`` valid configs (all of them if there are no
        more), in the space's order. Chosen in this priority: ``always`` (e.g. the default)
        where valid, the first and the last config, for each macro the first config holding
        each of its values (the corners of every listed value), then configs at evenly spaced
        positions. For checking a space too large to build whole (e.g. compiling it in CI).
        """
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
    if next(space.iter_configs(), None) is None:
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
    """Read a search space of ``kernel`` (a :class:`~autotune.kernel.model.Kernel`, or a
    catalog name) from the TOML file ``path`` (``[params]``, ``constraints``, an optional
    ``kernel = "name"`` that must match).

    Raises:
        InvalidInputError: unknown catalog name.
        SearchSpaceError: missing or malformed file, unknown or missing macro, empty range,
            bad value, bad constraint, or no config satisfying the constraints.
    """
    if isinstance(kernel, str):
        from autotune.kernel.catalog import get_kernel

        kernel = get_kernel(kernel)
    file = Path(path)
    try:
        doc = tomllib.loads(file.read_text())
    except OSError as exc:
        raise SearchSpaceError(f"cannot read search space {file}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SearchSpaceError(f"search space {file} is not valid TOML: {exc}") from None
    if doc.get("kernel", kernel.name) != kernel.name:
        raise SearchSpaceError(f"search space {file} is for kernel {doc['kernel']!r}, not {kernel.name!r}")
    return space_of(kernel, doc.get("params"), doc.get("constraints", []), str(file))
