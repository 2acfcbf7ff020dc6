#!/usr/bin/env bash
# Issue 15 on one GPU (as run for benchmarks/results/*_matmul_warp_run2, there from a scratch copy
# of these files): the diverse configs of SANITY checked at small shapes under compute-sanitizer,
# then benchmarks/matmul_harness.py: stage A (the float32 configs of STAGE_A at 4096^3), stage B
# (every knob value around the 3 best), the 6 best round-robin against cuBLAS at 4096^3, 2048^3
# and 3999x4001x4003, stage D (the float64 configs of STAGE_D) with its best against cuBLAS and
# the FP64 SIMT peak; then ncu on the best config and cuBLAS at 4096^3 and 3999x4001x4003.
# Outputs under $OUT (default benchmarks/results/latest).
#   bash benchmarks/matmul_warp_gpu.sh STAGE_A.json STAGE_D.json SANITY.json [CUBIN_DIR]
# Cubins can be built beforehand on any machine with nvcc (benchmarks/matmul_warp_build.py);
# missing ones are built here. About 4 minutes on an H100 with the run-2 inputs, cubins carried.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
A=$1 D=$2 SAN=$3 CUB=${4:-/tmp/matmul_warp_cubins}
OUT=${OUT:-$here/results/latest}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPY_TF32=0
q="name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu"
nvidia-smi --query-gpu=$q --format=csv | tee "$OUT/smi.txt"
H="python3 $here/matmul_harness.py --source $here/../kernels/matmul_warp.cu --toml $here/../kernels/matmul_warp.toml --cubins $CUB"
compute-sanitizer --tool memcheck --error-exitcode 9 $H --check-only --configs "$SAN" --out /tmp/sanity > "$OUT/sanity.txt" 2>&1
rc=$?; tail -4 "$OUT/sanity.txt"; echo "sanitizer rc=$rc"
grep -q "WRONG\|: error\|non-finite\|guard" "$OUT/sanity.txt" && { echo "sanity failed"; exit 1; }
[ $rc = 0 ] || exit 1
$H --configs "$A" --configs64 "$D" --knob-top 3 --final-top 6 \
   --final-shape 4096,4096,4096 --final-shape 2048,2048,2048 --final-shape 3999,4001,4003 \
   --out "$OUT" 2>&1 | tee "$OUT/run.txt" | grep -v "^WRONG"
nvidia-smi --query-gpu=$q --format=csv | tee -a "$OUT/smi.txt"
M="l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
M="$M,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed.sum,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
for shp in 4096,4096,4096 3999,4001,4003; do
  timeout 100 ncu --profile-from-start off --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats --metrics "$M" \
    python3 "$here/matmul_warp_profile.py" --results "$OUT/results.jsonl" --cubins "$CUB" --shape $shp \
    > "$OUT/ncu_${shp//,/x}.txt" 2>&1
  echo "ncu $shp rc=$?"
done
