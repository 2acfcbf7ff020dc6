"""The one safe evaluator of a kernel's integer expressions (never ``eval``).

Search-space constraints, array shapes, scalar arguments, launch geometry and objective
figures are all written as small integer expressions over the kernel's names: its problem
dimensions (``rows``, ``m``, ``n``...), its macros (tunable and fixed), and ``itemsize`` (bytes
per element of the problem's dtype). An expression is parsed once into Python's AST, checked
against a whitelist, and evaluated by walking the tree:

* integers (``True``/``False`` and floats are refused), names;
* ``+ - * // % **``, unary ``-``, comparisons (chains too), ``and``/``or``/``not``;
* ``cdiv(a, b)`` (ceiling division), ``min(a, b, ...)``, ``max(a, b, ...)``.

Every expression is bounded, so that no input can make parsing or evaluating it slow, deep or
huge: at most :data:`MAX_TEXT` characters, :data:`MAX_NODES` tree nodes and :data:`MAX_DEPTH`
levels of nesting (checked without recursion, before the tree is built), and every value
computed stays within ``±MAX_VALUE`` (:class:`ExprRangeError` otherwise). Messages quote at
most :data:`SHOWN` characters of an expression.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Expr", "ExprError", "ExprRangeError", "Verdicts", "MEMO_LIMIT", "FUNCTIONS", "parse_expr", "MAX_TEXT",
           "MAX_NODES", "MAX_DEPTH", "MAX_VALUE"]

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
MAX_TEXT = 1000
"""Longest expression, characters (the catalog's longest is under 100)."""
MAX_NODES = 400
"""Most nodes of an expression's tree (names, numbers, operators)."""
MAX_DEPTH = 100
"""Deepest nesting of an expression's tree (parentheses, unary signs, ``not``, calls)."""
MAX_VALUE = 2**128
"""Bound of every value an expression computes (exclusive, either sign): far above any size
or count a GPU has, and printed in 39 digits at most."""
SHOWN = 60
"""Characters of an expression quoted in a message (then ``...``)."""


class ExprError(ValueError):
    """An expression that cannot be parsed, uses what is not allowed, names an unknown name,
    or is too long or deep (:data:`MAX_TEXT`, :data:`MAX_NODES`, :data:`MAX_DEPTH`)."""


class ExprRangeError(ZeroDivisionError):
    """A value out of ``±MAX_VALUE``, or a power out of range, while evaluating. A
    :class:`ZeroDivisionError`, as a division by zero is: a value the expression has no
    answer for with these names (:meth:`Expr.holds` is false; a launch geometry that cannot
    be computed fails that config)."""


def _shown(text: str) -> str:
    """``text`` quoted for a message: its repr, cut to :data:`SHOWN` characters."""
    return repr(text) if len(text) <= SHOWN else repr(text[:SHOWN]) + f"... ({len(text)} characters)"


def _bounded(v):
    if type(v) is int and not -MAX_VALUE < v < MAX_VALUE:
        raise ExprRangeError("value out of range (|value| >= 2**128)")
    return v


def _build(node: ast.AST) -> Callable[[Mapping[str, int]], int | bool]:
    """The checked tree as nested closures: built once by walking the
    tree, so no evaluation walks it again (constraints run over millions of combinations)."""
    match node:
        case ast.Expression(body=body):
            return _build(body)
        case ast.Constant(value=int() as v):
            return lambda env: v
        case ast.Name(id=name):
            return lambda env: _bounded(env[name])
        case ast.BinOp(left=l, op=ast.Pow(), right=r):
            fl, fr = _build(l), _build(r)

            def power(env):
                base, exp = fl(env), fr(env)
                if not 0 <= exp <= _MAX_POWER or abs(base).bit_length() * exp > _MAX_POWER_BITS:
                    raise ExprRangeError("power out of range")
                return _bounded(base ** exp)
            return power
        case ast.BinOp(left=l, op=op, right=r):
            fl, fr, f = _build(l), _build(r), _BINOPS[type(op)]
            return lambda env: _bounded(f(fl(env), fr(env)))
        case ast.UnaryOp(op=ast.USub(), operand=x):
            fx = _build(x)
            return lambda env: _bounded(-fx(env))
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
    raise ExprError(f"cannot evaluate {_shown(ast.unparse(node))}")  # unreachable after _check


def _check_size(text: str, tree: ast.AST) -> None:
    """Refuse a tree of more than :data:`MAX_NODES` nodes or :data:`MAX_DEPTH` levels (walked
    with a stack, not recursion: the builder and ``ast.unparse`` recurse)."""
    stack, nodes = [(tree, 0)], 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ExprError(f"{_shown(text)} is too large; allowed: at most {MAX_NODES} names, numbers and operators")
        if depth > MAX_DEPTH:
            raise ExprError(f"{_shown(text)} is nested too deep; allowed: at most {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _check(text: str, tree: ast.AST, names: frozenset[str] | None) -> None:
    _check_size(text, tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is not int:
            raise ExprError(f"{_shown(text)} uses {_shown(repr(node.value))[1:-1]}; only integer constants are allowed")
        if isinstance(node, ast.Constant) and not -MAX_VALUE < node.value < MAX_VALUE:
            raise ExprError(f"{_shown(text)} holds a number out of range; allowed: |value| < 2**128")
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"{_shown(text)} uses {_shown(ast.unparse(node))}, which is not allowed; allowed: integers, "
                            "names, + - * // % **, comparisons, and/or/not, cdiv(a, b), min(...), max(...)")
        if isinstance(node, ast.Call):
            fn = node.func.id if isinstance(node.func, ast.Name) else None
            if fn not in FUNCTIONS or node.keywords:
                raise ExprError(f"{_shown(text)} calls {_shown(ast.unparse(node.func))}; allowed: {', '.join(FUNCTIONS)}")
            arity = FUNCTIONS[fn][0]
            if (arity is not None and len(node.args) != arity) or not node.args:
                raise ExprError(f"{_shown(text)}: {fn} takes {arity or '1 or more'} argument(s)")
    if names is not None:
        unknown = sorted(_read_names(tree) - names)
        if unknown:
            raise ExprError(f"{_shown(text)} names {_shown(', '.join(unknown))[1:-1]}; allowed names: "
                            f"{', '.join(sorted(names))}")


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
            ZeroDivisionError: a division or modulo by zero; :class:`ExprRangeError` (a
                subclass) for a power out of 0..64 or whose result would have more than about
                1024 bits, or any value out of ``±MAX_VALUE``.
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
        ExprError: not valid syntax, a construct outside the whitelist, an unknown name, or
            beyond the bounds (:data:`MAX_TEXT`, :data:`MAX_NODES`, :data:`MAX_DEPTH`, an
            integer out of ``±MAX_VALUE``).
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ExprError(f"{_shown(repr(value))} is not an integer expression; give an integer or a string")
    if isinstance(value, int) and not -MAX_VALUE < value < MAX_VALUE:
        raise ExprError(f"an integer of {value.bit_length()} bits is not allowed; allowed: |value| < 2**128")
    text = str(value).strip()
    if len(text) > MAX_TEXT:
        raise ExprError(f"{_shown(text)} is too long; allowed: at most {MAX_TEXT} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"{_shown(text)} is not a valid expression: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"{_shown(text)} is nested too deep; allowed: at most {MAX_DEPTH} levels") from None
    _check(text, tree, None if names is None else frozenset(names))
    return Expr(text, tree)


MEMO_LIMIT = 1 << 16
"""Most verdicts a constraint keeps (:class:`Verdicts`); then it starts again."""


class Verdicts:
    """An expression's :meth:`Expr.holds` for each combination of the names it reads, evaluated
    once: a search asks a space's constraints of the same combinations again and again (each
    proposal checked, each walk to a valid config near one), and a constraint reads a few
    macros of many (:mod:`autotune.kernel.space`). ``names``: those names, in a fixed order
    (the key's)."""

    __slots__ = ("expr", "names", "memo", "_key")

    def __init__(self, expr: Expr) -> None:
        self.expr, self.names = expr, tuple(sorted(expr.names))
        self.memo: dict[object, bool] = {}
        # the key: the names' values (one name: its value; none: ``()``), read by one C call,
        # not a list built in Python (a walk of a large space asks millions of times)
        self._key: Callable[[Mapping[str, int]], object] = operator.itemgetter(*self.names) if self.names \
            else (lambda env: ())

    def __call__(self, env: Mapping[str, int]) -> bool:
        """Whether the constraint holds for ``env`` (holding at least its macros)."""
        key = self._key(env)
        held = self.memo.get(key)
        if held is None:
            if len(self.memo) >= MEMO_LIMIT:
                self.memo.clear()
            held = self.memo[key] = self.expr.holds(env)
        return held
