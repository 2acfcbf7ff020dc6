"""The C/C++ header of tuned configs (autotune.report.header): rendered, compiled, run.

A small C++ program includes the header, reads queries ``device|major|minor|dtype|d1,d2``
from stdin and prints ``rung macro...`` for each; the tests check which config it selects
(exact, nearest, tie-breaks, another device of the same compute capability, default) and
compare it with a Python statement of the same ladder on random queries.
"""

from __future__ import annotations

import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from autotune.errors import InvalidInputError
from autotune.report.header import HeaderRecord, render_header

H100, H200, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB"
DIMS = ("rows", "cols")
TUNABLES = ("VEC", "BLOCK_SIZE")  # sorted in the header: BLOCK_SIZE, VEC
DEFAULT = {"BLOCK_SIZE": 256, "VEC": 4}
EXACT, NEAREST, SAME_ARCH, DEFAULT_RUNG = 0, 1, 2, 3


def rec(device, rows, cols, block, vec, dtype="float32", cc="9.0", time_ms=None):
    return HeaderRecord(device, cc, (("rows", rows), ("cols", cols)), dtype, {"BLOCK_SIZE": block, "VEC": vec},
                        time_ms)


RECORDS = [
    rec(H100, 4096, 4096, 512, 4),
    rec(H100, 65536, 64, 128, 2),
    rec(H100, 1024, 1024, 64, 1),
    rec(H100, 1024, 1024, 1024, 1, time_ms=2.0),  # same key, slower: dropped
    rec(H100, 1024, 1024, 32, 1, time_ms=1.0),    # same key, fastest: kept
    rec(H100, 16384, 16384, 128, 4, dtype="float64"),
    rec(H200, 4096, 4096, 1024, 2),
    rec(H200, 8192, 8192, 256, 2),
    rec(A100, 4096, 4096, 128, 1, cc="8.0"),
]

PROGRAM = r"""
#include "tuned.h"
#include <iostream>
#include <sstream>
#include <string>

int main()
{
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string device, major, minor, dtype, d0, d1;
        std::getline(in, device, '|'); std::getline(in, major, '|'); std::getline(in, minor, '|');
        std::getline(in, dtype, '|'); std::getline(in, d0, ','); std::getline(in, d1);
        long long dims[AUTOTUNE_SOFTMAX_ROWS_NUM_DIMS] = {std::stoll(d0), std::stoll(d1)};
        int rung = -1;
        const int *m = autotune_softmax_rows_select(device.c_str(), std::stoi(major), std::stoi(minor),
                                                    dtype.c_str(), dims, &rung);
        char options[64];
        autotune_softmax_rows_options(m, options, sizeof options);
        std::cout << rung << ' ' << m[AUTOTUNE_SOFTMAX_ROWS_MACRO_BLOCK_SIZE] << ' '
                  << m[AUTOTUNE_SOFTMAX_ROWS_MACRO_VEC] << ' ' << options << '\n';
    }
}
"""


def build(tmp: Path, records, compiler=("g++", "-std=c++17")) -> Path:
    """Render the header of ``records`` into ``tmp``, compile PROGRAM against it; the binary."""
    (tmp / "tuned.h").write_text(render_header("softmax_rows", DIMS, TUNABLES, DEFAULT, records,
                                               provenance=["test records */ with a comment end"]))
    (tmp / "main.cpp").write_text(PROGRAM)
    exe = tmp / "select"
    subprocess.run([*compiler, "-Wall", "-Wextra", "-Werror", "-I", str(tmp), str(tmp / "main.cpp"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


def select(exe: Path, queries) -> list[tuple[int, int, int]]:
    """Run ``exe`` on ``(device, cc, dtype, rows, cols)`` queries: ``(rung, BLOCK_SIZE, VEC)`` each."""
    text = "".join(f"{d}|{cc.split('.')[0]}|{cc.split('.')[1]}|{dt}|{r},{c}\n" for d, cc, dt, r, c in queries)
    out = subprocess.run([str(exe)], input=text, check=True, capture_output=True, text=True).stdout
    rows = [line.split() for line in out.splitlines()]
    for parts in rows:  # the NVRTC options string says the same values
        assert parts[3:] == [f"-DBLOCK_SIZE={parts[1]}", f"-DVEC={parts[2]}"]
    return [tuple(int(p) for p in parts[:3]) for parts in rows]


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    return build(tmp_path_factory.mktemp("header"), RECORDS)


@needs_gxx
def test_exact_and_nearest_shape_on_this_device(exe):
    assert select(exe, [(H100, "9.0", "float32", 4096, 4096),
                        (H100, "9.0", "float32", 4000, 4000),
                        (H100, "9.0", "float32", 60000, 70),
                        (H100, "9.0", "float32", 1024, 1024),
                        (H100, "9.0", "float32", 1, 1),
                        (H100, "9.0", "float32", 0, -5),       # dims below 1 count as 1
                        (H100, "9.0", "float64", 100, 100)]) == [
        (EXACT, 512, 4), (NEAREST, 512, 4), (NEAREST, 128, 2), (EXACT, 32, 1),  # the faster duplicate
        (NEAREST, 32, 1), (NEAREST, 32, 1), (NEAREST, 128, 4)]


@needs_gxx
def test_other_device_of_the_same_compute_capability(exe):
    # An H800 has no entries: same compute capability 9.0 -> H100's and H200's, nearest shape;
    # at 4096^2 both have that exact shape: the device name that sorts first (H100) wins.
    assert select(exe, [("NVIDIA H800", "9.0", "float32", 4096, 4096),
                        ("NVIDIA H800", "9.0", "float32", 8192, 8192),
                        ("NVIDIA H800", "9.0", "float64", 8192, 8192),
                        # same name, another compute capability: not this device model
                        (H200, "9.0", "float32", 8000, 8000),
                        (A100, "9.0", "float32", 4096, 4096)]) == [
        (SAME_ARCH, 512, 4), (SAME_ARCH, 256, 2), (SAME_ARCH, 128, 4), (NEAREST, 256, 2), (SAME_ARCH, 512, 4)]


@needs_gxx
def test_default_when_nothing_fits(exe):
    assert select(exe, [("NVIDIA GeForce RTX 4090", "8.9", "float32", 4096, 4096),
                        (H100, "9.0", "int32", 4096, 4096),       # no entry of that dtype
                        (A100, "8.0", "float64", 4096, 4096),
                        (A100, "8.0", "float32", 1, 1)]) == [
        (DEFAULT_RUNG, 256, 4), (DEFAULT_RUNG, 256, 4), (DEFAULT_RUNG, 256, 4), (NEAREST, 128, 1)]


@needs_gxx
def test_ties_go_to_the_larger_volume_then_the_larger_dims(tmp_path):
    records = [rec(H100, 2048, 2048, 32, 1), rec(H100, 8192, 8192, 64, 1),
               rec(H200, 2048, 8192, 128, 1), rec(H200, 8192, 2048, 256, 1)]
    exe = build(tmp_path, records)
    assert select(exe, [(H100, "9.0", "float32", 4096, 4096),    # 2048^2 and 8192^2 equally far: larger
                        (H200, "9.0", "float32", 4096, 4096),    # equal volume: more rows
                        ("NVIDIA H800", "9.0", "float32", 4096, 4096)]) == [  # device name first
        (NEAREST, 64, 1), (NEAREST, 256, 1), (SAME_ARCH, 64, 1)]


def expected(records, device, cc, dtype, rows, cols):
    """The ladder in Python (as autotune.lookup ranks: distance, device name, volume, dims)."""
    latest = {}
    for r in records:  # one per key, the fastest (None slowest), first given on ties
        key = (r.device, r.compute_capability, r.dtype, r.dims)
        old = latest.get(key)
        if old is None or (r.time_ms is not None and (old.time_ms is None or r.time_ms < old.time_ms)):
            latest[key] = r
    want = (max(rows, 1), max(cols, 1))

    def rank(r):
        shape = tuple(v for _, v in r.dims)
        d = round(math.hypot(*(math.log(a / b) for a, b in zip(shape, want))), 9)
        return d, r.device.encode(), -math.prod(shape), tuple(-v for v in shape)

    mine = [r for r in latest.values() if (r.device, r.compute_capability, r.dtype) == (device, cc, dtype)]
    if mine:
        best = min(mine, key=rank)
        rung = EXACT if tuple(v for _, v in best.dims) == want else NEAREST
    else:
        others = [r for r in latest.values() if r.compute_capability == cc and r.dtype == dtype]
        if not others:
            return DEFAULT_RUNG, DEFAULT["BLOCK_SIZE"], DEFAULT["VEC"]
        best, rung = min(others, key=rank), SAME_ARCH
    return rung, best.macros["BLOCK_SIZE"], best.macros["VEC"]


@needs_gxx
def test_random_queries_agree_with_the_ladder_in_python(tmp_path):
    rnd = random.Random(12)
    sizes = [2 ** k for k in range(4, 15)] + [3000, 5000, 777]
    devices = [(H100, "9.0"), (H200, "9.0"), ("NVIDIA H800", "9.0"), (A100, "8.0")]
    records = [rec(*rnd.choice(devices[:2] + devices[3:])[:1], rnd.choice(sizes), rnd.choice(sizes),
                   rnd.randrange(1, 1000), rnd.randrange(1, 9), rnd.choice(["float32", "float64"]))
               for _ in range(40)]
    records = [HeaderRecord(r.device, "8.0" if r.device == A100 else "9.0", r.dims, r.dtype, r.macros,
                            rnd.choice([None, rnd.random()])) for r in records]
    queries = [(*rnd.choice(devices), rnd.choice(["float32", "float64", "int8"]), rnd.choice(sizes),
                rnd.choice(sizes)) for _ in range(400)]
    got = select(build(tmp_path, records), queries)
    assert got == [expected(records, *q) for q in queries]
    assert {g[0] for g in got} == {EXACT, NEAREST, SAME_ARCH, DEFAULT_RUNG}  # every rung was exercised


@pytest.mark.parametrize("compiler", [("gcc", "-std=c99", "-pedantic", "-x", "c"),
                                      ("g++", "-std=c++11", "-pedantic", "-x", "c++"),
                                      ("nvcc", "-x", "cu")])
def test_header_compiles_as_c_cpp_and_cuda(tmp_path, compiler):
    if shutil.which(compiler[0]) is None:
        pytest.skip(f"no {compiler[0]}")
    for i, records in enumerate((RECORDS, [])):  # an empty header compiles too, and gives the default
        (tmp_path / "tuned.h").write_text(render_header("softmax_rows", DIMS, TUNABLES, DEFAULT, records))
        (tmp_path / "main.c").write_text(
            '#include "tuned.h"\nint main(void) {\n'
            '    long long dims[2] = {4096, 4096};\n    int rung;\n'
            '    const int *m = autotune_softmax_rows_select("NVIDIA H100 80GB HBM3", 9, 0, "float32", dims, &rung);\n'
            '    printf("%d %d\\n", rung, m[AUTOTUNE_SOFTMAX_ROWS_MACRO_BLOCK_SIZE]);\n    return 0;\n}\n')
        exe = tmp_path / f"main{i}"
        flags = ["-Xcompiler", "-Wall,-Wextra,-Werror"] if compiler[0] == "nvcc" else ["-Wall", "-Wextra", "-Werror"]
        subprocess.run([*compiler, *flags, str(tmp_path / "main.c"), "-o", str(exe), "-lm"], check=True,
                       capture_output=True, text=True, cwd=tmp_path)
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
        assert out == ("0 512\n" if records else "3 256\n")


def test_strings_are_escaped_and_identifiers_prefixed():
    text = render_header("softmax_rows", DIMS, TUNABLES, DEFAULT,
                         [rec('GPU "x"\\ ?é', 8, 8, 64, 1)], provenance=["made */ here"])
    assert r'"GPU \"x\"\\ \077\303\251"' in text
    assert "made * / here" in text and text.count("*/") == text.count("/*")
    assert "#define AUTOTUNE_SOFTMAX_ROWS_MACRO_BLOCK_SIZE 0" in text and "\n#define BLOCK_SIZE" not in text


@pytest.mark.parametrize("change, message", [
    (dict(kernel="soft-max"), "kernel name 'soft-max'"),
    (dict(dims=("rows", "rows")), "distinct dims"),
    (dict(tunables=("VEC", "BLOCK SIZE")), "macro 'BLOCK SIZE'"),
    (dict(default={"BLOCK_SIZE": 256}), "the default config sets BLOCK_SIZE"),
    (dict(default={"BLOCK_SIZE": 256, "VEC": 1.5}), "VEC=1.5"),
    (dict(records=[rec(H100, 8, 8, 64, 1, cc="sm_90")]), "compute capability 'sm_90'"),
    (dict(records=[rec(H100, 8, 8, 64, 1, dtype="float128")]), "dtype 'float128'"),
    (dict(records=[rec(H100, 0, 8, 64, 1)]), "integers >= 1"),
    (dict(records=[HeaderRecord(H100, "9.0", (("n", 8),), "float32", DEFAULT)]), "dims are rows, cols"),
    (dict(records=[HeaderRecord(H100, "9.0", (("rows", 8), ("cols", 8)), "float32", {"VEC": 1})]),
     "tunable macros are BLOCK_SIZE, VEC"),
])
def test_bad_input_is_one_error(change, message):
    args = dict(kernel="softmax_rows", dims=DIMS, tunables=TUNABLES, default=DEFAULT, records=RECORDS) | change
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace("?", r"\?")):
        render_header(args["kernel"], args["dims"], args["tunables"], args["default"], args["records"])
