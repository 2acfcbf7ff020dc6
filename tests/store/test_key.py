"""The tuning key: named dims, their text and display forms, and the kernel's hashes in the key."""

from __future__ import annotations

import pytest

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import get_kernel
from autotune.measure.device import DeviceInfo
from autotune.store.key import ProblemKey, TuningKey, tuning_key

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")


def test_tuning_key_of_a_catalog_kernel_carries_its_hashes_and_named_dims(device_info):
    k = get_kernel("matmul_reg")
    key = tuning_key("matmul_reg", device_info, (512, 256, 128), "float32")
    assert (key.source_hash, key.spec_hash) == (k.source_hash, k.spec_hash)
    assert key.dims == (("m", 512), ("n", 256), ("k", 128)) and key.shape == (512, 256, 128)
    assert key.dims_key == "m=512,n=256,k=128" and key.display == "512x256x128" and key.dim("k") == 128
    assert key == tuning_key(k, device_info, {"k": 128, "n": 256, "m": 512}, "float32")
    with pytest.raises(KeyError, match="no dimension 'rows'"):
        key.dim("rows")
    with pytest.raises(InvalidInputError, match=r"kernel matmul_reg takes \(m, n, k\)"):
        tuning_key("matmul_reg", device_info, (512, 256), "float32")
    assert tuning_key("matmul_reg", device_info, key.dims, "float32") == key  # (name, value) pairs too


def test_study_name_is_readable_and_tells_sources_and_specs_apart(device_info):
    """Issue 49: the name was the whole key, hashes first, 123-136 characters; it reads kernel,
    shape, dtype and device first now, then a hash of the whole key."""
    key = tuning_key("smem_pad", device_info, (8192, 8192), "float32")
    assert key.study_name.startswith("smem_pad 8192x8192 float32 NVIDIA H100 80GB HBM3 #")
    assert len(key.study_name) <= 64 and len(key.study_name.rsplit("#", 1)[1]) == 10
    for change in ({"spec_hash": "0" * 64}, {"source_hash": "0" * 64}, {"nvcc_version": "12.4.131"},
                   {"compile_flags": "-O3 -arch=sm_80"}):
        assert key.replace(**change).study_name != key.study_name, change
    # the name of autotune < 0.4.0, by which its studies are still found
    assert key.legacy_study_name.startswith(f"smem_pad@{key.source_hash[:12]}+{key.spec_hash[:8]}|NVIDIA H100")
    assert key.legacy_study_name.endswith("|8192x8192|float32")


@pytest.mark.parametrize("dims", [(), (("n", 5.0),), (("n", True),), {"n": 5}, ((5, "n"),), [("n", 5)]])
def test_tuning_key_refuses_malformed_dims(dims):
    with pytest.raises(ValueError, match="dims must be"):
        TuningKey(H100, ProblemKey("k", "a" * 64, "b" * 64, dims, "float32"), "13.0.88", "-O3")


def test_a_key_is_replaced_in_either_part_and_keeps_its_problem_only_where_it_is_the_same(device_info):
    key = tuning_key("smem_pad", device_info, (256, 256), "float32")
    moved = key.replace(dims=(("rows", 8), ("cols", 8)), nvcc_version="12.8.93")
    assert (moved.dims, moved.nvcc_version, moved.kernel, moved.device) == (
        (("rows", 8), ("cols", 8)), "12.8.93", "smem_pad", device_info)
    assert moved.problem is None and key.problem is not None and key.replace(nvcc_version="x").problem is key.problem
    assert key.at((("rows", 8), ("cols", 8))) == moved.replace(nvcc_version=key.nvcc_version)
    with pytest.raises(TypeError):
        key.replace(colour="red")
