"""Optuna's study storage in the results database (autotune/store/study_storage.py): the check of
its tables' version, done once a process from Optuna's migration scripts, still refuses tables of
another Optuna version with one error."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from autotune.errors import StoreError
from autotune.store import study_storage
from autotune.store.opening import open_results


def test_optunas_schema_head_is_read_once_a_process_and_other_tables_are_still_refused(db_url, monkeypatch):
    from optuna.storages._rdb import storage as rdb

    reads = []
    head = rdb._VersionManager.get_head_version
    monkeypatch.setattr(rdb._VersionManager, "get_head_version", lambda self: reads.append(1) or head(self))
    monkeypatch.setattr(study_storage, "_HEADS", {}, raising=False)  # read afresh here
    store = open_results(db_url)
    try:
        store.optuna_storage().engine.dispose()  # Optuna's tables made: the head read (and stamped)
        first = len(reads)
        for _ in range(3):  # each later open of the storage: no scripts read again
            store.optuna_storage().engine.dispose()
        assert len(reads) == first
        with sa.create_engine(db_url).begin() as connection:  # Optuna's tables as an older Optuna left them
            connection.execute(sa.text("update alembic_version set version_num = 'v3.0.0.a'"))
        with pytest.raises(StoreError, match=r"Optuna's storage in .*optuna storage upgrade"):
            store.optuna_storage()
    finally:
        store.close()
