"""``autotune search --op transpose``: the op search (:func:`autotune.search.op.tune_op`) with a
line per kernel searched and the ranking of the kernels' stored bests."""

from __future__ import annotations

from rich.table import Table

from autotune.errors import InvalidInputError
from autotune.kernel.catalog import KERNELS
from autotune.kernel.dims import format_shape
from autotune.kernel.dtypes import get_dtype
from autotune.measure.figures import headline
from autotune.search.op import Standing, op_kernels, tune_op
from ._common import out, parse_dims


def run_op(op: str, ordinals: list[int], dims, size, rows, cols, m, n, k, dtype: str, options) -> None:
    """Parse the problem for ``op``'s kernels, run the op search on one GPU, print the ranking.

    Raises:
        InvalidInputError: unknown op or dtype, bad dims, several devices.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dt = get_dtype(dtype)
    kernels = op_kernels(op, dt)
    if len(ordinals) != 1:
        raise InvalidInputError(f"--device {','.join(map(str, ordinals))} is not allowed with --op; give one GPU")
    problem = parse_dims(kernels[0], dims, size, rows, cols, m, n, k)
    out.print(f"[bold]--op {op}[/] {format_shape(tuple(problem.items()))} {dt.name} on device {ordinals[0]}: "
              f"{len(kernels)} kernels ({', '.join(x.name for x in kernels)}), {options.trials} configs shared "
              f"by successive halving; strategy {options.strategy_name}, batches of {options.batch_size()}")

    def on_kernel(number: int, s: Standing) -> None:
        figure = _figure(s, problem, dt.name)
        out.print(f"  round {number}: {s.kernel}: {s.measured} configs measured so far; best {figure}", markup=False)

    result = tune_op(op, problem, dt.name, device=ordinals[0], options=options, on_kernel=on_kernel)
    table = Table(title=f"{op} {format_shape(tuple(problem.items()))} {dt.name}: the kernels' stored bests")
    for col in ("#", "kernel", "config", "ms", "GB/s", "% memcpy", "configs measured"):
        table.add_column(col, justify="left" if col in ("kernel", "config") else "right", no_wrap=True)
    for i, s in enumerate(result.standings, 1):
        b = s.best
        table.add_row(str(i), s.kernel, b.config.key if b else "none passed", f"{s.time_ms:.4f}" if b else "",
                      f"{_gbps(s, problem, dt.name):.0f}" if b else "", _pct(s, problem, dt.name), str(s.measured))
    out.print(table)
    best = result.best
    if best is None:
        out.print(f"op best: none; no config of any {op} kernel passed verification")
    else:
        out.print(f"op best: {best.kernel} {best.best.config.key}  {_figure(best, problem, dt.name)}")


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
    return (f"{s.best.config.key} {headline(KERNELS[s.kernel], problem, dtype, s.time_ms)} ({s.time_ms:.4f} ms"
            + (f", {pct}% of memcpy)" if pct else ")"))
