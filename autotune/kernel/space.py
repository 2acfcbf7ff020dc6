"""Search spaces: the values each tunable macro may take, and the constraints between them.

A space is a TOML file in ``configs/`` (one per kernel) that users can copy and edit::

    kernel = "smem_pad"
    constraints = ["TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"]

    [params]
    TILE_DIM = [16, 32, 64]
    BLOCK_ROWS = [2, 4, 8, 16]
    IPAD = [1, 2]

Constraints are integer expressions over the macro names (``+ - * // % **``, comparisons,
``and``/``or``/``not``); they are evaluated by walking the parsed expression, never ``eval``.
"""

from __future__ import annotations

import ast
import itertools
import operator
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from autotune.kernel.config import Config
from autotune.errors import SearchSpaceError
from autotune.kernel.catalog import get_kernel
from autotune.resources import data_dir

__all__ = ["SearchSpace", "load_space", "MAX_MACRO_VALUE"]

MAX_MACRO_VALUE = 4096
"""Largest value a macro may take in a space file (no kernel needs more; keeps nvcc sane)."""

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}


def _eval(node: ast.AST, env: dict[str, int]) -> int | bool:
    match node:
        case ast.Expression(body=body):
            return _eval(body, env)
        case ast.Constant(value=int() as v) if not isinstance(v, bool):
            return v
        case ast.Name(id=name):
            return env[name]
        case ast.BinOp(left=l, op=op, right=r) if type(op) in _BINOPS:
            return _BINOPS[type(op)](_eval(l, env), _eval(r, env))
        case ast.UnaryOp(op=ast.USub(), operand=x):
            return -_eval(x, env)
        case ast.UnaryOp(op=ast.Not(), operand=x):
            return not _eval(x, env)
        case ast.BoolOp(op=ast.And(), values=vs):
            return all(_eval(v, env) for v in vs)
        case ast.BoolOp(op=ast.Or(), values=vs):
            return any(_eval(v, env) for v in vs)
        case ast.Compare(left=l, ops=ops, comparators=cs) if all(type(o) in _CMPOPS for o in ops):
            vals = [_eval(l, env)] + [_eval(c, env) for c in cs]
            return all(_CMPOPS[type(o)](a, b) for o, a, b in zip(ops, vals, vals[1:]))
    raise SearchSpaceError(f"cannot evaluate {ast.unparse(node)!r}")


_ALLOWED_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                  ast.Compare, ast.And, ast.Or, ast.Not, ast.USub, *_BINOPS, *_CMPOPS)


def _parse_constraint(text: str, names: set[str]) -> ast.Expression:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SearchSpaceError(f"constraint {text!r} is not a valid expression: {exc.msg}") from None
    for node in ast.walk(tree):
        bad_const = isinstance(node, ast.Constant) and (type(node.value) is not int)
        if bad_const or not isinstance(node, _ALLOWED_NODES):
            raise SearchSpaceError(
                f"constraint {text!r} uses {ast.unparse(node)!r}, which is not allowed; allowed: "
                "integers, macro names, + - * // % **, comparisons, and/or/not")
    unknown = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - names)
    if unknown:
        raise SearchSpaceError(
            f"constraint {text!r} refers to {', '.join(unknown)}, not a macro of this space; "
            f"allowed: {', '.join(sorted(names))}")
    return tree


def _holds(tree: ast.Expression, env: dict[str, int]) -> bool:
    try:
        return bool(_eval(tree, env))
    except ZeroDivisionError:
        return False


@dataclass(frozen=True)
class SearchSpace:
    """The values of each tunable macro of one kernel and the constraints between them.

    Attributes:
        kernel: catalog name of the kernel.
        params: ``(macro, allowed values)`` pairs, sorted by macro name.
        constraints: expressions every config must satisfy.
        path: the file it was read from (for messages), or ``None``.
    """

    kernel: str
    params: tuple[tuple[str, tuple[int, ...]], ...]
    constraints: tuple[str, ...] = ()
    path: str | None = None

    def __post_init__(self) -> None:
        k = get_kernel(self.kernel)
        names = [n for n, _ in self.params]
        where = f" in {self.path}" if self.path else ""
        for name in names:
            if name not in k.defaults:
                raise SearchSpaceError(f"unknown macro {name!r}{where}; {k.name} takes {', '.join(k.tunables)}")
        missing = sorted(set(k.defaults) - set(names))
        if missing:
            raise SearchSpaceError(f"search space{where} gives no values for {', '.join(missing)}; "
                                   f"{k.name} takes {', '.join(k.tunables)}")
        for name, values in self.params:
            _check_values(name, values, where)
        _ = self._trees  # parse the constraints now, so a bad one fails on load

    @cached_property
    def _trees(self) -> list[ast.Expression]:
        names = {n for n, _ in self.params}
        return [_parse_constraint(c, names) for c in self.constraints]

    def violations(self, config: Config) -> list[str]:
        """The constraints ``config`` breaks, and values outside the space (empty if valid)."""
        out = [f"{n}={v} is not one of {list(vals)}" for (n, vals), v in
               zip(self.params, (config.as_dict().get(n) for n, _ in self.params)) if v not in vals]
        if out or config.kernel != self.kernel:
            return out or [f"config is for {config.kernel}, space for {self.kernel}"]
        env = config.as_dict()
        return [c for c, t in zip(self.constraints, self._trees) if not _holds(t, env)]

    def configs(self) -> list[Config]:
        """Every config of the space that satisfies all constraints, in a fixed order."""
        names = [n for n, _ in self.params]
        trees = self._trees
        out = []
        for values in itertools.product(*(v for _, v in self.params)):
            env = dict(zip(names, values))
            if all(_holds(t, env) for t in trees):
                out.append(Config.of(self.kernel, env))
        return out


def _check_values(name: str, values: object, where: str) -> None:
    if not isinstance(values, tuple) or not values:
        raise SearchSpaceError(f"{name}{where} has an empty range; give a list of integers")
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_MACRO_VALUE:
            raise SearchSpaceError(
                f"{name}={v!r}{where} is not allowed; values are integers 0..{MAX_MACRO_VALUE}")


def load_space(kernel: str, path: str | Path | None = None) -> SearchSpace:
    """Read the search space of ``kernel`` from ``path`` (default ``configs/<kernel>.toml``).

    Raises:
        InvalidInputError: unknown kernel.
        SearchSpaceError: missing or malformed file, unknown or missing macro, empty range,
            bad value, bad constraint, or no config satisfying the constraints.
    """
    get_kernel(kernel)
    file = Path(path) if path is not None else data_dir("configs") / f"{kernel}.toml"
    try:
        doc = tomllib.loads(file.read_text())
    except OSError as exc:
        raise SearchSpaceError(f"cannot read search space {file}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SearchSpaceError(f"search space {file} is not valid TOML: {exc}") from None
    if doc.get("kernel", kernel) != kernel:
        raise SearchSpaceError(f"search space {file} is for kernel {doc['kernel']!r}, not {kernel!r}")
    params = doc.get("params")
    constraints = doc.get("constraints", [])
    if not isinstance(params, dict) or not params:
        raise SearchSpaceError(f"search space {file} has no [params] table")
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise SearchSpaceError(f"constraints in {file} must be a list of strings")
    space = SearchSpace(kernel, tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                             for k, v in params.items())),
                        tuple(constraints), str(file))
    if not space.configs():
        raise SearchSpaceError(f"no config in {file} satisfies its constraints")
    return space
