"""The process's recording state (autotune/runtime/recording/state.py): the active recording is
stopped at exit, a failure to write its last batch said as a warning, not raised."""

from __future__ import annotations

import pytest

from autotune.errors import StoreError
from autotune.runtime.recording import state


class Stopping:
    name = "app"

    def __init__(self, error=None) -> None:
        self.error, self.stopped = error, 0

    def stop(self) -> None:
        self.stopped += 1
        if self.error is not None:
            raise self.error


def test_at_exit_stops_the_active_recording(monkeypatch):
    recording = Stopping()
    monkeypatch.setattr(state.STATE, "active", recording)
    state.at_exit()
    assert recording.stopped == 1
    assert state.active() is recording  # (the recording's own stop() clears it)


def test_at_exit_says_a_last_batch_that_cannot_be_written(monkeypatch):
    monkeypatch.setattr(state.STATE, "active", Stopping(StoreError("results database: disk I/O error")))
    with pytest.warns(RuntimeWarning, match="recording 'app': the last batch could not be written: results database"):
        state.at_exit()


def test_at_exit_without_a_recording_does_nothing(monkeypatch):
    monkeypatch.setattr(state.STATE, "active", None)
    state.at_exit()
    assert state.active() is None
