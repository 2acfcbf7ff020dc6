"""The one definition of a stale result (autotune/store/stale.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from autotune.kernel.catalog import get_kernel
from autotune.kernel.config import Config
from autotune.store.stale import partition, stale_reason, summary

KERNEL = get_kernel("smem_pad")


@dataclass(frozen=True)
class Result:
    source_hash: str = KERNEL.source_hash
    spec_hash: str = KERNEL.spec_hash
    nvcc_version: str = "13.0.88"
    compile_flags: str = "-O3 -arch=sm_90"
    compute_capability: str = "9.0"
    config: Config = KERNEL.default_config()
    kernel: str = "smem_pad"


def test_a_current_result_is_not_stale():
    assert stale_reason(Result(), KERNEL, "13.0.88") is None
    assert stale_reason(Result(nvcc_version="1.0"), KERNEL, None) is None  # no nvcc here: not compared


def test_each_reason():
    cases = {
        "kernel source changed": Result(source_hash="0" * 64),
        "kernel description changed": Result(spec_hash="0" * 64),
        "built with nvcc 12.8.93, not 13.0.88": Result(nvcc_version="12.8.93"),
        "compile flags '-O2 -arch=sm_90', not '-O3 -arch=sm_90'": Result(compile_flags="-O2 -arch=sm_90"),
        "macros no longer those of smem_pad": Result(config=Config.of("smem_pad", {"TILE_DIM": 32})),
    }
    for reason, result in cases.items():
        assert stale_reason(result, KERNEL, "13.0.88") == reason
    # the flags are those of the result's own architecture
    assert stale_reason(Result(compile_flags="-O3 -arch=sm_80", compute_capability="8.0"), KERNEL, "13.0.88") is None
    # the source is judged first
    assert stale_reason(replace(cases["kernel description changed"], source_hash="0" * 64), KERNEL, None) == (
        "kernel source changed")


def test_summary_counts_by_reason():
    assert summary([]) == ""
    assert summary(["b", "a", "b"]) == "3 stale results (1 a, 2 b)"
    assert summary(["a"]) == "1 stale result (1 a)"


def test_partition_sorts_current_stale_and_unknown_in_order():
    records = [Result(), Result(kernel="mine"), Result(source_hash="0" * 64), Result(nvcc_version="12.8.93"),
               Result(compile_flags="-O2")]
    judged = partition(records, {"smem_pad": KERNEL}, "13.0.88")
    assert judged.current == [records[0]]
    assert judged.unknown == [records[1]]
    assert judged.stale == records[2:]
    assert judged.reasons == ["kernel source changed", "built with nvcc 12.8.93, not 13.0.88",
                              "compile flags '-O2', not '-O3 -arch=sm_90'"]
    assert judged.summary() == summary(judged.reasons)
    assert [(v.known, v.current) for v in judged.verdicts] == [(True, True), (False, False), (True, False),
                                                               (True, False), (True, False)]
    assert partition([], {}, None).summary() == ""
