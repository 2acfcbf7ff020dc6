"""Timing with CUDA events and the early stop of clearly slower configs (autotune/measure/timing.py),
on a fake clock: every launch advances it by the config's time, so each outcome is exact."""

from __future__ import annotations

import math

import pytest

from autotune.measure.timing import MIN_MARGIN, MIN_SAMPLE_MS, NOISE_FACTOR, PROBE, EarlyStop, samples, timing

from fakes import FakeClock


def test_samples_are_batches_of_at_least_the_minimum_sample_time():
    clock = FakeClock()
    ms, launches = samples(clock, clock.launch(0.0625), warmup=8, repeats=30)  # ms exact in binary
    batch = math.ceil(MIN_SAMPLE_MS / 0.0625)
    assert ms.size == 30 and launches == 30 * batch and clock.launched == 8 + 30 * batch
    assert ms == pytest.approx([0.0625] * 30)


def test_without_a_best_so_far_every_sample_is_taken():
    clock, early = FakeClock(), EarlyStop()
    assert early.bar_ms is None and early.margin is None
    t = timing(clock, clock.launch(0.3), 5, 40, early)
    assert t.early_stop is None and t.launches == 40 and early.best_median_ms == pytest.approx(0.3)


def wobbly(base: float, low: float):
    """Launch times: every fourth launch takes ``low`` ms, the others ``base`` (batches of one
    launch: base >= MIN_SAMPLE_MS), so the median is ``base`` and the min ``low``."""
    return lambda k: low if k % 4 == 0 else base


def test_a_clearly_slower_config_stops_after_the_probe_and_the_margin_is_the_best_s_noise():
    clock, early = FakeClock(), EarlyStop()
    timing(clock, clock.launch(wobbly(0.5, 0.49)), 4, 40, early)  # the best: median 0.5, min 0.49
    noise = (0.5 - 0.49) / 0.5
    assert early.margin == pytest.approx(max(MIN_MARGIN, NOISE_FACTOR * noise)) == pytest.approx(0.08)
    assert early.bar_ms == pytest.approx(0.54)

    slow = timing(clock, clock.launch(0.55), 4, 40, early)  # its fastest sample is over the bar
    assert slow.launches == PROBE and slow.median_ms == pytest.approx(0.55)
    assert slow.early_stop == ("timing stopped early after 10 of 40 samples: fastest 0.5500 ms > best median "
                               "0.5000 ms x (1 + 0.080)")
    assert early.best_median_ms == pytest.approx(0.5)  # an early-stopped config never becomes the best

    close = timing(clock, clock.launch(0.53), 4, 40, early)  # within the noise margin: timed in full
    assert close.early_stop is None and close.launches == 40

    faster = timing(clock, clock.launch(0.4), 4, 40, early)
    assert faster.early_stop is None and early.best_median_ms == pytest.approx(0.4)
    assert early.margin == MIN_MARGIN  # a config with no spread: the smallest margin


def test_one_fast_sample_in_the_probe_keeps_a_config_timed_in_full():
    clock, early = FakeClock(), EarlyStop()
    timing(clock, clock.launch(0.5), 4, 40, early)
    launches = clock.launched
    t = timing(clock, clock.launch(lambda k: 0.5 if k == launches + 4 + 3 else 0.7), 4, 40, early)
    assert t.early_stop is None and t.launches == 40 and t.min_ms == pytest.approx(0.5)


def test_the_same_times_give_the_same_decisions():
    def run():
        clock, early = FakeClock(), EarlyStop()
        return [timing(clock, clock.launch(wobbly(ms, ms * 0.99)), 4, 30, early).early_stop is not None
                for ms in (0.6, 0.5, 0.58, 0.51, 0.7, 0.45, 0.5)]

    assert run() == run() == [False, False, True, False, True, False, True]
