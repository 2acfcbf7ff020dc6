"""The search loop with the measurement sent ahead (``Instruments.send``, issue 47): the next
config is claimed while the GPU measures the one before, each trial is stored before the next
config is sent, twins of one binary are still measured once, and a signal or a lost database
while a config is measured leaves no trial RUNNING."""

import optuna
import pytest
from optuna.trial import TrialState

from autotune.errors import StoreError
from autotune.search.options import SearchOptions
from autotune.search.outcome import SAME_BINARY
from autotune.search.tuner import search

from fakes import FakeTimer, fake_retime
from test_tuner import SPACE
from test_tuner_builds import ignoring_ipad, key  # noqa: F401  (the key fixture)


class Sent:
    """A fake measuring child: ``send`` records the event and measures at ``result()``."""

    def __init__(self, timer, events, store, key, fail_at=None):
        self.timer, self.events, self.store, self.key, self.fail_at = timer, events, store, key, fail_at
        self.sent = 0

    def __call__(self, config):
        self.sent += 1
        self.events.append(("send", config, len(self.store.key_trials(self.key))))
        number, timer, events, fail_at = self.sent, self.timer, self.events, self.fail_at

        class Measuring:
            def result(self):
                events.append(("result", config))
                if fail_at is not None and number == fail_at:
                    raise KeyboardInterrupt
                return timer(config)

            def cancel(self):
                events.append(("cancel", config))
        return Measuring()




def stored(store, key):
    return len(store.key_trials(key))


def test_each_trial_is_stored_before_the_next_config_is_sent_and_the_next_is_claimed_meanwhile(store, key):
    timer, events = FakeTimer(), []
    send = Sent(timer, events, store, key)
    claims = []
    result = search(key, SPACE, None, store, SearchOptions(trials=12, seed=0, strategy="tpe", batch=4),
                    send=send, retime=fake_retime(), on_trial=lambda o, r: claims.append(o.number))
    assert result.stopped == "trials" and result.measured_count == 12 and send.sent == 12
    sends = [e for e in events if e[0] == "send"]
    assert [e[2] for e in sends] == list(range(12))  # the n-th config is sent once n trials are stored
    assert [o.config for o in result.outcomes] == [e[1] for e in sends] == timer.calls
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 12  # nothing claimed past the budget
    assert claims == list(range(12))


def test_claims_overlap_the_measurement(store, key):
    """While config n is measured, config n + 1's trial is written (claimed)."""
    timer, events = FakeTimer(), []
    seen_running = []

    class Watching(Sent):
        def __call__(self, config):
            measuring = super().__call__(config)
            inner = measuring.result

            def result():
                study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
                seen_running.append(sum(t.state == TrialState.RUNNING for t in study.trials))
                return inner()
            measuring.result = result
            return measuring

    search(key, SPACE, None, store, SearchOptions(trials=8, seed=0, strategy="grid"), send=Watching(timer, events,
                                                                                                      store, key))
    assert seen_running[:7] == [2] * 7  # the one measured and the next, claimed meanwhile
    assert seen_running[-1] == 1  # the last: nothing left to claim


def test_twins_of_one_binary_sent_ahead_are_measured_once(store, key):
    timer, events = FakeTimer(), []
    result = search(key, SPACE, None, store, SearchOptions(trials=300, seed=0, strategy="grid"),
                    send=Sent(timer, events, store, key), built=ignoring_ipad, retime=fake_retime())
    valid = SPACE.configs()
    assert result.stopped == "exhausted" and len(timer.calls) == len(valid) // 2
    same = [o for o in result.outcomes if o.same_as is not None]
    assert len(same) == len(valid) // 2 and all(o.reason.startswith(SAME_BINARY) for o in same)


def test_a_twin_of_a_binary_another_process_measured_is_measured_here(store, key):
    """Another process on the study (another GPU's worker) measured a config whose binary is
    also this search's next config's: its trial says which binary (``cubin``) but holds no
    measurement here, so this search measures the twin itself (it stored an ``ok`` without a
    measurement before, and the worker failed with "an ok trial needs its measurement")."""
    from autotune.search.outcome import TrialOutcome
    from autotune.search.study import StoredStudy
    from autotune.store.opening import open_results

    valid = SPACE.configs()
    theirs = valid[6]  # this search has claimed at most its second config when its first trial is stored
    twin = next(c for c in valid[7:] if ignoring_ipad(c) == ignoring_ipad(theirs))
    timer, events, other = FakeTimer(), [], []

    def meanwhile(outcome, result):  # the other process measures ``theirs`` as this search's first trial is stored
        if not other:
            other.append(StoredStudy(open_results(store.url), key, SPACE, resume=True))
            trial_id, number = other[0].start(theirs)
            other[0].finish(trial_id, TrialOutcome(number, theirs, "ok", measurement=FakeTimer()(theirs),
                                                   cubin=ignoring_ipad(theirs).identity))
    try:
        result = search(key, SPACE, None, store, SearchOptions(trials=300, seed=0, strategy="grid"),
                        send=Sent(timer, events, store, key), built=ignoring_ipad, retime=fake_retime(),
                        on_trial=meanwhile)
    finally:
        other[0].close()
    assert result.stopped == "exhausted"
    assert twin in timer.calls and theirs not in timer.calls  # measured here; theirs not again
    mine = {o.config: o for o in result.outcomes}
    assert mine[twin].status == "ok" and mine[twin].same_as is None and mine[twin].measurement is not None


def test_a_signal_while_a_config_is_measured_leaves_no_trial_running(store, key):
    timer, events = FakeTimer(), []
    with pytest.raises(KeyboardInterrupt):
        search(key, SPACE, None, store, SearchOptions(trials=10, seed=0, strategy="grid"),
               send=Sent(timer, events, store, key, fail_at=4))
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]
    assert stored(store, key) == 3
    cut = [t for t in study.trials if t.state == TrialState.FAIL]
    assert len(cut) == 2 and {t.user_attrs["status"] for t in cut} == {"interrupted"}  # measured, and the next


def test_a_lost_database_while_a_config_is_measured_gives_the_measurement_up(store, key, monkeypatch):
    from autotune.search import study as studies

    timer, events, claims = FakeTimer(), [], []
    start = studies.StoredStudy.start

    def failing(self, config):
        claims.append(config)
        if len(claims) == 5:  # the claim made while the fourth config is measured
            raise StoreError("results database sqlite:///x.db: disk I/O error")
        return start(self, config)
    monkeypatch.setattr(studies.StoredStudy, "start", failing)
    with pytest.raises(StoreError) as raised:
        search(key, SPACE, None, store, SearchOptions(trials=10, seed=0, strategy="grid"),
               send=Sent(timer, events, store, key))
    assert "3 trials of this run stored; lost: trial 3 (" in str(raised.value)
    assert "its measurement cut, not stored" in str(raised.value)
    assert events[-1][0] == "cancel" and stored(store, key) == 3
    study = optuna.load_study(study_name=key.study_name, storage=store.optuna_storage())
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]
    assert [t.user_attrs["status"] for t in study.trials if t.state == TrialState.FAIL] == ["lost"]
