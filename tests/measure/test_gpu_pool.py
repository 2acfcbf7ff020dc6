"""The per-GPU worker processes of autotune.measure.gpu_pool, with fake workers: plain
functions of this module (the spawned workers import it by name), no GPU.

Each test waits on what the workers send, never on time; the deadline only turns a hang into a
failure."""

from __future__ import annotations

import os
import select
import signal
import time

import pytest

from autotune import settings
from autotune.base import signals as stop
from autotune.measure import gpu_pool
from autotune.measure.gpu_pool import Died, GpuPool

DEADLINE_S = 120


def _describe(worker, tag):
    """Send what the worker was started with."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    worker.send((tag, settings.COMPILE_WORKERS.get(), sorted(set(blocked) & set(stop.SIGNALS)),
                 worker.orphaned()))


def _die(worker, code):
    """End without a word: with ``code``, or killed (``None``)."""
    if code is None:
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(code)


def _until_a_signal(worker):
    """Say so, then wait for a signal: report it as the worker's last event.

    It waits on the signal's wakeup fd, not in ``signal.pause()``: a signal that came between
    the interpreter's last look at its pending signals and the ``pause`` call was only noted,
    and ``pause`` then waited for another (forever: the pool killed the worker after JOIN_S,
    and its last event was lost; seen once under load). The C handler writes the fd whenever
    the signal comes, so ``select`` returns, and the handler raises at the next bytecode."""
    wake, wakeup = os.pipe()
    os.set_blocking(wakeup, False)
    signal.set_wakeup_fd(wakeup)
    worker.send("ready")
    try:
        with stop.interruptible():
            while True:
                select.select([wake], [], [])
                os.read(wake, 64)
    except KeyboardInterrupt:
        worker.send(("interrupted", stop.signal_number()))


def _forever(worker):
    worker.send("ready")
    while True:
        signal.pause()


def _events(pool, wanted, owes=lambda o: True):
    """Events until ``wanted(got)`` says enough."""
    got, deadline = [], time.monotonic() + DEADLINE_S
    while not wanted(got):
        assert time.monotonic() < deadline, got
        if (event := pool.next_event(owes)) is not None:
            got.append(event)
    return got


def _never(ordinal, event):
    raise AssertionError(f"no last event expected, got {event!r} of {ordinal}")


def test_each_gpu_s_worker_gets_its_arguments_its_share_of_the_cores_and_its_signals_unblocked(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "6")
    pool = GpuPool([3, 5])
    assert pool.compilers == 3
    with pool.running(_describe, lambda i, o: (f"worker {i} on {o}",), last=_never):
        assert not set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) & set(stop.SIGNALS)  # the parent's unblocked
        got = _events(pool, lambda got: len(got) == 2, owes=lambda o: False)
    assert sorted(got) == [(3, ("worker 0 on 3", "3", [], False)), (5, ("worker 1 on 5", "3", [], False))]
    assert pool.exitcodes() == {3: 0, 5: 0}  # each waited for after the block


def test_the_host_s_compile_workers_are_shared_each_at_least_one_and_off_stays_off(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "32")
    assert gpu_pool.compile_share(2) == 16 and gpu_pool.compile_share(3) == 10
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "2")
    assert gpu_pool.compile_share(4) == 1
    monkeypatch.setenv("AUTOTUNE_COMPILE_WORKERS", "0")
    assert gpu_pool.compile_share(2) == 0


def test_a_worker_that_dies_is_reported_once_and_only_while_something_is_owed_from_it():
    pool = GpuPool([0, 1])
    owed = {1}
    with pool.running(_die, lambda i, o: ((3, None)[i],), last=_never):
        got = _events(pool, lambda got: got and pool.exitcodes()[0] is not None, owes=owed.__contains__)
        assert got == [(1, Died(-signal.SIGKILL))]  # worker 0 ended too, but nothing was owed from it
        owed.add(0)
        assert _events(pool, lambda got: got, owes=owed.__contains__) == [(0, Died(3))]
        assert [pool.next_event(owed.__contains__) for _ in range(3)] == [None] * 3  # once each
    assert pool.exitcodes() == {0: 3, 1: -signal.SIGKILL}


def test_what_a_worker_sent_before_it_ended_comes_before_its_end():
    pool = GpuPool([0, 1])
    with pool.running(_describe, lambda i, o: (i,), last=_never):
        got = _events(pool, lambda got: sum(isinstance(e, Died) for _, e in got) == 2)
    assert len(got) == 4
    for o in (0, 1):
        mine = [e for w, e in got if w == o]
        assert mine[0][0] == o and mine[1] == Died(0), got


def test_a_signal_reaches_every_worker_and_the_parent_re_raises_after_their_last_events():
    pool, last = GpuPool([0, 1]), []
    with pytest.raises(KeyboardInterrupt):
        with pool.running(_until_a_signal, lambda i, o: (), last=lambda o, e: last.append((o, e))):
            _events(pool, lambda got: len(got) == 2)  # both ready
            os.kill(os.getpid(), signal.SIGTERM)  # deferred: acted on at the next event's wait
            _events(pool, lambda got: False)
    assert sorted(last) == [(0, ("interrupted", signal.SIGTERM)), (1, ("interrupted", signal.SIGTERM))]
    assert pool.exitcodes() == {0: 0, 1: 0}  # each ended on its own, none killed


def test_a_signal_during_the_workers_start_up_is_kept_until_their_handlers_are_in_place():
    pool, last = GpuPool([0, 1]), []
    with pytest.raises(KeyboardInterrupt):
        with pool.running(_until_a_signal, lambda i, o: (), last=lambda o, e: last.append((o, e))):
            os.kill(os.getpid(), signal.SIGINT)  # the workers may not have started yet
            _events(pool, lambda got: False)
    assert sorted(e for e in last if e[1] != "ready") == [(0, ("interrupted", signal.SIGINT)),
                                                         (1, ("interrupted", signal.SIGINT))]
    assert pool.exitcodes() == {0: 0, 1: 0}


def test_a_worker_still_running_past_the_wait_is_killed():
    pool = GpuPool([0], join_s=0.5)  # a worker that never acts on a signal
    with pytest.raises(KeyboardInterrupt):
        with pool.running(_forever, lambda i, o: (), last=lambda o, e: None):
            _events(pool, lambda got: len(got) == 1)
            raise KeyboardInterrupt
    assert pool.exitcodes() == {0: -signal.SIGKILL}


def test_any_other_error_in_the_parent_s_block_kills_every_worker():
    pool = GpuPool([0, 1])
    with pytest.raises(RuntimeError, match="a callback failed"):
        with pool.running(_forever, lambda i, o: (), last=_never):
            _events(pool, lambda got: len(got) == 2)
            raise RuntimeError("a callback failed")
    assert pool.exitcodes() == {0: -signal.SIGKILL, 1: -signal.SIGKILL}
