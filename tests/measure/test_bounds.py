"""The bound kernel of measure/bounds.py, on a fake benchmark: it is timed by a benchmark of the
measured one's own class (bounds.py does not import benchmark.py), on the same dims, dtype,
inputs, warm-up and repeats (fixed samples: no certified timing), without bounds of its own,
and freed."""

from types import SimpleNamespace

from autotune.kernel.problem import Problem
from autotune.measure.bounds import Bounds
from autotune.measure.measure_options import MeasureOptions


class FakeBench:
    made: list = []

    def __init__(self, device, problem, measure=MeasureOptions(warmup=2, repeats=20), *, bounds=True, inputs=None):
        self.device, self.problem = device, problem
        self.kernel, self.dims, self.dtype = problem.kernel, problem.dims, problem.dtype
        self.measure_options, self.bounds_enabled, self.inputs = measure, bounds, inputs
        self.warmup, self.repeats = measure.warmup, measure.repeats
        self.freed = False
        FakeBench.made.append(self)

    def measure(self, config):
        return SimpleNamespace(gbps=123.0 if config == self.kernel.default_config() else 0.0)

    def free(self):
        self.freed = True


def test_the_bound_kernel_is_measured_by_a_benchmark_of_the_same_class():
    FakeBench.made.clear()
    bench = FakeBench("dev", Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float32"),
                      MeasureOptions(warmup=3, repeats=21, seed=5, energy=True), inputs="inputs")
    bounds = Bounds(bench)
    assert bounds.kernel_gbps == 123.0 and bounds.kernel_gbps == 123.0  # measured once
    other = FakeBench.made[1:]
    assert len(other) == 1 and other[0].kernel.name == "copy_row"
    assert (other[0].device, other[0].dims, other[0].dtype, other[0].warmup, other[0].repeats, other[0].inputs) == (
        "dev", bench.dims, bench.dtype, 3, 21, "inputs")
    assert other[0].bounds_enabled is False and other[0].freed
    assert other[0].measure_options == MeasureOptions(warmup=3, repeats=21, ci=0)  # no energy, fresh seed


def test_no_bound_kernel_when_disabled():
    bench = FakeBench("dev", Problem.of("smem_pad", {"rows": 64, "cols": 64}, "float32"))
    assert Bounds(bench, enabled=False).kernel_gbps is None
