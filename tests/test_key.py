"""The tuning key: named dims, their text and display forms, and the kernel's hashes in the key."""

from __future__ import annotations

import dataclasses

import pytest

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import get_kernel
from autotune.measure.device import DeviceInfo
from autotune.store.key import TuningKey, dims_key, format_dims, kernel_dims, parse_dims_key, tuning_key

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "9.0", 132, 85_000_000_000, "13.0", "13.0")


def test_text_and_display_forms_round_trip():
    dims = (("m", 4096), ("n", 2048), ("k", 64))
    assert dims_key(dims) == "m=4096,n=2048,k=64" and format_dims(dims) == "4096x2048x64"
    assert parse_dims_key("m=4096,n=2048,k=64") == dims
    assert parse_dims_key("n=1048576") == (("n", 1048576),)
    for bad in ("", "n", "n=", "n=0", "n=-1", "n=1.5", "1n=3", "n=1,n=2", "rows=2;cols=3"):
        with pytest.raises(ValueError):
            parse_dims_key(bad)


def test_kernel_dims_takes_a_mapping_or_values_in_declared_order():
    names = ("rows", "cols")
    assert kernel_dims(names, (8, 16)) == (("rows", 8), ("cols", 16))
    assert kernel_dims(names, [8, 16]) == kernel_dims(names, {"cols": 16, "rows": 8}) == (("rows", 8), ("cols", 16))
    import numpy as np

    assert kernel_dims(("n",), (np.int64(5),)) == (("n", 5),) and type(kernel_dims(("n",), (np.int64(5),))[0][1]) is int
    with pytest.raises(InvalidInputError, match=r"kernel k: cols is missing; give \(rows, cols\)"):
        kernel_dims(names, {"rows": 8}, "kernel k")
    with pytest.raises(InvalidInputError, match="depth is not a dimension"):
        kernel_dims(names, {"rows": 8, "cols": 8, "depth": 2})
    for bad in ((8,), (8, 8, 8), (0, 8), (8.5, 8), ("8", 8), (True, 8), "88", 8):
        with pytest.raises(InvalidInputError, match="shape"):
            kernel_dims(names, bad)


def test_tuning_key_of_a_catalog_kernel_carries_its_hashes_and_named_dims(device_info):
    k = get_kernel("matmul_reg")
    key = tuning_key("matmul_reg", device_info, (512, 256, 128), "float32")
    assert (key.source_hash, key.spec_hash) == (k.source_hash, k.spec_hash)
    assert key.dims == (("m", 512), ("n", 256), ("k", 128)) and key.shape == (512, 256, 128)
    assert key.dims_key == "m=512,n=256,k=128" and key.display == "512x256x128" and key.dim("k") == 128
    assert key == tuning_key(k, device_info, {"k": 128, "n": 256, "m": 512}, "float32")
    with pytest.raises(KeyError, match="no dimension 'rows'"):
        key.dim("rows")
    with pytest.raises(InvalidInputError, match=r"give \(m, n, k\)"):
        tuning_key("matmul_reg", device_info, (512, 256), "float32")


def test_study_name_is_readable_and_tells_sources_and_specs_apart(device_info):
    key = tuning_key("smem_pad", device_info, (8192, 8192), "float32")
    assert key.study_name.startswith(f"smem_pad@{key.source_hash[:12]}+{key.spec_hash[:8]}|NVIDIA H100")
    assert key.study_name.endswith("|8192x8192|float32")
    other_spec = dataclasses.replace(key, spec_hash="0" * 64)
    assert other_spec.study_name != key.study_name


@pytest.mark.parametrize("dims", [(), (("n", 5.0),), (("n", True),), {"n": 5}, ((5, "n"),), [("n", 5)]])
def test_tuning_key_refuses_malformed_dims(dims):
    with pytest.raises(ValueError, match="dims must be"):
        TuningKey(H100, "k", "a" * 64, "b" * 64, dims, "float32", "13.0.88", "-O3")
