"""The comparison kernels' source (autotune/measure/device_compare.cu) ships with the package and
builds with nvcc into a cubin holding every entry point device_compare.py launches (no GPU needed;
skipped without nvcc). tests/measure/test_verify.py runs the comparison logic on a fake device, and
tests/gpu/test_gpu_device_compare.py on the GPU."""

from __future__ import annotations

import shutil
from importlib import resources

import pytest

from autotune.measure import device_compare
from autotune.measure.compile import _entry_points, cubin_of_source


def test_the_source_is_package_data():
    text = resources.files("autotune.measure").joinpath(device_compare.SOURCE).read_text()
    assert "extern \"C\" __global__ void not_byte" in text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_it_builds_with_every_entry_point_the_module_launches(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path))
    source = resources.files("autotune.measure").joinpath(device_compare.SOURCE).read_text()
    cubin, _, cached = cubin_of_source(source, ["-O3"], "sm_90")
    assert not cached and cubin_of_source(source, ["-O3"], "sm_90")[2]  # the second build is the cache's
    names = set(_entry_points(cubin))
    wanted = {"not_byte", *(f"exact_u{n}" for n in (1, 2, 4, 8)),
              *(f"tolerance_{t}" for t in device_compare.TOLERANCE_TYPES)}
    assert wanted <= names, sorted(wanted - names)
