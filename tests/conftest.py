"""Shared fixtures. Every test gets its own temporary SQLite database.

Tests marked ``gpu`` run only where PyCUDA imports and a CUDA device is present; elsewhere
they are skipped with the reason.
"""

from __future__ import annotations

import functools

import pytest

from autotune.device import DeviceInfo


@functools.cache
def _gpu_missing() -> str | None:
    try:
        from autotune.device import device_count

        return None if device_count() > 0 else "no CUDA device"
    except Exception as exc:  # GPUUnavailableError, or a driver that cannot initialise
        return f"no GPU: {exc}"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords:
            reason = _gpu_missing()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def device_info() -> DeviceInfo:
    """A device identity like the H100 we test on (no GPU needed)."""
    return DeviceInfo(name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm_count=132,
                      total_memory=85_000_000_000, driver_version="13.0", cuda_version="13.0")


@pytest.fixture
def db_url(tmp_path) -> str:
    """URL of a fresh SQLite file for this test."""
    return f"sqlite:///{tmp_path / 'autotune.db'}"


@pytest.fixture(autouse=True)
def _isolated_db(monkeypatch, tmp_path):
    """No test may touch the user's real database: AUTOTUNE_DB points into tmp_path."""
    monkeypatch.setenv("AUTOTUNE_DB", f"sqlite:///{tmp_path / 'default.db'}")
