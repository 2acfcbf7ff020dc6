"""The one rule that turns a recorded problem back into a kernel
(``autotune.store.workload_records.resolve_recorded``), which the plan, the tuning and the
bundle share: a kernel changed since it was recorded is said, with both hashes."""

from __future__ import annotations

from dataclasses import replace

from autotune.kernel.catalog import get_kernel
from autotune.store.workload_records import RecordedProblem, resolve_recorded


def _recorded(device_info, **change) -> RecordedProblem:
    k = get_kernel("smem_vec")
    p = RecordedProblem(device_info, k.name, k.source_hash, k.spec_hash, k.name, (("rows", 100), ("cols", 64)),
                        "float32", calls=10, sampled=2, sampled_ms=0.5)
    return replace(p, **change)


def test_a_recorded_problem_resolves_to_todays_kernel_and_says_what_changed(device_info):
    k = get_kernel("smem_vec")
    same = resolve_recorded(_recorded(device_info))
    assert same.problem is not None and same.problem.kernel.name == "smem_vec" and same.changed == ""
    source = resolve_recorded(_recorded(device_info, source_hash="ab" * 32))
    assert source.problem is not None and source.changed == f"source {'ab' * 6} recorded, {k.source_hash[:12]} now"
    spec = resolve_recorded(_recorded(device_info, spec_hash="cd" * 32))
    assert spec.changed == f"description {'cd' * 6} recorded, {k.spec_hash[:12]} now"


def test_a_recorded_problem_whose_kernel_cannot_be_found_says_why(device_info):
    python_built = resolve_recorded(_recorded(device_info, kernel="mine", kernel_ref=""))
    assert python_built.problem is None and "built in Python" in python_built.why
    renamed = resolve_recorded(_recorded(device_info, kernel="old_name"))
    assert renamed.problem is None and renamed.why == "smem_vec is now kernel smem_vec, not old_name"
    gone = resolve_recorded(_recorded(device_info, kernel_ref="/no/such/kernel.toml"))
    assert gone.problem is None and gone.why.startswith("its kernel cannot be loaded: ")

