"""The shipped search spaces compile with nvcc for sm_90 (no GPU needed), with the static
shared memory the kernels had before the kernel model: a sample of each that holds its default,
its ends and every listed value (tests/compile_sample.py), the same of the examples' spaces
(examples/*/*.toml)."""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import catalog_before as before
from compile_sample import compile_sample, shipped_space
from autotune.errors import TrialFailed
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES, get_dtype
from autotune.kernel.loader import load_kernel
from autotune.measure.compile import compile_cubin, nvcc_options

if shutil.which("nvcc") is None:
    if os.environ.get("CI"):
        raise RuntimeError("nvcc must be on PATH in CI: the compile check of every config needs it")
    pytest.skip("nvcc is not on PATH", allow_module_level=True)


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*/*.toml"))
"""The examples' kernel files (none until examples/ exists)."""


def compile_all(kernel, jobs):
    """``compile_cubin`` of each ``(config, dtype)`` of ``kernel`` on every core, results in order."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(lambda job: compile_cubin(*job, "sm_90", kernel=kernel), jobs))


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache
def test_every_config_of_the_shipped_space_compiles(kernel):
    k = KERNELS[kernel]
    n, configs = compile_sample(k)  # the default, the ends and every listed value (tests/compile_sample.py)
    assert len(configs) == min(n, len(shipped_space(k).configs()))
    # float32 where the kernel takes it, else the first dtype of each item size it takes (smem_bytes: int8
    # and int16; int8 is the dtype tests/cli/test_check.py checks it in, so those builds are the cache's)
    first_of_size = {}
    for d in map(get_dtype, k.dtypes):
        first_of_size.setdefault(d.itemsize, d)
    dtypes = [get_dtype("float32")] if "float32" in k.dtypes else list(first_of_size.values())
    jobs = [(c, dt) for c in configs for dt in dtypes]
    for (config, dt), res in zip(jobs, compile_all(k, jobs), strict=True):
        assert res["registers"] > 0, (config, dt.name)
        if kernel in before.DEFAULTS:  # the catalog before the kernel model: the same shared memory
            assert res["shared_bytes"] == before.static_shared_bytes(kernel, config.as_dict(), 4), config
        elif kernel in DYNAMIC:  # its tile is dynamic shared memory: none static
            assert res["shared_bytes"] == 0, (config, dt.name)
        elif kernel in NO_SHARED:
            assert res["shared_bytes"] == 0, (config, dt.name)
        else:
            assert 0 < res["shared_bytes"] <= 48 * 1024, (config, dt.name)


DYNAMIC = {"smem_aligned_out"}
"""Kernels added since the kernel model whose tiles are dynamic shared memory ([launch] shared)."""
NO_SHARED = {"naive_flat"}
"""Kernels added since the kernel model that use no shared memory."""


# Static shared memory of each kernel's default config, per byte of element.
DEFAULT_SHARED_PER_BYTE = {"smem_vec": 64 * 65,  # smem, smem_pad, smem_unroll_pad: dynamic tiles (none static)
                           "matmul_tiled": 2 * 16 * 16, "matmul_reg": 16 * 65 + 16 * 64,
                           "matmul_warp": 2 * 8 * (128 + 128),  # STAGES x BK x (BM + BN), A unpadded
                           }


def default_shared(name: str, itemsize: int) -> int:
    """Static shared memory of a kernel's default config for one item size, bytes."""
    if name == "smem_vec_realign":  # WIDE=1: 128-element tiles for 1- and 2-byte elements, else 64
        side = 128 if itemsize <= 2 else 64  # rows of side / vector + 1 chunks of 16 bytes, a chunk per vector of rows
        return side * (side * itemsize // 16 + 1) * 16 + side * itemsize
    if name == "skinny":  # BLOCK_KIB=8: tile and stage of 8 KiB, 16 bytes a row of the tile (64 rows, 32 of 8 bytes), 16 more
        return 2 * 8192 + (64 if itemsize <= 4 else 32) * 16 + 16
    if name == "smem_bytes":  # TILE_BYTES=64: 64 / itemsize rows of NW = 16 words, 32 / NW words of skew per 4 / itemsize rows
        side, words = 64 // itemsize, 16
        return side * words * 4 + side // (4 // itemsize) * (32 // words) * 4
    if name == "smem_bytes_aligned_out":  # 128-byte tiles, OUT_ALIGN=32: rows of NW + 1 = 33 window words for
        side, words = 128 // itemsize, 33  # 128 + 32 bytes of rows; columns of TS words, TS = 1 + groups + 1 at least
        rows, groups = side + 32 // itemsize, (128 + 32) // 4
        ts = next(t for t in range(groups + 2, groups + 40) if (4 // itemsize * t) % 32 == 32 // (4 // itemsize))
        return (rows * words + side * ts) * 4
    # 16-byte elements pass through shared memory as two 8-byte parts (kernels/words.cuh)
    return DEFAULT_SHARED_PER_BYTE.get(name, 0) * min(itemsize, 8)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache
def test_every_dtype_compiles_for_every_kernel(dtype):
    d = DTYPES[dtype]
    kernels = [k for k in KERNELS.values() if dtype in k.dtypes]
    assert len(kernels) == (20 if dtype in ("float32", "float64") else 14 if dtype == "complex128"
                            else 18 if d.itemsize <= 2 else 16)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda k: compile_cubin(k.default_config(), d, kernel=k), kernels))
    for k, res in zip(kernels, results, strict=True):
        assert res["shared_bytes"] == default_shared(k.name, d.itemsize), k.name


@pytest.mark.skipif(not EXAMPLES, reason="no examples/*/*.toml in this checkout yet")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache
def test_a_sample_of_an_examples_space_compiles(path):
    """A user's kernel (not in the catalog) compiles through ``kernel=``: the sample of its space
    that the shipped spaces are checked on (tests/compile_sample.py: the default, the ends and
    every listed value) for its first dtype, and its default config for every dtype it takes.
    Its whole space was built here before: 169 builds of the examples' 3 kernels, about 7 % of
    the suite's CPU on 2 cores for configs that differ from the sample's only in combination;
    ``autotune check KERNEL_FILE`` builds every config."""
    k = load_kernel(path)
    n, configs = compile_sample(k)
    assert len(configs) == min(n, len(k.space().configs())) and k.default_config() in configs
    jobs = [(c, get_dtype(k.dtypes[0])) for c in configs] + [(k.default_config(), get_dtype(d)) for d in k.dtypes[1:]]
    for (config, dtype), res in zip(jobs, compile_all(k, jobs), strict=True):
        assert res["registers"] > 0, (config, dtype.name)


def test_a_compile_error_is_a_failed_trial_with_the_compiler_message():
    # BLOCK_ROWS must divide TILE_DIM: the kernel's own #error fires
    bad = Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 7, "IPAD": 1, "DIAGONAL": 0})
    with pytest.raises(TrialFailed) as info:
        compile_cubin(bad, get_dtype("float32"))
    assert info.value.status == "compile_error"
    assert "BLOCK_ROWS must divide TILE_DIM" in info.value.reason and "\n" not in info.value.reason


def test_too_much_static_shared_memory_is_a_compile_error():
    big = Config.of("smem_vec", {**KERNELS["smem_vec"].defaults, "TILE_DIM": 128, "BLOCK_ROWS": 8})
    with pytest.raises(TrialFailed) as info:
        compile_cubin(big, get_dtype("float64"))  # 128 * 129 * 8 B of static tile > 48 KiB
    assert info.value.status == "compile_error" and "too much shared data" in info.value.reason


def test_tiles_of_smem_cu_are_dynamic_shared_memory_above_48_kib():
    # issue 24: smem.cu's tiles are launched as dynamic shared memory, so a 128 x 128 tile compiles
    # (no static shared memory) and its launch asks for the opt-in above 48 KiB
    for config, dtype, tile in ((Config.of("smem_pad", {"TILE_DIM": 128, "BLOCK_ROWS": 8, "IPAD": 1, "DIAGONAL": 0}),
                                 "float64", 128 * 129 * 8),
                                (Config.of("smem_unroll_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8, "IPAD": 1, "UNROLL": 8,
                                                               "DIAGONAL": 0}), "float64", 8 * 32 * 33 * 8)):
        assert compile_cubin(config, get_dtype(dtype))["shared_bytes"] == 0
        _, _, shared = KERNELS[config.kernel].geometry(config, {"rows": 1000, "cols": 1000}, get_dtype(dtype))
        assert shared == tile > 48 * 1024


@pytest.mark.parametrize("kernel, macros, message", [
    ("unroll_row", {"UNROLL": 0}, "UNROLL must be at least 1"),
    ("smem_pad", {"DIAGONAL": 2}, "DIAGONAL must be 0 or 1"),
])
def test_out_of_range_macros_are_compile_errors(kernel, macros, message):
    config = Config.of(kernel, {**KERNELS[kernel].defaults, **macros})
    with pytest.raises(TrialFailed, match=message):
        compile_cubin(config, get_dtype("float32"))


def test_only_validated_integers_reach_the_nvcc_command_line():
    k = KERNELS["smem_pad"]
    opts = nvcc_options(k, k.default_config(), get_dtype("float32"))
    assert opts == ["-DBLOCK_ROWS=8", "-DDIAGONAL=0", "-DIPAD=1", "-DTILE_DIM=32", "-DUNROLL=1", "-DELEM_T=float", "-O3"]


@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache (the defaults: every_dtype's float64)
def test_every_matmul_config_fits_the_shared_memory_limit_for_float64():
    """The matmul spaces are constrained for 8-byte elements: every config's static shared memory
    in float64 (the catalog's formula, tests/catalog_before.py) is within 48 KiB, and a float64
    build of the sample (tests/compile_sample.py) reports exactly that formula's bytes (every
    config was built here before: 47 s of a 2-core CI's suite for what the formula says)."""
    f64 = get_dtype("float64")
    for name in before.MATMULS:
        k = KERNELS[name]
        for config in shipped_space(k).configs():
            assert before.static_shared_bytes(name, config.as_dict(), 8) <= 48 * 1024, config
        _, configs = compile_sample(k)
        for config, res in zip(configs, compile_all(k, [(c, f64) for c in configs]), strict=True):
            assert res["shared_bytes"] == before.static_shared_bytes(name, config.as_dict(), 8), config


@pytest.mark.parametrize("macros, message", [
    ({"BM": 64, "TM": 3}, "TM must divide BM"),
    ({"BM": 128, "BN": 128, "TM": 1, "TN": 1}, "at most 1024"),
])
def test_invalid_register_tiles_are_compile_errors(macros, message):
    config = Config.of("matmul_reg", {**KERNELS["matmul_reg"].defaults, **macros})
    with pytest.raises(TrialFailed, match=message):
        compile_cubin(config, get_dtype("float32"))


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "float64"])
def test_smem_vec_moves_16_byte_vectors_each_sampled_config(dtype, tmp_path):
    """Each sampled config of the shipped smem_vec space (tests/compile_sample.py: every value of
    every macro) loads and stores global memory with 128-bit accesses, one per vector of a
    thread (PTX ld.global.{nc,cs}.v4.u32 / st.global[.cs].v4.u32; LDG.E.128 / STG.E.128 in SASS)."""
    import re
    import subprocess

    k = KERNELS["smem_vec"]
    src = tmp_path / "vec.cu"
    src.write_text(k.source_text())
    for config in compile_sample(k)[1]:
        ptx = tmp_path / "vec.ptx"
        subprocess.run(["nvcc", "-ptx", "-arch=sm_90", *nvcc_options(k, config, get_dtype(dtype)), "-o", str(ptx),
                        str(src)], check=True, capture_output=True)
        text = ptx.read_text()
        per_thread = config["TILE_DIM"] // config["BLOCK_ROWS"] * config["TILES"]
        hint = r"\.cs" if config["STREAMING"] else ""
        assert len(re.findall(rf"ld\.global(\.nc)?{hint}\.v4\.u32", text)) == per_thread, config
        assert len(re.findall(rf"st\.global{hint}\.v4\.u32", text)) == per_thread, config


def test_a_users_kernel_compiles_through_kernel(tmp_path):
    from autotune.errors import InvalidInputError

    from kernel_files import catalog_doc, write_kernel

    doc = catalog_doc("smem_vec")  # its tile is static shared memory of elem_t: the element size shows
    doc["problem"]["dtype_macro"] = "VALUE_T"
    k = load_kernel(write_kernel(tmp_path / "mine.toml", {**doc, "name": "my_pad"}))
    opts = nvcc_options(k, k.default_config(), get_dtype("float64"))
    assert opts[-2:] == ["-DVALUE_T=double", "-O3"]
    # the dtype reaches the source only through its dtype macro: common.cuh reads ELEM_T (float if unset)
    assert compile_cubin(k.default_config(), get_dtype("float64"), kernel=k)["shared_bytes"] == 64 * 65 * 4
    doc["problem"]["dtype_macro"] = "ELEM_T"
    k = load_kernel(write_kernel(tmp_path / "mine.toml", {**doc, "name": "my_pad"}))
    assert compile_cubin(k.default_config(), get_dtype("float64"), kernel=k)["shared_bytes"] == 64 * 65 * 8
    with pytest.raises(InvalidInputError, match="unknown kernel 'my_pad'"):  # its config alone names no known kernel
        compile_cubin(k.default_config(), get_dtype("float64"))


def test_a_config_compiled_once_comes_from_the_cubin_cache(tmp_path, monkeypatch):
    from autotune.measure import cubin_cache

    monkeypatch.setenv(cubin_cache.CACHE_ENV, str(tmp_path / "cache"))
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    first = compile_cubin(k.default_config(), f32, kernel=k)
    [entry] = (tmp_path / "cache").rglob("*.cubin")
    again = compile_cubin(k.default_config(), f32, kernel=k)
    assert (first["cached"], again["cached"]) == (False, True)
    assert {**first, "cached": None} == {**again, "cached": None}  # the same registers, shared memory, entries

    entry.write_bytes(entry.read_bytes()[:-10] + b"corrupted!")  # a torn or edited entry is rebuilt
    rebuilt = compile_cubin(k.default_config(), f32, kernel=k)
    assert rebuilt["cached"] is False and rebuilt["registers"] == first["registers"]
    assert compile_cubin(k.default_config(), f32, kernel=k)["cached"] is True
    assert not list((tmp_path / "cache").rglob(".tmp-*"))  # written through a temporary file, renamed

    other = Config.of("smem_pad", {**k.default_config().as_dict(), "IPAD": 2})
    assert compile_cubin(other, f32, kernel=k)["cached"] is False  # other macros: another entry
    assert compile_cubin(k.default_config(), get_dtype("float64"), kernel=k)["cached"] is False  # another dtype
    assert compile_cubin(k.default_config(), f32, "sm_80", kernel=k)["cached"] is False  # another arch
    assert len(list((tmp_path / "cache").rglob("*.cubin"))) == 4


def test_a_build_running_elsewhere_is_waited_for_not_repeated(tmp_path, monkeypatch):
    """Two builders of one entry at once (the compile pipeline and a measuring child): the
    second waits for the first's build lock and loads its cubin; nvcc runs once."""
    import threading

    from autotune.measure import compile as compile_mod, cubin_cache

    monkeypatch.setenv(cubin_cache.CACHE_ENV, str(tmp_path / "cache"))
    real_load, real_nvcc = cubin_cache.load, compile_mod._nvcc
    second_missed, runs = threading.Event(), []

    def load(key, root=None):
        hit = real_load(key, root)
        if hit is None and threading.current_thread().name == "second":
            second_missed.set()
        return hit

    def nvcc(*args):
        runs.append(threading.current_thread().name)
        if threading.current_thread().name == "first":
            assert second_missed.wait(60)  # the second builder found no entry and goes for the lock
        return real_nvcc(*args)

    monkeypatch.setattr(cubin_cache, "load", load)
    monkeypatch.setattr(compile_mod, "_nvcc", nvcc)
    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    got = {}
    threads = [threading.Thread(target=lambda n=n: got.__setitem__(n, compile_cubin(k.default_config(), f32, kernel=k)),
                                name=n) for n in ("first", "second")]
    threads[0].start()
    while not runs:  # the first builder holds the lock and runs nvcc
        threads[0].join(0.01)
    threads[1].start()
    for t in threads:
        t.join()
    assert runs == ["first"]
    assert (got["first"]["cached"], got["second"]["cached"]) == (False, True)
    assert got["first"]["registers"] == got["second"]["registers"]


def test_the_cache_key_covers_source_options_arch_and_nvcc():
    from autotune.measure.cubin_cache import entry_key

    base = entry_key("src", ["-DTILE_DIM=32", "-O3"], "sm_90", "13.0.88")
    assert base == entry_key("src", ["-DTILE_DIM=32", "-O3"], "sm_90", "13.0.88")
    assert len({base, entry_key("src2", ["-DTILE_DIM=32", "-O3"], "sm_90", "13.0.88"),
                entry_key("src", ["-DTILE_DIM=64", "-O3"], "sm_90", "13.0.88"),
                entry_key("src", ["-DTILE_DIM=32", "-O2"], "sm_90", "13.0.88"),
                entry_key("src", ["-DTILE_DIM=32", "-O3"], "sm_80", "13.0.88"),
                entry_key("src", ["-DTILE_DIM=32", "-O3"], "sm_90", "12.8.93"),
                entry_key("src", ["-DTILE_DIM=32", "-O3"], "sm_90", "13.0.88", ["NVCC_APPEND_FLAGS=-G"]),
                entry_key("src", ["-DTILE_DIM=32", "-O3"], "sm_90", "13.0.88", ["NVCC_PREPEND_FLAGS=-G"])}) == 8
    assert entry_key("src", ["-DTILE_DIM=32", "-O3"], "sm_90", "13.0.88", ()) == base  # none set: the key as before


def test_nvccs_environment_flags_key_the_cubin_cache(tmp_path, monkeypatch):
    """nvcc adds NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS to every command line: a cubin built with
    one set is not loaded by a build without it, nor the other way round (issue 51: a -G or
    --use_fast_math set there reached every later build through the cache)."""
    from autotune.measure import cubin_cache
    from autotune.measure.compile import cubin_of_source

    monkeypatch.setenv(cubin_cache.CACHE_ENV, str(tmp_path / "cache"))
    for name in cubin_cache.NVCC_ENV:
        monkeypatch.delenv(name, raising=False)
    source = 'extern "C" __global__ void k(int *out) {\n#ifdef POISON\n  out[0] = 7;\n#else\n  out[0] = 1;\n#endif\n}\n'
    plain, _, cached = cubin_of_source(source, [], "sm_90")
    assert not cached
    monkeypatch.setenv("NVCC_APPEND_FLAGS", "-DPOISON")
    poisoned, _, cached = cubin_of_source(source, [], "sm_90")
    assert not cached and poisoned != plain  # built with the flag, not the plain build loaded
    assert cubin_of_source(source, [], "sm_90")[::2] == (poisoned, True)
    monkeypatch.setenv("NVCC_APPEND_FLAGS", " ")  # blanks add nothing: the plain build
    assert cubin_of_source(source, [], "sm_90")[::2] == (plain, True)
    monkeypatch.delenv("NVCC_APPEND_FLAGS")
    monkeypatch.setenv("NVCC_PREPEND_FLAGS", "-DPOISON")  # the other variable: another entry
    assert cubin_of_source(source, [], "sm_90")[::2] == (poisoned, False)
    monkeypatch.delenv("NVCC_PREPEND_FLAGS")
    assert cubin_of_source(source, [], "sm_90")[::2] == (plain, True)  # unset again: the plain build
    assert len(list((tmp_path / "cache").rglob("*.cubin"))) == 3


def test_an_unwritable_cache_only_costs_time(tmp_path, monkeypatch):
    from autotune.measure import cubin_cache

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(cubin_cache.CACHE_ENV, str(blocker))
    k = KERNELS["smem_pad"]
    assert compile_cubin(k.default_config(), get_dtype("float32"), kernel=k)["cached"] is False


def test_a_build_names_its_cubin_by_digest_built_or_cached():
    """Issue 47: the check's result carries the cubin's digest, so two configs whose binaries
    are identical can be told apart from two that are not without reading the cubins."""
    from autotune.measure.compile import build_cubin, cubin_digest

    k, f32 = KERNELS["smem_pad"], get_dtype("float32")
    first = compile_cubin(k.default_config(), f32)
    again = compile_cubin(k.default_config(), f32)
    cubin = build_cubin(k, k.default_config(), f32, "sm_90")[0]
    assert again["cached"] and first["digest"] == again["digest"] == cubin_digest(cubin)
    other = Config.of("smem_pad", {**k.defaults, "TILE_DIM": 64})
    assert compile_cubin(other, f32)["digest"] != first["digest"]
