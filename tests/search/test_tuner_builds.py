"""The search loop reads what the compile pool made of each config before measuring it
(``Instruments.built``, issue 47): a config of the same binary as one measured is recorded with
that measurement, a config refused before nvcc or cut at the compile deadline is a failed trial
that costs no measurement, and a cut one is tried again by a later run of the study."""

import optuna
import pytest

from autotune.errors import TrialFailed
from autotune.kernel.config import Config
from autotune.measure.compile import COMPILE_DEADLINE
from autotune.measure.pipeline import Built
from autotune.search.options import SearchOptions
from autotune.search.outcome import SAME_BINARY
from autotune.search.tuner import search
from autotune.store.key import ProblemKey, TuningKey

from fakes import FakeTimer, fake_retime
from test_tuner import SPACE


@pytest.fixture
def key(device_info) -> TuningKey:
    return TuningKey(device_info, ProblemKey("smem_pad", "f" * 64, "e" * 64, (("rows", 1024), ("cols", 1024)),
                                             "float32"), "13.0.88", "-O3 -arch=sm_90")


def ignoring_ipad(config: Config) -> Built:
    """A pool whose binaries ignore IPAD: the configs that differ only there are one binary."""
    rest = {k: v for k, v in config.as_dict().items() if k != "IPAD"}
    return Built(identity=repr(sorted(rest.items())))


def test_a_config_of_a_binary_measured_before_is_recorded_with_that_measurement(store, key):
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=300, seed=0, strategy="grid"),
                    built=ignoring_ipad, retime=fake_retime())
    valid = SPACE.configs()
    assert result.stopped == "exhausted" and len(timer.calls) == len(valid) // 2  # one measurement per binary
    same = [o for o in result.outcomes if o.same_as is not None]
    assert len(same) == len(valid) // 2 and set(result.same_binary) == {o.config for o in same}
    by_number = {o.number: o for o in result.outcomes}
    for o in same:
        measured = by_number[o.same_as]
        assert ignoring_ipad(o.config) == ignoring_ipad(measured.config) and measured.config in timer.calls
        assert o.status == "ok" and o.measurement is measured.measurement
        assert o.reason == f"{SAME_BINARY} {measured.number} ({measured.config.key}): measured once"
        assert result.same_binary[o.config] == pytest.approx(measured.measurement.median_ms)
    # never a best of its own: neither re-timed nor the winner, nor the stored best
    assert not set(result.measured) & set(result.same_binary)
    assert not {r.config for r in result.retimings} & set(result.same_binary)
    assert store.best(key).config in timer.calls
    stored = {t.config: t for t in store.key_trials(key)}
    assert all(stored[o.config].status == "ok" and stored[o.config].reason.startswith(SAME_BINARY) for o in same)
    attrs = {Config.of("smem_pad", t.params): t.user_attrs for t in
             optuna.load_study(study_name=key.study_name, storage=store.optuna_storage()).trials}
    assert all(attrs[o.config]["same_binary_as"] == o.same_as for o in same)


def test_a_binary_measured_once_costs_no_trial_of_the_budget(store, key):
    """As many trials as the space has binaries measure every binary (a trial of the same binary
    as one measured is not one of them)."""
    binaries = len(SPACE.configs()) // 2
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=binaries, seed=0, strategy="grid"),
                    built=ignoring_ipad)
    assert len(set(timer.calls)) == binaries == result.measured_count
    assert len({ignoring_ipad(c) for c in timer.calls}) == binaries


def test_a_resumed_search_knows_the_binaries_measured_before(store, key):
    first = FakeTimer()
    search(key, SPACE, first, store, SearchOptions(trials=3, seed=0, strategy="grid"))  # no pool: no identities
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=300, seed=0, strategy="grid", resume=True),
                    built=ignoring_ipad)
    assert len(timer.calls) + len(first.calls) > len(SPACE.configs()) // 2  # unknown binaries are measured
    again = FakeTimer()
    resumed = search(key, SPACE, again, store, SearchOptions(trials=300, seed=0, strategy="random", resume=True),
                     built=ignoring_ipad)
    assert again.calls == [] and resumed.stopped == "exhausted"
    assert set(resumed.same_binary) == set(result.same_binary)  # read back: told, never re-timed
    assert not set(resumed.measured) & set(resumed.same_binary)


def test_a_config_the_pool_refused_or_failed_is_a_failed_trial_without_a_measurement(store, key):
    valid = SPACE.configs()
    refused, broken = valid[1], valid[2]
    failures = {refused: TrialFailed("resources", "block (64, 32, 1) has 2048 threads > 1024"),
                broken: TrialFailed("compile_error", "k.cu(3): error: planted")}
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=300, seed=0, strategy="grid"),
                    built=lambda c: Built(failure=failures[c]) if c in failures else None)
    assert refused not in timer.calls and broken not in timer.calls and len(timer.calls) == len(valid) - 2
    status = {o.config: (o.status, o.reason) for o in result.outcomes}
    assert status[refused] == ("resources", "block (64, 32, 1) has 2048 threads > 1024")
    assert status[broken] == ("compile_error", "k.cu(3): error: planted")


def test_a_config_cut_at_the_compile_deadline_is_tried_again_by_the_next_run(store, key):
    valid = SPACE.configs()
    slow = {valid[3], valid[5]}
    cut = TrialFailed("timeout", f"{COMPILE_DEADLINE}: nvcc ran past 12.0 s and was stopped")
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=300, seed=0, strategy="grid"),
                    built=lambda c: Built(failure=cut) if c in slow else None)
    assert result.compile_deadline_cuts == 2 and not slow & set(timer.calls)
    assert {o.config for o in result.outcomes if o.status == "timeout"} == slow
    later = FakeTimer()
    resumed = search(key, SPACE, later, store, SearchOptions(trials=300, seed=0, strategy="grid", resume=True))
    assert set(later.calls) == slow and resumed.compile_deadline_cuts == 0  # only the cut ones, compiled now


def test_a_config_still_building_holds_up_none_proposed_after_it(store, key, tmp_path):
    """The loop measures the first proposed config whose build has ended (``Instruments.ready``):
    a slow nvcc run does not stall the GPU while the configs after it are built; the search's
    first config (the default) is measured first all the same."""
    from autotune.store.opening import open_store

    in_order = FakeTimer()
    search(key, SPACE, in_order, store, SearchOptions(trials=6, seed=0, strategy="grid"))
    first, slow, after = in_order.calls[:3]
    timer = FakeTimer()
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        result = search(key, SPACE, timer, other, SearchOptions(trials=6, seed=0, strategy="grid"),
                        built=lambda c: Built(identity=c.key), ready=lambda c: c != slow)
    finally:
        other.close()
    assert timer.calls[:2] == [first, after]  # the default first, then past the one still building
    assert slow in timer.calls[2:] and sorted(map(str, timer.calls)) == sorted(map(str, in_order.calls))
    assert [o.config for o in result.outcomes] == timer.calls  # stored and told as measured
