"""The recording's thread (autotune/runtime/recording/flusher.py): it writes a batch every
``flush_s`` and reads samples back in between, an error never ends it, and its SIGTERM action is
installed while it runs (autotune.base.signals.on_sigterm) and taken back when it stops."""

from __future__ import annotations

import signal
import threading

from autotune.runtime.recording import flusher as flusher_module
from autotune.runtime.recording.flusher import Flusher


def make(flush_s=0.001, pending=lambda: False, **given):
    calls = {"flush": 0, "read": 0, "failed": [], "term": 0}
    done = threading.Event()

    def flush():
        calls["flush"] += 1
        if "flush" in given:
            given["flush"]()
        if calls["flush"] >= 3:
            done.set()

    def read():
        calls["read"] += 1
        done.set()

    f = Flusher("test", flush_s, flush=flush, read=read, pending=pending, failed=calls["failed"].append,
                on_term=lambda: calls.__setitem__("term", calls["term"] + 1))
    return f, calls, done


def test_it_flushes_until_stopped_and_an_error_does_not_end_it(monkeypatch):
    monkeypatch.setattr(flusher_module, "READ_S", 0.001)
    failures = iter([RuntimeError("disk I/O error")])

    def fails_once():
        for exc in failures:
            raise exc
    f, calls, done = make(flush=fails_once)
    f.start()
    try:
        assert done.wait(60), calls
    finally:
        f.stop()
    assert calls["flush"] >= 3 and [str(e) for e in calls["failed"]] == ["disk I/O error"]
    assert not f._thread.is_alive()


def test_it_reads_the_samples_back_between_batches(monkeypatch):
    monkeypatch.setattr(flusher_module, "READ_S", 0.001)
    f, calls, done = make(flush_s=3600, pending=lambda: True)
    f.start()
    try:
        assert done.wait(60), calls
    finally:
        f.stop()
    assert calls["read"] >= 1 and calls["flush"] == 0


def test_its_sigterm_action_is_installed_while_it_runs():
    before = signal.getsignal(signal.SIGTERM)
    f, calls, _ = make(flush_s=3600)
    f.start()
    try:
        assert signal.getsignal(signal.SIGTERM) is not before
    finally:
        f.stop()
    assert signal.getsignal(signal.SIGTERM) is before and calls["term"] == 0
