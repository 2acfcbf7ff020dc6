#!/usr/bin/env bash
# A search against its compile floor (issue 47, target 2), one kernel per line of the output.
#
#   bash benchmarks/search_floor.sh [TRIALS] [OUT]
#
# Runs `autotune search` from a fresh SQLite database and an empty cubin cache (every config
# is compiled) for matmul_warp 4096^3, smem_pad 8192^2 and the user kernel
# examples/softmax/softmax.toml at 4096x1024, each with TRIALS trials (default 200; the last
# two spaces are smaller and are measured whole). An nvcc on PATH ahead of the real one
# records each build's CPU time (user + system of nvcc and the cicc and ptxas it runs,
# bash's `times`); nvidia-smi samples the GPU's utilisation every 200 ms.
#
# Per kernel: the compile workers (AUTOTUNE_COMPILE_WORKERS, else the CPU count) and the median
# CPU seconds of an nvcc run, whose quotient is the floor (configs/s that the cores can build);
# the configs measured over the study's span (its first trial's start to its last trial's end)
# as a share of that floor, and of the floor by the mean CPU seconds (the builds' throughput,
# where a few long builds weigh); the GPU's busy share over the span; and the search's own phases
# ("where the time went") in ms a config. Output: stdout, and OUT (default /dev/null).
# AUTOTUNE (default `autotune`) is how autotune is run; ONLY=REGEX keeps the runs whose name
# matches (matmul_warp_4096, smem_pad_8192, softmax_4096x1024).
set -euo pipefail
trials=${1:-200}
out=${2:-/dev/null}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
run=${AUTOTUNE:-autotune}
scratch=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$scratch"' EXIT
source "$here/nvcc_cpu.sh"
nvcc_cpu_wrapper "$scratch" "$scratch/nvcc_cpu.log"
workers=${AUTOTUNE_COMPILE_WORKERS:-$(nproc)}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null || echo "no GPU")
echo "# benchmarks/search_floor.sh $trials on $gpu, $(nproc) cores, compile workers $workers, $(date -u '+%F %H:%M') UTC" | tee -a "$out"

run_one() {  # run_one NAME SEARCH-ARGS...
  local name=$1; shift
  : > "$scratch/nvcc_cpu.log"
  nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -i 0 -lms 200 \
    > "$scratch/gpu_$name.csv" 2>/dev/null &
  local smi=$!
  AUTOTUNE_CACHE_DIR="$scratch/cache_$name" PATH="$scratch/bin:$PATH" \
    $run search "$@" --trials "$trials" --device 0 --db "sqlite:///$scratch/$name.db" > "$scratch/$name.log" 2>&1 \
    || { echo "$name: the search failed"; tail -5 "$scratch/$name.log"; }
  kill "$smi" 2>/dev/null || true
  wait "$smi" 2>/dev/null || true
  python3 - "$name" "$scratch" "$workers" <<'PY' | tee -a "$out"
import csv, datetime, re, sqlite3, statistics, sys
name, scratch, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
cpu = []
for line in open(f"{scratch}/nvcc_cpu.log"):  # arguments, then `times`' line: children's user and system
    m = re.findall(r"(\d+)m([\d.]+)s", line.rstrip("\n").split("\t")[-1])
    cpu.append(sum(int(a) * 60 + float(b) for a, b in m))
db = sqlite3.connect(f"{scratch}/{name}.db")
rows = db.execute("select datetime_start, datetime_complete from trials where state in ('COMPLETE', 'FAIL') "
                  "and datetime_complete is not null").fetchall()
parse = datetime.datetime.fromisoformat
span = (max(parse(e) for _, e in rows) - min(parse(s) for s, _ in rows)).total_seconds() if rows else 0.0
first, last = (min(parse(s) for s, _ in rows), max(parse(e) for _, e in rows)) if rows else (None, None)
busy = []
for t, u in csv.reader(open(f"{scratch}/gpu_{name}.csv")):
    when = datetime.datetime.strptime(t.strip(), "%Y/%m/%d %H:%M:%S.%f")
    if first is not None and first <= when <= last:
        busy.append(float(u))
log = open(f"{scratch}/{name}.log").read()
phases = re.search(r"where the time went: (.*)", log)
measured = len(rows)
median = statistics.median(cpu) if cpu else float("nan")
floor = workers / median if cpu and median > 0 else float("nan")
mean = statistics.mean(cpu) if cpu else float("nan")
rate = measured / span if span else float("nan")
per = ""
if phases and measured:
    parts = [(k, float(v)) for k, v in re.findall(r"(\w+) ([\d.]+) s", phases.group(1))]
    per = ", ".join(f"{k} {1e3 * v / measured:.0f}" for k, v in parts)
print(f"{name}: {measured} configs measured in a span of {span:.1f} s = {rate:.2f} configs/s; "
      f"nvcc: {len(cpu)} runs, median {median:.2f} CPU s (mean {mean:.2f}, max {max(cpu, default=0):.2f}), "
      f"floor {workers}/{median:.2f} = {floor:.2f} configs/s; {100 * rate / floor:.0f} % of the floor "
      f"({100 * rate * mean / workers:.0f} % of the floor by the mean: {workers}/{mean:.2f}); "
      f"GPU busy {statistics.mean(busy) if busy else float('nan'):.0f} % over the span; "
      f"ms a config: {per or 'n/a'}")
PY
}

only=${ONLY:-.}  # ONLY=REGEX: the runs whose name matches
one() { [[ $1 =~ $only ]] && run_one "$@" || true; }
one matmul_warp_4096 --kernel matmul_warp --size 4096 --strategy tpe --seed 1
one smem_pad_8192 --kernel smem_pad --size 8192 --seed 1
one softmax_4096x1024 --kernel "$root/examples/softmax/softmax.toml" --dims rows=4096,cols=1024 --seed 1
