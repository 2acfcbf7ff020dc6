"""The plan's view of a recorded problem (autotune/workload/plan.py): it turns it back into a
kernel by the rule the bundle shares (``resolve_recorded``) and flags a kernel changed since it
was recorded."""

from __future__ import annotations

from autotune.kernel.catalog import get_kernel
from autotune.store.workload_records import RecordedProblem, resolve_recorded
from autotune.workload.plan import _resolve


def test_the_plan_flags_a_changed_kernel_by_the_rule_the_bundle_shares(device_info):
    k = get_kernel("smem_vec")
    p = RecordedProblem(device_info, k.name, "ab" * 32, k.spec_hash, k.name, (("rows", 100), ("cols", 64)), "float32",
                        calls=10, sampled=2, sampled_ms=0.5)
    problem, note = _resolve(p)
    assert problem == resolve_recorded(p).problem and problem.kernel is k
    assert note == "its kernel changed since it was recorded: the current one is tuned"
