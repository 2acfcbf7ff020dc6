"""A workload's records (autotune/store/workload_records.py) compose the stored problem
(``ProblemKey``) and read its fields through it; one problem recorded on several device
models is one problem of the plan (:func:`merged`)."""

from __future__ import annotations

from dataclasses import replace

from autotune.kernel.catalog import get_kernel
from autotune.kernel.problem import ProblemKey
from autotune.store.workload_records import ProblemResult, RecordedProblem, merged


def _recorded(device_info, **change) -> RecordedProblem:
    k = get_kernel("smem_vec")
    stored = ProblemKey(k.name, k.source_hash, k.spec_hash, (("rows", 100), ("cols", 64)), "float32", k.name)
    return replace(RecordedProblem(device_info, stored, calls=10, sampled=2, sampled_ms=0.5), **change)


def test_a_recorded_problem_reads_its_identity_through_its_problem_key(device_info):
    p = _recorded(device_info)
    k = p.problem_key
    assert (p.kernel, p.source_hash, p.spec_hash, p.dims, p.dtype, p.kernel_ref) == (
        k.kernel, k.source_hash, k.spec_hash, k.dims, k.dtype, k.kernel_ref)
    assert p.label == "smem_vec 100x64 float32" and p.ident == k.ident and p.gpu_ms == 2.5
    result = ProblemResult(k)
    assert result.ident == p.ident and result.label == p.label


def test_counts_of_one_problem_on_two_device_models_are_summed(device_info):
    other = replace(device_info, name="NVIDIA A100")
    merged_ = merged([_recorded(device_info), _recorded(other, calls=5, sampled=1, sampled_ms=1.0)])
    assert len(merged_) == 1 and merged_[0].calls == 15 and merged_[0].device == other
