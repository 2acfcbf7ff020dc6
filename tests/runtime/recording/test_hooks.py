"""The launch methods a recording swaps (autotune/runtime/recording/hooks.py): a registered method
replaced while a recording is active and put back after, a tracked launch counted from when it
is made or a recording starts, and which calls are timed."""

from __future__ import annotations

import types

import pytest

from autotune.runtime.recording import hooks
from autotune.runtime.recording.counts import Counts
from autotune.runtime.recording.state import STATE


class Launch:
    def __call__(self, x):
        return ("original", x)


class Packed:
    """A `PackedLaunch` as the hooks see it (weakly referenced): ``launcher``, ``raw_go``, ``go``."""

    def __init__(self, launcher, raw_go) -> None:
        self.launcher, self.raw_go = launcher, raw_go
        self.go = raw_go


class FakeRecording:
    """What the hooks ask of a recording: ``sample_every``, ``counts`` and ``events.timed``."""

    def __init__(self, sample_every: int = 4) -> None:
        self.sample_every, self.counts, self.timed = sample_every, Counts(), []
        self.events = types.SimpleNamespace(timed=self._timed)

    def _timed(self, launch, args, stream, slot):
        self.timed.append(slot.calls[0])
        return launch(*args)


@pytest.fixture
def state(monkeypatch):
    """A fresh process state: nothing registered, no recording active."""
    monkeypatch.setattr(STATE, "methods", [])
    monkeypatch.setattr(STATE, "live", type(STATE.live)())
    monkeypatch.setattr(STATE, "active", None)
    monkeypatch.setattr(Launch, "__call__", Launch.__dict__["__call__"])
    return STATE


def test_a_registered_method_is_swapped_in_while_a_recording_is_active_and_back_after(state):
    original = Launch.__dict__["__call__"]
    seen = []

    def counting(method, recording):
        def __call__(self, x):
            seen.append(recording)
            return method(self, x)
        return __call__

    hooks.register_method(Launch, "__call__", counting)
    assert Launch.__dict__["__call__"] is original  # nothing active: untouched
    recording = FakeRecording()
    hooks.swap_in(recording)
    assert Launch()(1) == ("original", 1) and seen == [recording]
    assert Launch.__dict__["__call__"].__wrapped__ is original
    hooks.swap_out()
    assert Launch.__dict__["__call__"] is original


def test_a_tracked_launch_counts_every_call_and_times_the_powers_of_two_and_every_nth(state, device_info):
    launcher = types.SimpleNamespace(device=device_info, problem="p")
    ran = []
    p = Packed(launcher, lambda pointers, stream: ran.append(stream))
    hooks.track(p)
    assert p.go is p.raw_go
    recording = FakeRecording(sample_every=8)
    state.active = recording
    hooks.swap_in(recording)
    for _ in range(20):
        p.go((), 7)
    (slot,) = recording.counts.slots
    assert slot.calls[0] == 20 and len(ran) == 20
    assert recording.timed == [2, 4, 8, 10, 16, 18]  # never the 1st; 2, 2 + 8, 2 + 16 and every power of two
    hooks.swap_out()
    assert p.go is p.raw_go


def test_a_launch_made_without_the_devices_identity_is_not_counted(state):
    p = types.SimpleNamespace(launcher=types.SimpleNamespace(device=None), raw_go=lambda pointers, stream: None)
    recording = FakeRecording()
    assert hooks.wrap_go(p, recording) is p.raw_go and recording.counts.slots == []


def test_count_times_the_same_calls_under_the_slots_lock(device_info):
    recording = FakeRecording(sample_every=4)
    slot = recording.counts.shared_slot("p", device_info)
    for _ in range(9):
        hooks.count(recording, lambda: None, (), lambda: 0, slot)
    assert slot.calls[0] == 9 and recording.timed == [2, 4, 6, 8]
