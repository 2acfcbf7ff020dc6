"""Strategies declare their traits (autotune/search/strategies/traits.py), the loop asks them and
never a strategy's name, a user registers a strategy of their own, and each strategy takes its
own options (issue 38, step 2)."""

from __future__ import annotations

import ast
import pickle
import sys
from pathlib import Path

import optuna
import pytest

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.space import SearchSpace
from autotune.measure.option_error import OptionError
from autotune.search.options import SearchOptions
from autotune.search.strategies import (DEFAULT_STRATEGY, STRATEGIES, SWEEP_STRATEGY, TRAITS, Strategy,
                                        StrategyOption, StrategyOptions, Traits, make_strategy, register, traits_of)
from autotune.search.strategies import registry, transfer
from autotune.search.tuner import search
from autotune.store.key import tuning_key

from fakes import FakeTimer

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "autotune"
FOLDER = PACKAGE / "search" / "strategies"
SPACE = SearchSpace("smem_pad", (("BLOCK_ROWS", (4, 8, 16, 32)), ("DIAGONAL", (0,)), ("IPAD", (1, 2)),
                                 ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"))
BUILT_IN = ("bandit", "tpe", "random", "grid", "gp", "cmaes", "transfer", "nsga2", "tpe_local")


@pytest.fixture
def clean_registry(monkeypatch):
    """The registry as it is, given back after the test (a user's strategy registered in it goes)."""
    monkeypatch.delenv("AUTOTUNE_STRATEGIES", raising=False)
    saved = dict(registry._FACTORIES), dict(registry._TRAITS)
    yield
    for live, before in zip((registry._FACTORIES, registry._TRAITS), saved):
        live.clear()
        live.update(before)


class Descending(Strategy):
    """A user's strategy: the valid configs in reverse order of the space, ``stride`` apart first."""

    name = "descending"

    def __init__(self, space, seed=None, history=(), stride=1, label="x"):
        self.stride, self.label = stride, label
        self._order = space.configs()[::-1]
        super().__init__(space, seed, history)

    def _propose(self, k):
        out = []
        for config in self._order[::self.stride] + self._order:
            if len(out) < k and not self.known(config) and config not in out:
                out.append(config)
        return out


DESCENDING = Traits(options=(StrategyOption("stride", 1, low=1, high=8, doc="configs skipped"),
                             StrategyOption("label", "x", choices=("x", "y"))))


# --- traits -----------------------------------------------------------------------------------

def test_each_built_in_strategy_declares_what_it_is():
    assert tuple(STRATEGIES) == BUILT_IN and tuple(TRAITS) == BUILT_IN
    assert TRAITS["grid"] == Traits(in_order=True, partitions=True, pareto=True) and SWEEP_STRATEGY == "grid"
    assert TRAITS["transfer"].needs_prior and not TRAITS["transfer"].in_order
    assert TRAITS["gp"].packages == ("torch",) and TRAITS["cmaes"].packages == ("cmaes",)
    assert TRAITS["random"] == Traits(pareto=True) and not TRAITS["tpe"].needs_prior
    assert TRAITS["nsga2"].pareto and [o.name for o in TRAITS["nsga2"].options] == ["population"]
    assert [n for n, t in TRAITS.items() if t.pareto] == ["random", "grid", "nsga2"]  # told (ms, J), or ignore it
    assert [o.name for o in TRAITS["tpe"].options] == ["startup", "candidates", "local", "start", "centres",
                                                       "local_first"]
    assert [o.name for o in TRAITS["transfer"].options] == ["queue", "shapes", "probe", "slack", "first", "share",
                                                            "then"]
    assert TRAITS["bandit"].options == ()
    assert traits_of(optuna.samplers.RandomSampler()) == Traits() == SearchOptions(
        strategy=optuna.samplers.RandomSampler()).traits
    assert SearchOptions(strategy="grid").traits.in_order and SearchOptions(strategy="transfer").traits.needs_prior


def test_the_options_defaults_are_the_strategies_own():
    """Behaviour unchanged: a strategy given no option runs as before (Transfer's constants,
    Optuna's n_startup_trials)."""
    takes = {o.name: o.default for o in TRAITS["transfer"].options}
    assert takes == {"queue": transfer.QUEUE, "shapes": transfer.SHAPES, "probe": transfer.PROBE,
                     "slack": transfer.SLACK, "first": transfer.FIRST, "share": transfer.SHARE,
                     "then": DEFAULT_STRATEGY}
    assert make_strategy("tpe", SPACE)._study.sampler._n_startup_trials == 10
    assert make_strategy("tpe", SPACE, options={"startup": "3"})._study.sampler._n_startup_trials == 3


def test_the_default_strategy_is_written_in_one_place():
    """DEFAULT_STRATEGY's value is no constant of any other module (SearchOptions, the CLI, the
    workload's plan and jobs take the name from there), so a new default is one line."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path == FOLDER / "registry.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        own = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign) and path.parent == FOLDER
               and any(getattr(t, "id", getattr(t, "attr", None)) == "name" for t in n.targets)}  # a strategy's own name
        if path.parent == FOLDER:  # the name a built-in is registered under, and an option's choices, are names
            own |= {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
                    and getattr(n.func, "id", None) == "register"}
            own |= {id(c) for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg == "choices"
                    for c in ast.walk(n.value)}
            own |= {id(c) for n in ast.walk(tree) if isinstance(n, ast.Assign)  # a factory's name in __all__
                    and any(getattr(t, "id", None) == "__all__" for t in n.targets) for c in ast.walk(n.value)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == DEFAULT_STRATEGY and id(node) not in own:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
    assert SearchOptions().strategy == DEFAULT_STRATEGY


def _names_compared(tree: ast.AST) -> list[tuple[str, int]]:
    """Strategy names among the operands of a comparison (``==``, ``!=``, ``in``; a tuple, list
    or set of names too) or a ``match`` case."""
    def strings(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, node.lineno
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for item in node.elts:
                yield from strings(item)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += [(s, n) for s, n in strings(operand) if s in STRATEGIES]
        elif isinstance(node, ast.MatchValue):
            found += [(s, n) for s, n in strings(node.value) if s in STRATEGIES]
    return found


def test_no_strategy_name_is_compared_outside_the_strategies_folder():
    """The loop asks a strategy's traits: ``options.strategy == "grid"`` outside
    autotune/search/strategies/ fails here (a name may still be chosen, ``strategy="transfer"``)."""
    found = [f"{path.relative_to(ROOT)}:{line} compares {name!r}"
             for path in PACKAGE.rglob("*.py") if FOLDER not in path.parents
             for name, line in _names_compared(ast.parse(path.read_text(), str(path)))]
    assert found == []


def test_the_scan_sees_a_name_compared():
    tree = ast.parse('if options.strategy == "grid" or s in ("x", "transfer"):\n    pass\n'
                     'match s:\n    case "tpe":\n        pass\n')
    assert sorted(_names_compared(tree)) == [("grid", 1), ("tpe", 4), ("transfer", 1)]


# --- register ---------------------------------------------------------------------------------

def test_a_registered_strategy_is_chosen_by_name_with_its_options(clean_registry):
    register("descending", Descending, DESCENDING)
    assert "descending" in STRATEGIES and TRAITS["descending"] is DESCENDING  # the read-only views follow
    s = make_strategy("descending", SPACE, 0, options={"stride": 2})
    assert isinstance(s, Descending) and (s.stride, s.label) == (2, "x")  # given, and the default
    valid = SPACE.configs()
    assert s.ask(2) == [valid[-1], valid[-3]]
    options = SearchOptions(strategy="descending", strategy_options={"label": "y"})
    assert options.strategy_options == {"label": "y"} and options.traits is DESCENDING


def test_the_search_loop_runs_a_registered_strategy_and_stores_its_options(clean_registry, store, device_info):
    register("descending", Descending, DESCENDING)
    key = tuning_key("smem_pad", device_info, (256, 256), "float32")
    timer = FakeTimer()
    search(key, SPACE, timer, store, SearchOptions(trials=4, seed=0, strategy="descending",
                                                   strategy_options={"stride": "3"}))
    valid = SPACE.configs()
    default = Config.of("smem_pad", {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 32})
    assert timer.calls == [default] + [c for c in valid[::-1][::3] if c != default][:3]
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert study.user_attrs["strategy"] == "descending" and study.user_attrs["strategy_options"] == {"stride": 3}
    # a later search giving no option empties them (they were the earlier search's)
    search(key, SPACE, FakeTimer(), store, SearchOptions(trials=1, strategy="descending", resume=True))
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert study.user_attrs["strategy_options"] == {}


def test_a_partitioning_strategy_gets_its_share_and_others_do_not(clean_registry):
    seen = []

    def plain(space, seed, history, **kw):
        seen.append(("plain", kw))
        return Descending(space, seed, history)

    def parted(space, seed, history, part=(0, 1), last=None):
        seen.append(("parted", part, last))
        return Descending(space, seed, history)

    register("plain", plain)
    register("parted", parted, Traits(partitions=True))
    last = SPACE.configs()[0]
    make_strategy("plain", SPACE, part=(1, 2), last=last)
    make_strategy("parted", SPACE, part=(1, 2), last=last)
    make_strategy("parted", SPACE)
    assert seen == [("plain", {}), ("parted", (1, 2), last), ("parted", (0, 1), None)]


@pytest.mark.parametrize(("args", "message"), [
    (("tpe", Descending), "strategy 'tpe' is registered already; give replace=True"),
    (("", Descending), "strategy name '' is not allowed; give letters, digits"),
    (("two words", Descending), "strategy name 'two words' is not allowed"),
    (("mine", "Descending"), "strategy 'mine': factory 'Descending' is not callable"),
    (("mine", Descending, {"needs_prior": True}), "strategy 'mine': traits {'needs_prior': True} is not allowed; "
                                                  "give a Traits"),
])
def test_register_refuses_what_it_cannot_use(clean_registry, args, message):
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(")):
        register(*args)


def test_register_replaces_when_asked(clean_registry):
    register("descending", Descending)
    register("descending", Descending, DESCENDING, replace=True)
    assert TRAITS["descending"] is DESCENDING


def test_a_strategy_of_a_module_autotune_strategies_names_is_found(clean_registry, tmp_path, monkeypatch):
    """The command line (and each GPU's worker process) reaches a user's strategy so."""
    (tmp_path / "my_strategies.py").write_text(
        "from autotune.search.strategies import register\n"
        "from autotune.search.strategies.simple import Random\n"
        "register('mine', lambda space, seed, history: Random(space, seed, history))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(OptionError, match="strategy 'mine' is not known"):
        SearchOptions(strategy="mine")
    monkeypatch.setenv("AUTOTUNE_STRATEGIES", "my_strategies")
    assert SearchOptions(strategy="mine").strategy == "mine" and "mine" in STRATEGIES
    monkeypatch.setenv("AUTOTUNE_STRATEGIES", "no_such_module_here")
    with pytest.raises(InvalidInputError, match="AUTOTUNE_STRATEGIES module 'no_such_module_here' cannot be "
                                                "imported: ModuleNotFoundError"):
        SearchOptions(strategy="other")
    sys.modules.pop("my_strategies", None)


# --- strategy_options -------------------------------------------------------------------------

@pytest.mark.parametrize(("strategy", "given", "parsed"), [
    ("tpe", {"startup": 20}, {"startup": 20}),
    ("tpe", {"startup": " 20 "}, {"startup": 20}),  # the command line's text
    ("transfer", {"queue": "0", "shapes": 2}, {"queue": 0, "shapes": 2}),
    ("tpe", None, {}),
    ("random", {}, {}),
])
def test_good_strategy_options_are_kept_parsed(strategy, given, parsed):
    options = SearchOptions(strategy=strategy, strategy_options=given)
    assert options.strategy_options == parsed and isinstance(options.strategy_options, StrategyOptions)
    assert hash(options) == hash(SearchOptions(strategy=strategy, strategy_options=parsed))  # still hashable
    assert pickle.loads(pickle.dumps(options)) == options  # to the workers of several GPUs


@pytest.mark.parametrize(("strategy", "given", "message"), [
    ("tpe", {"bogus": 1}, "strategy_options 'bogus=1' is not allowed; strategy tpe takes startup (an integer 1..100000)"),
    ("tpe", {"startup": 0}, "strategy_options 'startup=0' is not allowed; option startup of strategy tpe takes an "
                            "integer 1..100000"),
    ("tpe", {"startup": "ten"}, "option startup of strategy tpe takes an integer"),
    ("tpe", {"startup": 2.5}, "strategy_options 'startup=2.5' is not allowed"),
    ("tpe", {"startup": True}, "strategy_options 'startup=True' is not allowed"),  # a bool is no integer
    ("random", {"startup": 3}, "strategy_options 'startup=3' is not allowed; strategy random takes no option"),
    ("tpe", [("startup", 3)], "strategy_options [('startup', 3)] is not allowed; give a mapping"),
])
def test_bad_strategy_options_are_refused_naming_the_value_and_what_is_allowed(strategy, given, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        SearchOptions(strategy=strategy, strategy_options=given)


def test_a_sampler_takes_no_strategy_option():
    with pytest.raises(OptionError, match="strategy TPESampler takes no option"):
        SearchOptions(strategy=optuna.samplers.TPESampler(), strategy_options={"startup": 3})


def test_the_options_of_a_users_strategy_are_checked_by_kind(clean_registry):
    register("descending", Descending, DESCENDING)
    with pytest.raises(OptionError, match="option label of strategy descending takes one of x, y"):
        SearchOptions(strategy="descending", strategy_options={"label": "z"})
    with pytest.raises(OptionError, match="option stride of strategy descending takes an integer 1..8"):
        SearchOptions(strategy="descending", strategy_options={"stride": 9})


def test_a_new_strategy_drops_the_old_ones_options():
    options = SearchOptions(strategy="transfer", strategy_options={"queue": 2})
    assert options.replace(trials=5).strategy_options == {"queue": 2}
    assert options.replace(strategy="transfer").strategy_options == {"queue": 2}  # the same strategy
    assert options.replace(strategy="random").strategy_options == {}
    assert options.replace(strategy="tpe", strategy_options={"startup": 4}).strategy_options == {"startup": 4}


@pytest.mark.parametrize(("option", "value", "parsed"), [
    (StrategyOption("n", 1, low=0), "7", 7), (StrategyOption("f", 0.5, low=0, high=1), "0.25", 0.25),
    (StrategyOption("f", 0.5), 2, 2.0), (StrategyOption("b", False), "true", True), (StrategyOption("b", True), "no", False),
    (StrategyOption("s", "a", choices=("a", "b")), "b", "b"),
])
def test_an_option_parses_its_kind_and_text(option, value, parsed):
    assert option.parse(value) == parsed and type(option.parse(value)) is type(parsed)


@pytest.mark.parametrize(("option", "value"), [
    (StrategyOption("n", 1, low=0), "-1"), (StrategyOption("n", 1), 1.0), (StrategyOption("f", 0.5), "nan"),
    (StrategyOption("b", False), "maybe"), (StrategyOption("s", "a", choices=("a",)), "c"), (StrategyOption("s", "a"), ""),
])
def test_an_option_refuses_a_value_of_another_kind_or_range(option, value):
    with pytest.raises(ValueError):
        option.parse(value)
