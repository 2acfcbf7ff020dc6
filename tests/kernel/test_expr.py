"""The one safe evaluator of kernel expressions (autotune/kernel/expr.py): what it computes,
and everything outside its whitelist refused when parsed, never evaluated."""

import time

import pytest

from autotune.kernel.expr import Expr, ExprError, ExprRangeError, parse_expr

ENV = {"rows": 1000, "cols": 3001, "TILE_DIM": 32, "BLOCK_ROWS": 8, "itemsize": 4, "zero": 0}


def ev(text, env=ENV):
    return parse_expr(text)(env)


@pytest.mark.parametrize("text, value", [
    ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("7 // 2", 3), ("-7 // 2", -4), ("7 % 3", 1), ("2 ** 10", 1024),
    ("-rows", -1000), ("rows - -cols", 4001), ("2 * rows * cols * itemsize", 2 * 1000 * 3001 * 4),
    ("TILE_DIM // max(1, 16 // itemsize)", 8), ("0 ** 0", 1), (" 42 ", 42), (42, 42), (0, 0),
])
def test_arithmetic(text, value):
    assert ev(text) == value


@pytest.mark.parametrize("text, value", [
    ("cdiv(7, 2)", 4), ("cdiv(8, 2)", 4), ("cdiv(0, 3)", 0), ("cdiv(1, 1000)", 1), ("cdiv(-7, 2)", -3),
    ("cdiv(rows, TILE_DIM) * cdiv(cols, TILE_DIM)", 32 * 94), ("cdiv(cdiv(rows, TILE_DIM) * cdiv(cols, 64), 3)", 502),
    ("min(3, 1, 2)", 1), ("max(3, 1, 2)", 3), ("min(rows)", 1000), ("max(1, 16 // itemsize)", 4),
    ("min(rows, cols) + max(rows, cols)", 4001),
])
def test_cdiv_min_max(text, value):
    assert ev(text) == value


@pytest.mark.parametrize("text, value", [
    ("rows < cols", 1), ("rows > cols", 0), ("rows == 1000", 1), ("rows != 1000", 0), ("rows <= 1000 >= 999", 1),
    ("1 < TILE_DIM <= 32", 1), ("1 < TILE_DIM < 32", 0), ("TILE_DIM % BLOCK_ROWS == 0 and TILE_DIM * BLOCK_ROWS <= 1024", 1),
    ("rows > cols or itemsize == 4", 1), ("not rows", 0), ("not zero", 1), ("(rows > 1) + (cols > 1)", 2),
])
def test_comparisons_and_logic_are_0_or_1(text, value):
    got = ev(text)
    assert got == value and type(got) is int
    assert parse_expr(text).holds(ENV) is bool(value)


@pytest.mark.parametrize("text, message", [
    ("rows.bit_length()", "calls 'rows.bit_length'"),  # attribute access
    ("().__class__", "not allowed"),
    ("abs(rows)", "calls 'abs'; allowed: cdiv, min, max"),  # a function outside the three
    ("__import__('os')", "calls '__import__'"),
    ("rows.__class__(1)", "not allowed|calls"),
    ("open", None),                                       # a bare name is just a name (no names given)
    ("1.5", "uses 1.5; only integer constants"),         # floats
    ("rows / 2", "not allowed"),                          # true division gives floats
    ("1e3", "only integer constants"),
    ("True", "uses True; only integer constants"),
    ("'32'", "only integer constants"),
    ("lambda: 1", "not allowed"),                         # lambdas
    ("(lambda x: x)(1)", "calls 'lambda x: x'"),
    ("[1, 2]", "not allowed"), ("rows[0]", "not allowed"), ("{1: 2}", "not allowed"),
    ("[x for x in (1, 2)]", "not allowed"), ("rows if cols else 1", "not allowed"),
    ("1 << 40", "not allowed"), ("~rows", "not allowed"), ("rows & 1", "not allowed"), ("+rows", "not allowed"),
    ("(x := 1)", "not allowed"), ("min(*(1, 2))", "not allowed"), ("min(rows, key=cols)", "calls 'min'"),
    ("cdiv(1)", "cdiv takes 2 argument"), ("cdiv(1, 2, 3)", "cdiv takes 2 argument"), ("min()", "1 or more"),
    ("1 +", "not a valid expression"), ("", "not a valid expression"), ("rows; cols", "not a valid expression"),
])
def test_what_is_outside_the_whitelist_is_refused_when_parsed(text, message):
    if message is None:
        assert parse_expr(text).names == {"open"}
        return
    with pytest.raises(ExprError, match=message):
        parse_expr(text)


@pytest.mark.parametrize("value", [True, False, 1.0, None, [1], b"1"])
def test_only_ints_and_strings_are_expressions(value):
    with pytest.raises(ExprError, match="is not an integer expression"):
        parse_expr(value)


def test_names_are_checked_against_the_allowed_names():
    assert parse_expr("cdiv(rows, TILE_DIM)", ["rows", "TILE_DIM"]).names == {"rows", "TILE_DIM"}
    with pytest.raises(ExprError, match="names WARPS; allowed names: BLOCK_ROWS, TILE_DIM"):
        parse_expr("TILE_DIM * WARPS", ["TILE_DIM", "BLOCK_ROWS"])
    with pytest.raises(ExprError, match="names a, b"):
        parse_expr("b + a", [])
    # a function's name read as a value is a name like any other, not a function
    with pytest.raises(ExprError, match="names cdiv"):
        parse_expr("cdiv(rows, cdiv)", ["rows"])
    assert parse_expr("max(min, 1)").names == {"min"}
    with pytest.raises(KeyError):  # no names given: any name parses, and a missing one fails to evaluate
        parse_expr("rows * depth")({"rows": 1})


def test_division_by_zero_raises_when_evaluated_and_is_false_in_holds():
    for text in ("rows // zero", "rows % zero", "cdiv(rows, zero)", "1 + rows // (TILE_DIM - 32) > 0"):
        e = parse_expr(text)
        with pytest.raises(ZeroDivisionError):
            e(ENV)
        assert e.holds(ENV) is False
    assert parse_expr("zero == 0 or rows // zero").holds(ENV) is True  # short-circuits like Python


@pytest.mark.parametrize("text", ["2 ** 65", "2 ** -1", "rows ** 100", "9 ** 9 ** 9", "10 ** 400",
                                  "(2 ** 64) ** 64", "(((((2 ** 64) ** 64) ** 64) ** 64) ** 64) ** 64"])
def test_huge_powers_are_refused_quickly(text):
    e = parse_expr(text)
    start = time.perf_counter()
    with pytest.raises(ZeroDivisionError, match="power out of range"):
        e(ENV)
    assert e.holds(ENV) is False
    assert time.perf_counter() - start < 0.5


def test_powers_within_range_are_exact():
    assert ev("2 ** 64") == 2**64 and ev("(-3) ** 3") == -27 and ev("itemsize ** 2") == 16 and ev("10 ** 18") == 10**18


def test_expressions_are_values():
    a, b = parse_expr("rows + 1"), parse_expr(" rows + 1 ")
    assert a == b and hash(a) == hash(b) and str(a) == "rows + 1" and isinstance(a, Expr)
    assert parse_expr(32).text == "32" and parse_expr("rows + 2") != a


@pytest.mark.parametrize(("text", "message"), [
    ("-" * 5000 + "1", "is too long; allowed: at most 1000 characters"),
    ("not " * 3000 + "1", "is too long"),
    ("+".join(["1"] * 100_000), "is too long"),
    ("(" * 5000 + "1" + ")" * 5000, "is too long"),
    ("-" * 300 + "1", "is nested too deep; allowed: at most 100 levels"),
    ("not " * 200 + "1", "is nested too deep"),
    ("+".join(["n"] * 300), "is nested too deep"),
    ("max(" + ",".join(["n"] * 450) + ")", "is too large; allowed: at most 400"),
    (str(2**200), "holds a number out of range; allowed: |value| < 2**128"),
    ("(" * 250 + "1" + ")" * 250, "is not a valid expression"),  # Python's parser: too many nested parentheses
])
def test_expressions_are_bounded_when_parsed(text, message):
    started = time.perf_counter()
    with pytest.raises(ExprError) as info:
        parse_expr(text)
    said = str(info.value)
    assert message in said and "\n" not in said and len(said) < 200, said
    assert time.perf_counter() - started < 0.5


def test_an_int_out_of_range_is_refused():
    with pytest.raises(ExprError, match="an integer of 201 bits is not allowed"):
        parse_expr(2**200)


@pytest.mark.parametrize("text", ["*".join(["2**60"] * 20), "n * n * n * n * n", "-(2**64) * 2**64",
                                  "cdiv(2**120, 1) * 2**10"])
def test_values_are_bounded_when_evaluated(text):
    expr = parse_expr(text)
    with pytest.raises(ExprRangeError, match="out of range"):
        expr({"n": 2**31})
    assert not expr.holds({"n": 2**31})  # a constraint it breaks, as a division by zero


def test_values_within_range_are_exact():
    assert parse_expr("2**60 * 2**60 * 64")({}) == 2**126
    assert parse_expr("rows * cols * itemsize")({"rows": 2**31 - 1, "cols": 2**31 - 1, "itemsize": 16}) \
        == (2**31 - 1) ** 2 * 16
