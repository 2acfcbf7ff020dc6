import types

import optuna
import pytest

from autotune.store.opening import open_results

from autotune.kernel.config import Config
from autotune.errors import InvalidInputError
from autotune.store.key import ProblemKey, TuningKey
from autotune.kernel.space import SearchSpace
from autotune.search import trial_loop, tuner as tuner_module
from autotune.search.options import SearchOptions
from autotune.search.tuner import search

from fakes import OPTIMUM, FakeTimer

SPACE = SearchSpace("smem_pad", (("BLOCK_ROWS", (4, 8, 16, 32)), ("DIAGONAL", (0,)), ("IPAD", (1, 2)),
                                 ("TILE_DIM", (16, 32, 64))),
                    ("TILE_DIM % BLOCK_ROWS == 0", "TILE_DIM * BLOCK_ROWS <= 1024"))
BEST = Config.of("smem_pad", OPTIMUM)
DEFAULT = Config.of("smem_pad", {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 32})  # kernels/smem_pad.toml


@pytest.fixture
def key(device_info) -> TuningKey:
    return TuningKey(device_info, ProblemKey("smem_pad", "f" * 64, "e" * 64,
                                             (("rows", 1024), ("cols", 1024)), "float32"),
                     "13.0.88", "-O3 -arch=sm_90")


@pytest.mark.parametrize("sampler", ["grid", "tpe", "random"])
def test_finds_the_fake_optimum_and_stores_it(store, key, sampler):
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=300, seed=3, strategy=sampler))
    valid = SPACE.configs()
    assert result.stopped == "exhausted"
    assert set(timer.calls) == set(valid) and len(timer.calls) == len(valid)  # each measured once
    assert result.best[0] == BEST and result.best[1] == pytest.approx(timer(BEST).median_ms)  # ms: the objective
    best = store.best(key)
    assert best.config == BEST and best.gbps == pytest.approx(timer.gbps(BEST))


def stored_trials(store, key):
    return optuna.load_study(study_name=key.study_name, storage=store.optuna_storage()).trials


def test_no_repeat_nor_constraint_breaker_is_proposed_measured_or_stored(store, key):
    """Issue 22 target 4 and issue 28: a strategy proposes valid new configs only, so the
    stored study holds one trial per measured config, nothing PRUNED, no copied duplicate."""
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=12, seed=0, strategy="random", batch=5))
    assert len(timer.calls) == 12 == len(set(timer.calls)) and result.stopped == "trials"
    assert all(not SPACE.violations(c) for c in timer.calls)
    assert [o.status for o in result.outcomes] == ["ok"] * 12
    trials = stored_trials(store, key)
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * 12
    assert [Config.of("smem_pad", t.params) for t in trials] == timer.calls
    assert all(t.user_attrs == {"status": "ok"} for t in trials)
    assert len(store.key_trials(key)) == 12


def test_trials_dead_before_a_heartbeat_are_looked_for_once_a_heartbeat_interval(store, key, monkeypatch):
    """At the start, then at most once every HEARTBEAT_S seconds (not a read and a write lock
    per trial: such a trial is failed GRACE_S after it started, so HEARTBEAT_S later at most),
    and at the end (a search shorter than HEARTBEAT_S checks again once)."""
    from autotune.store import repository, study_storage

    calls, now = [], [1000.0]
    monkeypatch.setattr(repository.Store, "fail_trials_dead_before_heartbeat",
                        lambda self, storage, name: calls.append(now[0]) or [])
    clock = types.SimpleNamespace(monotonic=lambda: now[0], perf_counter=tuner_module.time.perf_counter)
    monkeypatch.setattr(tuner_module, "time", clock)
    monkeypatch.setattr(trial_loop, "time", clock)  # the loop's checks (autotune.search.trial_loop)

    def timer(config, fake=FakeTimer()):
        now[0] += study_storage.HEARTBEAT_S / 2  # two trials a heartbeat interval
        return fake(config)

    result = search(key, SPACE, timer, store, SearchOptions(trials=8, strategy="grid"))
    assert result.measured_count == 8
    assert len(calls) == 1 + 3 + 1  # the start; trials 2, 4, 6 find an interval gone by (not 0..7); the end


def test_grid_measures_exactly_the_valid_configs_in_order(store, key):
    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="grid"))
    assert timer.calls == [DEFAULT] + [c for c in SPACE.configs() if c != DEFAULT]  # the default first
    assert [o.status for o in result.outcomes] == ["ok"] * len(SPACE.configs())
    assert result.stopped == "exhausted"


def test_failed_trials_are_recorded_and_never_best(store, key):
    # the planted failures sit at the optimum: they would win if a failure could count
    failures = {BEST.key: "wrong_result", "BLOCK_ROWS=16,DIAGONAL=0,IPAD=1,TILE_DIM=64": "resources",
                "BLOCK_ROWS=4,DIAGONAL=0,IPAD=1,TILE_DIM=16": "compile_error"}
    timer = FakeTimer(failures)
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="grid"))
    assert BEST not in result.measured and result.best[0] != BEST
    stored = {t.config.key: t for t in store.key_trials(key)}
    for config_key, status in failures.items():
        assert stored[config_key].status == status
        assert stored[config_key].reason == f"planted failure of {config_key}"
        assert stored[config_key].gbps is None
    # equally fast configs tie: the store keeps the first measured of them, result.best the first in order
    assert store.best(key).median_ms == pytest.approx(result.best[1]) and store.best(key).config != BEST


def test_when_every_config_fails_there_is_no_best(store, key):
    timer = FakeTimer({c.key: "compile_error" for c in SPACE.configs()})
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="grid"))
    assert result.best is None and result.stopped == "exhausted"
    assert store.best(key) is None


def test_resume_continues_the_study_without_re_measuring(store, key):
    first = FakeTimer()
    search(key, SPACE, first, store, SearchOptions(trials=6, seed=1, strategy="random"))
    assert 1 <= len(first.calls) <= 6
    with pytest.raises(InvalidInputError, match="--resume"):
        search(key, SPACE, FakeTimer(), store, SearchOptions(trials=5))
    second = FakeTimer()
    result = search(key, SPACE, second, store, SearchOptions(trials=300, seed=2, strategy="random", resume=True))
    assert not set(first.calls) & set(second.calls)
    assert set(first.calls) | set(second.calls) == set(SPACE.configs())
    assert set(result.measured) == set(SPACE.configs())  # earlier trials count in the study's best
    assert result.best[0] == BEST


def test_a_failed_config_is_not_retried_on_resume(store, key):
    failures = {BEST.key: "wrong_result"}
    search(key, SPACE, FakeTimer(failures), store, SearchOptions(trials=100, strategy="grid"))
    again = FakeTimer()
    result = search(key, SPACE, again, store, SearchOptions(trials=20, strategy="grid", resume=True))
    assert again.calls == [] and result.stopped == "exhausted"


def test_timeout_stops_starting_trials(store, key, cpu_load):
    """No trial starts after the timeout; the one that runs past it ends the search. The
    second measurement lasts until the timeout has passed since the first began (so since the
    search's clock started too), whatever the machine's load: the search must stop after it.
    (One measurement only if the machine stalled a whole timeout between the two.)"""
    import time

    timer = FakeTimer()
    timeout = 0.5
    begun = []

    def slow(config):
        begun.append(time.monotonic())
        if len(begun) == 2:
            while time.monotonic() < begun[0] + timeout:
                time.sleep(0.01)
        return timer(config)

    result = search(key, SPACE, slow, store, SearchOptions(trials=100, timeout=timeout, strategy="grid"))
    assert result.stopped == "timeout"
    assert 1 <= len(timer.calls) <= 2


def test_ctrl_c_marks_the_search_and_keeps_earlier_trials(store, key):
    timer = FakeTimer()

    def interrupted_on_third(config):
        if len(timer.calls) == 2:
            raise KeyboardInterrupt
        return timer(config)

    with pytest.raises(KeyboardInterrupt):
        search(key, SPACE, interrupted_on_third, store, SearchOptions(trials=100, strategy="grid"))
    assert len(store.key_trials(key)) == 2
    from sqlalchemy import text

    with store.session() as s:
        assert s.execute(text("select status from autotune_searches")).scalar_one() == "interrupted"
    # the study can be resumed and the interrupted config is measured then
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="grid", resume=True))
    assert result.stopped == "exhausted" and len(set(timer.calls)) == len(SPACE.configs())


def test_retiming_picks_the_winner_by_rule_and_stores_the_tie_group(store, key):
    from fakes import fake_retime

    # 1 % tie band: the optimum and its neighbours within 1 % are equally fast after re-timing
    result = search(key, SPACE, FakeTimer(), store, SearchOptions(trials=100, strategy="grid", top_k=5, rounds=4), retime=fake_retime(noise=0.002, tie_band=0.06))
    d = result.decision
    assert d is not None and len(result.retimings) == 5
    assert len(d.tie_group) >= 2 and d.winner in d.tie_group
    threads = lambda r: r.config["TILE_DIM"] * r.config["BLOCK_ROWS"]  # noqa: E731
    assert threads(d.winner) == min(threads(r) for r in d.tie_group)
    best = store.best(key)
    assert best.config == d.winner.config and best.rounds == 4
    assert best.pooled_median_ms == pytest.approx(d.winner.pooled_median_ms)
    assert set(best.tie_group) == {r.config.key for r in d.tie_group}


def test_two_searches_with_different_seeds_crown_the_same_config(tmp_path, key):
    from fakes import fake_retime

    winners = []
    for seed in (1, 2):
        s = open_results(f"sqlite:///{tmp_path / f'seed{seed}.db'}")
        search(key, SPACE, FakeTimer(), s, SearchOptions(trials=100, seed=seed, strategy="tpe", top_k=5, rounds=4), retime=fake_retime(noise=0.002, tie_band=0.06))
        winners.append(s.best(key).config)
    assert winners[0] == winners[1]


def test_no_retiming_without_a_valid_config(store, key):
    from fakes import fake_retime

    timer = FakeTimer({c.key: "compile_error" for c in SPACE.configs()})
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="grid"), retime=fake_retime())
    assert result.decision is None and store.best(key) is None


def test_clocks_are_read_at_start_and_end_and_a_move_is_warned(store, key):
    readings = iter([{"sm_mhz": 1980, "mem_mhz": 2619, "throttle": []},
                     {"sm_mhz": 1980, "mem_mhz": 1593, "throttle": ["HwSlowdown"]}])
    result = search(key, SPACE, FakeTimer(), store, SearchOptions(trials=3, strategy="grid"), clocks=lambda: next(readings))
    assert "memory clock moved 2619 -> 1593 MHz" in result.clock_warning
    assert "HwSlowdown" in result.clock_warning
    from sqlalchemy import text

    with store.session() as s:
        row = s.execute(text("select clocks_start, clocks_end, clock_warning from autotune_searches")).one()
    assert "2619" in row[0] and "1593" in row[1] and row[2] == result.clock_warning


class NeedleTimer(FakeTimer):
    """Only the kernel's default is fast: a sampler that does not measure it misses the best."""

    def gbps(self, config: Config) -> float:
        return 2800.0 if config == DEFAULT else 1000.0


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_the_default_is_measured_first_so_the_best_is_never_slower(store, key, sampler):
    timer = NeedleTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=2, seed=0, strategy=sampler))
    assert timer.calls[0] == DEFAULT and len(timer.calls) == 2
    assert result.best[0] == DEFAULT and store.best(key).config == DEFAULT


@pytest.mark.parametrize("sampler", ["tpe", "transfer", "grid"])
def test_queued_configs_are_measured_right_after_the_default(store, key, sampler):
    """SearchOptions.queue (a dispatch's configs, from tune-shapes): measured after the default,
    in order; one outside the space's constraints is skipped."""
    queue = (Config.of("smem_pad", {"BLOCK_ROWS": 32, "DIAGONAL": 0, "IPAD": 2, "TILE_DIM": 64}),  # 2048 threads: out
             Config.of("smem_pad", {"BLOCK_ROWS": 4, "DIAGONAL": 0, "IPAD": 2, "TILE_DIM": 16}), BEST)
    timer = FakeTimer()
    search(key, SPACE, timer, store, SearchOptions(trials=5, seed=0, strategy=sampler, queue=queue))
    assert timer.calls[:3] == [DEFAULT, queue[1], BEST] and len(timer.calls) == 5
    with pytest.raises(InvalidInputError, match="queue"):
        SearchOptions(queue=[BEST])


def test_a_resumed_study_measures_the_default_only_if_it_lacks_it(store, key):
    search(key, SPACE, FakeTimer(), store, SearchOptions(trials=1, seed=0, strategy="random"))
    again = FakeTimer()
    search(key, SPACE, again, store, SearchOptions(trials=3, seed=1, strategy="random", resume=True))
    assert DEFAULT not in again.calls and len(again.calls) == 3


def test_a_default_outside_the_space_is_not_measured(store, key):
    space = SearchSpace("smem_pad", (("BLOCK_ROWS", (4,)), ("DIAGONAL", (0,)), ("IPAD", (1, 2)), ("TILE_DIM", (16, 32))))
    timer = FakeTimer()
    result = search(key, space, timer, store, SearchOptions(trials=10, strategy="tpe", seed=0))
    assert DEFAULT not in timer.calls and result.stopped == "exhausted" and len(timer.calls) == 4


def test_a_sampler_that_only_repeats_itself_still_measures_new_valid_configs(store, key):
    """A sampler stuck on one corner (the first value of every macro): every repeat is
    solved to the nearest valid unknown config, so --trials N measures N distinct configs
    and ends, and the stored study holds exactly those."""
    class Stuck(optuna.samplers.RandomSampler):
        def sample_independent(self, study, trial, name, distribution):
            return distribution.low

    timer = FakeTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=5, strategy=Stuck(), seed=7, batch=2))
    assert len(timer.calls) == 5 == len(set(timer.calls)) and result.stopped == "trials"
    assert timer.calls[0] == DEFAULT and all(not SPACE.violations(c) for c in timer.calls)
    assert len(stored_trials(store, key)) == 5
    exhausted = search(key, SPACE, FakeTimer(), store, SearchOptions(trials=100, strategy=Stuck(), resume=True))
    assert exhausted.stopped == "exhausted" and len(store.key_trials(key)) == len(SPACE.configs())
    assert len(stored_trials(store, key)) == len(SPACE.configs())


LARGE = SearchSpace("smem_pad", (("BLOCK_ROWS", tuple(range(1, 2001))), ("DIAGONAL", (0, 1, 2, 3, 4)),
                                 ("IPAD", (0, 1, 2, 3, 4)), ("TILE_DIM", tuple(range(1, 2001)))),
                    ("TILE_DIM % BLOCK_ROWS == 0",))  # 10^8 combinations, about 400,000 valid


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_a_space_of_10_to_the_8_combinations_is_never_enumerated(store, key, sampler, monkeypatch):
    """Target (issue 13): the first measurement within 2 s of the start. What a test can hold
    without timing: nothing builds the whole list of valid configs."""
    monkeypatch.setattr(SearchSpace, "configs", lambda self: pytest.fail("search enumerated the space"))
    timer = FakeTimer()
    result = search(key, LARGE, timer, store, SearchOptions(trials=3, seed=0, strategy=sampler))
    assert timer.calls[0] == DEFAULT and len(timer.calls) == 3 and result.stopped == "trials"


def test_grid_refuses_a_space_over_its_limit_before_measuring(store, key):
    from autotune.search.proposals import GRID_LIMIT

    timer = FakeTimer()
    with pytest.raises(InvalidInputError, match=f"more than {GRID_LIMIT:,} valid configs"):
        search(key, LARGE, timer, store, SearchOptions(trials=10, strategy="grid"))
    assert timer.calls == [] and store.key_trials(key) == []


def test_each_trial_keeps_its_time_per_phase_and_the_run_sums_them(store, key):
    from fakes import PHASES_MS

    failures = {"BLOCK_ROWS=4,DIAGONAL=0,IPAD=1,TILE_DIM=16": "compile_error"}
    result = search(key, SPACE, FakeTimer(failures), store, SearchOptions(trials=4, strategy="grid"))
    stored = {t.config: t for t in store.key_trials(key)}
    assert len(stored) == 4
    for o in result.outcomes:
        kept = stored[o.config].phases
        assert o.phases["store"] > 0 and kept["store"] > 0  # the store's own count stops before its commit
        expected = {"compile": PHASES_MS["compile"]} if o.status == "compile_error" else PHASES_MS
        assert {k: v for k, v in kept.items() if k != "store"} == expected
        assert {k: v for k, v in o.phases.items() if k != "store"} == expected
    totals = result.phase_totals
    assert list(totals) == ["compile", "load", "verify", "time", "store", "propose"]  # propose: outside trials
    assert totals["propose"] == result.spent["propose"] > 0
    assert totals["compile"] == pytest.approx(4 * PHASES_MS["compile"]) and totals["time"] == pytest.approx(
        3 * PHASES_MS["time"])
    assert totals["store"] == pytest.approx(sum(o.phases["store"] for o in result.outcomes))


class ClockedTimer(FakeTimer):
    """The fake landscape timed like a benchmark: CUDA events on a fake clock, with the early
    stop of :mod:`autotune.measure.timing` (``repeats`` samples, one launch each)."""

    def __init__(self, repeats: int = 30) -> None:
        super().__init__()
        from autotune.measure.timing import EarlyStop

        from fakes import FakeClock

        self.clock, self.early, self.repeats = FakeClock(), EarlyStop(), repeats

    def __call__(self, config):
        from dataclasses import replace

        from autotune.measure.timing import timing

        m = super().__call__(config)
        t = timing(self.clock, self.clock.launch(m.median_ms * 100), 3, self.repeats, self.early)  # >= 0.2 ms
        return replace(m, median_ms=t.median_ms / 100, min_ms=t.min_ms / 100, max_ms=t.max_ms / 100,
                       launches=t.launches, early_stop=t.early_stop)


def test_configs_stopped_early_are_measured_slower_noted_and_never_best(store, key):
    from fakes import fake_retime

    from autotune.measure.timing import PROBE

    timer = ClockedTimer()
    result = search(key, SPACE, timer, store, SearchOptions(trials=100, strategy="grid", top_k=3, rounds=2), retime=fake_retime())
    stored = {t.config: t for t in store.key_trials(key)}
    early = {o.config for o in result.outcomes if o.reason and o.reason.startswith("timing stopped early")}
    assert early and result.early_stopped == len(early) < len(SPACE.configs())
    assert all(o.status == "ok" for o in result.outcomes)  # measured, never a failure
    for config in early:
        assert stored[config].status == "ok" and stored[config].launches == PROBE
        assert stored[config].reason.startswith(f"timing stopped early after {PROBE} of 30 samples")
        assert stored[config].median_ms > result.best[1]
    assert result.best[0] == BEST and BEST not in early and store.best(key).config == BEST
    full = [c for c, _ in result.top(3)]
    assert not set(full) & early and {r.config for r in result.retimings} == set(full)  # the top get re-timed


# --- several workers on one study (one per GPU) ------------------------------------------

def test_a_workers_walk_takes_its_share_first_then_the_others_from_the_far_end():
    from autotune.search.proposals import Unmeasured

    order = SPACE.configs()
    seen: dict = {}
    walk = Unmeasured(SPACE, seen, part=(1, 3), last=order[4])
    got = []
    while (c := walk.peek()) is not None:
        got.append(c)
        seen[c] = True
    mine = [c for k, c in enumerate(order) if k % 3 == 1 and k != 4]
    others = [c for k, c in enumerate(order) if k % 3 != 1 and k != 4]
    assert got == mine + others[::-1] + [order[4]]
    assert Unmeasured(SPACE, {}).peek() == order[0]  # one worker: the space's order
    with pytest.raises(ValueError, match="0 <= i < n"):
        Unmeasured(SPACE, {}, part=(2, 2))


def test_two_workers_of_a_grid_measure_their_shares_and_nothing_twice(store, key):
    """Worker 1 then worker 0 on one study (in turn here; at once on two GPUs: test_workers):
    each measures its share of the space's order, only worker 0 the default."""
    configs = SPACE.configs()
    share = [c for k, c in enumerate(configs) if k % 2 == 1 and c != DEFAULT]
    first, second = FakeTimer(), FakeTimer()
    search(key, SPACE, first, store, SearchOptions(trials=len(share), strategy="grid"), part=(1, 2))
    assert first.calls == share
    result = search(key, SPACE, second, store, SearchOptions(trials=100, strategy="grid", resume=True), part=(0, 2))
    assert second.calls[0] == DEFAULT and not set(first.calls) & set(second.calls)
    assert sorted(first.calls + second.calls, key=configs.index) == configs and result.stopped == "exhausted"
