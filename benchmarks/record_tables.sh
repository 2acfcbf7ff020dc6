#!/usr/bin/env bash
# Issue 22, recorded tables: measure every valid config of a space on the GPU (a grid search,
# bounded in time and resumable), then write the study's table as CSV (config,median_ms; an
# empty median is a failed config) for the CPU replays of benchmarks/large_space_search.py.
#   bash benchmarks/record_tables.sh KERNEL SPACE DIMS DTYPE SECONDS [DB]   (SPACE "": the kernel file's own space)
#   e.g. bash benchmarks/record_tables.sh matmul_warp benchmarks/spaces/matmul_warp_1332.toml m=2048,n=2048,k=2048 float32 400
# Output: $OUT (or benchmarks/results)/<date>_<gpu>_table_<kernel>_<dims>_<dtype>.csv, and the
# search's own output (its per-phase totals) in ..._record_<kernel>_<dims>_<dtype>.txt.
# Run it again with the same DB to go on where a bounded run stopped (--resume).
# COSTS=1 also writes what each config cost the host and the GPU (issue 47, target 5: a replay
# that charges each config its own seconds): every config is built (an empty cubin cache), an
# nvcc on PATH ahead of the real one records each run's command line and CPU seconds (user +
# system of nvcc and its cicc and ptxas, bash's `times`), and ..._costs.csv gets, per config,
# nvcc_cpu_s, the verify_ms and time_ms of its trial (autotune_trials.phases) and its
# median_ms; its first line names the compile workers (AUTOTUNE_COMPILE_WORKERS, else the CPUs).
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
scratch=""
if [[ ${COSTS:-0} == 1 ]]; then  # every config built, each nvcc run's command line and CPU seconds logged
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  source "$(cd "$(dirname "$0")" && pwd)/nvcc_cpu.sh"
  nvcc_cpu_wrapper "$scratch" "$scratch/nvcc_cpu.log"
  export AUTOTUNE_CACHE_DIR="$scratch/cache" PATH="$scratch/bin:$PATH"
fi
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
if [[ -n $scratch ]]; then
python3 - "$kernel" "$space" "$dtype" "$db" "$scratch/nvcc_cpu.log" "${stem}_costs.csv" <<'PY' | tee -a "${stem}_record.txt"
import csv, json, os, re, sqlite3, statistics, sys
from autotune.kernel.catalog import resolve_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.measure.compile import nvcc_options
kernel_ref, space, dtype, db, log, path = sys.argv[1:]
kernel = resolve_kernel(kernel_ref)
dt = get_dtype(dtype)
by_options = {tuple(nvcc_options(kernel, c, dt)): c for c in kernel.space(space or None).configs()}
cpu = {}
for line in open(log):
    *args, times = line.rstrip("\n").split("\t")
    # nvcc -cubin -arch=ARCH -Xptxas -v OPTIONS... -o OUT SRC (autotune.measure.compile._nvcc)
    config = by_options.get(tuple(args[4:-3]))
    if config is not None:
        cpu[config.key] = round(sum(int(a) * 60 + float(b) for a, b in re.findall(r"(\d+)m([\d.]+)s", times)), 3)
with sqlite3.connect(db) as con:
    rows = con.execute("select config_key, median_ms, phases from autotune_trials").fetchall()
trial = {}
for key, ms, phases in rows:
    trial.setdefault(key, (ms, json.loads(phases) if phases else {}))
workers = os.environ.get("AUTOTUNE_COMPILE_WORKERS") or str(os.cpu_count())
with open(path, "w", newline="") as f:
    f.write(f"# {workers} compile workers; nvcc_cpu_s: user + system seconds of the config's nvcc run\n")
    w = csv.writer(f)
    w.writerow(["config", "nvcc_cpu_s", "verify_ms", "time_ms", "median_ms"])
    for key in sorted(set(cpu) | set(trial)):
        ms, phases = trial.get(key, (None, {}))
        w.writerow([key, cpu.get(key, ""), phases.get("verify", ""), phases.get("time", ""), "" if ms is None else ms])
seen = list(cpu.values())
print(f"# {len(cpu)} configs' nvcc runs in {path.rsplit('/', 1)[-1]}: median {statistics.median(seen):.2f} CPU s, "
      f"mean {statistics.mean(seen):.2f}, max {max(seen):.2f}" if seen else "# no nvcc run matched a config")
PY
fi
