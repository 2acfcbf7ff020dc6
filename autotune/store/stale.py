"""The one definition of a stale result, used by ``autotune best``, ``list``, ``export`` and
:func:`autotune.lookup`.

A stored result is stale when it was tuned for something other than what would be built
today:

* its kernel's source hash differs from the current kernel's (the ``.cu`` or an include changed);
* its kernel's spec hash differs (the kernel's description changed: arguments, launch, dims,
  fixed macros or the names of the tunables);
* it was built by another nvcc than the one on PATH (compared only where one is: a machine
  without nvcc cannot tell);
* it was built with other compile flags than :func:`autotune.measure.compile.compile_flags`
  gives for its device's architecture today;
* its config's macros are no longer exactly the kernel's tunable macros.

Only a result whose kernel is known (the catalog's, or one loaded from its file) can be
judged; :func:`stale_reason` takes that kernel. :func:`partition` sorts stored results into
current, stale (with why) and unknown (no kernel to judge them by): the one sort that
``best``, ``list``, ``export``, the C header and ``lookup`` use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["KernelIdentity", "stale_reason", "current_nvcc", "summary", "left_out", "INCLUDE_STALE", "Verdict",
           "Partition", "partition"]

INCLUDE_STALE = "--include-stale"
"""The option of every command that leaves stale results out (``best``, ``report``, ``export``)."""


class KernelIdentity(Protocol):
    """What staleness needs of a kernel (a catalog kernel or one loaded from its file)."""

    name: str
    source_hash: str
    spec_hash: str
    tunables: tuple[str, ...]


def current_nvcc() -> str | None:
    """The version of the nvcc on PATH, or ``None`` where there is none (then nvcc is not compared)."""
    from autotune.errors import GPUUnavailableError
    from autotune.measure.device import nvcc_version

    try:
        return nvcc_version()
    except GPUUnavailableError:
        return None


def stale_reason(result: Any, kernel: KernelIdentity, nvcc_version: str | None) -> str | None:
    """Why ``result`` cannot be used with ``kernel`` and the toolchain of today, or ``None`` when
    it is current.

    Args:
        result: a stored result with ``source_hash``, ``spec_hash``, ``nvcc_version``,
            ``compile_flags``, ``compute_capability`` and ``config`` (a
            :class:`~autotune.store.records.BestRecord`).
        kernel: the current kernel of the result's name.
        nvcc_version: the nvcc of today (:func:`current_nvcc`); ``None``: not compared.

    Returns:
        One short phrase, e.g. ``"kernel source changed"``, ``"built with nvcc 12.8.93, not
        13.0.88"`` (the notes of ``best`` and ``lookup`` count results by it).
    """
    from autotune.measure.compile import compile_flags

    if result.source_hash != kernel.source_hash:
        return "kernel source changed"
    if result.spec_hash != kernel.spec_hash:
        return "kernel description changed"
    if nvcc_version is not None and result.nvcc_version != nvcc_version:
        return f"built with nvcc {result.nvcc_version}, not {nvcc_version}"
    flags = compile_flags("sm_" + result.compute_capability.replace(".", ""))
    if result.compile_flags != flags:
        return f"compile flags {result.compile_flags!r}, not {flags!r}"
    if {name for name, _ in result.config.macros} != set(kernel.tunables):
        return f"macros no longer those of {kernel.name}"
    return None


def summary(reasons: Iterable[str]) -> str:
    """``"3 stale results (1 built with nvcc 11.8.89, not 13.0.88, 2 kernel source changed)"``
    (empty for none)."""
    counts = Counter(reasons)
    total = sum(counts.values())
    if not total:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    return f"{total} stale result{'s' if total > 1 else ''} ({why})"


def left_out(reasons: Iterable[str], includes: str = "includes them") -> str:
    """The one sentence every command says of the stale results it left out: how many, why
    (:func:`summary`), and the option that includes them, e.g. ``"left out 2 stale results
    (2 kernel source changed); --include-stale shows them"`` (``includes``: what the option
    does with them: ``"shows them"``, ``"writes them too"``, ``"plots them"``). Empty for none.
    """
    text = summary(reasons)
    return f"left out {text}; {INCLUDE_STALE} {includes}" if text else ""


@dataclass(frozen=True)
class Verdict:
    """One stored result judged: ``reason`` says why it is stale (``None``: it is not);
    ``known``: its kernel is known, so it could be judged at all."""

    record: Any
    reason: str | None
    known: bool

    @property
    def current(self) -> bool:
        """Known and not stale: usable."""
        return self.known and self.reason is None


@dataclass(frozen=True)
class Partition:
    """Stored results sorted into current, stale and unknown, each in the order given."""

    verdicts: tuple[Verdict, ...]

    @property
    def current(self) -> list[Any]:
        """The usable results."""
        return [v.record for v in self.verdicts if v.current]

    @property
    def stale(self) -> list[Any]:
        """The stale results (see :attr:`reasons`)."""
        return [v.record for v in self.verdicts if v.reason is not None]

    @property
    def reasons(self) -> list[str]:
        """Why each stale result is stale, in order."""
        return [v.reason for v in self.verdicts if v.reason is not None]

    @property
    def unknown(self) -> list[Any]:
        """The results of kernels not given: they cannot be judged."""
        return [v.record for v in self.verdicts if not v.known]

    def summary(self) -> str:
        """:func:`summary` of the stale ones (empty for none)."""
        return summary(self.reasons)


def partition(records: Iterable[Any], kernels: Mapping[str, KernelIdentity], nvcc_version: str | None) -> Partition:
    """Judge each of ``records`` against the current kernel of its name in ``kernels``
    (:func:`stale_reason`); a record whose kernel is not there is unknown.

    Args:
        records: stored results (e.g. :class:`~autotune.store.records.BestRecord`), each with a
            ``kernel`` name and what :func:`stale_reason` reads.
        kernels: the current kernels by name (the catalog, or the one a user gave by its file).
        nvcc_version: today's nvcc (:func:`current_nvcc`); ``None``: not compared.
    """
    verdicts = []
    for r in records:
        k = kernels.get(r.kernel)
        verdicts.append(Verdict(r, None if k is None else stale_reason(r, k, nvcc_version), k is not None))
    return Partition(tuple(verdicts))
