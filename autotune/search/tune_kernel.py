"""``autotune.tune_kernel``: tune a ``.cu`` from Python in one call, on the user's own arrays.

The call Kernel Tuner users know (``tune_kernel(name, source, problem_size, arguments,
tune_params, answer=...)``), in this project's terms: the kernel's entry point and source, its
arguments (NumPy arrays and scalars, in the kernel's order, by name), the launch rule (block and
grid as expressions of the tunables and dims), the search space, and optionally the answer (the
expected outputs). From these it builds the kernel file's document, the same one a TOML kernel
file gives :func:`autotune.kernel.loader.kernel_from_dict`, writes it out as a kernel file into
``folder`` (the arrays as ``.npy`` files it names in ``init``, the answer as ``answer.npz`` with
the ``answer.py`` reference that returns it), loads it back through the one reader
(:func:`autotune.kernel.loader.load_kernel`), and tunes it with :func:`autotune.tune` (measured in
a child process, every trial stored). The file stays: ``autotune search --kernel FOLDER/NAME.toml``
searches it again from the command line, on the same inputs.

Without an answer, the outputs must be named (``outputs=``): the check is then the kernel's own
default config (its outputs are the reference every other config must reproduce).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from autotune.errors import InvalidInputError
from autotune.kernel.dtypes import ARG_DTYPES

if TYPE_CHECKING:
    from autotune.kernel.model import Kernel
    from autotune.search.outcome import SearchResult

__all__ = ["KernelTuning", "tune_kernel", "kernel_document", "to_toml"]

_SCALARS = {"int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64", "float32": "float32",
            "float64": "float64"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
ANSWER_PY = '''"""The answer given to autotune.tune_kernel: the expected outputs, saved beside this file."""

from pathlib import Path

import numpy as np


def reference(**arguments):
    """Every checked output's expected values, by name (answer.npz)."""
    with np.load(Path(__file__).with_name("answer.npz")) as saved:
        return {name: saved[name] for name in saved.files}
'''


class KernelTuning(NamedTuple):
    """What `tune_kernel` returns: the search's ``result``
    (`SearchResult`), the ``kernel`` it built, and the
    kernel ``file`` it wrote (``autotune search --kernel FILE`` searches it again)."""

    result: SearchResult
    kernel: Kernel
    file: Path


def _named(arguments: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        named = dict(arguments)
    else:
        named = {f"arg{i}": a for i, a in enumerate(arguments)}
    for name in named:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidInputError(f"argument name {name!r} is not allowed; give C identifiers")
    return named


def _expr(value: Any, dims: Mapping[str, int], what: str) -> Any:
    """A launch or scalar value as the kernel file gives it: an expression's text, or an int;
    an int equal to a dim becomes that dim's name (so the file fits other sizes too)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        name = next((d for d, v in dims.items() if v == int(value)), None)
        return name if name is not None else int(value)
    raise InvalidInputError(f"{what} {value!r} is not allowed; give an int or an expression of the dims and tunables")


def kernel_document(name: str, source: str | Path, arguments: Mapping[str, Any], *, dims: Mapping[str, int],
                    block: Sequence[Any], grid: Sequence[Any], shared: Any = 0, space: Mapping[str, Sequence[int]],
                    constraints: Sequence[str] = (), default: Mapping[str, int] | None = None,
                    outputs: Sequence[str] = (), answer: bool = False, compare: str = "exact", atol: float = 0.0,
                    rtol: float = 0.0, function: str | None = None) -> dict[str, Any]:
    """The kernel file's document (the dict :func:`autotune.kernel.loader.kernel_from_dict`
    reads) of a kernel given as Python values: ``arguments`` by name in the kernel's order
    (arrays: ``"NAME.npy"`` inputs, ``outputs`` poisoned and checked; scalars: their C type from
    the NumPy type, their value), ``answer``: whether ``answer.py`` is the reference (else the
    kernel's own default config).

    Raises:
        InvalidInputError: an argument of a type the kernel file has no word for, no output, an
            output that is no array argument, or an empty space.
    """
    arrays = [n for n, a in arguments.items() if isinstance(a, np.ndarray)]
    missing = sorted(set(outputs) - set(arrays))
    if missing:
        raise InvalidInputError(f"output {missing[0]!r} is not an array argument; arrays: {', '.join(arrays)}")
    if not outputs:
        raise InvalidInputError("name the outputs: give answer= (the expected outputs) or outputs=(names)")
    if not space:
        raise InvalidInputError("space is empty; give the tunables' values, e.g. {'BLOCK_SIZE': [128, 256]}")
    args = []
    for arg, value in arguments.items():
        if isinstance(value, np.ndarray):
            if value.dtype.name not in ARG_DTYPES:
                raise InvalidInputError(f"{arg} is {value.dtype}; allowed element types: {', '.join(ARG_DTYPES)}")
            entry = {"name": arg, "array": [_expr(s, dims, f"{arg} shape") for s in value.shape],
                     "dtype": value.dtype.name, "role": "out" if arg in outputs else "in"}
            if arg not in outputs:
                entry["init"] = f"{arg}.npy"
            args.append(entry)
        elif isinstance(value, (np.generic, int, float)) and not isinstance(value, bool):
            ctype = np.asarray(value).dtype.name if isinstance(value, np.generic) else \
                "int32" if isinstance(value, int) else "float64"
            if ctype not in _SCALARS:
                raise InvalidInputError(f"{arg} is a {ctype} scalar; allowed: {', '.join(_SCALARS)}")
            number = value.item() if isinstance(value, np.generic) else value
            if isinstance(number, float):
                raise InvalidInputError(f"{arg} = {number!r}: a float scalar argument is not supported by a kernel "
                                        "file (its values are expressions of the dims); pass it as a macro of the "
                                        "space with one value, or as an array")
            args.append({"name": arg, "scalar": _SCALARS[ctype], "value": _expr(number, dims, arg)})
        else:
            raise InvalidInputError(f"{arg} is a {type(value).__name__}; give NumPy arrays and scalars")
    first = next(arguments[n] for n in outputs)
    defaults = dict(default or {k: list(v)[0] for k, v in space.items()})
    check: dict[str, Any] = {"compare": compare}
    if compare == "tolerance":
        check.update(atol=float(atol), rtol=float(rtol))
    if answer:
        check["reference"] = "answer.py:reference"
    else:
        check["reference_kernel"] = function or name
        check["launch"] = {"block": [_expr(b, dims, "block") for b in block],
                           "grid": [_expr(g, dims, "grid") for g in grid], "shared": _expr(shared, dims, "shared")}
    total = sum(int(a.nbytes) for a in arguments.values() if isinstance(a, np.ndarray))
    return {
        "name": name, "summary": "tuned from Python (autotune.tune_kernel)", "source": str(source),
        "function": function or name,
        "problem": {"dims": list(dims), "dtypes": [first.dtype.name]},
        "args": args,
        "launch": {"block": [_expr(b, dims, "block") for b in block], "grid": [_expr(g, dims, "grid") for g in grid],
                   "shared": _expr(shared, dims, "shared")},
        "space": {"params": {k: [int(v) for v in vs] for k, vs in space.items()}, "constraints": list(constraints),
                  "default": {k: int(v) for k, v in defaults.items()}},
        "check": check,
        "objective": {"bytes": str(total)},
    }


def to_toml(doc: Mapping[str, Any]) -> str:
    """``doc`` (a kernel file's document: tables, arrays of tables, strings, numbers, lists) as TOML."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, np.integer)):
            return str(int(v))
        if isinstance(v, float):
            return repr(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, Mapping):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        raise TypeError(f"no TOML for {v!r}")

    lines, tables = [], []
    for k, v in doc.items():
        if isinstance(v, Mapping):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            tables.append((k, v))
        else:
            lines.append(f"{k} = {value(v)}")
    for k, v in tables:
        if isinstance(v, list):
            for item in v:
                lines += ["", f"[[{k}]]", *(f"{kk} = {value(x)}" for kk, x in item.items())]
            continue
        lines += ["", f"[{k}]"]
        subtables = []
        for kk, x in v.items():
            if isinstance(x, Mapping) and kk == "launch":  # [check.launch]
                subtables.append((kk, x))
            else:
                lines.append(f"{kk} = {value(x)}")
        for kk, x in subtables:
            lines += ["", f"[{k}.{kk}]", *(f"{k3} = {value(x3)}" for k3, x3 in x.items())]
    return "\n".join(lines) + "\n"


def tune_kernel(name: str, source: str | Path, arguments: Mapping[str, Any] | Sequence[Any], *,
                dims: Mapping[str, int] | None = None, block: Sequence[Any], grid: Sequence[Any], shared: Any = 0,
                space: Mapping[str, Sequence[int]], constraints: Sequence[str] = (),
                default: Mapping[str, int] | None = None,
                answer: Mapping[str, np.ndarray] | Sequence[np.ndarray | None] | None = None,
                outputs: Sequence[str] = (), compare: str = "exact", atol: float = 0.0, rtol: float = 0.0,
                function: str | None = None, folder: str | Path | None = None, device: int = 0,
                **options: Any) -> KernelTuning:
    """Tune the CUDA kernel ``name`` of ``source`` on ``arguments``, with no kernel file to write first.

    Args:
        name: the kernel's name (and its ``extern "C"`` entry point unless ``function`` says otherwise).
        source: the ``.cu`` file's path, or the CUDA source text itself (written to ``NAME.cu``).
        arguments: NumPy arrays (C-contiguous) and NumPy integer scalars in the kernel's parameter
            order: a dict by name, or a list (named ``arg0``, ``arg1``...). Arrays that are not
            outputs are the inputs of every measured launch (saved as ``NAME.npy``).
        dims: the problem's dims, ``{"n": 1 << 20}`` (default: ``{"n": size of the first array}``);
            an array extent or scalar equal to a dim is written as that dim's name.
        block: threads per block, three values: ints or expressions of the tunables and dims
            (``["BLOCK_SIZE", 1, 1]``).
        grid: blocks per grid, likewise (``["cdiv(n, BLOCK_SIZE)", 1, 1]``).
        shared: dynamic shared memory per block, bytes (an int or an expression).
        space: each tunable macro's values (``{"BLOCK_SIZE": [128, 256, 512]}``).
        constraints: expressions that must hold (``"BLOCK_SIZE * ITEMS <= 4096"``).
        default: the default config (default: each tunable's first value).
        answer: the expected outputs, by name or aligned with ``arguments`` (``None`` for the
            others).
        compare: ``exact`` (bit for bit) or ``tolerance`` (with ``atol`` and ``rtol``).
        atol: the absolute tolerance of ``compare="tolerance"``.
        rtol: the relative tolerance of ``compare="tolerance"``.
        function: the entry point, where it is not ``name``.
        outputs: the output arrays' names, where there is no answer (the kernel's default config
            is then the reference).
        folder: where the kernel file is written (default: ``<user cache>/autotune/kernels/NAME``).
        device: the CUDA ordinal.
        **options: ``autotune.tune``'s keywords: the search's options (`SearchOptions`'
            fields: ``trials=50``, ``strategy="random"``...) and ``db=``, the results database.

    Returns:
        The search's result, the kernel and the kernel file written, as a
            `KernelTuning`.

    Raises:
        InvalidInputError: a bad argument, launch, space or answer (named); and as ``autotune.tune``.
        KernelFileError: the description does not make a valid kernel (the field named).
        GPUUnavailableError: as ``autotune.tune`` (no GPU, backend or nvcc).
        StoreError: the database cannot be used.
        AutotuneError: as ``autotune.tune``.
    """
    from autotune.base.files import write_atomically
    from autotune.kernel.loader import kernel_from_dict, load_kernel
    from autotune.measure.cubin_cache import cache_dir
    from autotune.search.tune import tune

    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInputError(f"name {name!r} is not allowed; give the kernel's C identifier")
    named = _named(arguments)
    arrays = {n: a for n, a in named.items() if isinstance(a, np.ndarray)}
    if not arrays:
        raise InvalidInputError("arguments hold no array; give the kernel's arrays (NumPy) and scalars")
    if dims is None:
        dims = {"n": math.prod(next(iter(arrays.values())).shape)}
    if answer is not None and not isinstance(answer, Mapping):
        if len(answer) != len(named):
            raise InvalidInputError(f"answer has {len(answer)} entries; arguments have {len(named)} (None for inputs)")
        answer = {n: a for n, a in zip(named, answer) if a is not None}
    expected = dict(answer or {})
    for out, want in expected.items():
        if out not in arrays or np.shape(want) != arrays[out].shape:
            raise InvalidInputError(f"answer {out!r} must be an array argument's expected values, of its shape")
    outs = tuple(outputs) or tuple(expected)
    where = Path(folder) if folder is not None else cache_dir().parent / "kernels" / name
    where.mkdir(parents=True, exist_ok=True)
    text = None if isinstance(source, Path) or not ("__global__" in str(source) or "\n" in str(source)) else str(source)
    if text is not None:
        write_atomically(where / f"{name}.cu", text, "source")
        source = f"{name}.cu"
    else:
        source = Path(source).resolve()
        if not source.is_file():
            raise InvalidInputError(f"source {source}: no such file; give the .cu file's path or the source text")
    doc = kernel_document(name, source, named, dims=dims, block=block, grid=grid, shared=shared, space=space,
                          constraints=constraints, default=default, outputs=outs, answer=bool(expected),
                          compare=compare, atol=atol, rtol=rtol, function=function)
    for n, a in arrays.items():
        if n not in outs:
            np.save(where / f"{n}.npy", np.ascontiguousarray(a))
    if expected:
        np.savez(where / "answer.npz", **{n: np.asarray(v, dtype=arrays[n].dtype) for n, v in expected.items()})
        write_atomically(where / "answer.py", ANSWER_PY, "reference")
    file = write_atomically(where / f"{name}.toml", "# written by autotune.tune_kernel\n" + to_toml(doc), "kernel file")
    kernel = load_kernel(file)  # the file reads back into the model the document gives
    built = kernel_from_dict(doc, file.resolve())
    if built.spec_hash != kernel.spec_hash:  # pragma: no cover  (the writer and the reader disagree)
        raise AssertionError(f"{file} does not read back as written")
    result = tune(kernel, dims, arrays[outs[0]].dtype.name, device=device, **options)
    return KernelTuning(result, kernel, file)
