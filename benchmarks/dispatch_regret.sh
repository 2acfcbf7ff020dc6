#!/usr/bin/env bash
# Issue 36: record the trials of benchmarks/dispatch_regret.py on one GPU, three kernels, in one
# call of under 10 minutes (run it again with the files it left to go on where a budget ran out).
#   bash benchmarks/dispatch_regret.sh [record|fill]   (OUT: where the files go; DISPATCH_PREV: a
#   folder holding a previous run's files; DISPATCH_ARGS: more options for every step, e.g.
#   "--fake --train 3 --held-out 2" for a dry run of the script without a GPU; DISPATCH_KERNELS:
#   which steps, default "transpose softmax matmul"; DISPATCH_PRECOMPILE=0: no background build
#   of every matmul_warp config)
# The declared ranges (log-uniform shapes; 12 training, 20 held-out):
#   smem_pad      rows, cols in 128..8192, any integer; a whole sweep (54 configs) per shape
#   softmax_rows  rows in 128..8192, cols in 32..4096, any integer; a whole sweep (57 configs)
#   matmul_warp   m, n, k in 256..2048, multiples of 32 (where a config measures fast); the
#                 1332-config space of benchmarks/spaces/matmul_warp_1332.toml (whose every config
#                 is compiled in the background while the others are measured: the cubin cache is
#                 per config); `transfer` searches of 100 configs, batch 16
# Output ($OUT): dispatch.db (every trial), <date>_<gpu>_dispatch_<kernel>_float32_trials.csv per
# kernel, extras.tgz (each kernel's plan and log), dispatch_regret_stdout.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:-record}
out=${OUT:-benchmarks/results/dispatch_run}
work=/dev/shm/dispatch_regret
mkdir -p "$out" "$work"
db="$work/dispatch.db"
if [ -n "${DISPATCH_PREV:-}" ]; then
  cp "$DISPATCH_PREV/dispatch.db" "$db"
  tar xzf "$DISPATCH_PREV/extras.tgz" -C "$work"
fi
log="$out/dispatch_regret_stdout.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$log"

matmul=(--kernel matmul_warp --range m=256:2048,n=256:2048,k=256:2048 --multiple 32
        --space benchmarks/spaces/matmul_warp_1332.toml)
softmax=(--kernel examples/softmax/softmax.toml --range rows=128:8192,cols=32:4096)
transpose=(--kernel smem_pad --range rows=128:8192,cols=128:8192)

step() {  # one kernel; the database is copied out after each, so a cut-off call keeps what it measured
  python3 benchmarks/dispatch_regret.py "$phase" --db "sqlite:///$db" --out "$work" "$@" ${DISPATCH_ARGS:-} 2>&1 |
    tee -a "$log"
  cp "$db" "$out/dispatch.db"
  cp "$work"/*_trials.csv "$out/" 2>/dev/null
  tar czf "$out/extras.tgz" -C "$work" $(cd "$work" && ls *_plan.json *.log 2>/dev/null)
}

kernels=${DISPATCH_KERNELS:-transpose softmax matmul}
if [ "$phase" = record ] && [ -z "${DISPATCH_ARGS:-}" ] && [[ " $kernels " == *" matmul "* ]] \
   && [ "${DISPATCH_PRECOMPILE:-1}" = 1 ]; then
  python3 - > "$work/precompile.log" 2>&1 <<'PY' &
import concurrent.futures as cf, time
from autotune.errors import AutotuneError, TrialFailed
from autotune.kernel.catalog import get_kernel
from autotune.kernel.dtypes import get_dtype
from autotune.measure.compile import build_cubin
from autotune.measure.device import query_device
k = get_kernel("matmul_warp")
configs = [k.default_config()] + k.space("benchmarks/spaces/matmul_warp_1332.toml").configs()
arch, dtype, t0 = query_device(0).arch, get_dtype("float32"), time.time()
def build(c):
    try:
        build_cubin(k, c, dtype, arch)
    except (AutotuneError, TrialFailed):
        pass
with cf.ThreadPoolExecutor(12) as pool:
    list(pool.map(build, configs))
print(f"precompiled {len(configs)} matmul_warp configs in {time.time() - t0:.0f} s")
PY
fi
declare -A budget=([transpose]="${TRANSPOSE_S:-80}" [softmax]="${SOFTMAX_S:-80}" [matmul]="${MATMUL_S:-230}")
run_kernel() {
  local -n args=$1
  if [ "$phase" = record ]; then
    [ "$1" = matmul ] && cat "$work/precompile.log" 2>/dev/null | tee -a "$log"
    step "${args[@]}" --seconds "${budget[$1]}"
  else
    step "${args[@]:0:2}" --seconds "${budget[$1]}"
  fi
}
for k in $kernels; do
  run_kernel "$k"
done
