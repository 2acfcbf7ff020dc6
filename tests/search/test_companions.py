"""Other shapes measured alongside a search (autotune/search/companions.py) without a GPU: each
config measured ok at the search's shape is a trial of every companion's own study, measured
once there; each companion gets its own search row and winner; a later search of a
companion's shape resumes its study and measures nothing twice."""

import dataclasses

import optuna
import pytest

from autotune.kernel.config import Config
from autotune.search.companions import Companion
from autotune.search.options import SearchOptions
from autotune.search.tuner import Tuner, search
from autotune.search.instruments import Instruments
from autotune.store.key import ProblemKey, TuningKey

from fakes import FakeTimer, fake_retime
from test_tuner import SPACE


def shape_key(device_info, rows: int, cols: int) -> TuningKey:
    return TuningKey(device_info, ProblemKey("smem_pad", "f" * 64, "e" * 64,
                                             (("rows", rows), ("cols", cols)), "float32"),
                     "13.0.88", "-O3 -arch=sm_90")


class SlowerAt(FakeTimer):
    """The fake landscape at another shape: every config ``factor`` times slower, and one
    config failing there only."""

    def __init__(self, factor: float, fails: Config | None = None) -> None:
        super().__init__({fails.key: "wrong_result"} if fails else None)
        self.factor = factor

    def gbps(self, config: Config) -> float:
        return super().gbps(config) / self.factor


def search_statuses(store) -> list[str]:
    from sqlalchemy import text

    with store.session() as s:
        return list(s.execute(text("select status from autotune_searches order by id")).scalars())


def trials(store, key):
    return optuna.load_study(study_name=key.study_name, storage=store.optuna_storage()).trials


def test_each_config_measured_is_a_trial_at_every_companion_with_its_own_winner(store, device_info):
    main, small, tall = shape_key(device_info, 1024, 1024), shape_key(device_info, 256, 256), \
        shape_key(device_info, 4096, 64)
    here, at_small = FakeTimer(), SlowerAt(2.0)
    broken = Config.of("smem_pad", {"BLOCK_ROWS": 4, "DIAGONAL": 0, "IPAD": 2, "TILE_DIM": 64})
    at_tall = SlowerAt(3.0, fails=broken)
    companions = [Companion(small, at_small, fake_retime()), Companion(tall, at_tall, None)]
    options = SearchOptions(trials=10, seed=1, strategy="random", batch=4, top_k=3, rounds=2)
    tools = Instruments(here, retime=fake_retime())
    result = Tuner(main, SPACE, store, options, tools, companions=companions).run()
    ok = [o.config for o in result.outcomes if o.status == "ok"]
    assert len(result.outcomes) == 10 and at_small.calls == ok and at_tall.calls == ok  # one compile, 3 trials
    small_result, tall_result = result.companions
    assert set(small_result.measured) == set(ok) and small_result.decision is not None  # re-timed, own winner
    assert store.best(small).config == small_result.decision.winner.config
    assert tall_result.decision is None and len(tall_result.outcomes) == 10  # no re-timing: its fastest
    if broken in ok:  # failed at that shape only: data with its reason, never its best
        assert broken not in tall_result.measured and store.best(tall).config != broken
    assert store.best(tall).config == min(tall_result.measured, key=tall_result.measured.get)
    for key in (small, tall):
        stored = trials(store, key)
        assert len(stored) == 10 and len({tuple(sorted(t.params.items())) for t in stored}) == 10
    assert search_statuses(store) == ["finished"] * 3  # the search's row and each companion's


def test_a_later_search_of_a_companions_shape_resumes_and_measures_nothing_twice(store, device_info):
    main, other = shape_key(device_info, 1024, 1024), shape_key(device_info, 512, 2048)
    at_other = SlowerAt(1.5)
    options = SearchOptions(trials=8, seed=2, strategy="random", batch=4)
    Tuner(main, SPACE, store, options, Instruments(FakeTimer()), companions=[Companion(other, at_other)]).run()
    first = list(at_other.calls)
    assert len(first) == 8
    again = FakeTimer()
    result = search(other, SPACE, again, store, dataclasses.replace(options, resume=True, trials=5))
    assert not set(again.calls) & set(first) and len(again.calls) == 5  # the history came from the companion
    assert len(result.measured) == 13 and len(trials(store, other)) == 13


def test_a_signal_during_a_companions_trial_fails_it_and_marks_every_row(store, device_info):
    main, other = shape_key(device_info, 1024, 1024), shape_key(device_info, 512, 512)

    class Interrupting(SlowerAt):
        def __call__(self, config):
            if len(self.calls) == 2:
                raise KeyboardInterrupt
            return super().__call__(config)
    at_other = Interrupting(1.0)
    tuner = Tuner(main, SPACE, store, SearchOptions(trials=8, seed=2, strategy="random", batch=4),
                  Instruments(FakeTimer()), companions=[Companion(other, at_other)])
    with pytest.raises(KeyboardInterrupt):
        tuner.run()
    states = [t.state for t in trials(store, other)]
    assert states.count(optuna.trial.TrialState.COMPLETE) == 2 and states[-1] == optuna.trial.TrialState.FAIL
    assert tuner.result.stopped == "interrupted" and tuner.result.companions[0].stopped == "interrupted"
    assert search_statuses(store) == ["interrupted"] * 2
