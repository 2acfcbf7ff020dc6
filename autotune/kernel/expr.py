"""The one safe evaluator of a kernel's integer expressions (never ``eval``).

Search-space constraints, array shapes, scalar arguments, launch geometry and objective
figures are all written as small integer expressions over the kernel's names: its problem
dimensions (``rows``, ``m``, ``n``...), its macros (tunable and fixed), and ``itemsize`` (bytes
per element of the problem's dtype). An expression is parsed once into Python's AST, checked
against a whitelist, and evaluated by walking the tree:

* integers (``True``/``False`` and floats are refused), names;
* ``+ - * // % **``, unary ``-``, comparisons (chains too), ``and``/``or``/``not``;
* ``cdiv(a, b)`` (ceiling division), ``min(a, b, ...)``, ``max(a, b, ...)``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Expr", "ExprError", "FUNCTIONS", "parse_expr"]

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
FUNCTIONS = {"cdiv": (2, lambda a, b: -(-a // b)), "min": (None, min), "max": (None, max)}
"""Functions an expression may call: name -> (number of arguments or ``None`` for 1+, function)."""
_ALLOWED = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
            ast.Call, ast.And, ast.Or, ast.Not, ast.USub, *_BINOPS, *_CMPOPS)
_MAX_POWER = 64


class ExprError(ValueError):
    """An expression that cannot be parsed, uses what is not allowed, or names an unknown name."""


def _eval(node: ast.AST, env: Mapping[str, int]) -> int | bool:
    match node:
        case ast.Expression(body=body):
            return _eval(body, env)
        case ast.Constant(value=int() as v):
            return v
        case ast.Name(id=name):
            return env[name]
        case ast.BinOp(left=l, op=ast.Pow(), right=r):
            base, power = _eval(l, env), _eval(r, env)
            if not 0 <= power <= _MAX_POWER:
                raise ZeroDivisionError("power out of range")
            return base ** power
        case ast.BinOp(left=l, op=op, right=r):
            return _BINOPS[type(op)](_eval(l, env), _eval(r, env))
        case ast.UnaryOp(op=ast.USub(), operand=x):
            return -_eval(x, env)
        case ast.UnaryOp(op=ast.Not(), operand=x):
            return not _eval(x, env)
        case ast.BoolOp(op=ast.And(), values=vs):
            return all(_eval(v, env) for v in vs)
        case ast.BoolOp(op=ast.Or(), values=vs):
            return any(_eval(v, env) for v in vs)
        case ast.Compare(left=l, ops=ops, comparators=cs):
            vals = [_eval(l, env)] + [_eval(c, env) for c in cs]
            return all(_CMPOPS[type(o)](a, b) for o, a, b in zip(ops, vals, vals[1:]))
        case ast.Call(func=ast.Name(id=name), args=args):
            return FUNCTIONS[name][1](*(_eval(a, env) for a in args))
    raise ExprError(f"cannot evaluate {ast.unparse(node)!r}")  # unreachable after _check


def _check(text: str, tree: ast.AST, names: frozenset[str] | None) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is not int:
            raise ExprError(f"{text!r} uses {node.value!r}; only integer constants are allowed")
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"{text!r} uses {ast.unparse(node)!r}, which is not allowed; allowed: integers, "
                            "names, + - * // % **, comparisons, and/or/not, cdiv(a, b), min(...), max(...)")
        if isinstance(node, ast.Call):
            fn = node.func.id if isinstance(node.func, ast.Name) else None
            if fn not in FUNCTIONS or node.keywords:
                raise ExprError(f"{text!r} calls {ast.unparse(node.func)!r}; allowed: {', '.join(FUNCTIONS)}")
            arity = FUNCTIONS[fn][0]
            if (arity is not None and len(node.args) != arity) or not node.args:
                raise ExprError(f"{text!r}: {fn} takes {arity or '1 or more'} argument(s)")
    if names is not None:
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
        unknown = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - names - called)
        if unknown:
            raise ExprError(f"{text!r} names {', '.join(unknown)}; allowed names: {', '.join(sorted(names))}")


@dataclass(frozen=True)
class Expr:
    """A parsed, checked integer expression (hashable; equal texts are equal expressions).

    Attributes:
        text: the expression as written (an ``int`` written in TOML becomes its decimal text).
    """

    text: str
    _tree: ast.Expression = field(compare=False, hash=False, repr=False)

    def __call__(self, env: Mapping[str, int]) -> int:
        """The value for ``env`` (name -> int). Booleans come back as 0 or 1.

        Raises:
            ZeroDivisionError: a division or modulo by zero (or a power out of 0..64).
            KeyError: a name missing from ``env``.
        """
        return int(_eval(self._tree, env))

    def holds(self, env: Mapping[str, int]) -> bool:
        """Whether the expression is true (non-zero) for ``env``; a division by zero is false."""
        try:
            return bool(_eval(self._tree, env))
        except ZeroDivisionError:
            return False

    @property
    def names(self) -> frozenset[str]:
        """The names the expression reads (function names excluded)."""
        called = {n.func.id for n in ast.walk(self._tree) if isinstance(n, ast.Call)}
        return frozenset(n.id for n in ast.walk(self._tree) if isinstance(n, ast.Name)) - called

    def __str__(self) -> str:
        return self.text


def parse_expr(value: str | int, names: Iterable[str] | None = None) -> Expr:
    """Parse ``value`` (an expression's text, or an int) into an :class:`Expr`.

    Args:
        names: the names the expression may read (``None``: any).

    Raises:
        ExprError: not valid syntax, a construct outside the whitelist, or an unknown name.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ExprError(f"{value!r} is not an integer expression; give an integer or a string")
    text = str(value).strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"{text!r} is not a valid expression: {exc.msg}") from None
    _check(text, tree, None if names is None else frozenset(names))
    return Expr(text, tree)
