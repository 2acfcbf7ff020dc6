"""The key's stored study: a config is claimed by the first live trial written for it, so that
processes on one study (the GPUs of one host, searches on several hosts) never measure one
config twice. Each test runs on a SQLite file and, where a server is configured, on a
PostgreSQL database of its own (``shared_db``)."""

from __future__ import annotations

import threading

import pytest

from autotune.store.opening import open_results
from optuna.trial import TrialState

from autotune.kernel.config import Config
from autotune.search.outcome import TrialOutcome
from autotune.search.study import StoredStudy
from autotune.store.key import ProblemKey, TuningKey

from fakes import FakeTimer
from test_tuner import SPACE

CONFIG = Config.of("smem_pad", {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 2, "TILE_DIM": 32})
NEIGHBOUR = Config.of("smem_pad", {"BLOCK_ROWS": 8, "DIAGONAL": 0, "IPAD": 1, "TILE_DIM": 32})  # one macro apart


@pytest.fixture
def key(device_info) -> TuningKey:
    return TuningKey(device_info, ProblemKey("smem_pad", "f" * 64, "e" * 64, (("rows", 256), ("cols", 256)), "float32"),
                     "13.0.88", "-O3 -arch=sm_90")


def opened(db, key) -> StoredStudy:
    """The study as one more process would open it: a store (engine, connections) of its own."""
    return StoredStudy(open_results(db), key, SPACE, resume=True)


def states(study: StoredStudy) -> list[tuple[TrialState, str | None]]:
    return [(t.state, t.user_attrs.get("status")) for t in study.study.get_trials(deepcopy=False)]


def test_a_config_claimed_by_one_process_is_not_measured_by_another(shared_db, key):
    first, second = opened(shared_db, key), opened(shared_db, key)
    try:
        claimed = first.start(CONFIG)
        assert claimed is not None
        assert second.start(CONFIG) is None  # in flight in the first one's trial
        assert second.start(NEIGHBOUR) is not None  # sharing all but one macro is another config
        # the second's refused trial is failed as a duplicate, which no search reads as measured
        assert (TrialState.FAIL, "duplicate") in states(second)
        first.finish(claimed[0], TrialOutcome(claimed[1], CONFIG, "ok", measurement=FakeTimer()(CONFIG)))
        assert second.start(CONFIG) is None  # measured
    finally:
        first.close()
        second.close()


def test_a_config_whose_trial_was_lost_or_failed_by_heartbeat_can_be_claimed_again(shared_db, key):
    first, second = opened(shared_db, key), opened(shared_db, key)
    try:
        trial_id, _ = first.start(CONFIG)
        first.abandon(trial_id, "lost")  # the database or the measuring process failed
        again = second.start(CONFIG)
        assert again is not None
        # a process killed mid-trial: its trial is failed by heartbeat, without a status
        second.storage.set_trial_state_values(again[0], TrialState.FAIL)
        assert first.start(CONFIG) is not None
    finally:
        first.close()
        second.close()


def test_processes_claiming_one_config_at_once_measure_it_once(shared_db, key):
    """Six processes' stores claim the same config at the same instant, twice in a row: one
    claim each time holds (on SQLite the earliest trial, committed first; on PostgreSQL the
    claims of one config take turns under an advisory lock), whatever the interleaving."""
    studies = [opened(shared_db, key) for _ in range(6)]
    try:
        for config in (CONFIG, NEIGHBOUR):
            start = threading.Barrier(len(studies))
            won: list = [None] * len(studies)

            def claim(i, config=config, start=start, won=won):
                start.wait()
                won[i] = studies[i].start(config)

            threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(studies))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert sum(w is not None for w in won) == 1, won
        trials = studies[0].study.get_trials(deepcopy=False)
        assert sum(t.state == TrialState.RUNNING for t in trials) == 2  # one per config
        assert sum(t.user_attrs.get("status") == "duplicate" for t in trials) == len(trials) - 2
    finally:
        for study in studies:
            study.close()


def test_the_earlier_trial_holds_when_two_are_written_before_either_is_checked(db_url, key, monkeypatch):
    """SQLite writes one transaction at a time: of two trials written for one config before
    either process checks, the one with the smaller id was committed first, and holds."""
    first, second = opened(db_url, key), opened(db_url, key)
    check = first.store.claimed_before
    seen = []

    def late_check(*args):  # the second process writes and checks its trial in between
        seen.append(second.start(CONFIG))
        return check(*args)

    monkeypatch.setattr(first.store, "claimed_before", late_check)
    try:
        assert first.start(CONFIG) is not None
        assert seen == [None]
    finally:
        first.close()
        second.close()


def test_a_study_of_autotune_before_0_4_resumes_under_its_legacy_name(db_url, key):
    """Issue 49: study names became short (readable part first); a database searched before
    keeps its studies under the old names, and a search of the same key resumes that study
    (its measured configs are not measured again) instead of starting a new one."""
    import optuna

    store = open_results(db_url)
    old = optuna.create_study(study_name=key.legacy_study_name, storage=store.optuna_storage())
    dists = {n: optuna.distributions.CategoricalDistribution(list(v)) for n, v in SPACE.params}
    old.add_trial(optuna.trial.create_trial(params=CONFIG.as_dict(), distributions=dists, value=0.5,
                                            user_attrs={"status": "ok"}))
    assert store.study_name(key) == key.legacy_study_name
    study = opened(db_url, key)
    try:
        assert study.name == key.legacy_study_name and study.start(CONFIG) is None  # measured, in the old study
    finally:
        study.close()
    names = [s.study_name for s in optuna.get_all_study_summaries(store.optuna_storage())]
    assert names == [key.legacy_study_name]  # no second study
    fresh = key.replace(dims=(("rows", 512), ("cols", 512)))
    assert store.study_name(fresh) == fresh.study_name  # a new key gets the new name
