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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Expr", "ExprError", "FUNCTIONS", "parse_expr"]

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
FUNCTIONS = {"cdiv": (2, lambda a, b: -(-a // b)), "min": (None, lambda *a: min(a)), "max": (None, lambda *a: max(a))}
"""Functions an expression may call: name -> (number of arguments or ``None`` for 1+, function)."""
_ALLOWED = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
            ast.Call, ast.And, ast.Or, ast.Not, ast.USub, *_BINOPS, *_CMPOPS)
_MAX_POWER = 64
_MAX_POWER_BITS = 1024  # a power's result has at most about this many bits (nested powers stay cheap)


class ExprError(ValueError):
    """An expression that cannot be parsed, uses what is not allowed, or names an unknown name."""


def _build(node: ast.AST) -> Callable[[Mapping[str, int]], int | bool]:
    """The checked tree as nested closures: built once by walking the
    tree, so no evaluation walks it again (constraints run over millions of combinations)."""
    match node:
        case ast.Expression(body=body):
            return _build(body)
        case ast.Constant(value=int() as v):
            return lambda env: v
        case ast.Name(id=name):
            return lambda env: env[name]
        case ast.BinOp(left=l, op=ast.Pow(), right=r):
            fl, fr = _build(l), _build(r)

            def power(env):
                base, exp = fl(env), fr(env)
                if not 0 <= exp <= _MAX_POWER or abs(base).bit_length() * exp > _MAX_POWER_BITS:
                    raise ZeroDivisionError("power out of range")
                return base ** exp
            return power
        case ast.BinOp(left=l, op=op, right=r):
            fl, fr, f = _build(l), _build(r), _BINOPS[type(op)]
            return lambda env: f(fl(env), fr(env))
        case ast.UnaryOp(op=ast.USub(), operand=x):
            fx = _build(x)
            return lambda env: -fx(env)
        case ast.UnaryOp(op=ast.Not(), operand=x):
            fx = _build(x)
            return lambda env: not fx(env)
        case ast.BoolOp(op=ast.And(), values=vs):
            fs = [_build(v) for v in vs]
            return lambda env: all(f(env) for f in fs)
        case ast.BoolOp(op=ast.Or(), values=vs):
            fs = [_build(v) for v in vs]
            return lambda env: any(f(env) for f in fs)
        case ast.Compare(left=l, ops=[op], comparators=[c]):
            fl, fc, f = _build(l), _build(c), _CMPOPS[type(op)]
            return lambda env: f(fl(env), fc(env))
        case ast.Compare(left=l, ops=ops, comparators=cs):
            fs, cmps = [_build(l)] + [_build(c) for c in cs], [_CMPOPS[type(o)] for o in ops]

            def chain(env):
                vals = [f(env) for f in fs]
                return all(c(a, b) for c, a, b in zip(cmps, vals, vals[1:]))
            return chain
        case ast.Call(func=ast.Name(id=name), args=args):
            fs, f = [_build(a) for a in args], FUNCTIONS[name][1]
            return lambda env: f(*(g(env) for g in fs))
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
        unknown = sorted(_read_names(tree) - names)
        if unknown:
            raise ExprError(f"{text!r} names {', '.join(unknown)}; allowed names: {', '.join(sorted(names))}")


def _read_names(tree: ast.AST) -> frozenset[str]:
    """The names ``tree`` reads as values (a called function's name is not read: ``min`` in
    ``min(a, b)``, but ``cdiv`` in ``cdiv(a, cdiv)`` is)."""
    functions = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in functions)


@dataclass(frozen=True)
class Expr:
    """A parsed, checked integer expression (hashable; equal texts are equal expressions).

    Attributes:
        text: the expression as written (an ``int`` written in TOML becomes its decimal text).
    """

    text: str
    _tree: ast.Expression = field(compare=False, hash=False, repr=False)
    _fn: Callable[[Mapping[str, int]], int | bool] | None = field(default=None, compare=False, hash=False,
                                                                  repr=False)

    def __post_init__(self) -> None:
        if self._fn is None:
            object.__setattr__(self, "_fn", _build(self._tree))

    def __call__(self, env: Mapping[str, int]) -> int:
        """The value for ``env`` (name -> int). Booleans come back as 0 or 1.

        Raises:
            ZeroDivisionError: a division or modulo by zero (or a power out of 0..64, or
                whose result would have more than about 1024 bits).
            KeyError: a name missing from ``env``.
        """
        return int(self._fn(env))

    def holds(self, env: Mapping[str, int]) -> bool:
        """Whether the expression is true (non-zero) for ``env``; a division by zero is false."""
        try:
            return bool(self._fn(env))
        except ZeroDivisionError:
            return False

    @property
    def names(self) -> frozenset[str]:
        """The names the expression reads (function names excluded)."""
        return _read_names(self._tree)

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
