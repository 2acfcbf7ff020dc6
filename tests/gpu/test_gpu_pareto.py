"""The Pareto front of time and energy on a real GPU (issue 40, ``--objective time,energy``): a
small NSGA-II search of a catalog transpose stores time and energy for every trial, and its
front is non-empty and non-dominated. Skips (one line why) on a GPU without NVML's total-energy
counter. About 30 s on an H100."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from autotune.cli import app
from autotune.store.opening import open_results
from autotune.store.pareto import dominates

pytestmark = pytest.mark.gpu_slow


def test_a_time_energy_search_finds_a_non_dominated_front(tmp_path):
    db = f"sqlite:///{tmp_path / 'pareto.db'}"
    r = CliRunner().invoke(app, ["search", "--kernel", "smem_pad", "--size", "2048", "--trials", "12",
                                 "--objective", "time,energy", "--strategy-option", "population=4", "--seed", "0",
                                 "--db", db])
    if r.exit_code == 2 and "energy is unavailable" in r.output:
        pytest.skip(next(line for line in r.output.splitlines() if "energy is unavailable" in line))
    assert r.exit_code == 0, r.output
    assert "objective: time,energy" in r.output
    store = open_results(db, "read")
    best = store.find_best(kernel="smem_pad")[0]
    assert best.objective == "time,energy"
    trials = store.study_trials(best.search_id)
    ok = [t for t in trials if t.status == "ok"]
    assert ok and all(t.energy_j is not None and t.energy_j > 0 for t in ok)  # every trial stores time and energy
    members = store.pareto_front(best.search_id)
    assert members and all(t.status == "ok" for t in members)
    points = [(t.median_ms, t.energy_j) for t in ok]
    for t in members:  # no valid trial dominates a member
        assert not any(dominates(p, (t.median_ms, t.energy_j)) for p in points)
    for t in ok:  # and every valid trial off the front is dominated by a member
        if all(t.config != m.config for m in members):
            assert any(dominates((m.median_ms, m.energy_j), (t.median_ms, t.energy_j))
                       or (m.median_ms, m.energy_j) == (t.median_ms, t.energy_j) for m in members) \
                or any(o.config == t.config and o.median_ms < t.median_ms for o in ok)
    print(f"\nsmem_pad 2048^2 front on {best.device_name}: " +
          "; ".join(f"{t.median_ms * 1e3:.2f} µs {t.energy_j * 1e3:.4f} mJ" for t in members))
    r = CliRunner().invoke(app, ["best", "--kernel", "smem_pad", "--size", "2048", "--db", db])
    assert r.exit_code == 0, r.output
    assert "Pareto front of time and energy for smem_pad 2048x2048 float32" in r.output
    assert "time-optimal" in r.output and "energy-optimal" in r.output
