"""Fixtures of the runtime's tests (tests/runtime/ and below)."""

from __future__ import annotations

import pytest

from fake_gpu_arrays import HISTOGRAM


@pytest.fixture
def histogram():
    """The histogram example's kernel (examples/histogram/histogram.toml), loaded: what the
    launcher's and the recording's tests launch on the fake driver (fake_gpu_arrays.installed)."""
    from autotune.kernel.loader import load_kernel

    return load_kernel(HISTOGRAM)
