"""One search over several GPUs: a worker process per GPU, all on the key's one Optuna study.

Every worker runs the one-GPU search (:func:`autotune.search.on_gpu.search_on_gpu`: its own
compile pool, strategy and search loop, with ``resume=True``) on the same study in the same
RDB storage, so they share what is measured, whatever database the URL names (SQLite on one
machine; PostgreSQL for several machines): before each config a worker tells its strategy
what the others measured, and skips configs in flight in their trials. Each worker binds its
own CUDA context to its GPU, stores its own search row, recording which GPU it is, and sends
its progress to the parent. The processes are :class:`autotune.measure.gpu_pool.GpuPool`'s, as
a workload's tuning on several GPUs are (:mod:`autotune.workload.pool`): ``spawn``ed (nothing
CUDA is inherited), their signals, deaths and share of the host's cores handled alike. What is
this module's own: the shared trial budget, the study, the seeds and the parts of a grid.

- Devices: ``--device 0,1`` or ``all``; every GPU must be of one model (the key: name,
  compute capability, SMs, memory, driver, CUDA), else the search is refused naming them:
  timings of different models never mix in one study.
- Trials: the ``--trials`` budget (configs measured) is the workers' together
  (:class:`SharedBudget`): each takes one before each config it measures, so a GPU that
  measures faster measures more and all end together (at one speed: ``n // k`` each, the
  shares the progress shows); a repeat of a config measured by any worker costs nothing;
  each worker's strategy seed is ``seed + i``. No config is measured twice: a worker claims
  each config as it writes its trial (:meth:`autotune.search.study.StoredStudy.start`).
- One host's cores are shared (:func:`per_gpu`): each worker's compile pool gets ``cores // k``
  nvcc runs (at a lower priority than the measuring processes) and proposes ``batch / k``
  configs at a time, so the study keeps as many proposals in flight as one GPU would; each
  starts compiling (the default and, in a new study, its first batch) as its measuring child
  starts. A grid (``sweep``,
  or a search whose trials cover the space: :func:`autotune.search.on_gpu.whole_space`) gives
  worker ``i`` of ``k`` the configs at positions ``i`` modulo ``k`` of the space's order first
  (``part`` of :class:`autotune.search.tuner.Tuner`): the workers measure disjoint configs
  (without it, two GPUs walking one order measured 43 of smem_pad's 54 configs twice).
- SIGINT (Ctrl-C) or SIGTERM: the parent passes the signal on to every worker still running
  (each fails its measurement in flight, or starts no other, and marks its search
  ``interrupted``: :mod:`autotune.base.signals`), waits, and re-raises. Workers start with
  both signals blocked and unblock them once their handlers are in place, so a signal that
  comes during their start-up is kept pending, never lost nor a traceback. A parent killed
  without a word (SIGKILL) takes its workers with it (Linux ``PR_SET_PDEATHSIG``).
- Each worker measures in a child process of its own (:mod:`autotune.measure.isolation`): a
  config that crashes or hangs fails its trial (``crash``, ``timeout``) and that worker goes on.
- A worker that dies without a word is reported ``died`` with its exit code, and leaves at
  most its trial in flight and the next one it claimed meanwhile (nothing measured) RUNNING;
  the others fail them once their
  heartbeat has stopped (Optuna's ``fail_stale_trials``, once a heartbeat interval) and go on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from autotune.kernel.problem import ProblemRef
from autotune.measure import benchmark, device
from autotune.measure.device import DeviceInfo
from autotune.measure.gpu_pool import Died, GpuPool, Worker, compile_share
from autotune.errors import AutotuneError, InvalidInputError
from autotune.search.options import MAX_SEED, SearchOptions

__all__ = ["Plan", "SharedBudget", "WorkerReport", "check_one_model", "parse_devices", "per_gpu", "run_workers",
           "split_trials"]

@dataclass(frozen=True)
class Plan:
    """What every worker searches: the problem, as its
    :class:`~autotune.kernel.problem.ProblemRef` (each worker resolves it, loading the kernel
    file), the search's options (the whole budget: each worker takes its share of
    ``trials`` and of ``batch``, ``seed + i``, and ``resume``) and beside them ``db``, the
    results database's URL as the parent resolved it (every worker writes its trials to the
    database the parent opened, whatever its environment says). ``arch``: the GPUs' nvcc
    target (the parent queried them), so each worker starts compiling as its measuring child
    starts; ``fresh``: the study held no trial when the search began, so each worker's
    strategy may propose its first batch before reading it."""

    problem: ProblemRef
    options: SearchOptions
    db: str
    arch: str | None = None
    fresh: bool = False


@dataclass
class WorkerReport:
    """What one GPU's worker reported (``trials``: its share of the budget, as it would measure
    at the others' speed): ``state`` is ``starting``, ``running``, ``done``,
    ``interrupted``, ``error`` (``message`` says why) or ``died`` (no report; exit code in
    ``message``); ``counts`` its trials by outcome status; ``best`` its best figure so far
    (e.g. ``2873 GB/s``) and ``best_config`` that config."""

    ordinal: int
    trials: int
    state: str = "starting"
    name: str = ""
    uuid: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    best: str | None = None
    best_config: str | None = None
    stopped: str | None = None
    search_id: int | None = None
    clock_warning: str | None = None
    message: str | None = None


def parse_devices(spec: str, count: Callable[[], int] | None = None) -> list[int]:
    """The ordinals of ``--device``: ``"1"``, ``"0,1"`` or ``"all"``.

    ``count`` gives the number of CUDA devices (default: :func:`autotune.measure.device.device_count`);
    it is asked only for ``all`` and for lists of several ordinals.

    Raises:
        InvalidInputError: empty, not integers, negative, repeated or out of range.
        GPUUnavailableError: no CUDA driver (from ``count``).
    """
    text = spec.strip()
    allowed = "give an ordinal 0, 1, ..., a list such as 0,1, or all"
    if text == "all":
        n = (count or device.device_count)()
        if n == 0:
            raise InvalidInputError("--device all: no CUDA device is present")
        return list(range(n))
    parts = [p.strip() for p in text.split(",")]
    if not text or "" in parts:
        raise InvalidInputError(f"--device {spec!r} is not allowed; {allowed}")
    try:
        ordinals = [int(p) for p in parts]
    except ValueError:
        raise InvalidInputError(f"--device {spec!r} is not allowed; {allowed}") from None
    for o in ordinals:
        if o < 0:
            raise InvalidInputError(f"--device {o} is not allowed; {allowed}")
    if len(set(ordinals)) != len(ordinals):
        raise InvalidInputError(f"--device {spec!r} names a GPU twice; give each ordinal once")
    if len(ordinals) > 1:
        n = (count or device.device_count)()
        bad = [o for o in ordinals if o >= n]
        if bad:
            raise InvalidInputError(f"--device {bad[0]} is out of range; allowed: 0..{n - 1}")
    return ordinals


def _model(info: DeviceInfo) -> tuple:
    return (info.name, info.compute_capability, info.sm_count, info.total_memory, info.driver_version,
            info.cuda_version)


def check_one_model(infos: list[DeviceInfo]) -> None:
    """Refuse GPUs of different models (their timings must not share a study).

    Raises:
        InvalidInputError: naming every GPU with its model.
    """
    if len({_model(i) for i in infos}) > 1:
        listed = "; ".join(f"{i.ordinal}: {i.name} sm_{i.compute_capability.replace('.', '')} {i.sm_count} SMs "
                           f"{i.total_memory / 2**30:.0f} GiB driver {i.driver_version}" for i in infos)
        raise InvalidInputError(f"--device mixes GPU models ({listed}); one search tunes one model: "
                                "run one search per model")


def split_trials(n_trials: int, workers: int) -> list[int]:
    """The trial budget of each worker: ``n_trials`` split as evenly as possible."""
    return [n_trials // workers + (i < n_trials % workers) for i in range(workers)]


class SharedBudget:
    """The configs the workers of one search may still measure, in a ``multiprocessing.Value``
    they all hold (passed to each worker as it is started).

    ``take()`` one before measuring a config (``False``: none left), ``give_back()`` one not
    used (its config was claimed elsewhere), ``left()`` those not taken."""

    def __init__(self, value) -> None:
        self._value = value

    def left(self) -> int:
        """Configs not taken yet."""
        return self._value.value

    def take(self) -> bool:
        """Take one; ``False`` when none is left."""
        with self._value.get_lock():
            if self._value.value <= 0:
                return False
            self._value.value -= 1
            return True

    def give_back(self) -> None:
        """Return one taken and not measured."""
        with self._value.get_lock():
            self._value.value += 1


def per_gpu(options: SearchOptions, gpus: int) -> tuple[SearchOptions, int]:
    """What each of ``gpus`` workers on one host runs with: ``options`` with its share of the
    batch, and its share of the host's compile workers
    (:func:`autotune.measure.gpu_pool.compile_share`: ``AUTOTUNE_COMPILE_WORKERS`` or the CPU
    count; 0 stays 0), each at least 1.

    The shares keep what one GPU would do: ``gpus`` pools of ``cores / gpus`` nvcc runs use
    the host's cores once (two full-size pools ran twice as many nvcc as cores, and the
    measuring processes waited for the CPU), and ``gpus`` workers proposing ``batch / gpus``
    configs at a time keep as many proposals in flight in the study (asked, not yet
    measured) as one GPU with batches of ``batch``: the search learns as often per config.
    """
    batch = max(1, options.batch_size() // gpus)
    return options.replace(batch=batch), compile_share(gpus)


def run_workers(plan: Plan, ordinals: list[int], on_report: Callable[[WorkerReport], None]) -> list[WorkerReport]:
    """Run one worker per GPU in ``ordinals`` until all have ended (the processes, their
    signals and their deaths: :class:`autotune.measure.gpu_pool.GpuPool`); ``on_report`` is
    called with a worker's report whenever it changes. The GPU benchmark is
    :func:`autotune.measure.benchmark.open_benchmark` as it is when this is called (tests replace it).

    Raises:
        KeyboardInterrupt: after every worker was stopped (see the module doc).
    """
    pool = GpuPool(ordinals)
    reports = {o: WorkerReport(o, n) for o, n in zip(ordinals, split_trials(plan.options.trials, len(ordinals)))}
    shared, _ = per_gpu(plan.options, len(ordinals))
    budget = SharedBudget(pool.context.Value("i", plan.options.trials))

    def args(i: int, _ordinal: int) -> tuple:
        seed = None if plan.options.seed is None else (plan.options.seed + i) % (MAX_SEED + 1)  # stays a seed
        mine = replace(plan, options=shared.replace(seed=seed, resume=True))
        return mine, benchmark.open_benchmark, (i, len(ordinals)), budget

    def running(ordinal: int) -> bool:
        return reports[ordinal].state in ("starting", "running")

    def apply(ordinal: int, event) -> None:
        r = reports[ordinal]
        if isinstance(event, Died):  # a worker killed without a word
            r.state, r.message = "died", f"exit code {event.exitcode}"
        else:
            _apply(r, event)
        on_report(r)

    with pool.running(_worker, args, last=apply):
        while any(running(o) for o in ordinals):
            if (got := pool.next_event(owes=running)) is not None:
                apply(*got)
    return [reports[o] for o in ordinals]


def _apply(r: WorkerReport, event: tuple) -> None:
    kind, data = event
    if kind == "start":
        r.state, r.name, r.uuid = "running", data["name"], data["uuid"]
    elif kind == "trial":
        r.search_id = data["search_id"]
        r.counts[data["status"]] = r.counts.get(data["status"], 0) + 1
        r.best, r.best_config = data["best"], data["best_config"]
    elif kind == "done":
        r.state, r.stopped, r.clock_warning = "done", data["stopped"], data["clock_warning"]
    else:  # interrupted, error
        r.state, r.message = kind, data.get("message")


def _worker(worker: Worker, plan: Plan, open_benchmark, part: tuple[int, int] = (0, 1),
            budget: SharedBudget | None = None) -> None:
    """Body of one worker process (:class:`autotune.measure.gpu_pool.GpuPool` starts it, its
    signals handled, its share of the host's compile workers set: :func:`per_gpu`): search
    ``plan`` on the worker's GPU into the shared study, as worker ``part = (i, n)`` of n
    (:func:`autotune.search.on_gpu.search_on_gpu`, as on one GPU, without the re-timing),
    measuring while ``budget`` lasts. Its end is an event: ``done``, ``interrupted`` (a
    signal), ``error`` (with its message)."""
    try:
        _search_on(plan, worker, open_benchmark, part, budget)
    except KeyboardInterrupt:
        worker.send(("interrupted", {}))
    except AutotuneError as exc:
        worker.send(("error", {"message": str(exc)}))
    except Exception as exc:  # noqa: BLE001  (a CUDA or driver failure: reported, the others go on)
        worker.send(("error", {"message": f"{type(exc).__name__}: {exc}"}))


def _search_on(plan: Plan, worker: Worker, open_benchmark, part: tuple[int, int], budget=None) -> None:
    import optuna

    from autotune.measure.figures import headline
    from autotune.search.on_gpu import search_on_gpu

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # the parent shows the progress
    problem = plan.problem.resolve()

    def on_start(started) -> None:
        worker.send(("start", {"name": started.bench.device.name, "uuid": started.bench.device.uuid}))

    def on_trial(outcome, result) -> None:
        best = result.best
        worker.send(("trial", {"status": outcome.status, "search_id": result.search_id,
                               "best": headline(problem, best[1]) if best else None,
                               "best_config": best[0].key if best else None}))

    space = problem.kernel.space(plan.options.space)
    result = search_on_gpu(problem, worker.ordinal, space, plan.options, db=plan.db, part=part,
                           open_benchmark=open_benchmark, precheck=False, retime=False, arch=plan.arch,
                           fresh=plan.fresh, budget=budget, on_start=on_start,
                           on_trial=on_trial)  # the parent queried every GPU
    worker.send(("done", {"stopped": result.stopped, "clock_warning": result.clock_warning}))
