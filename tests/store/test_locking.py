"""The retry loop of a transaction refused by a concurrent writer (autotune/store/locking.py),
on an injected clock: no real wait."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import OperationalError

from autotune.errors import StoreError
from autotune.store import locking


def test_a_locked_transaction_is_retried_for_lock_wait_s_of_the_clock(monkeypatch):
    """The docs promise LOCK_WAIT_S (60 s) of retries while SQLite stays locked: each attempt
    waits BUSY_TIMEOUT_S inside SQLite, the backoff between attempts counts too, and the loop
    gives up only once the clock says LOCK_WAIT_S have passed (issue 51)."""
    clock = [1000.0]
    monkeypatch.setattr(locking.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(locking.stop, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    monkeypatch.setattr(locking.random, "random", lambda: 0.5)  # the backoff's jitter, fixed
    attempts = []

    def attempt():
        attempts.append(clock[0])
        clock[0] += locking.BUSY_TIMEOUT_S  # SQLite's busy wait inside the attempt
        cause = OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked"))
        raise StoreError("results database sqlite:///x.db: database is locked") from cause

    with pytest.raises(StoreError) as info:
        locking.retrying(attempt)
    waited = clock[0] - 1000.0
    assert locking.LOCK_WAIT_S <= waited < locking.LOCK_WAIT_S + locking.BUSY_TIMEOUT_S + 1.0
    assert attempts[-2] + locking.BUSY_TIMEOUT_S - 1000.0 < locking.LOCK_WAIT_S  # not given up before the promise
    assert str(info.value) == (f"results database sqlite:///x.db: database is locked (still refused after "
                               f"{len(attempts)} attempts in {waited:.0f} s)")
    assert isinstance(info.value.__cause__, OperationalError)


def test_a_transaction_that_commits_on_a_later_attempt_returns_its_value(monkeypatch):
    monkeypatch.setattr(locking.stop, "sleep", lambda seconds: None)
    calls = []

    def attempt():
        calls.append(1)
        if len(calls) < 3:
            cause = OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked"))
            raise StoreError("results database: database is locked") from cause
        return "written"

    assert locking.retrying(attempt) == "written" and len(calls) == 3
