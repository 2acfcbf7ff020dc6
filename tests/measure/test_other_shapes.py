"""Other shapes of a benchmark's kernel and dtype (autotune/measure/other_shapes.py), on a
stand-in benchmark (no GPU): each opened once at its first use with the same compiler and
options, refused where it is no shape of the kernel and dtype, freed with the benchmark."""

from __future__ import annotations

import pytest

from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.problem import Problem
from autotune.measure.measure_options import MeasureOptions
from autotune.measure.other_shapes import OtherShapes


class Bench(OtherShapes):
    """What OtherShapes asks of a benchmark: ``kernel``, ``dtype``, ``problem``, ``device``,
    ``compiler``, ``measure``, ``retime``, ``free``; and ``type(self)(device, problem, measure,
    bounds=..., compiler=...)``."""

    def __init__(self, device, problem, measure=None, *, bounds=True, also=(), compiler=None) -> None:
        self.device, self.problem, self.compiler = device, problem, compiler or object()
        self.kernel, self.dtype = problem.kernel, problem.dtype
        self.options, self.freed = (measure, bounds), False
        self._other_shapes(also, measure, bounds)

    def measure(self, config):
        return ("measured", self.problem.label, config.key)

    def retime(self, configs, rounds):
        return ("retimed", self.problem.label, [c.key for c in configs], rounds)

    def free(self) -> None:
        self.freed = True
        self._free_other_shapes()


def test_each_other_shape_is_opened_once_with_the_same_compiler_and_options(device_info):
    main = Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float32")
    other = Problem.of("smem_pad", {"rows": 128, "cols": 256}, "float32")
    measure = MeasureOptions(warmup=3, ci=0)
    bench = Bench(device_info, main, measure, bounds=False, also=[other, other.ref])
    first = bench.at(0)
    assert first is bench.at(0) and first.compiler is bench.compiler and first.options == (measure, False)
    assert first.problem == other and bench.at(1).problem == other  # a ProblemRef is resolved
    config = Config.of("smem_pad", {"TILE_DIM": 32, "BLOCK_ROWS": 8})
    assert bench.measure_at(0, config) == ("measured", other.label, config.key)
    assert bench.retime_at(1, [config], 2) == ("retimed", other.label, [config.key], 2)
    bench.free()
    assert first.freed and bench._others == {}


@pytest.mark.parametrize("also, i, message", [
    (("other kernel",), 0, "is not a shape of smem_pad 64x64 float32's kernel and dtype"),
    (("other dtype",), 0, "is not a shape of smem_pad 64x64 float32's kernel and dtype"),
    (("same",), 1, "shape 1 is not allowed; allowed: 0..0"),
])
def test_no_shape_of_the_kernel_and_dtype_is_refused(device_info, also, i, message):
    main = Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float32")
    shapes = {"other kernel": Problem.of("smem_vec", {"rows": 64, "cols": 64}, "float32"),
              "other dtype": Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float64"),
              "same": main}
    bench = Bench(device_info, main, also=[shapes[a] for a in also])
    with pytest.raises(InvalidInputError, match=message):
        bench.at(i)
