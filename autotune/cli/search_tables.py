"""What ``autotune search`` and ``sweep`` print when the trials are done: the study's top
configs, the re-timing that crowned the winner, the stored best; as tables, JSON or CSV.

CSV is the top configs, each with its re-timing where it had one (one table); JSON is a
document with the key, the run's counts, the top configs, the re-timing and the stored best.
"""

from __future__ import annotations


from autotune.measure.figures import duration, figure, unit
from autotune.search.outcome import SearchResult
from autotune.store.records import certificate
from .output import Column, Format, config_object, dumps, emit, rate

__all__ = ["top_rows", "print_tables"]

PCT = {"pct_memcpy": "% memcpy", "pct_copy": "% bound"}


def top_rows(records, result: SearchResult, problem) -> list[dict]:
    """The top configs (stored ``ok`` trials, fastest first) of ``problem`` as dicts, each with
    its re-timing (pooled ms, figure, spread, rounds, tie) where it was re-timed."""
    d = result.decision
    retimed = {r.config.key: r for r in result.retimings}
    paired = {p.config.key: _vs(p) for p in d.paired} if d is not None else {}
    rows = []
    for rank, t in enumerate(records, 1):
        r = retimed.get(t.config.key)
        rows.append({"rank": rank, "config": t.config.key, "median_ms": t.median_ms, "min_ms": t.min_ms,
                     "max_ms": t.max_ms, "gflops": t.gflops, "gbps": t.gbps, "pct_memcpy": t.pct_memcpy,
                     "pct_copy": t.pct_copy, "registers": t.registers, "shared_bytes": t.shared_bytes,
                     "occupancy": t.occupancy, "samples": t.samples, "ci_low_ms": t.ci_low_ms,
                     "ci_high_ms": t.ci_high_ms, "ci_pct": _ci_pct(t), "energy_j": t.energy_j, "sm_mhz": t.sm_mhz,
                     "pooled_ms": r and r.pooled_median_ms,
                     "pooled_figure": r and figure(problem, r.pooled_median_ms),
                     "spread_pct": r and 100 * r.spread, "rounds_ms": r and list(r.round_medians_ms),
                     "tie": r and d and (("winner" if r is d.winner else "yes") if r in d.tie_group else ""),
                     "vs_fastest": r and d and paired.get(t.config.key)})
    return rows


def _ci_pct(t) -> float | None:
    """Half the width of a trial's 95 % CI in % of its median (``None``: not stored)."""
    if t.ci_low_ms is None or t.ci_high_ms is None or not t.median_ms:
        return None
    return 50.0 * (t.ci_high_ms - t.ci_low_ms) / t.median_ms


def _vs(p) -> dict:
    return {"ratio": p.ratio, "low": p.low, "high": p.high, "tied": p.tied}


def _pct(v: dict) -> str:
    """``+1.20% (+0.90 .. +1.50)``: a paired ratio against the fastest and its CI."""
    if v["ratio"] == 1.0 and v["low"] == v["high"] == 1.0:
        return "fastest"
    return f"{100 * (v['ratio'] - 1):+.2f}% ({100 * (v['low'] - 1):+.2f} .. {100 * (v['high'] - 1):+.2f})"


def _top_columns(rows: list[dict], kern) -> list[Column]:
    get = lambda key: lambda row: row[key]  # noqa: E731
    figure_key = "gflops" if kern.objective.flops else "gbps"
    has = {k: any(row[k] is not None for row in rows) for k in ("gflops", "gbps", "pct_memcpy", "pct_copy")}
    return [Column("#", "rank", get("rank"), right=True),
            Column("median", "median_ms", get("median_ms"), text=duration, right=True),
            Column("min", "min_ms", get("min_ms"), text=duration, right=True, wide=True),
            Column("max", "max_ms", get("max_ms"), text=duration, right=True, wide=True),
            *[Column(name, key, get(key), text=rate, right=True, wide=key != figure_key)
              for key, name in (("gflops", "GFLOP/s"), ("gbps", "GB/s")) if has[key]],
            *[Column(name, key, get(key), text=lambda v: f"{v:.1f}", right=True, wide=key == "pct_copy")
              for key, name in PCT.items() if has[key]],
            Column("regs", "registers", get("registers"), right=True),
            Column("smem B", "shared_bytes", get("shared_bytes"), right=True, wide=True),
            Column("occupancy", "occupancy", get("occupancy"), text=lambda v: f"{100 * v:.0f} %", right=True),
            Column("n", "samples", get("samples"), right=True, wide=not any(row["samples"] for row in rows)),
            Column("95% CI", "ci_pct", get("ci_pct"), text=lambda v: f"±{v:.2f}%", right=True,
                   wide=not any(row["ci_pct"] is not None for row in rows)),
            Column("J/launch", "energy_j", get("energy_j"), text=lambda v: f"{v:.4g}", right=True,
                   wide=not any(row["energy_j"] is not None for row in rows)),
            Column("SM MHz", "sm_mhz", get("sm_mhz"), right=True, wide=True),
            Column("CI low", "ci_low_ms", get("ci_low_ms"), table=False),
            Column("CI high", "ci_high_ms", get("ci_high_ms"), table=False),
            Column("config", "config", get("config"), long=True)]


def _retiming_columns(kern) -> list[Column]:
    get = lambda key: lambda row: row[key]  # noqa: E731
    u = unit(kern)
    return [Column("#", "rank", get("rank"), right=True),
            Column("pooled", "pooled_ms", get("pooled_ms"), text=duration, right=True),
            Column(u, "pooled_figure", get("pooled_figure"), text=lambda v: rate(v, u), right=True),
            Column("spread %", "spread_pct", get("spread_pct"), text=lambda v: f"{v:.2f}", right=True),
            Column("tie group", "tie", get("tie")),
            Column("vs fastest, paired", "vs_fastest", get("vs_fastest"), text=_pct, right=True),
            Column("config", "config", get("config"), long=True),
            Column("rounds", "rounds_ms", get("rounds_ms"), text=lambda v: " ".join(duration(m) for m in v),
                   long=True, wide=True, breaks=" ")]


def print_tables(console, rows: list[dict], result: SearchResult, kern, fmt: Format, wide: bool,
                 document: dict) -> None:
    """The top configs and the re-timing on ``console`` in ``fmt`` (JSON: ``document`` with
    them added)."""
    top = _top_columns(rows, kern)
    if fmt is Format.csv:
        extra = [c for c in _retiming_columns(kern) if c.key not in ("rank", "config")]
        emit(console, rows, top + extra, fmt)
        return
    retimed = sorted((r for r in rows if r["pooled_ms"] is not None), key=lambda r: r["pooled_ms"])
    if fmt is Format.json:
        d = result.decision
        configs = lambda found: [{**r, "config": config_object(r["config"])} for r in found]  # noqa: E731
        document = {**document, "top": configs(rows),
                    "retiming": None if d is None else {"winner": d.winner.config.as_dict(),
                                                        "fastest": d.fastest.config.as_dict(),
                                                        "tie_group": [r.config.as_dict() for r in d.tie_group],
                                                        "rounds": len(d.winner.round_medians_ms),
                                                        "tied": d.tied, "certificate": certificate(d),
                                                        "configs": configs(retimed)}}
        console.print(dumps(document), markup=False, highlight=False, soft_wrap=True)
        return
    emit(console, rows, top, fmt, wide=wide, title=f"top {len(rows)} configs of the study")
    d = result.decision
    if d is None:
        return
    tie = "" if d.winner is d.fastest else (f" (statistically tied with the fastest, {d.fastest.config.key}; "
                                            "rule: fewer threads, then less shared memory)")
    ranked = [{**r, "rank": i} for i, r in enumerate(retimed, 1)]
    title = (f"re-timing of the top {len(result.retimings)} configs, interleaved over "
             f"{len(d.winner.round_medians_ms)} rounds: winner {d.winner.config.key}{tie}")
    console.print()
    emit(console, ranked, _retiming_columns(kern), fmt, wide=wide, title=title)
    if d.tied:
        console.print(f"statistically tied (the paired 95% CI of the time ratio holds 1, or within the spread): "
                      f"{', '.join(r.config.key for r in d.tie_group)}; the rule chose {d.winner.config.key}",
                      markup=False)  # wrapped at spaces: a config stays whole
