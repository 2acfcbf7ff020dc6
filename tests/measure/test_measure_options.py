"""MeasureOptions: how one config is measured, one frozen value checked where it is built, its
refusals naming the field as users type it (``repeats``, ``ci``; the CLI's ``--repeats``)."""

import pickle

import pytest

from autotune.errors import InvalidInputError
from autotune.measure.measure_options import DEFAULT_TRIAL_TIMEOUT_S, MeasureOptions
from autotune.measure.option_error import OptionError
from autotune.measure.timing import PROBE, Precision


@pytest.mark.parametrize("given, message", [
    ({"repeats": 19}, "repeats 19 is not allowed; give 20 or more, at most 100000"),
    ({"repeats": 100_001}, "repeats 100001 is not allowed"),
    ({"repeats": True}, "repeats True is not allowed"),
    ({"seed": -1}, "seed -1 is not allowed; give an integer 0..4294967295"),
    ({"seed": 2**32}, "seed 4294967296 is not allowed"),
    ({"seed": 1.0}, "seed 1 is not allowed"),
    ({"ci": 1.0}, "ci 1 is not allowed; give a fraction 0 <= ci < 1"),
    ({"ci": float("nan")}, "ci nan is not allowed"),
    ({"ci_floor_us": 2e6}, "ci_floor_us 2e+06 is not allowed; give 0 to 1000000 µs"),
    ({"min_samples": PROBE - 1}, f"min_samples {PROBE - 1} is not allowed; give {PROBE} or more"),
    ({"max_samples": "200"}, "max_samples '200' is not allowed"),
    ({"min_samples": 50, "max_samples": 40}, "max_samples 40 is not allowed; give at least the minimum count"),
    ({"energy": 1}, "energy 1 is not allowed; give True or False"),
    ({"early_stop": "no"}, "early_stop 'no' is not allowed; give True or False"),
    ({"trial_timeout": 0}, "trial_timeout 0 is not allowed; give a positive number of seconds"),
    ({"trial_timeout": float("inf")}, "trial_timeout inf is not allowed"),
    ({"warmup": -1}, "warmup -1 is not allowed; give 0 or more, at most 100000"),
])
def test_a_bad_value_is_refused_naming_the_field(given, message):
    with pytest.raises(OptionError) as caught:
        MeasureOptions(**given)
    assert str(caught.value).startswith(message) and isinstance(caught.value, InvalidInputError)
    assert caught.value.param == message.split(" ")[0]


def test_the_cli_flag_replaces_the_field_name():
    with pytest.raises(OptionError) as caught:
        MeasureOptions(repeats=5)
    assert str(caught.value.as_flag()) == "--repeats 5 is not allowed; give 20 or more, at most 100000"
    with pytest.raises(OptionError) as caught:
        MeasureOptions(trial_timeout=-1)
    assert str(caught.value.as_flag()).startswith("--trial-timeout -1 is not allowed")


def test_the_defaults_are_the_searchs_certified_timing():
    m = MeasureOptions()
    assert (m.repeats, m.seed, m.energy, m.early_stop, m.trial_timeout, m.warmup) == (
        50, None, False, True, DEFAULT_TRIAL_TIMEOUT_S, 10)
    assert m.precision == Precision(0.01, 0.0005, 20, 200)
    assert MeasureOptions(ci=0).precision is None  # repeats samples per config
    assert MeasureOptions(ci=0.05, ci_floor_us=2.0, min_samples=30, max_samples=90).precision == Precision(
        0.05, 0.002, 30, 90)


def test_frozen_hashable_picklable_and_replaced_with_a_new_check():
    m = MeasureOptions(repeats=30, seed=1)
    assert hash(m) == hash(MeasureOptions(repeats=30, seed=1)) and pickle.loads(pickle.dumps(m)) == m
    with pytest.raises(AttributeError):
        m.repeats = 40  # type: ignore[misc]
    assert m.replace(ci=0) == MeasureOptions(repeats=30, seed=1, ci=0) and m.ci == 0.01
    with pytest.raises(OptionError, match="repeats 3 is not allowed"):
        m.replace(repeats=3)
    with pytest.raises(InvalidInputError, match="unknown measure option 'top_k'; allowed: repeats, seed"):
        m.replace(top_k=3)


def test_unknown_names_and_misplaced_values_are_bad_input_not_a_type_error():
    for call, message in ((lambda: MeasureOptions(bogus=1), "MeasureOptions: got an unexpected keyword argument 'bogus'"),
                          (lambda: MeasureOptions(20, repeats=30), "multiple values for argument 'repeats'"),
                          (lambda: MeasureOptions(*range(20, 40)), "too many positional arguments")):
        with pytest.raises(InvalidInputError, match=message):
            call()
