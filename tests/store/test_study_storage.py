"""autotune.store.study_storage: a search's trial started and ended in one transaction each,
written in Optuna's own models, so that Optuna reads it back exactly as a trial written by its
own ``create_new_trial``, ``record_heartbeat``, ``set_trial_user_attr`` and
``set_trial_state_values``; the storage opened once a store, and the check of Optuna's tables'
version made once a process. Each test runs on a SQLite file and, where a server is configured,
on a PostgreSQL database of its own (``shared_db``)."""

from __future__ import annotations

import math
import threading

import optuna
import pytest
import sqlalchemy as sa
from optuna.distributions import CategoricalDistribution
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState, create_trial

from autotune.errors import StoreError
from autotune.store import study_storage
from autotune.store.opening import open_results

DISTS = {"TILE_DIM": CategoricalDistribution([16, 32, 64]), "BLOCK_ROWS": CategoricalDistribution([4, 8]),
         "IPAD": CategoricalDistribution([0, 1, 2])}
PARAMS = {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1}


@pytest.fixture
def storage(shared_db):
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return open_results(shared_db).optuna_storage()


def _two_studies(storage, directions=("minimize",)):
    """A study written by Optuna's own calls and one by ours: their ids."""
    for name in ("optuna", "ours"):
        optuna.create_study(study_name=name, storage=storage, directions=list(directions))
    return storage.get_study_id_from_name("optuna"), storage.get_study_id_from_name("ours")


def _heartbeats(storage, trial_id) -> int:
    from sqlalchemy import text

    with storage.engine.connect() as connection:
        return connection.execute(text("SELECT COUNT(*) FROM trial_heartbeats WHERE trial_id = :t"),
                                  {"t": trial_id}).scalar()


def _same(ours, theirs) -> None:
    assert ours.number == theirs.number
    assert ours.state == theirs.state
    assert ours.params == theirs.params and ours.distributions == theirs.distributions
    assert ours.user_attrs == theirs.user_attrs
    assert ours.values == theirs.values
    assert (ours.datetime_complete is None) == (theirs.datetime_complete is None)
    assert abs((ours.datetime_start - theirs.datetime_start).total_seconds()) < 60  # same clock, same zone


def test_a_trial_started_and_ended_here_reads_back_as_optunas_own(storage):
    theirs_id, ours_id = _two_studies(storage)
    for i, value in enumerate((0.5, math.inf)):
        params = {**PARAMS, "IPAD": i}
        tid = storage.create_new_trial(theirs_id, template_trial=create_trial(
            state=TrialState.RUNNING, params=params, distributions=DISTS))
        storage.record_heartbeat(tid)
        mine, number = study_storage.start_trial(storage, ours_id, params, DISTS)
        assert number == storage.get_trial_number_from_id(mine) == i  # numbered by the study's trials before it
        assert _heartbeats(storage, mine) == _heartbeats(storage, tid) == 1  # its first heartbeat with it
        _same(storage.get_trial(mine), storage.get_trial(tid))  # RUNNING, its parameters
        for key, attr in (("status", "ok"), ("same_binary_as", 0)):
            storage.set_trial_user_attr(tid, key, attr)
        storage.set_trial_state_values(tid, TrialState.COMPLETE, [value])
        study_storage.end_trial(storage, mine, TrialState.COMPLETE, [value], {"status": "ok", "same_binary_as": 0})
        _same(storage.get_trial(mine), storage.get_trial(tid))  # COMPLETE, its value (inf too), its attributes
    theirs = optuna.load_study(study_name="optuna", storage=storage).best_trial
    assert optuna.load_study(study_name="ours", storage=storage).best_trial.params == theirs.params


def test_a_pareto_trial_keeps_one_value_an_objective_and_a_failed_one_none(storage):
    theirs_id, ours_id = _two_studies(storage, ("minimize", "minimize"))
    done, _ = study_storage.start_trial(storage, ours_id, PARAMS, DISTS)
    study_storage.end_trial(storage, done, TrialState.COMPLETE, [0.5, 2.0], {"status": "ok"})
    failed, _ = study_storage.start_trial(storage, ours_id, {**PARAMS, "IPAD": 2}, DISTS)
    study_storage.end_trial(storage, failed, TrialState.FAIL, attrs={"status": "crash", "reason": "exit code 3"})
    assert storage.get_trial(done).values == [0.5, 2.0]
    trial = storage.get_trial(failed)
    assert (trial.state, trial.values, trial.user_attrs) == (TrialState.FAIL, None,
                                                             {"status": "crash", "reason": "exit code 3"})
    assert trial.datetime_complete is not None


@pytest.mark.parametrize("ended", ["completed", "failed with a status"])
def test_a_trial_ended_elsewhere_is_not_written_again(storage, ended):
    """Another process ended it (or its owner did, before): ending it raises Optuna's error,
    and nothing of the late end is kept (one transaction)."""
    _, ours_id = _two_studies(storage)
    trial_id, _ = study_storage.start_trial(storage, ours_id, PARAMS, DISTS)
    if ended == "completed":
        study_storage.end_trial(storage, trial_id, TrialState.COMPLETE, [0.25], {"status": "ok"})
    else:
        study_storage.end_trial(storage, trial_id, TrialState.FAIL, attrs={"status": "interrupted"})
    before = storage.get_trial(trial_id)
    with pytest.raises(UpdateFinishedTrialError):
        study_storage.end_trial(storage, trial_id, TrialState.COMPLETE, [0.5], {"status": "ok", "cubin": "x"})
    trial = storage.get_trial(trial_id)
    assert (trial.state, trial.values, trial.user_attrs) == (before.state, before.values, before.user_attrs)


@pytest.mark.parametrize("judge", ["fail_stale_trials", "dead_before_heartbeat"])
def test_a_trial_judged_dead_while_its_owner_measured_it_takes_the_owners_outcome(storage, judge):
    """Its heartbeats came late (a host whose cores were all busy), and another process failed
    it as dead: the owner, alive, ends it with what it measured, and the study holds that."""
    import datetime

    _, ours_id = _two_studies(storage)
    study = optuna.load_study(study_name="ours", storage=storage)
    trial_id, _ = study_storage.start_trial(storage, ours_id, PARAMS, DISTS)
    if judge == "fail_stale_trials":  # Optuna's check: its last heartbeat an hour old, past the grace period
        with storage.engine.begin() as connection:
            connection.execute(sa.text("UPDATE trial_heartbeats SET heartbeat = :old WHERE trial_id = :t"),
                               {"old": datetime.datetime.now() - datetime.timedelta(hours=1), "t": trial_id})
        optuna.storages.fail_stale_trials(study)
    else:
        storage.set_trial_state_values(trial_id, TrialState.FAIL)  # as fail_trials_dead_before_heartbeat writes
    assert storage.get_trial(trial_id).state == TrialState.FAIL
    study_storage.end_trial(storage, trial_id, TrialState.COMPLETE, [0.5], {"status": "ok"})
    trial = storage.get_trial(trial_id)
    assert (trial.state, trial.values, trial.user_attrs) == (TrialState.COMPLETE, [0.5], {"status": "ok"})


def test_an_attribute_set_before_is_replaced(storage):
    _, ours_id = _two_studies(storage)
    trial_id, _ = study_storage.start_trial(storage, ours_id, PARAMS, DISTS)
    storage.set_trial_user_attr(trial_id, "status", "ok")
    study_storage.end_trial(storage, trial_id, TrialState.FAIL, attrs={"status": "interrupted"})
    assert storage.get_trial(trial_id).user_attrs == {"status": "interrupted"}


def test_the_studys_distributions_are_checked_as_optuna_checks_them(storage):
    """Start_trial does not look each parameter's distribution up again (Optuna does, on every
    write): the search checks them once, with Optuna's own rule and error."""
    _, ours_id = _two_studies(storage)
    study_storage.check_distributions(storage, ours_id, DISTS)  # an empty study: anything goes
    study_storage.start_trial(storage, ours_id, PARAMS, DISTS)
    study_storage.check_distributions(storage, ours_id, DISTS)
    other = {**DISTS, "IPAD": CategoricalDistribution([0, 1, 2, 4])}
    with pytest.raises(ValueError, match="dynamic value space"):
        study_storage.check_distributions(storage, ours_id, other)


def test_trials_started_at_once_by_several_processes_get_distinct_numbers(shared_db):
    """Six stores (as six processes would) start trials of one study at the same instant: each
    trial gets its own number, 0 to 29 (on PostgreSQL the study's row is locked first, as
    Optuna does: two trials of one number made a search skip the second when it read the
    study by number, and two workers then claimed its config forever)."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storages = [open_results(shared_db).optuna_storage() for _ in range(6)]
    optuna.create_study(study_name="one", storage=storages[0])
    study_id = storages[0].get_study_id_from_name("one")
    start, numbers, errors = threading.Barrier(len(storages)), [], []

    def claim(storage, i):
        try:
            start.wait()
            for j in range(5):
                params = {"TILE_DIM": [16, 32, 64][j % 3], "BLOCK_ROWS": [4, 8][i % 2], "IPAD": j % 3}
                numbers.append(study_storage.start_trial(storage, study_id, params, DISTS)[1])
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=claim, args=(s, i)) for i, s in enumerate(storages)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == [] and sorted(numbers) == list(range(30))
    trials = storages[0].get_all_trials(study_id)
    assert sorted(t.number for t in trials) == list(range(30))


def test_optunas_schema_head_is_read_once_a_process_and_other_tables_are_still_refused(db_url, monkeypatch):
    """The check of Optuna's tables' version reads Optuna's migration scripts once a process;
    tables of another Optuna version are still refused with one error."""
    from optuna.storages._rdb import storage as rdb

    reads = []
    head = rdb._VersionManager.get_head_version
    monkeypatch.setattr(rdb._VersionManager, "get_head_version", lambda self: reads.append(1) or head(self))
    monkeypatch.setattr(study_storage, "_HEADS", {}, raising=False)  # read afresh here
    stores = [open_results(db_url) for _ in range(5)]  # as 5 processes' stores (one store opens it once)
    try:
        stores[0].optuna_storage()  # Optuna's tables made: the head read (and stamped)
        first = len(reads)
        for store in stores[1:4]:  # each later open of the storage: no scripts read again
            store.optuna_storage()
        assert len(reads) == first
        with sa.create_engine(db_url).begin() as connection:  # Optuna's tables as an older Optuna left them
            connection.execute(sa.text("update alembic_version set version_num = 'v3.0.0.a'"))
        with pytest.raises(StoreError, match=r"Optuna's storage in .*optuna storage upgrade"):
            stores[4].optuna_storage()
    finally:
        for store in stores:
            store.close()


def test_a_store_opens_optunas_storage_once(db_url):
    store = open_results(db_url)
    try:
        assert store.optuna_storage() is store.optuna_storage()
    finally:
        store.close()
