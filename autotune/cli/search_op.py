"""``autotune search --op transpose``: the op search (:func:`autotune.search.op.tune_op`) with a
line per kernel searched and the ranking of the kernels' stored bests."""

from __future__ import annotations


from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dims import format_shape
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.problem import Problem
from autotune.measure.figures import duration, headline
from autotune.kernel.ops import op_kernels
from autotune.search.op import Standing, tune_op
from ._common import err, out
from .output import Column, Format, emit, rate
from .shape import Shape


def run_op(op: str, ordinals: list[int], shape: Shape, dtype: str, options, db: str | None,
           fmt: Format = Format.table, wide: bool = False) -> None:
    """Parse the problem for ``op``'s kernels, run the op search on one GPU into database ``db``
    (``--db``), print the ranking
    (``fmt``: a table, or JSON/CSV on stdout with the progress lines on stderr).

    Raises:
        InvalidInputError: unknown op or dtype, bad dims, several devices.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dt = get_dtype(dtype)
    kernels = op_kernels(op, dt)
    if len(ordinals) != 1:
        raise InvalidInputError(f"--device {','.join(map(str, ordinals))} is not allowed with --op; give one GPU")
    problem = shape.dims_for(kernels[0])
    say = out if fmt is Format.table else err
    say.print(f"[bold]--op {op}[/] {format_shape(tuple(problem.items()))} {dt.name} on device {ordinals[0]}: "
              f"{len(kernels)} kernels ({', '.join(x.name for x in kernels)}), {options.trials} configs shared "
              f"by successive halving; strategy {options.strategy_name}, batches of {options.batch_size()}")

    def on_kernel(number: int, s: Standing) -> None:
        figure = _figure(s, problem, dt.name)
        say.print(f"  round {number}: {s.kernel}: {s.measured} configs measured so far; best {figure}", markup=False)

    result = tune_op(op, problem, dt.name, device=ordinals[0], options=options, db=db, on_kernel=on_kernel)
    columns = [Column("#", "rank", lambda r: r[0], right=True), Column("kernel", "kernel", lambda r: r[1].kernel),
               Column("time", "ms", lambda r: r[1].time_ms if r[1].best else None, text=duration, right=True),
               Column("GB/s", "gbps", lambda r: _gbps(r[1], problem, dt.name) if r[1].best else None, text=rate,
                      right=True),
               Column("% memcpy", "pct_memcpy", lambda r: float(p) if (p := _pct(r[1], problem, dt.name)) else None,
                      text=lambda v: f"{v:.1f}", right=True),
               Column("measured", "configs_measured", lambda r: r[1].measured, right=True),
               Column("config", "config", lambda r: r[1].best.config.key if r[1].best else "none passed", long=True)]
    say.print()
    emit(out, list(enumerate(result.standings, 1)), columns, fmt, wide=wide,
         title=f"{op} {format_shape(tuple(problem.items()))} {dt.name}: the kernels' stored bests")
    best = result.best
    if best is None:
        say.print(f"op best: none; no config of any {op} kernel passed verification")
    else:
        say.print(f"op best: {best.kernel} {best.best.config.key}  {_figure(best, problem, dt.name)}")


def _gbps(s: Standing, problem, dtype: str) -> float:
    k = KERNELS[s.kernel]
    return k.figure("bytes", problem, get_dtype(dtype)) / (s.time_ms * 1e-3) / 1e9


def _pct(s: Standing, problem, dtype: str) -> str:
    if s.best is None or not s.best.memcpy_gbps:
        return ""
    return f"{100 * _gbps(s, problem, dtype) / s.best.memcpy_gbps:.1f}"


def _figure(s: Standing, problem, dtype: str) -> str:
    if s.best is None:
        return "none yet (no config passed verification)"
    pct = _pct(s, problem, dtype)
    return (f"{s.best.config.key} {headline(Problem.of(KERNELS[s.kernel], problem, dtype), s.time_ms)} ({duration(s.time_ms)}"
            + (f", {pct}% of memcpy)" if pct else ")"))
