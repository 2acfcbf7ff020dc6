"""``autotune export --header``: a C/C++ header holding a kernel's tuned configs.

A C or C++ program includes the header and asks it for the macros to build or pick a kernel
variant with, without Python or the database (Kernel Tuner's ``create_device_targets`` does
this per device; this header also keys by dtype and shape)::

    #include "tuned.h"
    long long dims[] = {1048576};                      /* the kernel's dims, declared order */
    int rung;
    const int *m = autotune_reduce_sum_select("NVIDIA H100 80GB HBM3", 9, 0, "float32", dims, &rung);
    int block = m[AUTOTUNE_REDUCE_SUM_MACRO_BLOCK_SIZE];

The selection climbs the ladder of :func:`autotune.lookup` over what the header holds, for
the asked dtype only:

1. this device model (same name and compute capability): the exact shape
   (``AUTOTUNE_RUNG_EXACT``), else its dispatch (``AUTOTUNE_RUNG_DISPATCH``): the same configs,
   regret table and rule as :mod:`autotune.dispatch` (the regrets written with ``repr``, so
   C reads back the very doubles Python used, and the rule runs the same operations in the same
   order); where the header holds no dispatch for the model, the nearest shape by log-distance
   ``sqrt(sum over dims of ln(d / d')^2)`` (``AUTOTUNE_RUNG_NEAREST_SHAPE``, the same number);
2. another device of the same compute capability, nearest shape
   (``AUTOTUNE_RUNG_SAME_ARCH``);
3. the kernel's default config (``AUTOTUNE_RUNG_DEFAULT``).

Ties (equal distances, within 1e-9) go, as in ``lookup``, to the device name that sorts first,
then the larger volume (product of the dims), then the larger dims in declared order: the
entries are written in that order and the first nearest one wins. Dims below 1 count as 1.

The header is plain C99 and C++ (``gcc``, ``g++``, ``nvcc -x cu``). It also has
``autotune_<kernel>_options`` (``-DNAME=value ...`` for NVRTC) and, when compiled by nvcc or
with ``AUTOTUNE_CUDA_RUNTIME`` defined, ``autotune_<kernel>_select_device`` (the device's
name and compute capability from the CUDA runtime). Macros are indices into the returned
array (``AUTOTUNE_<KERNEL>_MACRO_<NAME>``), never bare names, so the header can sit in the
same translation unit as a kernel compiled with ``-DBLOCK_SIZE=...``.

:func:`render_header` is a pure function of plain records (:class:`HeaderRecord`) and the
kernel's name, dims, tunables and default config: the caller reads the stored best configs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from autotune.errors import InvalidInputError
from autotune.kernel.dtypes import DTYPES
from autotune.report.header_template import TEMPLATE
from autotune.dispatch import Dispatch

__all__ = ["HeaderDispatch", "HeaderRecord", "render_header"]

_KINDS = {"knn": 0, "tree": 1, "nearest": 2}  # the C header's dispatch kinds

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CC = re.compile(r"(\d+)\.(\d+)\Z")


@dataclass(frozen=True)
class HeaderRecord:
    """One stored best config, as the header needs it.

    Attributes:
        device: the device's name, e.g. ``NVIDIA H100 80GB HBM3`` (what ``cudaDeviceProp.name`` says).
        compute_capability: ``"9.0"``.
        dims: ``(name, value)`` pairs of the kernel's dims (any order; values >= 1).
        dtype: element type name, e.g. ``float32``.
        macros: the tuned value of every tunable macro.
        time_ms: the best time, ms; only used to choose between two records of one key (the
            faster is kept; ``None`` counts as slowest).
    """

    device: str
    compute_capability: str
    dims: tuple[tuple[str, int], ...]
    dtype: str
    macros: Mapping[str, int]
    time_ms: float | None = None


@dataclass(frozen=True)
class HeaderDispatch:
    """One device model's dispatch for one dtype, as the header holds it.

    Attributes:
        device: the device's name (as in :class:`HeaderRecord`).
        compute_capability: ``"9.0"``.
        dtype: element type name.
        dispatch: the :class:`~autotune.dispatch.Dispatch` (its dims in the kernel's order).
    """

    device: str
    compute_capability: str
    dtype: str
    dispatch: Dispatch


def render_header(kernel: str, dims: Sequence[str], tunables: Sequence[str], default: Mapping[str, int],
                  records: Iterable[HeaderRecord], *, provenance: Sequence[str] = (),
                  dispatches: Iterable[HeaderDispatch] = ()) -> str:
    """The text of a C/C++ header with ``records`` and the selection functions.

    Args:
        kernel: the kernel's name (a C identifier); it prefixes every name in the header.
        dims: the kernel's dim names, declared order (``("rows", "cols")``).
        tunables: the tunable macro names; the header lists them sorted.
        default: the kernel's default config (every tunable).
        records: the tuned configs; two of one (device, compute capability, dtype, dims) key:
            the faster is kept.
        provenance: lines for the header's opening comment (tool version, database, date).
        dispatches: the device models' dispatches (at most one per device, compute capability
            and dtype).

    Raises:
        InvalidInputError: a name that is not a C identifier, a record or dispatch whose dims or
            macros are not the kernel's, a bad value, compute capability or dtype, two dispatches
            of one device model and dtype.
    """
    for what, names in (("kernel name", [kernel]), ("dim", dims), ("macro", tunables)):
        for n in names:
            if not isinstance(n, str) or not _NAME.match(n):
                raise InvalidInputError(f"{what} {n!r} is not allowed in a header; give a C identifier")
    dims, tunables = tuple(dims), tuple(sorted(tunables))
    if not dims or len(set(dims)) != len(dims) or not tunables or len(set(tunables)) != len(tunables):
        raise InvalidInputError("a header needs one or more distinct dims and tunable macros")
    default_values = _macros(default, tunables, "the default config")
    entries = _entries(records, dims, tunables)
    tables = _dispatch_tables(dispatches, dims, tunables)
    p, P = f"autotune_{kernel}", f"AUTOTUNE_{kernel.upper()}"
    return TEMPLATE.format(
        kernel=kernel, p=p, P=P, ndims=len(dims), nmacros=len(tunables), nentries=len(entries), **tables,
        provenance="".join(f" * {_comment(line)}\n" for line in provenance),
        dims_list=", ".join(dims), dims_example=", ".join(f"{d}_value" for d in dims),
        macro_indices="".join(f"#define {P}_MACRO_{m} {i}\n" for i, m in enumerate(tunables)),
        dim_indices="".join(f"#define {P}_DIM_{d} {i}\n" for i, d in enumerate(dims)),
        macro_names=", ".join(_c_string(m) for m in tunables), dim_names=", ".join(_c_string(d) for d in dims),
        default=", ".join(map(str, default_values)), default_comment=_pairs(tunables, default_values),
        entries="".join(_entry(e, dims, tunables) for e in entries) or
                f"    {{0, 0, 0, 0, {{0}}, {{0}}}} /* none: a placeholder, {P}_NUM_ENTRIES is 0 */\n")


def _macros(values: Mapping[str, int], tunables: tuple[str, ...], what: str) -> tuple[int, ...]:
    if set(values) != set(tunables):
        raise InvalidInputError(f"{what} sets {', '.join(sorted(values)) or 'no macro'}; "
                                f"the kernel's tunable macros are {', '.join(tunables)}")
    for name in tunables:
        v = values[name]
        if not isinstance(v, int) or isinstance(v, bool) or not -2**31 <= v < 2**31:
            raise InvalidInputError(f"{what}: {name}={v!r} is not allowed; give a 32-bit integer")
    return tuple(values[name] for name in tunables)


@dataclass(frozen=True)
class _Entry:
    device: str
    cc: tuple[int, int]
    dtype: str
    shape: tuple[int, ...]
    macros: tuple[int, ...]
    time_ms: float | None


def _entries(records: Iterable[HeaderRecord], dims: tuple[str, ...], tunables: tuple[str, ...]) -> list[_Entry]:
    """Validated entries, one per key (the fastest), in the header's tie-breaking order."""
    kept: dict[tuple, _Entry] = {}
    for r in records:
        cc = _CC.match(r.compute_capability or "")
        if not cc:
            raise InvalidInputError(f"compute capability {r.compute_capability!r} of {r.device!r} is not "
                                    "allowed; give major.minor, e.g. 9.0")
        if r.dtype not in DTYPES:
            raise InvalidInputError(f"dtype {r.dtype!r} is not allowed; allowed: {', '.join(DTYPES)}")
        given = dict(r.dims)
        if sorted(given) != sorted(dims) or len(given) != len(r.dims):
            raise InvalidInputError(f"a record of {r.device!r} has dims {', '.join(n for n, _ in r.dims)}; "
                                    f"the kernel's dims are {', '.join(dims)}")
        shape = tuple(given[d] for d in dims)
        if any(not isinstance(v, int) or isinstance(v, bool) or not 1 <= v < 2**63 for v in shape):
            raise InvalidInputError(f"dims {r.dims!r} of {r.device!r} are not allowed; give integers >= 1")
        e = _Entry(r.device, (int(cc.group(1)), int(cc.group(2))), r.dtype, shape,
                   _macros(r.macros, tunables, f"a record of {r.device!r}"), r.time_ms)
        key = (e.device, e.cc, e.dtype, e.shape)
        old = kept.get(key)
        if old is None or (e.time_ms is not None and (old.time_ms is None or e.time_ms < old.time_ms)):
            kept[key] = e
    return sorted(kept.values(), key=lambda e: (e.device.encode(), e.cc, e.dtype, -math.prod(e.shape),
                                                tuple(-v for v in e.shape)))


def _dispatch_tables(dispatches: Iterable[HeaderDispatch], dims: tuple[str, ...],
                     tunables: tuple[str, ...]) -> dict[str, object]:
    """The template's dispatch fields: one row per dispatch, and the shapes, configs and regrets
    of all of them, each dispatch's at its offsets."""
    rows, shapes, configs, regrets, nodes, seen = [], [], [], [], [], set()
    most_shapes = most_configs = 1
    for h in dispatches:
        d, cc = h.dispatch, _CC.match(h.compute_capability or "")
        if not cc:
            raise InvalidInputError(f"compute capability {h.compute_capability!r} of {h.device!r} is not allowed; "
                                    "give major.minor, e.g. 9.0")
        if h.dtype not in DTYPES:
            raise InvalidInputError(f"dtype {h.dtype!r} is not allowed; allowed: {', '.join(DTYPES)}")
        if tuple(d.dims) != dims:
            raise InvalidInputError(f"a dispatch of {h.device!r} has dims {', '.join(d.dims)}; the kernel's dims "
                                    f"are {', '.join(dims)}")
        key = (h.device, h.compute_capability, h.dtype)
        if key in seen:
            raise InvalidInputError(f"two dispatches of {h.device!r} ({h.compute_capability}, {h.dtype}); give one")
        seen.add(key)
        values = [_macros(c.as_dict(), tunables, f"a dispatch config of {h.device!r}") for c in d.configs]
        rows.append(f"    {{{_c_string(h.device)}, {cc.group(1)}, {cc.group(2)}, {_c_string(h.dtype)}, {len(shapes)}, "
                    f"{len(d.shapes)}, {len(configs)}, {len(d.configs)}, {len(regrets)}, {d.k}, {d.eps!r}, "
                    f"{d.margin_log!r}, {_KINDS[d.kind]}, {len(nodes)}}},\n")
        for n in d.nodes:
            coef = ", ".join(str(c) for c in (n.coef or (0,) * len(dims)))
            nodes.append(f"    {{{{{coef}}}, {n.threshold!r}, {n.left}, {n.right}, {n.config}}},"
                         f"{' /* uncertain: minimax */' if n.uncertain else ''}\n")
        for shape in d.shapes:
            where = ",".join(f"{n}={v}" for n, v in zip(dims, shape))
            shapes.append(f"    {{{', '.join(f'{v}LL' for v in shape)}}}, /* {where} */\n")
        configs += [f"    {{{', '.join(map(str, v))}}}, /* {_pairs(tunables, v)} */\n" for v in values]
        regrets += [f"{r!r}" for row in d.regrets for r in row]
        most_shapes, most_configs = max(most_shapes, len(d.shapes)), max(most_configs, len(d.configs))
    none = "/* none: a placeholder */"
    return {"ndispatches": len(rows), "max_shapes": most_shapes, "max_configs": most_configs,
            "dispatches": "".join(rows) or f"    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0, 0}} {none}\n",
            "dispatch_nodes": "".join(nodes) or f"    {{{{0}}, 0.0, -1, -1, 0}} {none}\n",
            "dispatch_shapes": "".join(shapes) or f"    {{0}} {none}\n",
            "dispatch_configs": "".join(configs) or f"    {{0}} {none}\n",
            "dispatch_regrets": "".join(f"    {', '.join(regrets[i:i + 6])},\n" for i in range(0, len(regrets), 6))
                                or f"    0.0 {none}\n"}


def _entry(e: _Entry, dims: tuple[str, ...], tunables: tuple[str, ...]) -> str:
    shape = ", ".join(f"{v}LL" for v in e.shape)
    where = ",".join(f"{d}={v}" for d, v in zip(dims, e.shape))
    return (f"    {{{_c_string(e.device)}, {e.cc[0]}, {e.cc[1]}, {_c_string(e.dtype)}, {{{shape}}}, "
            f"{{{', '.join(map(str, e.macros))}}}}}, /* {where}: {_pairs(tunables, e.macros)} */\n")


def _pairs(names: Sequence[str], values: Sequence[int]) -> str:
    return " ".join(f"{n}={v}" for n, v in zip(names, values))


def _c_string(text: str) -> str:
    """A C string literal of ``text`` (UTF-8; quotes, backslashes and non-printables escaped)."""
    out = []
    for b in text.encode():
        c = chr(b)
        out.append(f"\\{c}" if c in '"\\' else c if 32 <= b < 127 and c != "?" else f"\\{b:03o}")
    return '"' + "".join(out) + '"'  # '?' escaped too: no trigraphs


def _comment(line: str) -> str:
    return line.replace("*/", "* /").replace("\n", " ")
