"""SearchOptions: one frozen value, checked once where it is built, messages naming the parameter."""

import optuna
import pytest

from autotune.errors import InvalidInputError
from autotune.search.options import (MEASURE_FIELDS, RETIME_FIELDS, MeasureOptions, OptionError, RetimeOptions,
                                     SearchOptions)


@pytest.mark.parametrize("given, message", [
    ({"trials": 0}, "trials 0 is not allowed; give 1 or more"),
    ({"trials": -3}, "trials -3 is not allowed"),
    ({"trials": 2.5}, "trials 2.5 is not allowed"),
    ({"timeout": -1.0}, "timeout -1 is not allowed; give a positive number of seconds"),
    ({"timeout": float("nan")}, "timeout nan is not allowed"),
    ({"seed": "x"}, "seed 'x' is not allowed; give an integer"),
    ({"strategy": "annealing"}, "strategy 'annealing' is not known; allowed: bandit, tpe, random, grid, gp, cmaes, transfer"),
    ({"strategy": 3}, "strategy 3 (int) is not allowed"),
    ({"batch": 0}, "batch 0 is not allowed; give 1..1024 configs"),
    ({"repeats": 19}, "repeats 19 is not allowed; give 20 or more"),
    ({"top_k": 0}, "top_k 0 is not allowed; give 1 or more"),
    ({"rounds": -1}, "rounds -1 is not allowed"),
    ({"trial_timeout": 0}, "trial_timeout 0 is not allowed; give a positive number of seconds"),
    ({"trial_timeout": float("inf")}, "trial_timeout inf is not allowed"),
    ({"ci": 1.0}, "ci 1 is not allowed; give a fraction 0 <= ci < 1"),
    ({"ci": -0.01}, "ci -0.01 is not allowed"),
    ({"ci": float("nan")}, "ci nan is not allowed"),
    ({"ci": True}, "ci True is not allowed"),
    ({"ci_floor_us": -1.0}, "ci_floor_us -1 is not allowed; give 0 to 1000000 µs"),
    ({"min_samples": 5}, "min_samples 5 is not allowed; give 10 or more"),
    ({"max_samples": 10**6}, "max_samples 1000000 is not allowed"),
    ({"min_samples": 50, "max_samples": 40}, "max_samples 40 is not allowed; give at least the minimum count of samples (50)"),
    ({"objective": "power"}, "objective 'power' is not allowed; give one of time | energy | edp | time,energy"),
    ({"energy": "yes"}, "energy 'yes' is not allowed; give True or False"),
])
def test_a_bad_value_is_refused_naming_the_parameter(given, message):
    with pytest.raises(OptionError) as caught:
        SearchOptions(**given)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, InvalidInputError)
    param = message.split(" ")[0]
    assert str(caught.value.as_flag()) == str(caught.value).replace(param, "--" + param.replace("_", "-"), 1)


def test_the_cli_flag_replaces_the_parameter_name():
    with pytest.raises(OptionError) as caught:
        SearchOptions(top_k=0)
    assert str(caught.value.as_flag()) == "--top-k 0 is not allowed; give 1 or more, at most 1000"


def test_options_are_frozen_hashable_and_replaced_with_a_new_check():
    options = SearchOptions(trials=10, strategy="random", batch=4)
    assert hash(options) == hash(SearchOptions(trials=10, strategy="random", batch=4))
    with pytest.raises(AttributeError):
        options.trials = 5  # type: ignore[misc]
    assert options.replace(trials=3).trials == 3 and options.trials == 10
    with pytest.raises(OptionError, match="trials 0"):
        options.replace(trials=0)


def test_sampler_is_the_deprecated_name_of_strategy_and_unknown_keywords_are_refused():
    assert SearchOptions.of(sampler="grid").strategy == "grid"
    assert SearchOptions.of(trials=3).strategy == "tpe_local"  # DEFAULT_STRATEGY
    with pytest.raises(InvalidInputError, match="unknown search option 'n_trials'"):
        SearchOptions.of(n_trials=3)


def test_an_optuna_sampler_is_a_strategy_and_named_by_its_class():
    options = SearchOptions(strategy=optuna.samplers.RandomSampler(seed=1))
    assert options.strategy_name == "RandomSampler"


def test_batch_defaults_to_the_compile_workers(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "6")
    assert SearchOptions().batch_size() == 6 and SearchOptions(batch=3).batch_size() == 3
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "0")  # compiling ahead off: one config at a time
    assert SearchOptions().batch_size() == 1


def test_keywords_over_given_options_keep_the_same_sampler_object():
    sampler = optuna.samplers.TPESampler(seed=1)
    options = SearchOptions(strategy=sampler, trials=7)
    changed = SearchOptions.of(options, trials=3, batch=2)
    assert changed.strategy is sampler and (changed.trials, changed.batch) == (3, 2) and options.trials == 7
    assert SearchOptions.of(options) == options


def test_a_strategy_whose_package_is_missing_is_refused_when_the_options_are_built(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(InvalidInputError, match="strategy 'gp' needs the package 'torch', which is not installed"):
        SearchOptions(strategy="gp")


def test_certified_timing_is_on_by_default_and_off_with_ci_0():
    from autotune.measure.timing import Precision

    default = SearchOptions()
    assert default.precision == Precision(0.01, 0.0005, 20, 200)
    assert default.benchmark_options() == MeasureOptions() == default.measure
    assert default.benchmark_options().precision == default.precision
    assert SearchOptions(ci=0).precision is None
    assert SearchOptions(objective="edp").meters_energy and SearchOptions(energy=True).meters_energy


@pytest.mark.parametrize("given, message", [
    ({"top_k": 0}, "top_k 0 is not allowed; give 1 or more, at most 1000"),
    ({"top_k": True}, "top_k True is not allowed"),
    ({"rounds": 1001}, "rounds 1001 is not allowed; give 1 or more, at most 1000"),
    ({"rounds": 2.0}, "rounds 2 is not allowed"),
])
def test_the_retime_group_checks_its_own_fields(given, message):
    with pytest.raises(OptionError) as caught:
        RetimeOptions(**given)
    assert str(caught.value).startswith(message) and caught.value.param == next(iter(given))
    with pytest.raises(OptionError) as flat:  # the same refusal through the flat keyword
        SearchOptions(**given)
    assert str(flat.value) == str(caught.value)
    assert str(flat.value.as_flag()).startswith("--" + next(iter(given)).replace("_", "-") + " ")


def test_the_retime_group_is_frozen_and_hashable():
    assert RetimeOptions() == RetimeOptions(5, 5) and hash(RetimeOptions(3, 2)) == hash(RetimeOptions(top_k=3, rounds=2))
    with pytest.raises(AttributeError):
        RetimeOptions().top_k = 3  # type: ignore[misc]
    with pytest.raises(InvalidInputError, match="RetimeOptions: got an unexpected keyword argument 'repeats'"):
        RetimeOptions(repeats=20)


def test_the_flat_keywords_build_the_same_options_as_the_groups():
    flat = dict(repeats=30, ci=0.02, ci_floor_us=1.0, min_samples=25, max_samples=300, energy=True,
                trial_timeout=12.5, top_k=3, rounds=4)
    assert set(flat) == set(MEASURE_FIELDS) | set(RETIME_FIELDS)
    grouped = SearchOptions(seed=7, measure=MeasureOptions(repeats=30, seed=7, ci=0.02, ci_floor_us=1.0, min_samples=25,
                                                           max_samples=300, energy=True, trial_timeout=12.5),
                            retime=RetimeOptions(top_k=3, rounds=4))
    for built in (SearchOptions(seed=7, **flat), SearchOptions.of(seed=7, **flat), SearchOptions().replace(seed=7, **flat),
                  SearchOptions.of(SearchOptions(seed=7), **flat)):
        assert built == grouped and hash(built) == hash(grouped)
        assert {name: getattr(built, name) for name in flat} == flat  # read flat, as before
    assert SearchOptions().measure == MeasureOptions() and SearchOptions().retime == RetimeOptions()


def test_a_flat_keyword_goes_over_the_group_given_and_the_seed_seeds_the_inputs():
    options = SearchOptions(measure=MeasureOptions(repeats=40, ci=0), repeats=60, seed=3)
    assert options.measure == MeasureOptions(repeats=60, ci=0, seed=3)
    assert options.replace(seed=None).measure.seed is None and options.replace(top_k=2).measure == options.measure
    assert options.replace(measure=MeasureOptions()).measure == MeasureOptions(seed=3)  # always the search's seed
    with pytest.raises(AttributeError):
        options.repeats = 5  # type: ignore[misc]
    for name, value, group in (("measure", {"repeats": 20}, "MeasureOptions"), ("retime", (3, 3), "RetimeOptions")):
        with pytest.raises(OptionError, match=f"{name} .* is not allowed; give a {group}"):
            SearchOptions(**{name: value})


def test_the_options_pickle_whole_for_the_spawned_processes():
    import pickle

    options = SearchOptions(seed=2, repeats=25, top_k=2, objective="edp")
    back = pickle.loads(pickle.dumps(options))
    assert back == options and back.measure == options.measure and back.retime == RetimeOptions(top_k=2)
    assert pickle.loads(pickle.dumps(options.benchmark_options())) == options.benchmark_options()


@pytest.mark.parametrize("build", [lambda: SearchOptions(db="sqlite:///x.db"),
                                   lambda: SearchOptions.of(None, db="sqlite:///x.db"),
                                   lambda: SearchOptions(trials=5).replace(db="sqlite:///x.db")])
def test_the_database_is_no_option_and_old_code_giving_it_is_told_where_it_goes(build):
    """Issue 50: the results database travels beside the options (``tune(..., db=URL)``, the
    CLI's ``--db``), not inside them; ``SearchOptions(db=...)``, a field until 0.4.0, is one
    refusal naming the value and where it goes now, whichever way the options are built."""
    from dataclasses import fields

    assert "db" not in {f.name for f in fields(SearchOptions)} and not hasattr(SearchOptions(), "db")
    with pytest.raises(InvalidInputError) as caught:
        build()
    assert str(caught.value) == ("SearchOptions: db 'sqlite:///x.db' is not allowed; the results database is no "
                                 "search option since 0.4.0: give db= beside the options, to the call that opens it "
                                 "(autotune.tune(..., db=URL), tune_workload(..., db=URL); the CLI's --db)")
