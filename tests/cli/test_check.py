"""``autotune check``: every shipped kernel file and both examples pass; broken files fail with
one ``error:`` line naming the field (or the failed configs and the compiler's first line)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotune.cli import app
from autotune.kernel.catalog import KERNELS
from autotune.kernel.loader import load_kernel
from compile_sample import compile_sample, shipped_space

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "kernels").glob("*.toml"))
EXAMPLES = [ROOT / "examples/reduction/reduce.toml", ROOT / "examples/softmax/softmax.toml"]
runner = CliRunner()

if shutil.which("nvcc") is None:
    if os.environ.get("CI"):
        raise RuntimeError("nvcc must be on PATH in CI: autotune check builds every config with it")
    pytest.skip("nvcc is not on PATH", allow_module_level=True)


def check(*args) -> tuple[int, str]:
    result = runner.invoke(app, ["check", *map(str, args)])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(("error:", "Error:"))]


def test_every_shipped_kernel_file_is_there():
    assert len(SHIPPED) >= 15


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache
def test_every_shipped_kernel_file_passes(path):
    size = len(shipped_space(KERNELS[path.stem]).configs())  # the space compile_sample walked
    n, _ = compile_sample(KERNELS[path.stem])  # the configs tests/measure/test_compile.py built: cached
    sample = ["--sample", n] if size > n else []
    dtypes = KERNELS[path.stem].dtypes  # float32, or the first dtype of a kernel without it (smem_bytes)
    dtype = "float32" if "float32" in dtypes else dtypes[0]
    code, output = check(path, "--dtype", dtype, *sample)  # every dtype's default build: tests/measure/test_compile.py
    assert code == 0, output
    assert re.search(r"compiled (\d+) of \1 builds", output), output
    if sample:
        assert f"configs (a sample of the space's {size}) x 1 dtype" in output, output
        assert "ok: every sampled config" in output and not errors(output)
    else:
        assert "ok: every config" in output and not errors(output)


def test_a_sample_holds_the_default_every_listed_value_and_the_ends():
    k = KERNELS["matmul_warp"]
    space = shipped_space(k)
    configs, sample = space.configs(), space.sample(48, (k.default_config(),))
    assert len(configs) > 10_000 and len(sample) <= 48 and len(set(sample)) == len(sample)
    assert k.default_config() in sample and {configs[0], configs[-1]} <= set(sample)
    assert sample == sorted(sample, key=configs.index) == space.sample(48, (k.default_config(),))
    for name, values in space.params:
        assert {c[name] for c in sample} == set(values), name
    small = KERNELS["smem_pad"].space()
    assert small.sample(1000) == small.configs()


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache
def test_both_examples_pass_for_every_dtype(path):
    """Both dtypes of the sample tests/measure/test_compile.py builds for the first dtype
    (tests/compile_sample.py: the default, the ends and every listed value)."""
    n, _ = compile_sample(load_kernel(path))
    code, output = check(path, "--sample", n)
    assert code == 0, output
    size = int(re.search(rf"compiled {2 * n} of {2 * n} builds \({n} configs \(a sample of the space's (\d+)\) "
                         r"x 2 dtypes: float32, float64\)", output).group(1))
    assert size >= 40, output  # a space worth searching
    assert "ok: every sampled config" in output


SMALL_SPACE = "params = { BLOCK_SIZE = [256, 1024], ITEMS_PER_THREAD = [4, 8], MAX_BLOCKS = [1024] }"
ONE_CONFIG = "params = { BLOCK_SIZE = [256], ITEMS_PER_THREAD = [4], MAX_BLOCKS = [1024] }"
"""The example's default config alone."""


@pytest.fixture
def broken(tmp_path, shared_cubins):
    """``broken(old, new, cu=False, small=False)``: a copy of the reduction example with ``old``
    replaced by ``new`` in its kernel file (or, with ``cu``, in its source), its space cut to
    4 configs (:data:`SMALL_SPACE`) with ``small``; the kernel file's path. Its builds use the
    run's one cubin cache (``shared_cubins``): a file broken in its launch geometry, its shared
    memory or its reference builds the example's source unchanged (the same 4 builds, made once
    a run, not once a test); a source broken (``cu``) is a source of its own, and a build that
    fails is never cached."""
    def make(old: str, new: str, cu: bool = False, small: bool = False) -> Path:
        toml = (ROOT / "examples/reduction/reduce.toml").read_text()
        source = (ROOT / "examples/reduction/reduce.cu").read_text()
        if small:
            toml = re.sub(r"^params = .*$", SMALL_SPACE, toml, count=1, flags=re.M)
        text = source if cu else toml
        assert old in text, old
        text = text.replace(old, new)
        (tmp_path / "reduce.cu").write_text(text if cu else source)
        (tmp_path / "reduce.toml").write_text(toml if cu else text)
        return tmp_path / "reduce.toml"
    return make


# (kernel file text replaced, by, what the one error line says)
FILE_ERRORS = [
    ('name = "reduce_sum"', 'name = "reduce-sum"', "name: 'reduce-sum' is not allowed"),
    ('name = "reduce_sum"', 'name = "smem_pad"', "name: 'smem_pad' is a catalog kernel's name"),
    ('[problem]', '[problem', "is not valid TOML"),
    ('source = "reduce.cu"', 'source = "nowhere.cu"', "source: "),
    ('function = "reduce_sum"', 'function = "reduce_summ"', "function: 'reduce_summ' is not a kernel of reduce.cu"),
    ('function = "reduce_sum"\n', '', "function: missing"),
    ('dims = ["n"]', 'dims = ["n", "n"]', "[problem] dims"),
    ('dtypes = ["float32", "float64"]', 'dtypes = ["float32", "float128"]', "[problem] dtypes"),
    ('role = "in"', 'role = "input"', "role: 'input' is not allowed; allowed: in, out, inout, scratch"),
    ('scalar = "int64"', 'scalar = "long"', "scalar: 'long' is not allowed"),
    ('grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]', 'grid = ["cdiv(n, BLOCK_SIZ)", 1, 1]',
     "[launch] grid[0]: 'cdiv(n, BLOCK_SIZ)' names BLOCK_SIZ"),
    ('grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]', 'grid = ["eval(n)", 1, 1]',
     "[launch] grid[0]"),
    ('default = { BLOCK_SIZE = 256,', 'default = { BLOCK_SIZE = 64,', "[space] default"),
    ('MAX_BLOCKS = [512, 1024, 2048] }', 'MAX_BLOCKS = [] }', "[space]"),
    ('reference_kernel = "reduce_reference"', 'reference_kernel = "reduce_ref"',
     "[check] reference_kernel: 'reduce_ref' is not a kernel of reduce.cu"),
    ('reference_kernel = "reduce_reference"', 'reference = "no_such_module_here:ref"',
     "[check] reference: cannot load 'no_such_module_here:ref'"),
    ('compare = "tolerance"', 'compare = "roughly"', "[check] compare"),
    ('bytes = "n * itemsize"', 'byte = "n * itemsize"', "[objective] byte: unknown field"),
]


@pytest.mark.parametrize("old, new, message", FILE_ERRORS, ids=[m.split(":")[0][:30] for *_, m in FILE_ERRORS])
def test_a_broken_file_is_one_error_line_naming_the_field(broken, old, new, message):
    code, output = check(broken(old, new), "--dtype", "float32")
    assert code == 2, output
    assert len(errors(output)) == 1, output
    assert message in errors(output)[0], output
    assert "failed:" not in output  # a file error, not per-config failures


# (replaced, by, in the .cu?, what each failed config's line says, failed builds of the 4 float32 ones)
BUILD_ERRORS = [
    ("BLOCK_SIZE = [256, 1024]", "BLOCK_SIZE = [100, 256]", False,
     'compile: reduce.cu:41:2: error: #error "BLOCK_SIZE must be a multiple of 32', 2),
    ("sum += in[j];", "sum += in[j]", True, 'compile: reduce.cu(103): error: expected a ";"', 4),
    ('block = ["BLOCK_SIZE", 1, 1]', 'block = ["BLOCK_SIZE", 2, 1]', False,
     "launch: [launch] at n=1: block (1024, 2, 1) has 2048 threads > 1024", 2),
    ('grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]', 'grid = ["n // 4096", 1, 1]', False,
     "and grid (0, 1, 1) need every size >= 1", 4),
    ('grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]',
     'grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]\nshared = "BLOCK_SIZE * 256"', False,
     "launch: [launch] at n=1: 262273 B shared memory per block > 232448 B (sm_90's limit with the opt-in)", 2),
    ('grid = [1, 1, 1]', 'grid = [0, 1, 1]', False, "launch: [check.launch] at n=1", 1),
    ('#if ITEMS_PER_THREAD < 1', '#if ITEMS_PER_THREAD == 8\n#define reduce_sum reduce_sum_8\n#endif\n'
                                 '#if ITEMS_PER_THREAD < 1', True, "entry point: function: 'reduce_sum'", 2),
]


@pytest.mark.parametrize("old, new, cu, line, count", BUILD_ERRORS, ids=[b[3].split(":")[0] + str(i)
                                                                          for i, b in enumerate(BUILD_ERRORS)])
def test_failed_builds_are_listed_and_one_error_line_counts_them(broken, old, new, cu, line, count):
    code, output = check(broken(old, new, cu, small=True), "--dtype", "float32")
    assert code == 2, output
    failed = [l for l in output.splitlines() if l.strip().startswith("failed:")]
    assert len(failed) == count and all(line in l for l in failed), output
    assert re.match(r"  failed: BLOCK_SIZE=\d+,ITEMS_PER_THREAD=\d+,MAX_BLOCKS=\d+ float32: ", failed[0]), output
    assert errors(output) == [f"error: {count} of 4 builds of reduce_sum failed"], output


def test_more_than_20_failures_are_counted_not_listed(broken):
    # every config stopped by the source's own #error: nvcc fails in its preprocessor, a fifth
    # of a second a build (a syntax error, BUILD_ERRORS' compile1, runs nvcc's front end too)
    code, output = check(broken("#if ITEMS_PER_THREAD < 1", "#if ITEMS_PER_THREAD > 0", cu=True),
                         "--dtype", "float32,float64", "--sample", 12)
    assert code == 2, output
    assert len([l for l in output.splitlines() if l.startswith("  failed:")]) == 20, output
    assert "  ... and 4 more" in output and errors(output) == ["error: 24 of 24 builds of reduce_sum failed"]


@pytest.mark.parametrize("args, message", [
    (["{path}", "--dtype", "int8"], "does not support dtype 'int8'"),
    (["{path}", "--dtype", "float33"], "unknown dtype 'float33'"),
    (["{path}", "--arch", "90"], "--arch '90' is not allowed"),
    (["{path}", "--jobs", "0"], "--jobs 0 is not allowed"),
    (["{path}", "--sample", "2"], "--sample 2 is not allowed; give an integer >= 3"),
    (["{path}", "--space", "/nonexistent/space.toml"], "cannot read search space"),
    (["/nonexistent/kernel.toml"], "cannot read kernel file /nonexistent/kernel.toml"),
    (["no_such_kernel"], "unknown kernel 'no_such_kernel'"),
])
def test_bad_options_are_one_error_line(args, message):
    code, output = check(*[a.format(path=EXAMPLES[0]) for a in args])
    assert code == 2, output
    assert len(errors(output)) == 1 and message in errors(output)[0], output


def test_no_nvcc_is_one_error_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    code, output = check(EXAMPLES[0])
    assert code == 2 and errors(output) == [
        "error: nvcc is not on PATH; autotune check builds with the CUDA toolkit's nvcc"], output


@pytest.mark.usefixtures("shared_cubins")  # builds only: the run's one cubin cache
def test_a_space_file_replaces_the_kernels_own(tmp_path):
    space = tmp_path / "space.toml"
    space.write_text('[params]\nBLOCK_SIZE = [256]\nITEMS_PER_THREAD = [2, 4]\nMAX_BLOCKS = [1024]\n')
    code, output = check(EXAMPLES[0], "--space", space, "--dtype", "float64")
    assert code == 0 and "compiled 2 of 2 builds (2 configs x 1 dtype: float64)" in output, output


def test_shared_memory_is_checked_against_the_archs_limit_with_the_opt_in(broken):
    """100 KiB of dynamic shared memory (BLOCK_SIZE=1024) fits sm_90's 227 KiB, not sm_86's 99 KiB."""
    path = broken('grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]',
                  'grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]\nshared = "BLOCK_SIZE * 100"',
                  small=True)
    code, output = check(path, "--dtype", "float32", "--arch", "sm_90")
    assert code == 0, output
    code, output = check(path, "--dtype", "float32", "--arch", "sm_86")
    failed = [l for l in output.splitlines() if l.strip().startswith("failed:")]
    assert code == 2 and len(failed) == 2, output
    assert all("102529 B shared memory per block > 101376 B (sm_86's limit with the opt-in)" in l for l in failed)


def test_the_geometry_is_checked_at_each_dims_largest_and_says_up_to_where_it_launches(broken):
    """A grid.y of cdiv(n, BLOCK_SIZE) passes at n = 1 and 1000, not at n's largest; [problem] max fixes it."""
    path = broken('grid = ["min(cdiv(n, BLOCK_SIZE * ITEMS_PER_THREAD), MAX_BLOCKS)", 1, 1]',
                  'grid = [1, "cdiv(n, BLOCK_SIZE)", 1]', small=True)
    code, output = check(path, "--dtype", "float32")
    failed = [l for l in output.splitlines() if l.strip().startswith("failed:")]
    assert code == 2 and len(failed) == 4, output
    assert ("launch: [launch] at n=2147483647: grid (1, 8388608, 1) is over the limits (y=8388608 > 65535); n "
            "launches up to 16776960: give [problem] max = { n = 16776960 }") in output, output
    text = path.read_text().replace('dims = ["n"]', 'dims = ["n"]\nmax = { n = 16776960 }')
    path.write_text(text)
    code, output = check(path, "--dtype", "float32")
    assert code == 0, output


def test_check_calls_a_python_reference_once_and_names_what_is_wrong(broken, tmp_path):
    cases = [("def ref(out, n):\n    return out\n", "ref0.py:ref raised TypeError: ref() got an unexpected keyword "
                                                      "argument 'in'"),
             ("def ref(out, n, **a):\n    return out[:1].repeat(2)\n", "returned out of shape (2,); the kernel's is (1,)"),
             ("def ref(out, n, **a):\n    return out.astype('complex64')\n",
              "returned out of dtype complex64; the kernel's is float32"),
             ("def ref(out, n, **a):\n    return a['in'].sum(keepdims=True)\n", None)]
    for i, (source, message) in enumerate(cases):
        ref = tmp_path / f"ref{i}.py"  # a module is loaded once per process
        ref.write_text(source)
        path = broken('reference_kernel = "reduce_reference"', f'reference = "{ref}:ref"', small=True)
        text = path.read_text()
        path.write_text(text[:text.index("[check.launch]")] + text[text.index("[objective]"):])
        code, output = check(path, "--dtype", "float32")
        if message is None:
            assert code == 0, output
            continue
        assert code == 2 and len(errors(output)) == 1, output
        assert "[check] reference" in errors(output)[0] and message in errors(output)[0], output
        assert "n=16, float32" in errors(output)[0], output


def test_check_builds_the_nvcc_flags_a_kernel_file_declares(broken):
    """Every combination of the flags' values is a config of its own, built: on a space of one
    config of the macros (the flags' 8 combinations; with 4 macro configs, 32 builds)."""
    path = broken("[space]\n", "[flags]\nmaxrregcount = [0, 32]\nptxas_opt = [1, 3]\nfast_math = [0, 1]\n\n[space]\n",
                  small=True)
    path.write_text(path.read_text().replace(SMALL_SPACE, ONE_CONFIG))
    code, output = check(path, "--dtype", "float32")
    assert code == 0, output
    assert "tunables BLOCK_SIZE, ITEMS_PER_THREAD, MAX_BLOCKS, NVCC_FAST_MATH, NVCC_MAXRREGCOUNT, NVCC_PTXAS_O" in output
    assert re.search(r"compiled 8 of 8 builds \(8 configs x 1 dtype", output), output
    assert "ok: every config" in output
