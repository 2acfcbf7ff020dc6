"""Kernel files (autotune/kernel/loader.py): a valid file gives the kernel it describes, the
same as :func:`kernel_from_dict` of its document; every invalid field is one
:class:`KernelFileError` line naming the file and the field."""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import pytest

from autotune.errors import KernelFileError
from autotune.kernel.config import Config
from autotune.kernel.dtypes import DTYPES, get_dtype
from autotune.kernel.loader import kernel_from_dict, load_kernel
from autotune.kernel.model import Array, Scalar

from kernel_files import catalog_doc, toml, write_kernel

DELETE = object()

DOC = {
    "name": "scale",
    "summary": "y = 2 x",
    "source": "k.cu",
    "function": "scale",
    "problem": {"dims": ["n"], "dtypes": ["float32", "float64"]},
    "args": [{"name": "y", "array": ["n"], "role": "out"},
             {"name": "x", "array": ["n"], "role": "in"},
             {"name": "n", "scalar": "int32", "value": "n"}],
    "launch": {"block": ["BLOCK", 1, 1], "grid": ["cdiv(n, BLOCK * ITEMS)", 1, 1]},
    "macros": {"ITEMS": 2},
    "space": {"params": {"BLOCK": [64, 128, 256]}, "constraints": ["BLOCK >= 64"], "default": {"BLOCK": 128}},
    "check": {"reference": "ref.py:double", "compare": "exact"},
    "objective": {"bytes": "2 * n * itemsize", "bound": "memcpy"},
}


def changed(*edits) -> dict:
    """:data:`DOC` with ``(path..., value)`` edits; a value of :data:`DELETE` removes the key."""
    doc = copy.deepcopy(DOC)
    for *path, v in edits:
        node = doc
        for p in path[:-1]:
            node = node[p]
        if v is DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = v
    return doc


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void scale(float *y, const float *x, int n) {}\n')
    (tmp_path / "ref.py").write_text("def double(*, x, **_):\n    return 2 * x\n")
    return tmp_path.resolve()


def write(folder, doc, name="k.toml"):
    path = folder / name
    path.write_text(toml(doc))
    return path


def test_a_valid_file_gives_the_kernel_it_describes(folder):
    k = load_kernel(write(folder, DOC))
    assert (k.name, k.summary, k.function, k.dims, k.dtypes) == ("scale", "y = 2 x", "scale", ("n",),
                                                                 ("float32", "float64"))
    assert k.path == folder / "k.toml" and k.source == folder / "k.cu" and k.space_file is None
    assert [a.name for a in k.args] == ["y", "x", "n"] and k.signature == "PPi"
    y, x, n = k.args
    assert isinstance(y, Array) and (y.dtype, y.role, y.init) == ("T", "out", "uniform")
    assert isinstance(x, Array) and (x.dtype, x.role, x.init) == ("T", "in", "uniform")
    assert isinstance(n, Scalar) and n.ctype == "int32" and n.value({"n": 5}) == 5
    assert k.outputs == (y,) and k.tunables == ("BLOCK",) and dict(k.fixed) == {"ITEMS": 2}
    assert k.default_config() == Config.of("scale", {"BLOCK": 128})
    assert [c["BLOCK"] for c in k.space().configs()] == [64, 128, 256]
    f32 = get_dtype("float32")
    assert k.geometry(Config.of("scale", {"BLOCK": 64}), {"n": 1000}, f32) == ((8, 1, 1), (64, 1, 1), 0)
    assert k.figure("bytes", {"n": 1000}, get_dtype("float64")) == 16000 and k.figure("flops", {"n": 1}, f32) is None
    assert k.check_spec.reference == "ref.py:double" and k.check_spec.exact
    assert k.objective.bound == "memcpy" and k.objective.bound_kernel is None
    assert k.macros(k.default_config(), f32) == {"BLOCK": "128", "ITEMS": "2", "ELEM_T": "float"}


def test_defaults_of_optional_fields(folder):
    doc = changed(("problem", "dtypes", DELETE), ("macros", DELETE), ("summary", DELETE), ("objective", DELETE),
                  ("launch", "grid", ["cdiv(n, BLOCK)"]), ("launch", "block", ["BLOCK"]))
    k = load_kernel(write(folder, doc))
    assert k.dtypes == tuple(DTYPES) and k.dtype_macro == "ELEM_T" and k.summary == "" and dict(k.fixed) == {}
    assert k.geometry(k.default_config(), {"n": 129}, get_dtype("int8")) == ((2, 1, 1), (128, 1, 1), 0)
    assert k.objective.bytes is None and k.objective.bound is None


def test_kernel_from_dict_builds_the_same_kernel_as_the_file(folder):
    path = write(folder, DOC)
    from_file, from_dict = load_kernel(path), kernel_from_dict(copy.deepcopy(DOC), path)
    assert from_file is not from_dict  # compared by identity: two instances ...
    for f in dataclasses.fields(from_file):  # ... of one description
        assert getattr(from_file, f.name) == getattr(from_dict, f.name), f.name
    assert (from_file.spec_hash, from_file.source_hash) == (from_dict.spec_hash, from_dict.source_hash)
    rootless = kernel_from_dict(copy.deepcopy(DOC), source_root=folder)
    assert rootless.path is None and rootless.source == folder / "k.cu" and rootless.spec_hash == from_file.spec_hash


def test_a_space_file_relative_to_the_kernel_file(folder):
    (folder / "spaces").mkdir()
    (folder / "spaces" / "s.toml").write_text('kernel = "scale"\n[params]\nBLOCK = [128, 512]\n')
    k = load_kernel(write(folder, changed(("space", "params", DELETE), ("space", "constraints", DELETE),
                                          ("space", "file", "spaces/s.toml"))))
    assert k.space_file == folder / "spaces" / "s.toml" and [c["BLOCK"] for c in k.space().configs()] == [128, 512]


# (edits, the field the message names, what it says)
BAD = [
    ((("name", DELETE),), "name", "missing; give the kernel's name"),
    ((("name", "9lives"),), "name", "'9lives' is not allowed"),
    ((("name", 7),), "name", "7 is not allowed"),
    ((("source", DELETE),), "source", "missing"),
    ((("source", "nope.cu"),), "source", "nope.cu: no such file"),
    ((("function", DELETE),), "function", "missing"),
    ((("function", "scale()"),), "function", "is not allowed"),
    ((("summary", ["a"]),), "summary", "is not allowed"),
    ((("problem", DELETE),), "[problem]", "missing"),
    ((("problem", "dims", DELETE),), "[problem] dims", "missing"),
    ((("problem", "dims", []),), "[problem] dims", "[] is not allowed; give one or more distinct names"),
    ((("problem", "dims", ["n", "n"]),), "[problem] dims", "distinct"),
    ((("problem", "dims", ["n-1"]),), "[problem] dims", "'n-1' is not allowed"),
    ((("problem", "dtypes", ["float32", "complex64"]),), "[problem] dtypes", "['complex64'] is not allowed; allowed: int8"),
    ((("problem", "dtypes", []),), "[problem] dtypes", "is not allowed"),
    ((("problem", "dtypes", "float32"),), "[problem] dtypes", "give a list of dtype names"),
    ((("problem", "dtype_macro", "ELEM T"),), "[problem] dtype_macro", "is not allowed"),
    ((("problem", "dim", ["n"]),), "[problem] dim", "unknown field; allowed: dims, dtypes, dtype_macro"),
    ((("args", DELETE),), "[[args]]", "missing; give the kernel's arguments"),
    ((("args", []),), "[[args]]", "no array has role out or inout"),
    ((("args", 0, "role", "in"),), "[[args]]", "no array has role out or inout"),
    ((("args", 0, "dtype", "complex64"),), "[[args]] 1 dtype", "'complex64' is not allowed; allowed: T, int8"),
    ((("args", 0, "dtype", 4),), "[[args]] 1 dtype", "4 is not allowed"),
    ((("args", 0, "role", "output"),), "[[args]] 1 role", "'output' is not allowed; allowed: in, out, inout, scratch"),
    ((("args", 1, "init", "random"),), "[[args]] 2 init", "'random' is not allowed; allowed: uniform, bits"),
    ((("args", 2, "scalar", "int16"),), "[[args]] 3 scalar", "'int16' is not allowed; allowed: int32"),
    ((("args", 2, "value", DELETE),), "[[args]] 3 value", "missing"),
    ((("args", 2, "value", "n.real"),), "[[args]] 3 value", "not allowed"),
    ((("args", 2, "value", "BLOCK"),), "[[args]] 3 value", "names BLOCK; allowed names: ITEMS, itemsize, n"),
    ((("args", 0, "array", ["__import__('os')"]),), "[[args]] 1 array", "calls '__import__'"),
    ((("args", 0, "array", ["n * BLOCK"]),), "[[args]] 1 array", "names BLOCK"),  # shapes: no tunables
    ((("args", 0, "array", ["n / 2"]),), "[[args]] 1 array", "not allowed"),
    ((("args", 0, "array", []),), "[[args]] 1 array", "is empty"),
    ((("args", 0, "array", "n"),), "[[args]] 1 array", "'n' is not allowed"),
    ((("args", 1, "name", "y"),), "[[args]] 2 name", "'y' is used twice"),
    ((("args", 1, "name", DELETE),), "[[args]] 2 name", "None is not allowed"),
    ((("args", 0, "scalar", "int32"),), "[[args]] 1", "y: give either array = [shape] or scalar = type"),
    ((("args", 2, "scalar", DELETE),), "[[args]] 3", "n: give either"),
    ((("args", 0, "rol", "out"),), "[[args]] 1 rol", "unknown field; allowed: name, array, dtype, role, init"),
    ((("args", 2, "role", "in"),), "[[args]] 3 role", "unknown field; allowed: name, scalar, value"),
    ((("launch", DELETE),), "[launch]", "missing; give a table with block and grid"),
    ((("launch", "grid", DELETE),), "[launch] grid", "missing"),
    ((("launch", "block", ["BLOCK", 1, 1, 1]),), "[launch] block", "give a list of 1 to 3 integer expressions"),
    ((("launch", "block", "BLOCK"),), "[launch] block", "is not allowed"),
    ((("launch", "block", ["WARPS * 32", 1, 1]),), "[launch] block[0]", "names WARPS; allowed names: BLOCK, ITEMS"),
    ((("launch", "grid", [1, "n if BLOCK else 1"]),), "[launch] grid[1]", "not allowed"),
    ((("launch", "grid", ["cdiv(n, BLOCK) * 1.5"]),), "[launch] grid[0]", "only integer constants"),
    ((("launch", "grid", [True]),), "[launch] grid[0]", "is not an integer expression"),
    ((("launch", "shared", "lambda: 0"),), "[launch] shared", "not allowed"),
    ((("launch", "threads", [1]),), "[launch] threads", "unknown field; allowed: block, grid, shared"),
    ((("macros", "ITEMS", 2.5),), "[macros] ITEMS", "2.5 is not allowed; give an integer"),
    ((("macros", "n", 3),), "[macros]", "n is also a dim"),
    ((("macros", "itemsize", 3),), "[macros]", "itemsize is also a dim, itemsize"),
    ((("macros", "ELEM_T", 3),), "[macros]", "ELEM_T is also a dim, itemsize or the dtype macro"),
    ((("macros", "2X", 3),), "[macros]", "'2X' is not allowed"),
    ((("space", DELETE),), "[space]", "missing"),
    ((("space", "default", DELETE),), "[space] default", "missing; give the default config"),
    ((("space", "default", {"BLOCK": 96}),), "[space] default",
     "BLOCK=96 is not in the space: BLOCK=96 is not one of [64, 128, 256]"),
    ((("space", "constraints", ["BLOCK <= 64"]),), "[space] default", "BLOCK=128 is not in the space: BLOCK <= 64"),
    ((("space", "default", {"BLOCK": -1}),), "[space] default BLOCK", "-1 is not allowed"),
    ((("space", "default", {"BLOCK": 128, "ITEMS": 2}),), "[space] default", "ITEMS is also a fixed macro"),
    ((("space", "default", {"BLOCK": 128, "n": 2}),), "[space] default", "n is also a fixed macro, a dim"),
    ((("space", "default", {"BLOCK": 128, "WARPS": 2}),), "[space]", "gives no values for WARPS"),
    ((("space", "params", DELETE),), "[space]", 'give either file = "space.toml" or params'),
    ((("space", "file", "s.toml"),), "[space]", "give either file"),
    ((("space", "params", DELETE), ("space", "file", "missing.toml")), "[space]", "cannot read search space"),
    ((("space", "params", {"BLOCK": [64, 128, 256], "X": [1]}),), "[space]", "unknown macro 'X'"),
    ((("space", "params", {"BLOCK": []}),), "[space]", "BLOCK in .* has an empty range"),
    ((("space", "constraints", ["BLOCK.x > 1"]),), "[space]", "not allowed"),
    ((("space", "constraints", ["WARPS > 1"]),), "[space]", "names WARPS"),
    ((("space", "constraints", ["BLOCK > 4096"]),), "[space]", "no config .* satisfies its constraints"),
    ((("space", "defaults", {"BLOCK": 128}),), "[space] defaults", "unknown field; allowed: file, params"),
    ((("check", DELETE),), "[check]", 'give either reference = "module:function" or reference_kernel'),
    ((("check", "reference", DELETE),), "[check]", "give either reference"),
    ((("check", "reference_kernel", "double_ref"),), "[check]", "give either reference"),
    ((("check", "reference", "double"),), "[check] reference", "'double' is not allowed; give \"module:function\""),
    ((("check", "reference", 3),), "[check] reference", "3 is not allowed"),
    ((("check", "compare", "fuzzy"),), "[check] compare", "'fuzzy' is not allowed; give exact, tolerance or"),
    ((("check", "compare", 1),), "[check] compare", "is not allowed"),
    ((("check", "atol", -1.0),), "[check] atol", "-1.0 is not allowed; give a finite number >= 0"),
    ((("check", "rtol", "small"),), "[check] rtol", "'small' is not allowed; give a number >= 0"),
    ((("check", "reference", DELETE), ("check", "reference_kernel", "double_ref")), "[check.launch]",
     "missing; a reference kernel needs its own block and grid"),
    ((("check", "reference", DELETE), ("check", "reference_kernel", "ref kernel"),
      ("check", "launch", {"block": [1], "grid": [1]})), "[check] reference_kernel", "is not allowed"),
    ((("check", "reference", DELETE), ("check", "reference_kernel", "double_ref"),
      ("check", "launch", {"block": ["WARPS"], "grid": [1]})), "[check.launch] block[0]", "names WARPS"),
    ((("check", "tolerance", 1e-3),), "[check] tolerance", "unknown field; allowed: reference"),
    ((("objective", "bound", "roofline"),), "[objective] bound", "'roofline' is not allowed; allowed: memcpy, cublas"),
    ((("objective", "bytes", DELETE),), "[objective] bound", "memcpy needs bytes"),
    ((("objective", "bound", "cublas"),), "[objective] bound", "cublas needs flops and dims m, n, k"),
    ((("objective", "bytes", "n * BLOCK"),), "[objective] bytes", "names BLOCK"),  # figures: no tunables
    ((("objective", "flops", "n ** 0.5"),), "[objective] flops", "only integer constants"),
    ((("objective", "bound_kernel", "copy row"),), "[objective] bound_kernel", "is not allowed"),
    ((("objective", "gflops", "n"),), "[objective] gflops", "unknown field; allowed: bytes, flops"),
    ((("launches", {"block": [1]}),), "launches", "unknown field; allowed: args, check"),
    ((("flags", {"unroll": [0, 1]}),), "[flags] unroll", "is not a flag autotune knows; allowed: maxrregcount, "
                                                         "ptxas_opt, fast_math"),
    ((("flags", {"maxrregcount": [0, 8]}),), "[flags] maxrregcount", "a register cap is 0 (none) or 16..255"),
    ((("flags", {"ptxas_opt": [1, 4]}),), "[flags] ptxas_opt", "[1, 4] is not allowed; give a list of integers 0..3"),
    ((("flags", {"fast_math": [1]}),), "[flags] fast_math", "[1] lacks 0 (nvcc's own behaviour, the default)"),
    ((("flags", {"fast_math": True}),), "[flags] fast_math", "is not allowed"),
    ((("space", "params", {"BLOCK": [64, 128, 256], "NVCC_FAST_MATH": [0, 1, 7]}), ("flags", {"fast_math": [0, 1]})),
     "[flags] fast_math", "its tunable NVCC_FAST_MATH is also in [space] params; give its values in [flags] only"),
]


@pytest.mark.parametrize("edits, field, message", BAD, ids=[f"{i}-{b[1]}" for i, b in enumerate(BAD)])
def test_every_invalid_field_is_one_line_naming_the_file_and_the_field(folder, edits, field, message):
    path = write(folder, changed(*edits))
    with pytest.raises(KernelFileError) as info:
        load_kernel(path)
    text = str(info.value)
    head = f"kernel file {path}: {field}: "
    assert "\n" not in text and text.startswith(head), text
    said = text[len(head):]
    assert re.search(message, said) if ".*" in message else message in said, text
    with pytest.raises(KernelFileError, match=re.escape(f"kernel file <dict>: {field}: ")):
        kernel_from_dict(changed(*edits), source_root=folder)


def test_unreadable_and_invalid_toml_files(folder):
    with pytest.raises(KernelFileError, match=f"cannot read kernel file {folder / 'nope.toml'}"):
        load_kernel(folder / "nope.toml")
    (folder / "bad.toml").write_text('name = "scale"\nsource = \n')
    with pytest.raises(KernelFileError, match="kernel file .*bad.toml is not valid TOML") as info:
        load_kernel(folder / "bad.toml")
    assert "\n" not in str(info.value)


def test_a_reference_kernel_and_its_launch(folder):
    k = load_kernel(write(folder, changed(("check", "reference", DELETE), ("check", "reference_kernel", "double_ref"),
                                          ("check", "compare", "tolerance"), ("check", "atol", 1e-6),
                                          ("check", "launch", {"block": [256], "grid": ["cdiv(n, 256)"]}))))
    c = k.check_spec
    assert (c.reference, c.reference_kernel, c.compare, c.atol, c.rtol, c.exact) == (None, "double_ref", "tolerance",
                                                                                     1e-6, 0.0, False)
    assert k.geometry(k.default_config(), {"n": 1000}, get_dtype("float32"), c.reference_launch) == \
        ((4, 1, 1), (256, 1, 1), 0)


@pytest.mark.parametrize("path", [None, 42, ""])
def test_load_kernel_refuses_what_is_not_a_path(path):
    from autotune.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=f"load_kernel: path {path!r} is not allowed"):
        load_kernel(path)


def test_a_source_outside_the_kernel_files_folder_is_read_and_shown_resolved(tmp_path):
    """Cause 14 of issue 25, decided: a source may live anywhere (shared sources, an absolute
    path); it is resolved, so the path every message and ``check`` shows is where it is."""
    shared = tmp_path / "shared" / "k.cu"
    shared.parent.mkdir()
    doc = catalog_doc("smem_pad")
    shared.write_text("extern \"C\" __global__ void transpose_smem() {}\n")
    doc.update(name="mine", source="../shared/k.cu")
    kernel = load_kernel(write_kernel(tmp_path / "kernels" / "k.toml", doc))
    assert kernel.source == shared.resolve() and ".." not in str(kernel.source)
    doc["source"] = "/etc/hostname"  # a text file, but no kernel: nvcc is the judge of its contents
    assert load_kernel(write_kernel(tmp_path / "kernels" / "k.toml", doc)).source == Path("/etc/hostname").resolve()



def test_nvcc_flags_are_tunables_of_the_config_the_key_and_the_build(folder):
    from autotune.measure.compile import COMPILE_FLAGS, nvcc_options

    plain = load_kernel(write(folder, DOC, "plain.toml"))
    doc = changed(("name", "scale_flags"), ("flags", {"maxrregcount": [0, 32, 64], "ptxas_opt": [1, 3],
                                                      "fast_math": [0, 1]}))
    k = load_kernel(write(folder, doc))
    assert k.tunables == ("BLOCK", "NVCC_FAST_MATH", "NVCC_MAXRREGCOUNT", "NVCC_PTXAS_O")
    assert dict(k.params)["NVCC_MAXRREGCOUNT"] == (0, 32, 64)
    assert k.default_config().as_dict() == {"BLOCK": 128, "NVCC_FAST_MATH": 0, "NVCC_MAXRREGCOUNT": 0,
                                            "NVCC_PTXAS_O": 3}
    assert len(k.space().configs()) == 3 * 3 * 2 * 2
    f32 = get_dtype("float32")
    default = nvcc_options(k, k.default_config(), f32)
    assert default == nvcc_options(plain, plain.default_config(), f32)  # neutral flags: the same build
    tuned = Config.of("scale_flags", {"BLOCK": 128, "NVCC_FAST_MATH": 1, "NVCC_MAXRREGCOUNT": 32, "NVCC_PTXAS_O": 1})
    options = nvcc_options(k, tuned, f32)
    assert options[-4:] == ["--use_fast_math", "--maxrregcount=32", "-Xptxas", "-O1"]
    assert not any(o.startswith("-DNVCC_") for o in options) and set(COMPILE_FLAGS) <= set(options)
    assert k.spec_hash != plain.spec_hash  # the flags are part of what builds the binary
    assert plain.spec_hash == load_kernel(write(folder, DOC, "again.toml")).spec_hash


def test_a_flag_default_may_be_given_in_the_space_default(folder):
    doc = changed(("flags", {"fast_math": [1]}), ("space", "default", {"BLOCK": 128, "NVCC_FAST_MATH": 1}))
    assert load_kernel(write(folder, doc)).default_config()["NVCC_FAST_MATH"] == 1
