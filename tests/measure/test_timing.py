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


# --- certified timing: the median's CI and sampling until it is narrow enough (issue 40) ------------

from autotune.measure.timing import Precision, median_ci  # noqa: E402
import numpy as np  # noqa: E402


@pytest.mark.parametrize("n, ranks", [(6, (1, 6)), (10, (2, 9)), (20, (6, 15)), (50, (18, 33))])
def test_the_median_ci_is_the_order_statistic_interval_of_the_binomial_tables(n, ranks):
    # Conover's table A3 / the binomial(n, 1/2) ranks, 1-based: (r, n - r + 1)
    ms = np.arange(1.0, n + 1.0)[::-1]  # unsorted on purpose
    assert median_ci(ms) == (float(ranks[0]), float(ranks[1]))


def test_the_median_ci_covers_the_median_at_least_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    draws = rng.lognormal(0.0, 0.5, size=(2000, 30))  # skewed, true median 1.0
    covered = sum(lo <= 1.0 <= hi for lo, hi in (median_ci(d) for d in draws))
    assert covered / 2000 >= 0.94


def test_the_median_ci_of_few_samples_is_their_range_and_of_none_an_error():
    assert median_ci(np.array([3.0, 1.0, 2.0])) == (1.0, 3.0)
    with pytest.raises(ValueError, match="no samples"):
        median_ci(np.array([]))


def test_steady_times_stop_at_the_minimum_count_with_a_ci_inside_the_bound():
    clock = FakeClock()
    p = Precision(rel=0.01, min_samples=20, max_samples=200)
    t = timing(clock, clock.launch(0.5), 4, 50, precision=p)
    assert t.samples == 20 and t.launches == 20 and t.ci_low_ms == t.ci_high_ms == pytest.approx(0.5)
    assert t.ci_rel == 0.0


def noisy(base: float, rel: float, seed: int = 0):
    """Launch times ``base * (1 + rel * u)``, u uniform in [-1, 1], drawn from ``seed``: each
    launch a sample (base >= MIN_SAMPLE_MS)."""
    draws = np.random.default_rng(seed).uniform(-1.0, 1.0, 100_000)
    return lambda k: base * (1.0 + rel * draws[k])


def test_noisy_times_are_sampled_until_the_ci_is_within_the_fraction():
    clock = FakeClock()
    p = Precision(rel=0.01, floor_ms=0.0, min_samples=20, max_samples=2000)
    t = timing(clock, clock.launch(noisy(0.5, 0.05)), 4, 50, precision=p)
    assert 20 < t.samples < 2000
    assert (t.ci_high_ms - t.ci_low_ms) / 2 <= 0.01 * t.median_ms
    assert t.ci_low_ms <= t.median_ms <= t.ci_high_ms


def test_the_absolute_floor_ends_sampling_of_a_short_noisy_kernel_sooner():
    clock = FakeClock()
    strict = timing(clock, clock.launch(noisy(0.5, 0.2)), 4, 50,
                    precision=Precision(rel=0.001, floor_ms=0.0, min_samples=20, max_samples=300))
    floor = timing(clock, clock.launch(noisy(0.5, 0.2)), 4, 50,
                   precision=Precision(rel=0.001, floor_ms=0.02, min_samples=20, max_samples=300))
    assert strict.samples == 300  # never precise enough: the maximum
    assert 20 <= floor.samples < 300 and (floor.ci_high_ms - floor.ci_low_ms) / 2 <= 0.02


def test_the_early_stop_still_ends_a_clearly_slower_config_after_the_probe_with_certified_timing():
    clock, early = FakeClock(), EarlyStop()
    p = Precision(min_samples=20, max_samples=200)
    best = timing(clock, clock.launch(0.5), 4, 50, early, precision=p)
    slow = timing(clock, clock.launch(0.6), 4, 50, early, precision=p)
    assert best.early_stop is None and slow.samples == PROBE
    assert slow.early_stop.startswith(f"timing stopped early after {PROBE} of 20 samples")
    assert slow.ci_low_ms == pytest.approx(0.6)


def test_during_runs_once_while_the_first_launches_are_queued():
    clock, seen = FakeClock(), []
    timing(clock, clock.launch(0.5), 4, 30, during=lambda: seen.append(clock.launched))
    assert seen == [4 + 30]  # after the warm-up and every queued launch, before the wait
