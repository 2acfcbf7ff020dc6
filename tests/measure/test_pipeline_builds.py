"""What the compile pool makes of each config, with a fake compiler (no nvcc, no GPU): configs
that cannot launch are refused before nvcc, slow compiles are cut at a deadline taken from
the compiles seen so far, and each build carries the identity of its binary (issue 47)."""

import os
import stat

import pytest

from autotune.errors import TrialFailed
from autotune.kernel.catalog import KERNELS
from autotune.kernel.config import Config
from autotune.kernel.dtypes import get_dtype
from autotune.kernel.problem import Problem
from autotune.measure import compile as compiling
from autotune.measure.compile import COMPILE_DEADLINE
from autotune.measure.pipeline import DEADLINE_FLOOR_S, CompileDeadline, compile_ahead

K, F32 = KERNELS["smem_pad"], get_dtype("float32")
PROBLEM = Problem.of(K, (1024, 1024), F32)


class FakeCompiler:
    """``build_cubin`` that takes ``seconds(config)`` on a fake clock (advanced by it) and, as
    nvcc under a deadline does, is stopped past ``deadline``; its cubin's bytes are
    ``cubin(config)``. ``calls`` lists the configs it was asked to build."""

    def __init__(self, seconds, cubin=lambda c: c.key.encode()):
        self.seconds, self.cubin = seconds, cubin
        self.now = 0.0
        self.calls: list[Config] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, kernel, config, dtype, arch, nvcc="nvcc", deadline=None):
        self.calls.append(config)
        took = self.seconds(config)
        if deadline is not None and took > deadline:
            self.now += deadline
            raise TrialFailed("timeout", f"{COMPILE_DEADLINE}: nvcc ran past {deadline:.1f} s")
        self.now += took
        return self.cubin(config), {"registers": 32, "shared_bytes": 0}, False


def built_all(fake, configs, monkeypatch, deadline=None, problem=PROBLEM):
    monkeypatch.setattr(compiling, "build_cubin", fake)
    with compile_ahead(K, F32, "sm_90", configs, n_workers=1, problem=problem, deadline=deadline,
                       clock=fake.clock) as ahead:
        assert ahead.wait(timeout=60)
        return ahead, {c: ahead.built(c) for c in configs}


def test_the_deadline_waits_for_a_median_then_is_three_times_it_above_a_floor():
    deadline = CompileDeadline()
    for _ in range(4):
        deadline.seen(3.0)
    assert deadline.limit() is None  # four compiles say little
    deadline.seen(40.0)
    assert deadline.limit() == DEADLINE_FLOOR_S  # 3 x 3 s is under the floor
    for _ in range(5):
        deadline.seen(5.0)
    assert deadline.limit() == pytest.approx(15.0)  # median 5 s


def test_a_slow_compile_tail_is_cut_and_counted(monkeypatch):
    """What the deadline costs on a space whose compiles take 4 s but a tail of 4 configs
    60 s: those 4 are cut at 12 s each (failed trials a later run may retry), 4 x 48 s of
    nvcc are saved, and no config of the bulk is cut."""
    configs = K.space().configs()
    slow = set(configs[10::12][:4])
    fake = FakeCompiler(lambda c: 60.0 if c in slow else 4.0)
    ahead, built = built_all(fake, configs, monkeypatch, deadline=CompileDeadline())
    cut = {c for c, b in built.items() if b.failure is not None}
    assert cut == slow and ahead.deadline.cut == 4
    assert all(built[c].failure.status == "timeout" and built[c].failure.reason.startswith(COMPILE_DEADLINE)
               for c in cut)
    spent = fake.now
    uncut = sum(60.0 if c in slow else 4.0 for c in configs)
    assert uncut - spent == pytest.approx(4 * (60.0 - 12.0))


def test_without_a_deadline_nothing_is_cut(monkeypatch):
    configs = K.space().configs()[:12]
    fake = FakeCompiler(lambda c: 600.0 if c == configs[-1] else 3.0)
    _, built = built_all(fake, configs, monkeypatch, deadline=None)
    assert all(b.failure is None for b in built.values())


def test_a_config_that_cannot_launch_is_refused_before_nvcc(monkeypatch):
    """A block of 64 x 32 = 2048 threads, and a tile whose dynamic shared memory is over
    sm_90's 227 KiB: the launch expressions say so, nvcc never runs for them."""
    wide = Config.of("smem_pad", {**K.defaults, "TILE_DIM": 64, "BLOCK_ROWS": 32})
    huge = Config.of("smem_pad", {**K.defaults, "TILE_DIM": 256, "BLOCK_ROWS": 4, "UNROLL": 1})
    fine = K.default_config()
    fake = FakeCompiler(lambda c: 1.0)
    _, built = built_all(fake, [wide, huge, fine], monkeypatch)
    assert fake.calls == [fine]
    assert built[wide].failure.status == "resources" and "2048 threads > 1024 threads per block" in built[wide].failure.reason
    assert built[huge].failure.status == "resources" and "dynamic, before the static" in built[huge].failure.reason
    assert built[fine].failure is None and built[fine].identity


def test_the_same_cubin_launched_alike_has_one_identity(monkeypatch):
    """A macro the binary ignores (here: the fake's cubin ignores DIAGONAL, which no launch
    expression reads) gives one identity; the same cubin launched with another geometry (its
    block, or IPAD's shared memory) is another."""
    a = K.default_config()
    b = Config.of("smem_pad", {**a.as_dict(), "DIAGONAL": 1 - a.as_dict()["DIAGONAL"]})
    c = Config.of("smem_pad", {**a.as_dict(), "BLOCK_ROWS": 4 if a.as_dict()["BLOCK_ROWS"] != 4 else 8})
    fake = FakeCompiler(lambda _: 1.0, cubin=lambda _: b"one cubin")
    _, built = built_all(fake, [a, b, c], monkeypatch)
    assert built[a].identity == built[b].identity
    assert built[c].identity != built[a].identity
    _, plain = built_all(fake, [a], monkeypatch, problem=None)  # no problem: no geometry, no identity
    assert plain[a].identity is None


def test_a_config_never_handed_to_the_pool_is_unknown(monkeypatch):
    fake = FakeCompiler(lambda c: 1.0)
    ahead, _ = built_all(fake, [K.default_config()], monkeypatch)
    assert ahead.built(K.space().configs()[-1]) is None


def test_nvcc_past_its_deadline_is_stopped_and_nothing_is_cached(tmp_path, monkeypatch):
    """The real build path with a stand-in nvcc that never ends: it is killed (with the
    processes it started) at the deadline, the failure says ``compile deadline``."""
    fake_nvcc = tmp_path / "bin" / "nvcc"
    fake_nvcc.parent.mkdir()
    fake_nvcc.write_text("#!/bin/sh\n"
                         'if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 99.0, V99.0.1"; exit 0; fi\n'
                         f'sleep 300 & echo $! > {tmp_path}/child\nwait\n')
    fake_nvcc.chmod(fake_nvcc.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(TrialFailed) as failed:
        compiling.build_cubin(K, K.default_config(), F32, "sm_90", nvcc=str(fake_nvcc), deadline=0.5)
    assert failed.value.status == "timeout" and failed.value.reason.startswith(COMPILE_DEADLINE)
    child = (tmp_path / "child").read_text().strip()
    assert _ends(child)  # killed with nvcc (its process group), not left running
    assert not list((tmp_path / "cubins").rglob("*.cubin"))


def _ends(pid: str, within_s: float = 30.0) -> bool:
    """Whether process ``pid`` is gone or a zombie (killed, not yet reaped) within ``within_s``."""
    import time

    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
    return False


def test_ready_says_which_builds_have_ended_without_waiting(monkeypatch):
    import threading

    from autotune.measure.pipeline import Feed

    slow, quick, never = K.space().configs()[:3]
    release = threading.Event()

    def build(kernel, config, dtype, arch, nvcc="nvcc", deadline=None):
        if config == slow:
            assert release.wait(60)
        return config.key.encode(), {"registers": 32, "shared_bytes": 0}, False

    monkeypatch.setattr(compiling, "build_cubin", build)
    feed = Feed()
    with compile_ahead(K, F32, "sm_90", feed, n_workers=2, problem=PROBLEM) as ahead:
        assert not ahead.ready(slow)  # not handed to the pool yet
        feed.put([slow, quick])
        assert ahead.wait(count=1, timeout=60)
        assert ahead.done == [quick] and ahead.ready(quick) and not ahead.ready(slow)
        release.set()
        assert ahead.wait(count=2, timeout=60)
        assert ahead.ready(slow) and not ahead.ready(never)


def test_a_config_given_again_is_built_once(monkeypatch):
    """A grid's batches are fed ahead, then put again as the search proposes them: each is
    built once (a second build, a cache hit queued behind the others, held up the
    measurement of the first config until the pool drained what was fed before it)."""
    a, b = K.space().configs()[:2]
    fake = FakeCompiler(lambda c: 1.0)
    ahead, built = built_all(fake, [a, b, a, b, a], monkeypatch)
    assert fake.calls == [a, b] and ahead.done == [a, b]
    assert ahead.ready(a) and ahead.ready(b) and built[a].identity and built[b].identity
