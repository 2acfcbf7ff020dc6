#!/usr/bin/env bash
# Issue 37, target "one host, one problem": the same guided search on 1 GPU, then on 2 GPUs of
# the same machine, back to back in one run; configs measured per second, sustained (the
# study's first trial's start to its last trial's end, as the issue counts them) and for the
# whole command, and where each GPU's time went per config (benchmarks/multi_gpu_figures.py),
# with the CPU's and the GPUs' utilisation over each run (vmstat, nvidia-smi).
#   bash benchmarks/multi_gpu_throughput.sh [SIZE] [TRIALS] [DEVICES] [extra search options...]
# Defaults: matmul_warp SIZE^3 float32, SIZE 4096, TRIALS 200, DEVICES 0,1, --strategy tpe --seed 1.
# Each run starts from a fresh SQLite database and an empty cubin cache (AUTOTUNE_CACHE_DIR):
# every config is compiled. AUTOTUNE="python3 -m autotune" selects how autotune is run
# (on a machine without GPUs: AUTOTUNE="python3 tests/workers.py cli 0.05" with
# AUTOTUNE_FAKE_GPUS naming two, to try the script itself).
# Output: $OUT (if set) or benchmarks/results/, named <date>_<gpu>_multi_gpu_throughput.txt;
# KEEP_DB=1 also keeps each run's database there (..._gpu1.db, ..._gpus.db: every trial's phases).
# CACHE_ROOT=DIR keeps each run's cubin cache in DIR/cache_<name> instead of an empty one: a second
# invocation with the same DIR (and seed) measures with the cubins the first one built (warm), so
# the two show what compiling costs the search.
# For the several-GPU run only: MULTI_OPTIONS (e.g. "--batch 64": 32 per GPU) and
# MULTI_COMPILE_WORKERS (the host's compile threads, split between the GPUs; default the CPU count).
set -euo pipefail
size=${1:-4096}
trials=${2:-200}
devices=${3:-0,1}
shift $(( $# < 3 ? $# : 3 ))
run=${AUTOTUNE:-python3 -m autotune}
here=$(cd "$(dirname "$0")" && pwd)
if command -v nvidia-smi >/dev/null; then
  . "$here/../gpu_info.sh"
else
  gpu="no GPU (fake)"; driver="-"; tag=no_gpu; day=$(date -u +%Y-%m-%d)
fi
dest=${OUT:-$here/results}
mkdir -p "$dest"
out="$dest/${day}_${tag}_multi_gpu_throughput.txt"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

one() {  # one NAME DEVICES [search options]: a search from a fresh database and an empty cubin cache
  local name=$1 device=$2
  shift 2
  local db="$scratch/$name.db" log="$scratch/$name.log"
  export AUTOTUNE_CACHE_DIR="${CACHE_ROOT:-$scratch}/cache_$name"
  local cache="AUTOTUNE_CACHE_DIR empty"
  [ -n "$(ls -A "$AUTOTUNE_CACHE_DIR" 2>/dev/null)" ] && cache="AUTOTUNE_CACHE_DIR holding $(find "$AUTOTUNE_CACHE_DIR" -name '*.cubin' | wc -l) cubins"
  echo "## $name: ${AUTOTUNE_COMPILE_WORKERS:+AUTOTUNE_COMPILE_WORKERS=$AUTOTUNE_COMPILE_WORKERS }$run search" \
       "--kernel matmul_warp --size $size --trials $trials --device $device --strategy tpe --seed 1 $* --db <fresh>" \
       " ($cache)"
  local smi=""
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 500 > "$scratch/$name.smi" &
    smi=$!
  fi
  local t0 t1
  t0=$(date +%s.%N)
  { $run search --kernel matmul_warp --size "$size" --trials "$trials" --device "$device" --strategy tpe --seed 1 \
      "$@" --db "sqlite:///$db" || echo "RESULT $name: the search failed"
    times > "$scratch/$name.times"; } 2>&1 | tee "$log"
  t1=$(date +%s.%N)
  [ -n "$smi" ] && { kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null || true; }
  [ -n "${KEEP_DB:-}" ] && cp "$db" "$dest/${day}_${tag}_multi_gpu_throughput_$name.db"
  python3 "$here/multi_gpu_figures.py" "$db" "$name" | sed "s/^JSON /JSON $name /"
  python3 - "$name" "$t0" "$t1" "$scratch/$name.times" "$scratch/$name.smi" "$(nproc)" <<'PY'
import re, sys
name, t0, t1, times, smi, cores = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
wall = t1 - t0
print(f"RESULT {name}: whole command {wall:.1f} s (process start, GPU start-up, bounds, compile, measure, re-timing)")
try:  # bash's `times`, second line: user and system CPU of every process the command waited for
    secs = [int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", open(times).read().splitlines()[1])]
    cpu = sum(secs)
    print(f"RESULT {name}: CPU of the command's processes (the CLI, workers, measuring children, every nvcc): "
          f"{cpu:.0f} s = {cpu / wall:.1f} cores busy on average of {cores}")
except (OSError, IndexError, ValueError):
    print(f"RESULT {name}: CPU not counted")
try:
    per = {}
    for line in open(smi):
        gpu, util = (x.strip() for x in line.split(","))
        per.setdefault(gpu, []).append(float(util))
    print(f"RESULT {name}: GPU utilisation over the command (nvidia-smi, mean of 0.5 s samples): "
          + ", ".join(f"GPU {g} {sum(v) / len(v):.0f}%" for g, v in sorted(per.items())))
except (OSError, ValueError):
    pass
PY
  grep -h 'where the time went\|batches of' "$log" | sed "s/^/RESULT $name: /" || true
  echo
}

{
  echo "# autotune search on 1 GPU, then on $devices (issue 37 target: >= 1.8x the configs/s on 2 GPUs)"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver $driver  $(nvcc --version 2>/dev/null | tail -1)"
  echo "# CPU cores: $(nproc)  compile workers: ${AUTOTUNE_COMPILE_WORKERS:-$(nproc)} (split between the GPUs)" \
       " commit: ${COMMIT:-$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')}"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,uuid,pci.bus_id --format=csv,noheader | sed 's/^/# gpu: /'
  echo
  one gpu1 "${devices%%,*}" "$@"
  AUTOTUNE_COMPILE_WORKERS=${MULTI_COMPILE_WORKERS:-${AUTOTUNE_COMPILE_WORKERS:-}} one gpus "$devices" "$@" ${MULTI_OPTIONS:-}
} 2>&1 | tee "$out"
python3 - "$out" <<'PY' | tee -a "$out"
import json, sys
runs = {}
for line in open(sys.argv[1]):
    if line.startswith("JSON "):
        _, name, data = line.split(" ", 2)
        runs[name] = json.loads(data)
walls = {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT ") and "whole command" in line:
        name = line.split()[1].rstrip(":")
        walls[name] = float(line.split("whole command ")[1].split()[0])
one, two = runs.get("gpu1"), runs.get("gpus")
print("# summary")
if one and two:
    print(f"RESULT speedup: sustained {two['configs_per_s']:.2f} / {one['configs_per_s']:.2f} configs/s = "
          f"{two['configs_per_s'] / one['configs_per_s']:.2f}x on {len(two['gpus'])} GPUs "
          f"({two['configs']} and {one['configs']} configs)")
    if "gpu1" in walls and "gpus" in walls:
        print(f"RESULT speedup: whole command {walls['gpu1']:.1f} s / {walls['gpus']:.1f} s = "
              f"{walls['gpu1'] / walls['gpus']:.2f}x")
PY
echo "written: $out"
