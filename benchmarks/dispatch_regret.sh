#!/usr/bin/env bash
# Issues 36 and 48: record the trials of benchmarks/dispatch_regret.py on one GPU, three kernels, in one
# call of about 8 minutes (run it again with the files it left to go on where a budget ran out; or
# one kernel a call, DISPATCH_KERNELS=matmul with MATMUL_S=420). Each kernel's report
# (<date>_<gpu>_dispatch_<kernel>_float32_report.txt: held-out median and worst regret, shapes
# slower than the default by > 1 %, each rule forced, the dense matrix's GPU seconds per tuned
# shape) is written beside its trials in $OUT.
#   bash benchmarks/dispatch_regret.sh [record|fill]   (OUT: where the files go; DISPATCH_PREV: a
#   folder holding a previous run's files; DISPATCH_ARGS: more options for every step, e.g.
#   "--fake --train 3 --held-out 2" for a dry run of the script without a GPU, "--train 8 --trials 60"
#   for fewer shapes and trials, "--no-matrix" without the dense matrix; DISPATCH_KERNELS:
#   which steps, default "transpose softmax matmul"; DISPATCH_PRECOMPILE=0: no background build
#   of every matmul_warp config)
# The declared ranges (issue 48's; log-uniform shapes; 12 training, 20 held-out, none tuned):
#   smem_pad      rows, cols in 64..16384, any integer; a whole sweep (54 configs) per shape
#   softmax_rows  rows, cols in 64..32768, any integer; a whole sweep (57 configs)
#   matmul_warp   m, n, k in 256..4096, multiples of 32 (where a config measures fast); the
#                 1332-config space of benchmarks/spaces/matmul_warp_1332.toml (whose every config
#                 is compiled in the background while the others are measured: the cubin cache is
#                 per config); `transfer` searches of 100 configs, batch 16
# Output ($OUT): dispatch.db (every trial), <date>_<gpu>_dispatch_<kernel>_float32_trials.csv per
# kernel with its _report.txt, extras.tgz (each kernel's plan and log), dispatch_regret_stdout.txt.
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

matmul=(--kernel matmul_warp --range m=256:4096,n=256:4096,k=256:4096 --multiple 32
        --space benchmarks/spaces/matmul_warp_1332.toml)
softmax=(--kernel examples/softmax/softmax.toml --range rows=64:32768,cols=64:32768)
transpose=(--kernel smem_pad --range rows=64:16384,cols=64:16384)

step() {  # one kernel; the database is copied out after each, so a cut-off call keeps what it measured
  python3 benchmarks/dispatch_regret.py "$phase" --db "sqlite:///$db" --out "$work" "$@" ${DISPATCH_ARGS:-} 2>&1 |
    tee -a "$log"
  cp "$db" "$out/dispatch.db"
  cp "$work"/*_trials.csv "$work"/*_report.txt "$out/" 2>/dev/null
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
declare -A budget=([transpose]="${TRANSPOSE_S:-100}" [softmax]="${SOFTMAX_S:-100}" [matmul]="${MATMUL_S:-260}")
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
