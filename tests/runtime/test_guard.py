"""The same_arch guard (autotune/runtime/guard.py) without a GPU: the fake driver
(tests/fake_gpu_arrays.py) times a launch by its threads (1 µs + 1 ns a thread), so which config
is faster is known. A config answered at the same_arch rung is timed against the default at the
first launch of its problem, and the faster kept (both ways, within the margin: the default),
once per process and problem, said in the note; AUTOTUNE_SAME_ARCH_GUARD=off launches it
untimed; the histogram (a reset array, counts that accumulate) is timed on scratch copies, so the
caller's bins hold exactly what one launch gives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import autotune
from autotune.errors import InvalidInputError
from autotune.kernel.config import Config
from autotune.kernel.problem import Problem
from autotune.runtime import driver, guard
from autotune.runtime import lookup as lookup_module
from autotune.runtime.lookup import LaunchConfig

from fake_gpu_arrays import FakeLibcuda, Tensor, installed

N = 100
"""Bytes histogrammed: one block of any config, so a block's threads decide the time."""
SLOW = {"BLOCK_SIZE": 1024, "COPIES": 4, "MAX_BLOCKS": 1056}  # 1024 threads against the default's 256
FAST = {"BLOCK_SIZE": 128, "COPIES": 4, "MAX_BLOCKS": 1056}  # 128 threads
LAUNCHES = 2 * (guard.WARMUPS + guard.REPEATS)
"""The launches of one guard."""


@pytest.fixture
def fake(monkeypatch, device_info, histogram):
    yield from installed(monkeypatch, histogram, device_info)


def shipped(monkeypatch, macros, asked=None, kernel="histogram256"):
    """Make every lookup answer ``macros`` of ``kernel`` at the same_arch rung (as one tuned on
    an H200 would); ``asked`` collects the problems asked."""
    def lookup(problem, **_):
        if asked is not None:
            asked.append(problem)
        return LaunchConfig(Config.of(kernel, macros), "tuned", rung="same_arch", tuned_device="NVIDIA H200",
                            note="tuned for 1000 on NVIDIA H200 (same compute capability 9.0, same shape)")

    monkeypatch.setattr(lookup_module, "lookup", lookup)


def arrays(n=N):
    return Tensor((256,), "uint32", ptr=0x1000), Tensor((n,), "uint8", ptr=0x2000)


def test_a_shipped_config_slower_than_the_default_gives_way_to_it(fake, histogram, monkeypatch, db_url):
    shipped(monkeypatch, SLOW)
    f = autotune.launcher(histogram, db=db_url)
    f(*arrays())
    chosen = f.prepared(*arrays()).launcher.chosen
    assert (chosen.rung, chosen.source, chosen.config) == ("default", "default", histogram.default_config())
    slow, default = FakeLibcuda.launch_ms((1, 1, 1), (1024, 1, 1)), FakeLibcuda.launch_ms((1, 1, 1), (256, 1, 1))
    assert chosen.note == ("tuned for 1000 on NVIDIA H200 (same compute capability 9.0, same shape); same_arch: "
                           "shipped config BLOCK_SIZE=1024,COPIES=4,MAX_BLOCKS=1056 timed "
                           f"{slow:.4g} ms against the default's {default:.4g} ms (1.61x slower) here at first "
                           "launch; the default kept")
    *timing, mine = fake.launches
    assert len(timing) == LAUNCHES and [c["block"][0] for c in timing] == [256, 1024] * guard.WARMUPS + \
        [256, 1024, 1024, 256, 256, 1024, 1024, 256, 256, 1024]  # alternating, each round the other way round
    assert all(c["stream"] == 0x5000 for c in fake.launches)  # the caller's stream
    assert mine["block"] == (256, 1, 1) and mine["bins"] == 0x1000  # the caller's launch: the default
    f(*arrays())
    assert fake.launches[-1]["block"] == (256, 1, 1) and len(fake.launches) == LAUNCHES + 2


def test_a_shipped_config_faster_than_the_default_is_kept(fake, histogram, monkeypatch, db_url):
    shipped(monkeypatch, FAST)
    g = autotune.compiled(histogram, {"n": N}, "uint8", db=db_url)  # autotune.compiled's launcher too
    assert g.chosen.rung == "same_arch" and g.pending is not None
    g(*arrays())
    assert g.chosen.rung == "same_arch" and g.chosen.config == Config.of("histogram256", FAST) and g.pending is None
    assert g.chosen.note.endswith(" (1.11x faster) here at first launch; kept")
    assert "same_arch: timed " in g.chosen.note and fake.launches[-1]["block"] == (128, 1, 1)


def test_within_the_margin_the_default_is_kept(fake, histogram, monkeypatch, db_url):
    """1,000,000 bytes: 977 blocks of 256 threads (the default) against 245 of 1024: the shipped
    config is 0.3 % slower here, within the noise a margin stands for."""
    shipped(monkeypatch, SLOW)
    f = autotune.launcher(histogram, db=db_url)
    f(*arrays(1_000_000))
    chosen = f.prepared(*arrays(1_000_000)).launcher.chosen
    assert chosen.rung == "default" and "(1.00x slower) here at first launch; the default kept" in chosen.note
    shipped(monkeypatch, {**SLOW, "BLOCK_SIZE": 256, "MAX_BLOCKS": 2112})  # the default's geometry
    autotune.clear_cache()
    f = autotune.launcher(histogram, db=db_url)
    f(*arrays(1_000_000))
    assert f.prepared(*arrays(1_000_000)).launcher.chosen.note.endswith(
        " (as fast) here at first launch; the default kept")
    n = 1024 * 977 + 1  # 978 blocks of 256 threads against 1955 of 128: 0.05 % faster
    shipped(monkeypatch, {**SLOW, "BLOCK_SIZE": 128, "MAX_BLOCKS": 2112})
    autotune.clear_cache()
    f = autotune.launcher(histogram, db=db_url)
    f(*arrays(n))
    chosen = f.prepared(*arrays(n)).launcher.chosen
    assert chosen.rung == "default" and chosen.note.endswith(
        " (1.001x faster, within the 2 % margin) here at first launch; the default kept")


def test_the_verdict_is_timed_once_per_problem_and_kept_with_the_launcher(fake, histogram, monkeypatch, db_url):
    asked = []
    shipped(monkeypatch, SLOW, asked)
    f = autotune.launcher(histogram, db=db_url)
    for _ in range(3):
        f(*arrays())
    g = autotune.launcher(histogram, db=db_url)  # another launcher of the same problem: the cached Launcher
    g(*arrays())
    c = autotune.compiled(histogram, {"n": N}, "uint8", db=db_url)
    c(*arrays())
    assert len(asked) == 1 and len(fake.launches) == LAUNCHES + 5 and c.chosen.rung == "default"
    assert all(call["block"] == (256, 1, 1) for call in fake.launches[LAUNCHES:])
    f(*arrays(2000))  # another problem: timed at its own first launch
    assert len(asked) == 2 and len(fake.launches) == 2 * LAUNCHES + 6


def test_the_switch_turns_it_off(fake, histogram, monkeypatch, db_url):
    shipped(monkeypatch, SLOW)
    monkeypatch.setenv("AUTOTUNE_SAME_ARCH_GUARD", "off")
    f = autotune.launcher(histogram, db=db_url)
    f(*arrays())
    chosen = f.prepared(*arrays()).launcher.chosen
    assert (chosen.rung, chosen.config) == ("same_arch", Config.of("histogram256", SLOW)) and "same_arch:" not in \
        chosen.note
    assert [c["block"] for c in fake.launches] == [(1024, 1, 1)]
    autotune.clear_cache()
    monkeypatch.setenv("AUTOTUNE_SAME_ARCH_GUARD", "no")
    with pytest.raises(InvalidInputError, match="AUTOTUNE_SAME_ARCH_GUARD='no' is not allowed; allowed: on, off"):
        autotune.launcher(histogram, db=db_url)(*arrays())
    monkeypatch.setenv("AUTOTUNE_SAME_ARCH_GUARD", "on")
    autotune.launcher(histogram, db=db_url)(*arrays())
    assert len(fake.launches) == 1 + LAUNCHES + 1


def test_other_rungs_and_the_default_itself_are_not_timed(fake, histogram, monkeypatch, db_url):
    autotune.launcher(histogram, db=db_url)(*arrays())  # nothing stored: the default rung
    shipped(monkeypatch, histogram.default_config().as_dict())  # same_arch, but the default's own config
    autotune.clear_cache()
    autotune.launcher(histogram, db=db_url)(*arrays())
    assert len(fake.launches) == 2 and not [c for c in fake.calls if c["call"] == "alloc"]


def test_a_first_launch_captured_in_a_graph_is_not_timed(fake, histogram, monkeypatch, db_url):
    shipped(monkeypatch, SLOW)
    fake.capturing = True
    f = autotune.launcher(histogram, db=db_url)
    f(*arrays())
    chosen = f.prepared(*arrays()).launcher.chosen
    assert chosen.rung == "same_arch" and chosen.note.endswith(
        "; same_arch: not timed against the default (the first launch was captured in a CUDA graph); the shipped "
        "config kept")
    assert len(fake.launches) == 1


def test_no_memory_for_the_scratch_copies_keeps_the_shipped_config(fake, histogram, monkeypatch, db_url):
    shipped(monkeypatch, SLOW)
    monkeypatch.setattr(fake, "cuMemAlloc_v2", lambda ref, nbytes: 2, raising=False)  # CUDA_ERROR_OUT_OF_MEMORY
    f = autotune.launcher(histogram, db=db_url)
    f(*arrays())
    chosen = f.prepared(*arrays()).launcher.chosen
    assert chosen.rung == "same_arch" and chosen.note.endswith(
        "; same_arch: not timed against the default (cuMemAlloc of 1024 bytes failed with CUDA error 2); the "
        "shipped config kept")
    assert len(fake.launches) == 1


class Memory(FakeLibcuda):
    """The fake driver with device memory: each allocation (and each array the test places) a
    byte buffer at its address; memsets and copies change it; a launch of histogram256 adds the
    counts of its ``n`` bytes to its bins, as the kernel does."""

    def __init__(self, kernel) -> None:
        super().__init__(kernel)
        self.memory: dict[int, np.ndarray] = {}

    def place(self, pointer: int, values: np.ndarray) -> None:
        self.memory[pointer] = np.frombuffer(bytearray(values.tobytes()), np.uint8)

    def cuMemAlloc_v2(self, ref, nbytes):
        status = super().cuMemAlloc_v2(ref, nbytes)
        self.memory[self.calls[-1]["pointer"]] = np.full(nbytes, 0xAB, np.uint8)  # not zero: as cuMemAlloc's
        return status

    def cuMemFree_v2(self, pointer):
        del self.memory[pointer]
        return super().cuMemFree_v2(pointer)

    def cuMemcpyDtoDAsync_v2(self, dst, src, nbytes, stream):
        self.memory[dst][:nbytes] = self.memory[src][:nbytes]
        return super().cuMemcpyDtoDAsync_v2(dst, src, nbytes, stream)

    def cuMemsetD8Async(self, pointer, word, count, stream):
        self.memory[pointer][:count] = word
        return super().cuMemsetD8Async(pointer, word, count, stream)

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, argv, extra):
        status = super().cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, argv, extra)
        call = self.calls[-1]
        counts = np.bincount(self.memory[call["in"]][:call["n"]], minlength=256).astype(np.uint32)
        bins = self.memory[call["bins"]].view(np.uint32)
        bins += counts
        return status


@pytest.mark.parametrize("reset", [False, True])
def test_the_callers_bins_hold_what_one_launch_of_the_chosen_config_gives(fake, histogram, monkeypatch, db_url,
                                                                           reset):
    """The guard's 12 launches count into scratch copies, each cleared first (the kernel file's
    reset); the caller's bins get exactly one launch: added to what they held, or from zero with
    reset=True (a guard timing on the caller's bins would leave 13 launches' counts there)."""
    memory = Memory(histogram)
    monkeypatch.setattr(driver, "libcuda", lambda: memory)
    shipped(monkeypatch, SLOW)
    data = np.random.default_rng(0).integers(0, 256, N, dtype=np.uint8)
    held = np.arange(256, dtype=np.uint32)
    memory.place(0x1000, held)
    memory.place(0x2000, data)
    autotune.launcher(histogram, db=db_url, reset=reset)(*arrays())
    counts = np.bincount(data, minlength=256).astype(np.uint32)
    assert np.array_equal(memory.memory[0x1000].view(np.uint32), counts if reset else held + counts)
    assert np.array_equal(memory.memory[0x2000], data)
    assert set(memory.memory) == {0x1000, 0x2000}  # every scratch copy freed
    *timing, mine = memory.launches
    scratch = {c["pointer"] for c in memory.calls if c["call"] == "alloc"}
    assert len(timing) == LAUNCHES and {c["bins"] for c in timing} == scratch and len(scratch) == 1
    assert mine["bins"] == 0x1000 and mine["block"] == (256, 1, 1)
    calls = [c["call"] for c in memory.calls]
    assert calls[:3] == ["alloc", "copy", "d8"] and calls.count("d8") == LAUNCHES + reset  # a reset before each
    assert all(c["pointer"] in scratch for c in memory.calls[:-2] if c["call"] in ("d8", "copy"))


def test_the_database_path_a_result_of_another_gpu_model(fake, store, db_url, device_info):
    """smem_pad stored as tuned on an H100 PCIe, launched on the H100 SXM: the same_arch rung of
    autotune.lookup, timed at the first launch."""
    from autotune.kernel.catalog import KERNELS
    from autotune.measure.measurement import Measurement
    from autotune.store.key import tuning_key

    fake.kernel = KERNELS["smem_pad"]
    pcie = replace(device_info, name="NVIDIA H100 PCIe", sm_count=114, total_memory=80_000_000_000)
    default = KERNELS["smem_pad"].default_config()
    other = next(c for c in KERNELS["smem_pad"].space().configs() if c != default)
    key = tuning_key("smem_pad", pcie, (512, 512), "float32")
    sid = store.start_search(key, study_name=key.study_name, sampler="grid", seed=None, memcpy_gbps=3000.0)
    store.record_trial(sid, 0, other, status="ok", measurement=Measurement(0.01, 0.01, 0.01, 200.0, 7.0, 20, 4000, 50))
    f = autotune.launcher("smem_pad", db=db_url)
    f(Tensor((512, 512), ptr=0x1000), Tensor((512, 512), ptr=0x2000))
    chosen = f.prepared(Tensor((512, 512)), Tensor((512, 512))).launcher.chosen
    assert "on NVIDIA H100 PCIe (same compute capability 9.0, same shape)" in chosen.note
    assert "; same_arch: " in chosen.note and "here at first launch" in chosen.note
    problem = Problem.of("smem_pad", (512, 512), "float32")
    ms = {c: FakeLibcuda.launch_ms(*problem.geometry(c)[:2]) for c in (default, other)}
    faster = ms[other] * (1 + guard.MARGIN) < ms[default]
    assert (chosen.rung, chosen.config) == (("same_arch", other) if faster else ("default", default))
    assert len(fake.launches) == LAUNCHES + 1


class Matrix:
    """A float32 device matrix known by its ``__cuda_array_interface__`` only."""

    def __init__(self, shape, ptr) -> None:
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (ptr, False), "strides": None,
                                         "version": 3}


def test_the_transpose_op_is_guarded_too(fake, monkeypatch, db_url):
    """autotune.transpose's prepared launch (its own, not the launcher's): timed at its first
    call, then launching the default from its next one, the verdict in its plan's note."""
    from autotune.kernel.catalog import KERNELS
    from autotune.runtime.transpose.op import transpose_plan

    k = fake.kernel = KERNELS["smem_vec"]
    problem = Problem.of(k, (512, 256), "float32")

    def ms(c):
        return FakeLibcuda.launch_ms(*problem.geometry(c)[:2])

    default = k.default_config()
    slow = max(k.space().configs(), key=ms)
    assert ms(slow) > 1.1 * ms(default)
    shipped(monkeypatch, slow.as_dict(), kernel="smem_vec")
    x, out = Matrix((512, 256), 0x1000), Matrix((256, 512), 0x2000)
    for _ in range(2):
        autotune.transpose(x, kernel="smem_vec", db=db_url, out=out)
    chosen = transpose_plan(x, kernel="smem_vec", db=db_url).launcher.chosen
    assert (chosen.rung, chosen.config) == ("default", default)
    assert f"; same_arch: shipped config {slow.key} timed " in chosen.note and chosen.note.endswith(
        "here at first launch; the default kept")
    *timing, first, second = fake.launches
    block = problem.geometry(default).block
    scratch = {c["pointer"] for c in fake.calls if c["call"] == "alloc"}
    assert len(timing) == LAUNCHES and {c["out"] for c in timing} == scratch and len(scratch) == 1
    assert (first["block"], first["out"], first["src"]) == (block, 0x2000, 0x1000) and second["block"] == block


def test_a_copy_of_the_launcher_takes_the_verdict_without_timing_again(fake, histogram, monkeypatch, db_url):
    """A copy made with dataclasses.replace (as the transpose op makes, to extend the note)
    shares the guard: the first of the two launched is timed, the other takes its verdict, each
    keeping its own note."""
    shipped(monkeypatch, SLOW)
    g = autotune.compiled(histogram, {"n": N}, "uint8", db=db_url)
    copy = replace(g, chosen=replace(g.chosen, note="the copy's note"))
    copy(*arrays())
    g(*arrays())
    assert len(fake.launches) == LAUNCHES + 2 and fake.launches[-1]["block"] == (256, 1, 1)
    assert copy.chosen.rung == g.chosen.rung == "default"
    assert copy.chosen.note.startswith("the copy's note; same_arch: shipped config ")
    assert g.chosen.note.startswith("tuned for 1000 on NVIDIA H200 (same compute capability 9.0, same shape); "
                                    "same_arch: shipped config ")
    assert g.chosen.note.split("; ", 1)[1] == copy.chosen.note.split("; ", 1)[1]
