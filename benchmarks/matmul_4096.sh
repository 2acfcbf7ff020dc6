#!/usr/bin/env bash
# Issue 7 on one GPU: search matmul_tiled (its whole grid: TILE_WIDTH 8, 16, 32) and
# matmul_reg (TPE, at most 24 trials, none started after 100 s) at 4096^3 float32 on device
# 0, `best` of each, then the bench table: naive, tiled default and tuned, reg default and
# tuned, and cuBLAS via CuPy or PyTorch (TF32 off) with every kernel's % of it. Everything
# goes into a fresh database; each command's output, with the device, driver, nvcc and date,
# is tee'd to $OUT/<date>_<gpu>_matmul_<size>_{search_tiled,search_reg,best,bench}.txt
# ($OUT defaults to benchmarks/results).
#   bash benchmarks/matmul_4096.sh [SIZE]
# AUTOTUNE="autotune" selects how autotune is run (default: python3 -m autotune).
#
# GPU time, estimated for an H100 (not measured before the first run): every verification
# at 4096^3 computes the float64 reference product on the CPU (0.3-1 s with a multi-threaded
# BLAS) and each config compiles once (1-3 s of nvcc); timing uses 20 samples of >= 1 launch
# (naive ~0.1 s, tiled ~0.03 s, reg ~0.01 s per launch). Tiled search ~25 s, reg search
# <= ~130 s (the 100 s timeout plus the trial in flight and a 3-round re-timing of 5
# configs), bench ~20 s, start-up ~20 s: about 3 minutes in all.
set -euo pipefail
size=${1:-4096}
run=${AUTOTUNE:-python3 -m autotune}
here=$(cd "$(dirname "$0")" && pwd)
dest=${OUT:-$here/results}
. "$(dirname "$0")/gpu_info.sh"
prefix="$dest/${day}_${tag}_matmul_${size}"
db="sqlite:///$(mktemp -d)/autotune.db"
mkdir -p "$dest"
common=(--device 0 --size "$size" --dtype float32 --repeats 20 --db "$db")

header() {
  echo "# $*"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver: $driver  $(nvcc --version | tail -1)"
  echo "# database: fresh SQLite file shared by the steps of benchmarks/matmul_4096.sh"
  echo
}

step() {  # step NAME COMMAND...: run it, tee'd with its header, timed
  local name=$1
  shift
  { header "$*"; start=$(date +%s); "$@"; echo; echo "# wall time: $(( $(date +%s) - start )) s"; } 2>&1 \
    | tee "${prefix}_${name}.txt"
}

step search_tiled $run search --kernel matmul_tiled --sampler grid --rounds 3 "${common[@]}"
step search_reg $run search --kernel matmul_reg --trials 24 --timeout 100 --seed 1 --rounds 3 "${common[@]}"
step best $run best --kernel matmul_tiled --size "$size" --db "$db"
$run best --kernel matmul_reg --size "$size" --db "$db" 2>&1 | tee -a "${prefix}_best.txt"
step bench $run bench --kernel matmul_naive --kernel matmul_tiled --kernel matmul_reg "${common[@]}"
echo "wrote ${prefix}_*.txt"
