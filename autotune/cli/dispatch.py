"""``autotune dispatch`` and ``autotune tune-shapes``: the dispatch a kernel's untuned shapes get,
its held-out regret, and tuning shapes on purpose so that it covers a range."""

from __future__ import annotations

import math
from typing import Annotated, Optional

import typer

from autotune.errors import InvalidInputError, NotTunedError, nothing_tuned
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.arguments import check_db_arg
from autotune.kernel.dims import format_shape
from autotune.kernel.dtypes import get_dtype
from autotune.store import stale
from .root import app
from ._common import (Db, Device, DType, StrategyOptionArg, err, handle_errors, open_db, out, parse_int,
                      parse_strategy_options)
from .output import Column, Format, FormatOption, WideOption, emit, print_pairs
from .check import _PathOrName
from ._common import complete_kernel
from .results import _device_filter

KernelArg = Annotated[_PathOrName, typer.Argument(parser=_PathOrName, metavar="KERNEL", autocompletion=complete_kernel,
                                                  help="A catalog kernel or the path of a kernel file (.toml).")]


def _pct(value: float | None) -> str:
    if value is None:
        return "-"
    return "failed" if math.isinf(value) else f"{100 * value:.1f} %"


def _shape(shape) -> str:
    return "x".join(map(str, shape))


def _summary(s) -> str:
    if s is None:
        return "- (one tuned shape: nothing to hold out)"
    return (f"median {_pct(s.median)}, worst {_pct(s.worst)} over {s.measured} of {s.shapes} shapes measured; "
            f"slower than the default by > 1 % at {s.below_default}")


@app.command("dispatch", short_help="Show a kernel's dispatch for untuned shapes and its held-out regret.")
@handle_errors
def dispatch(
    kernel: KernelArg,
    dtype: Annotated[Optional[str], typer.Option("--dtype", metavar="DTYPE",
                                                 help="Element type (default: every dtype tuned).")] = None,
    device: Annotated[Optional[str], typer.Option("--device", "-d", metavar="ORDINAL|NAME",
                                                  help="Device ordinal or part of its name (default: all).")] = None,
    db: Db = None,
    top: Annotated[int, typer.Option("--top", parser=parse_int, metavar="N",
                                     help="Shapes listed where more tuning would pay most.")] = 3,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Show the dispatch a kernel's untuned shapes get (lookup's second rung): per device and
    dtype, its configs (the default first) and rule, learned from every stored trial; its
    held-out regret (each tuned shape held out in turn: its time with the config the dispatch
    learned from the other shapes picks, against its own best, beside today's nearest_shape
    rung and the default); and the shapes where more tuning would pay most.

    \b
    Examples:
      autotune dispatch matmul_warp
      autotune dispatch smem_pad --dtype float32 --device H100
      autotune dispatch examples/softmax/softmax.toml --format json
    """
    from autotune.report.dispatch import dispatch_reports

    k = resolve_kernel(kernel)
    dt = get_dtype(dtype).name if dtype is not None else None
    if top < 0:
        raise InvalidInputError(f"--top {top} is not allowed; give 0 or more")
    name = _device_filter(device)
    reports = dispatch_reports(open_db(db, "read"), k, dtype=dt, device_name=name, nvcc_version=stale.current_nvcc(),
                               top=top)
    if not reports:
        where = f" on {name}" if name else ""
        raise NotTunedError(nothing_tuned(f"{k.name}{' ' + dt if dt else ''}{where}", f"autotune tune-shapes {kernel} "
                                          f"--dims-range {','.join(f'{d}=LOW:HIGH' for d in k.dims)}"))
    if fmt is not Format.table:
        emit(out, [row for r in reports for row in _held_out_records(r)], _held_out_columns(), fmt,
             document={"kernel": k.name, "dispatches": [_document(r) for r in reports]})
        return
    for r in reports:
        _print_report(r, k, wide)


def _held_out_records(r) -> list[dict]:
    d = r.dispatch
    return [{"device": r.device, "dtype": r.dtype, "shape": _shape(h.shape), "dispatch_config": h.dispatch.key,
             "pick": d.configs.index(h.dispatch) if h.dispatch in d.configs else None,
             "dispatch_regret": h.dispatch_regret, "nearest_shape_regret": h.nearest_regret,
             "default_regret": h.default_regret, "best_ms": h.best_ms} for h in r.held_out]


def _held_out_columns() -> list[Column]:
    get = lambda key: lambda row: row[key]  # noqa: E731
    return [Column("held-out shape", "shape", get("shape")),
            Column("dispatch", "dispatch_regret", get("dispatch_regret"), text=_pct, right=True),
            Column("nearest_shape", "nearest_shape_regret", get("nearest_shape_regret"), text=_pct, right=True),
            Column("default", "default_regret", get("default_regret"), text=_pct, right=True),
            Column("pick", "pick", get("pick"), right=True),
            Column("best ms", "best_ms", get("best_ms"), text=lambda v: f"{v:.4g}", right=True, wide=True),
            Column("device", "device", get("device"), table=False), Column("dtype", "dtype", get("dtype"), table=False),
            Column("config", "dispatch_config", get("dispatch_config"), table=False)]


def _summary_dict(s) -> dict | None:
    if s is None:
        return None
    return {"shapes": s.shapes, "measured": s.measured, "median": s.median, "worst": s.worst,
            "below_default": s.below_default}


def _document(r) -> dict:
    d = r.dispatch
    return {"device": r.device, "compute_capability": r.compute_capability, "dtype": r.dtype,
            "configs": [c.as_dict() for c in d.configs], "kind": d.kind, "k": d.k, "eps": d.eps, "margin": d.margin,
            "rule": d.rule(),
            "cv_regret": {str(k): v for k, v in d.cv_regret.items()},
            "tuned_shapes": [{"shape": list(s), "pick": d.choose(s)[0]} for s in d.shapes],
            "held_out": {"dispatch": _summary_dict(r.dispatch_summary), "nearest_shape": _summary_dict(r.nearest_summary),
                         "default": _summary_dict(r.default_summary)},
            "worst_tuned_shapes": [list(h.shape) for h in r.worst],
            "suggested_shapes": [list(s) for s in r.suggested]}


def _print_report(r, k, wide: bool) -> None:
    d = r.dispatch
    out.print(f"dispatch of {k.name} {r.dtype} on {r.device}: {len(d.shapes)} tuned shape"
              f"{'s' if len(d.shapes) != 1 else ''}, {len(d.configs)} config{'s' if len(d.configs) != 1 else ''}",
              style="bold", markup=False, soft_wrap=True)
    cv = ", ".join(f"{n} {_pct(math.expm1(v))}" for n, v in d.cv_regret.items())
    print_pairs(out, [("rule", d.rule() + (f" (kept by leave-one-shape-out: {cv})" if cv else ""))])
    picks = {}
    for s in d.shapes:
        picks.setdefault(d.choose(s)[0], []).append(_shape(s))
    configs = [{"index": i, "config": c.key + (" (the default)" if i == 0 else ""),
                "measured": sum(1 for row in d.times if row[i] is not None and not math.isinf(row[i])),
                "picked": ", ".join(picks.get(i, [])) or "-"} for i, c in enumerate(d.configs)]
    get = lambda key: lambda row: row[key]  # noqa: E731
    emit(out, configs, [Column("#", "index", get("index"), right=True),
                        Column("measured at", "measured", get("measured"), text=lambda v: f"{v} shapes", right=True),
                        Column("config", "config", get("config"), long=True),
                        Column("picked at", "picked", get("picked"), long=True, breaks=", ", wide=True)],
         wide=wide, title="configs")
    if r.held_out:
        emit(out, _held_out_records(r), _held_out_columns(), wide=wide,
             title="held-out regret (each tuned shape held out: its time with the pick against its own best)")
    print_pairs(out, [("dispatch", _summary(r.dispatch_summary)), ("nearest_shape", _summary(r.nearest_summary)),
                      ("default", _summary(r.default_summary))])
    if r.worst or r.suggested:
        lines = []
        if r.worst:
            lines.append(("worst held out", ", ".join(
                f"{_shape(h.shape)} ({'its pick not measured there' if h.dispatch_regret is None else _pct(h.dispatch_regret)})"
                for h in r.worst)))
        if r.suggested:
            lines.append(("tune next", ", ".join(_shape(s) for s in r.suggested)))
        out.print("where more tuning would pay most", style="bold")
        print_pairs(out, lines, breaks=", ")
    out.print("")


def parse_ranges(text: str, dims) -> dict[str, tuple[int, int]]:
    """``--dims-range`` ``m=256:2048,n=256:2048,k=64:4096`` -> ``{"m": (256, 2048), ...}``, over
    every one of ``dims``.

    Raises:
        InvalidInputError: naming the part that is not ``DIM=LOW:HIGH`` with ``1 <= LOW <= HIGH``,
            a dim the kernel lacks, one it has that is missing, or one given twice.
    """
    found: dict[str, tuple[int, int]] = {}
    for part in (p.strip() for p in text.split(",")):
        name, eq, span = part.partition("=")
        low, colon, high = span.partition(":")
        try:
            lo, hi = int(low), int(high)
        except ValueError:
            lo = hi = 0
        if not eq or not colon or not 1 <= lo <= hi or not name.strip():
            raise InvalidInputError(f"--dims-range part {part!r} is not allowed; give DIM=LOW:HIGH with "
                                    "1 <= LOW <= HIGH, e.g. m=256:2048")
        name = name.strip()
        if name not in dims:
            raise InvalidInputError(f"--dims-range names {name!r}; the kernel's dims are {', '.join(dims)}")
        if name in found:  # as --dims refuses it: the last one silently taking over would tune another range
            raise InvalidInputError(f"dim {name} is given twice (--dims-range {name}={found[name][0]}:{found[name][1]} "
                                    f"and {name}={lo}:{hi}); give each dim once")
        found[name] = (lo, hi)
    missing = [d for d in dims if d not in found]
    if missing:
        raise InvalidInputError(f"--dims-range lacks {', '.join(missing)}; give a range for every dim "
                                f"({', '.join(dims)})")
    return found


@app.command("tune-shapes", short_help="Tune shapes picked so that a kernel's dispatch covers a range.")
@handle_errors
def tune_shapes_command(
    kernel: KernelArg,
    dims_range: Annotated[str, typer.Option("--dims-range", metavar="RANGES",
                                            help="The range to cover, DIM=LOW:HIGH for every dim, comma "
                                                 "separated: e.g. m=256:2048,n=256:2048,k=256:2048.")],
    count: Annotated[int, typer.Option("--count", parser=parse_int, metavar="N", help="Shapes to tune.")] = 8,
    multiple: Annotated[int, typer.Option("--multiple", parser=parse_int, metavar="M",
                                          help="Every dim a multiple of M.")] = 1,
    dtype: DType = "float32",
    device: Device = 0,
    trials: Annotated[int, typer.Option("--trials", parser=parse_int, metavar="N",
                                        help="Configs measured per shape (besides the dispatch's).")] = 100,
    strategy: Annotated[str, typer.Option("--strategy", metavar="NAME",
                                          help="Search strategy of each shape (default transfer: the searches "
                                               "before it are its prior).")] = "transfer",
    strategy_option: StrategyOptionArg = None,
    batch: Annotated[Optional[int], typer.Option("--batch", parser=parse_int, metavar="K",
                                                 help="Configs proposed at once.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", parser=parse_int, metavar="N",
                                                help="Seed of the strategy and of the random inputs.")] = None,
    space: Annotated[Optional[str], typer.Option("--space", metavar="FILE", help="Search-space TOML file.")] = None,
    db: Db = None,
) -> None:
    """Tune COUNT shapes of a range, each picked so that the kernel's dispatch covers it: the
    point farthest (log-spaced) from every shape tuned on this device, then, once three are
    tuned, weighted by where the dispatch's held-out regret is largest. Each search reuses those
    before it (the transfer strategy) and first measures the configs of the dispatch learned so
    far. Then every tuned shape's winner and runner-up is timed at every tuned shape (the dense
    matrix the dispatch is fit on). Ends with the dispatch (as `autotune dispatch` prints it).

    \b
    Examples:
      autotune tune-shapes smem_pad --dims-range rows=128:8192,cols=128:8192
      autotune tune-shapes matmul_reg --dims-range m=512:4096,n=512:4096,k=64:512
      autotune tune-shapes smem_pad --count 4 --dims-range rows=64:512,cols=64:512
    """
    from autotune.search.options import OptionError, SearchOptions
    from autotune.search.shapes import tune_shapes

    k = resolve_kernel(kernel)
    ranges = parse_ranges(dims_range, k.dims)
    check_db_arg(db, "--db")
    try:
        options = SearchOptions(trials=trials, strategy=strategy, batch=batch, seed=seed, space=space,
                                strategy_options=parse_strategy_options(strategy_option))
    except OptionError as exc:
        raise exc.as_flag() from None

    def planned(p) -> None:
        err.print(f"shape {p.index + 1} of {p.count}: {format_shape(tuple(zip(k.dims, p.shape)))} ({p.why})",
                  markup=False, soft_wrap=True)

    results = tune_shapes(k, ranges, count, dtype, device=device, multiple=multiple, options=options, db=db,
                          on_plan=planned)
    for r in results:
        best = r.decision.winner if r.decision else None
        out.print(f"tuned {r.key.display}: {len(r.measured)} configs measured"
                  + (f", best {best.config.key} ({best.pooled_median_ms:.4g} ms)" if best else ""),
                  markup=False, soft_wrap=True)
    from autotune.report.dispatch import dispatch_reports

    device_name = results[0].key.device.name if results else None
    for report in dispatch_reports(open_db(db, "read"), k, dtype=get_dtype(dtype).name, device_name=device_name,
                                   nvcc_version=stale.current_nvcc()):
        _print_report(report, k, wide=False)
