"""Certified timing and energy on a real GPU (issue 40): sampling until the median's 95 % CI is
narrow enough, the SM clock seen while timing, joules per launch where NVML has the counter (or
one line saying why not), and a search's stored certificate. About 30 s on an H100."""

from __future__ import annotations

import pytest

from autotune.kernel.catalog import KERNELS
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.problem import Problem
from autotune.measure.benchmark import Benchmark
from autotune.measure.measure_options import MeasureOptions
from autotune.measure.timing import PROBE, Precision

pytestmark = pytest.mark.gpu_slow


def bench(device, **measure) -> Benchmark:
    """A benchmark without bounds, measuring as ``measure`` (MeasureOptions' fields) says over
    fixed samples (``ci=0``) by default."""
    problem = Problem.of(KERNELS["smem_pad"], (4096, 4096), get_dtype("float32"))
    return Benchmark(device, problem, MeasureOptions(**{"warmup": 5, "repeats": 20, "seed": 0, "ci": 0, **measure}),
                     bounds=False)


def test_certified_timing_samples_until_the_ci_is_within_one_percent_or_the_cap(device):
    b = bench(device, ci=0.01, ci_floor_us=0.5, min_samples=20, max_samples=400)
    assert b.precision == Precision(rel=0.01, floor_ms=0.0005, min_samples=20, max_samples=400)
    try:
        m = b.measure(KERNELS["smem_pad"].default_config())
    finally:
        b.free()
    assert 20 <= m.samples <= 400 and m.early_stop is None
    assert m.ci_low_ms <= m.median_ms <= m.ci_high_ms
    half = (m.ci_high_ms - m.ci_low_ms) / 2
    assert half <= max(0.01 * m.median_ms, 0.0005) or m.samples == 400
    print(f"\nsmem_pad 4096^2 default: {m.median_ms * 1e3:.2f} µs, {m.samples} samples, "
          f"CI ±{100 * half / m.median_ms:.3f}%, SM {m.sm_mhz} MHz")


def test_a_clearly_slower_config_still_stops_after_the_probe(device):
    from autotune.errors import TrialFailed

    b = bench(device, ci=0.01)  # Precision()
    measured = []
    try:
        for c in KERNELS["smem_pad"].space().configs()[:12]:
            try:
                measured.append(b.measure(c))
            except TrialFailed:
                continue
    finally:
        b.free()
    stopped = [m for m in measured if m.early_stop is not None]
    assert measured and all(m.samples == PROBE for m in stopped)
    assert all(m.samples >= 20 for m in measured if m.early_stop is None)


def test_energy_per_launch_or_one_line_why_not(device):
    b = bench(device, energy=True)
    try:
        m = b.measure(KERNELS["smem_pad"].default_config())
    finally:
        b.free()
    if b.energy_note is not None:
        assert b.energy_note.startswith("energy is unavailable: ") and "\n" not in b.energy_note
        assert m.energy_j is None
        pytest.skip(b.energy_note)
    assert m.energy_j is not None and 0 < m.energy_j < 10.0  # J per launch of a 64 MB transpose
    watts = m.energy_j / (m.median_ms * 1e-3)
    print(f"\nsmem_pad 4096^2 default: {m.energy_j * 1e3:.3f} mJ/launch, {watts:.0f} W at {m.sm_mhz} MHz")
    assert 10 < watts < 2000  # the board's power while it runs: plausible for any datacenter GPU


def test_a_search_stores_the_certificate_and_best_shows_it(tmp_path):
    from typer.testing import CliRunner

    from autotune.cli import app

    db = f"sqlite:///{tmp_path / 'certify.db'}"
    r = CliRunner().invoke(app, ["search", "--kernel", "smem_pad", "--size", "4096", "--trials", "12",
                                 "--seed", "0", "--energy", "--db", db])
    assert r.exit_code == 0, r.output
    assert "samples: until the median's 95% CI is within ±1%" in r.output and "vs fastest, paired" in r.output
    r = CliRunner().invoke(app, ["best", "--kernel", "smem_pad", "--size", "4096", "--db", db])
    assert r.exit_code == 0, r.output
    assert "runner-up " in r.output and "paired over 5 rounds" in r.output
    print(r.output)


def test_flag_tunables_build_verify_and_time_on_the_gpu(device, tmp_path):
    """The reduction example with [flags]: its default macros under every flag combination,
    verified and timed; prints each against the macro-only build (what the issue's flag
    benchmark measures at scale)."""
    import re
    from pathlib import Path

    from autotune.kernel.loader import load_kernel

    root = Path(__file__).resolve().parents[2] / "examples" / "reduction"
    text = (root / "reduce.toml").read_text().replace(
        "[space]\n", "[flags]\nmaxrregcount = [0, 32]\nptxas_opt = [1, 3]\nfast_math = [0, 1]\n\n[space]\n", 1)
    text = re.sub(r'^name = "reduce_sum"', 'name = "reduce_sum_flags"', text, count=1, flags=re.M)
    (tmp_path / "reduce.cu").write_text((root / "reduce.cu").read_text())
    (tmp_path / "reduce.toml").write_text(text)
    kernel = load_kernel(tmp_path / "reduce.toml")
    problem = Problem.of(kernel, {"n": 1 << 24}, get_dtype("float32"))
    b = Benchmark(device, problem, MeasureOptions(warmup=5, repeats=20, seed=0, ci=0.01, early_stop=False),
                  bounds=False)
    base = kernel.default_config().as_dict()
    results = {}
    try:
        for c in kernel.space().configs():
            m = c.as_dict()
            if any(m[k] != v for k, v in base.items() if not k.startswith("NVCC_")):
                continue  # the default's macros only
            results[c.key] = b.measure(c)
    finally:
        b.free()
    assert len(results) == 8
    plain = results[kernel.default_config().key]
    print()
    for key, m in sorted(results.items(), key=lambda kv: kv[1].median_ms):
        print(f"{m.median_ms * 1e3:8.2f} µs ({100 * (m.median_ms / plain.median_ms - 1):+.2f}%) "
              f"regs {m.registers:3d}  {key}")
    capped = [m for k, m in results.items() if "NVCC_MAXRREGCOUNT=32" in k]
    assert all(m.registers <= 32 for m in capped)
