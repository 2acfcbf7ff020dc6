"""Other shapes of a benchmark's kernel and dtype, measured with its compiler: a search that
tunes several shapes at once (``tune(..., also=...)``) measures each proposed config at every
shape, one cubin and one module load serving them all (``Benchmark.at``, ``measure_at``,
``retime_at``; the measuring child serves them too: ``autotune.measure.isolation``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.problem import Problem, ProblemRef
from autotune.measure.measure_options import MeasureOptions
from autotune.measure.measurement import Measurement, Retiming

__all__ = ["OtherShapes"]


class OtherShapes:
    """The other shapes of a `Benchmark` (a base class of it): ``also``, each opened as a
    benchmark of its own at its first use, in the same context, with the same compiler and
    options."""

    def _other_shapes(self, also: Sequence[Problem | ProblemRef], measure: MeasureOptions, bounds: bool) -> None:
        """Hold the shapes ``also`` and what their benchmarks are opened with: the
        ``measure`` options (:class:`~autotune.measure.measure_options.MeasureOptions`) and
        whether they measure their ``bounds``."""
        self.also = tuple(also)
        self._opened_with = (measure, bounds)
        self._others: dict[int, Any] = {}

    def at(self, i: int):
        """The benchmark of shape ``also[i]`` (another problem of this kernel and dtype), opened in
        this context at its first use, then kept: it shares this benchmark's compiler (one
        cubin and one module load serve every shape) and options, and holds its own inputs,
        reference and bounds.

        Raises:
            InvalidInputError: no shape ``i``; another kernel or dtype; it does not fit in
                free device memory.
        """
        if not 0 <= i < len(self.also):
            raise InvalidInputError(f"shape {i} is not allowed; allowed: 0..{len(self.also) - 1}")
        if i not in self._others:
            other = self.also[i]
            other = other.resolve() if isinstance(other, ProblemRef) else other
            if other.kernel.name != self.kernel.name or other.dtype != self.dtype:
                raise InvalidInputError(f"{other.label} is not a shape of {self.problem.label}'s kernel and dtype")
            measure, bounds = self._opened_with
            self._others[i] = type(self)(self.device, other, measure, bounds=bounds, compiler=self.compiler)
        return self._others[i]

    def measure_at(self, i: int, config: Config) -> Measurement:
        """:meth:`measure` ``config`` at shape ``also[i]`` (:meth:`at`)."""
        return self.at(i).measure(config)

    def retime_at(self, i: int, configs: list[Config], rounds: int = 5) -> list[Retiming]:
        """:meth:`retime` ``configs`` at shape ``also[i]`` (:meth:`at`)."""
        return self.at(i).retime(configs, rounds)

    def _free_other_shapes(self) -> None:
        """Free the other shapes' benchmarks opened."""
        for other in self._others.values():
            other.free()
        self._others.clear()
