"""Every config of every shipped search space compiles with nvcc for sm_90 (no GPU needed)."""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from autotune.compile import compile_cubin, nvcc_options
from autotune.config import Config
from autotune.dtypes import DTYPES, get_dtype
from autotune.errors import TrialFailed
from autotune.kernels import KERNELS
from autotune.space import load_space

if shutil.which("nvcc") is None:
    if os.environ.get("CI"):
        raise RuntimeError("nvcc must be on PATH in CI: the compile check of every config needs it")
    pytest.skip("nvcc is not on PATH", allow_module_level=True)


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_every_config_of_the_shipped_space_compiles(kernel):
    configs = load_space(kernel).configs()
    f32 = get_dtype("float32")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda c: compile_cubin(c, f32, "sm_90"), configs))
    for config, res in zip(configs, results):
        assert res["registers"] > 0, config
        tile = config["TILE_DIM"]
        pad = config.as_dict().get("IPAD", 0)
        expected_smem = tile * (tile + pad) * 4 if kernel.startswith("smem") else 0
        assert res["shared_bytes"] == expected_smem, config


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_dtype_compiles_for_every_kernel(dtype):
    d = DTYPES[dtype]
    for k in KERNELS.values():
        res = compile_cubin(k.default_config(), d, "sm_90")
        ipad = int(k.macros(k.default_config(), d).get("IPAD", 0))
        expected_smem = 32 * (32 + ipad) * d.itemsize if k.name.startswith("smem") else 0
        assert res["shared_bytes"] == expected_smem, k.name


def test_a_compile_error_is_a_failed_trial_with_the_compiler_message():
    # BLOCK_ROWS must divide TILE_DIM: the kernel's own #error fires
    bad = Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 7, "IPAD": 1})
    with pytest.raises(TrialFailed) as info:
        compile_cubin(bad, get_dtype("float32"))
    assert info.value.status == "compile_error"
    assert "BLOCK_ROWS must divide TILE_DIM" in info.value.reason


def test_too_much_static_shared_memory_is_a_compile_error():
    big = Config.of("smem_pad", {"TILE_DIM": 128, "BLOCK_ROWS": 8, "IPAD": 1})
    with pytest.raises(TrialFailed) as info:
        compile_cubin(big, get_dtype("float64"))  # 128 * 129 * 8 B > 48 KiB
    assert info.value.status == "compile_error"


def test_only_validated_integers_reach_the_nvcc_command_line():
    k = KERNELS["smem_pad"]
    opts = nvcc_options(k, k.default_config(), get_dtype("float32"))
    assert opts == ["-DBLOCK_ROWS=8", "-DIPAD=1", "-DTILE_DIM=32", "-DELEM_T=float", "-O3"]
