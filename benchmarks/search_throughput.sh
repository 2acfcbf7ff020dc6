#!/usr/bin/env bash
# Issue 22, target 1: configs measured per second by a guided search on a large space, the
# batch of proposals compiling on every core while the GPU measures the batch before.
#   bash benchmarks/search_throughput.sh [SIZE] [TRIALS] [BATCH]
# Each run starts from a fresh SQLite database and an empty cubin cache (AUTOTUNE_CACHE_DIR),
# so every config is compiled: matmul_warp SIZE^3 float32 (default 4096, 100 trials, batches
# of 16) with tpe, with a grid of the same budget, tpe with batches of 1 (every proposal
# compiled on the critical path, as before batches: 20 trials), and --op transpose.
# Prints per run: wall s, configs measured, configs/s and the CLI's "where the time went".
# Output: $OUT (if set) or benchmarks/results/, named <date>_<gpu>_search_throughput.txt.
set -euo pipefail
size=${1:-4096}
trials=${2:-100}
batch=${3:-16}
run=${AUTOTUNE:-autotune}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_info.sh"
dest=${OUT:-$here/results}
mkdir -p "$dest"
out="$dest/${day}_${tag}_search_throughput.txt"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

one() {  # one() NAME ARGS...: a search from a fresh database and an empty cubin cache
  local name=$1; shift
  local db="sqlite:///$scratch/$name.db" log="$scratch/$name.log"
  export AUTOTUNE_CACHE_DIR="$scratch/cache_$name"
  echo "## $name: $run search $* --db <fresh>  (AUTOTUNE_CACHE_DIR empty)"
  local t0 t1
  t0=$(date +%s.%N)
  $run search "$@" --db "$db" 2>&1 | tee "$log" || echo "RESULT $name: the search failed"
  t1=$(date +%s.%N)
  local measured
  measured=$(grep -oE 'this run measured [0-9]+ config' "$log" | grep -oE '[0-9]+' | head -1 || true)
  if [ -z "$measured" ]; then  # --op: the configs of every kernel's search, summed
    measured=$(python3 - "$log" <<'PY'
import re, sys
last = {}
for line in open(sys.argv[1]):
    m = re.search(r"round \d+: (\S+): (\d+) configs measured so far", line)
    if m:
        last[m.group(1)] = int(m.group(2))
print(sum(last.values()))
PY
)
  fi
  python3 - "$name" "$t0" "$t1" "${measured:-0}" "$scratch/$name.db" <<'PY'
import datetime, sqlite3, sys
name, t0, t1, n, db = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4] or 0), sys.argv[5]
wall = t1 - t0
print(f"RESULT {name}: wall {wall:.1f} s, {n} configs measured, {n / wall:.2f} configs/s (whole command: "
      f"process start, bounds, compile, measure, re-timing)")
try:  # sustained: from the first trial's start to the last one's end (Optuna's trials table)
    rows = sqlite3.connect(db).execute("select datetime_start, datetime_complete from trials "
                                       "where datetime_complete is not null order by datetime_start").fetchall()
    parse = datetime.datetime.fromisoformat
    span = (parse(max(r[1] for r in rows)) - parse(rows[0][0])).total_seconds()
    print(f"RESULT {name}: sustained {len(rows)} trials in {span:.1f} s from the first trial's start to the "
          f"last one's end: {len(rows) / span:.2f} configs/s")
except Exception as exc:  # an --op search keeps one study per kernel: the same table, all of them
    print(f"RESULT {name}: sustained rate not read ({exc})")
PY
  grep -h 'where the time went' "$log" | sed "s/^/RESULT $name: /" || true
  echo
}

{
  echo "# autotune search throughput (issue 22 target 1: >= 2 configs/s sustained, 100 configs < 60 s)"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver $driver  $(nvcc --version | tail -1)"
  echo "# CPU cores: $(nproc)  compile workers: ${AUTOTUNE_COMPILE_WORKERS:-$(nproc)}  commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  one tpe_batch${batch} --kernel matmul_warp --size "$size" --trials "$trials" --strategy tpe --batch "$batch" --seed 1
  one grid_batch${batch} --kernel matmul_warp --size "$size" --trials "$trials" --strategy grid --batch "$batch" --seed 1
  one random_batch${batch} --kernel matmul_warp --size "$size" --trials "$trials" --strategy random --batch "$batch" --seed 1
  one tpe_batch1 --kernel matmul_warp --size "$size" --trials 20 --strategy tpe --batch 1 --seed 1
  one op_transpose --op transpose --size 8192 --trials 60 --strategy tpe --batch "$batch" --seed 1
} 2>&1 | tee "$out"
{ echo "# summary"; grep '^RESULT' "$out"; } | tee -a "$out"
echo "written: $out"
