"""The Problem value (kernel/problem.py): resolved and checked once, hashable, picklable by reference."""

from __future__ import annotations

import pickle

import pytest

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS, resolve_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.model import Geometry
from autotune.kernel.problem import Problem, ProblemRef


def test_a_problem_is_resolved_once_from_any_spelling():
    by_name = Problem.of("smem_pad", {"cols": 64, "rows": 32}, "float32")
    assert by_name.kernel is KERNELS["smem_pad"] and by_name.dims == (("rows", 32), ("cols", 64))
    assert by_name.dtype is get_dtype("float32") and by_name.label == "smem_pad 32x64 float32"
    for spelling in ((32, 64), [32, 64], (("rows", 32), ("cols", 64))):
        assert Problem.of(KERNELS["smem_pad"], spelling, get_dtype("float32")) == by_name
    assert hash(Problem.of("smem_pad", (32, 64), "float32")) == hash(by_name)
    assert Problem.of(by_name) is by_name


@pytest.mark.parametrize(("kernel", "dims", "dtype", "message"), [
    ("no_such_kernel", (1, 1), "float32", "unknown kernel 'no_such_kernel'"),
    (None, (1, 1), "float32", "kernel None is not allowed"),
    ("smem_pad", (1,), "float32", r"shape \(1,\) is not allowed"),
    ("smem_pad", 5, "float32", "dims 5 are not allowed"),
    ("smem_pad", (0, 4), "float32", "rows=0 is not allowed"),
    ("smem_pad", (4, 4), "float17", "unknown dtype 'float17'"),
    ("matmul_naive", (131071, 4, 4), "float32", "m=131071 is over matmul_naive's largest m"),
])
def test_bad_problems_are_refused_naming_the_value(kernel, dims, dtype, message):
    with pytest.raises(InvalidInputError, match=message):
        Problem.of(kernel, dims, dtype)


def test_a_problem_given_whole_takes_no_other_dims():
    p = Problem.of("smem_pad", (8, 8), "float32")
    with pytest.raises(InvalidInputError, match="not allowed with a Problem"):
        Problem.of(p, (16, 16))


def test_a_problem_crosses_processes_by_reference(tmp_path):
    from kernel_files import catalog_doc, write_kernel

    catalog = Problem.of("matmul_reg", (64, 32, 16), "float64")
    assert catalog.ref == ProblemRef("matmul_reg", catalog.dims, "float64")
    assert pickle.loads(pickle.dumps(catalog)) == catalog  # the same catalog Kernel object
    doc = {**catalog_doc("copy_row"), "name": "my_copy"}
    user = Problem.of(write_kernel(tmp_path / "my_copy.toml", doc), (8, 8), "float32")
    assert user.ref.kernel == str((tmp_path / "my_copy.toml").resolve())
    again = pickle.loads(pickle.dumps(user))
    assert again.kernel is resolve_kernel(tmp_path / "my_copy.toml") and again.dims == user.dims


def test_geometry_is_named_and_still_unpacks():
    p = Problem.of("smem_pad", (100, 300), "float32")
    g = p.geometry(p.kernel.default_config())
    assert isinstance(g, Geometry)
    grid, block, shared = g
    assert (g.grid, g.block, g.shared) == (grid, block, shared)
    assert g.threads == block[0] * block[1] * block[2] and g.blocks == grid[0] * grid[1] * grid[2]


def test_the_key_of_a_problem_runs_no_compiler(device_info):
    from autotune.measure.toolchain import Toolchain
    from autotune.store.key import TuningKey, tuning_key

    p = Problem.of("smem_pad", (256, 256), "float32")
    key = TuningKey.of(p, device_info, Toolchain("13.0.88", "-O3 -arch=sm_90"))
    assert (key.kernel, key.dims, key.dtype, key.nvcc_version) == ("smem_pad", p.dims, "float32", "13.0.88")
    assert key.problem is p
    here = Toolchain.of(device_info.arch)  # (nvcc on PATH: tests need it)
    assert TuningKey.of(p, device_info, here) == tuning_key("smem_pad", device_info, (256, 256), "float32")
    assert key.at((("rows", 8), ("cols", 8))).problem is None  # not that copy's problem
