#!/usr/bin/env bash
# Issue 22, recorded tables: measure every valid config of a space on the GPU (a grid search,
# bounded in time and resumable), then write the study's table as CSV (config,median_ms; an
# empty median is a failed config) for the CPU replays of benchmarks/large_space_search.py.
#   bash benchmarks/record_tables.sh KERNEL SPACE DIMS DTYPE SECONDS [DB]   (SPACE "": the kernel file's own space)
#   e.g. bash benchmarks/record_tables.sh matmul_warp benchmarks/spaces/matmul_warp_1332.toml m=2048,n=2048,k=2048 float32 400
# Output: $OUT (or benchmarks/results)/<date>_<gpu>_table_<kernel>_<dims>_<dtype>.csv, and the
# search's own output (its per-phase totals) in ..._record_<kernel>_<dims>_<dtype>.txt.
# Run it again with the same DB to go on where a bounded run stopped (--resume).
set -euo pipefail
kernel=$1 space=$2 dims=$3 dtype=$4 seconds=$5
out=${OUT:-$(cd "$(dirname "$0")" && pwd)/results}
db=${6:-$out/record_${kernel##*/}.db}
gpu=$(python3 -c "import pycuda.driver as d; d.init(); print(d.Device(0).name().replace(' ', '_'))")
name=$(python3 -c "import sys; from autotune.kernel.catalog import resolve_kernel; print(resolve_kernel(sys.argv[1]).name)" "$kernel")
stem="$out/$(date -u +%F)_${gpu}_${name}_$(echo "$dims" | tr ',=' '_-')_${dtype}"
count=$(python3 - "$kernel" "$space" <<'PY'
import sys
from autotune.kernel.catalog import resolve_kernel
from autotune.search.proposals import check_grid
print(check_grid(resolve_kernel(sys.argv[1]).space(sys.argv[2] or None)))
PY
)
start=$(date +%s.%N)
python3 -m autotune search --kernel "$kernel" ${space:+--space "$space"} --dims "$dims" --dtype "$dtype" --sampler grid \
    --trials "$count" --timeout "$seconds" --resume --top-k 1 --rounds 1 --db "sqlite:///$db" \
    2>&1 | tee -a "${stem}_record.txt" | tail -n 6
end=$(date +%s.%N)
python3 - "$db" "${stem}_table.csv" "$count" "$start" "$end" <<'PY' | tee -a "${stem}_record.txt"
import csv, sqlite3, sys
db, path, count, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
with sqlite3.connect(db) as con:
    rows = con.execute("select config_key, status, median_ms from autotune_trials").fetchall()
table = {}
for key, status, ms in rows:
    table.setdefault(key, ms if status == "ok" else None)
with open(path, "w", newline="") as f:
    csv.writer(f).writerows([["config", "median_ms"]] + [[k, "" if v is None else v] for k, v in sorted(table.items())])
print(f"# {len(table)} of {count} valid configs in {path.rsplit('/', 1)[-1]} "
      f"({sum(v is None for v in table.values())} failed); this run's wall time {end - start:.1f} s")
PY
