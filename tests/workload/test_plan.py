"""The plan's view of a recorded problem (autotune/workload/plan.py): it turns it back into a
kernel by the rule the bundle shares (``ProblemKey.resolve``) and flags a kernel changed since it
was recorded."""

from __future__ import annotations

from autotune.kernel.catalog import get_kernel
from autotune.kernel.problem import ProblemKey
from autotune.store.workload_records import RecordedProblem
from autotune.workload.plan import _resolve


def test_the_plan_flags_a_changed_kernel_by_the_rule_the_bundle_shares(device_info):
    k = get_kernel("smem_vec")
    p = RecordedProblem(device_info, ProblemKey(k.name, "ab" * 32, k.spec_hash, (("rows", 100), ("cols", 64)),
                                                "float32", k.name), calls=10, sampled=2, sampled_ms=0.5)
    problem, note = _resolve(p)
    assert problem == p.problem_key.resolve().problem and problem.kernel is k
    assert note == "its kernel changed since it was recorded: the current one is tuned"
