#!/usr/bin/env bash
# Issue 15 through autotune itself (not the standalone harness): the matrix-product climb
# (naive, tiled, register-blocked, warp-tiled) against cuBLAS in the same run.
#   bash benchmarks/matmul_vs_cublas.sh
# In one fresh database, on device 0:
#   1. short searches at 4096^3 float32: matmul_tiled (its grid of 3), matmul_reg and
#      matmul_warp (TPE, $TRIALS trials, none started after $SEARCH_S s each; matmul_warp's
#      22,944-config space was searched by benchmarks/matmul_warp_gpu.sh, whose best is the
#      kernel file's default);
#   2. `autotune bench` of all four kernels, default and tuned, with cuBLAS (TF32 off) at
#      4096^3, 2048^3 and 3999x4001x4003 float32, and at 4096^3 float64 after a grid search of
#      matmul_warp's float64 neighbourhood (benchmarks/spaces/matmul_warp_f64.toml: the
#      kernel file's default is the float32 best, which spills in float64) (with the FP64 SIMT
#      peak of the device, from its SM count and clock, to compare our SIMT kernel against;
#      cuBLAS uses the FP64 tensor cores on Hopper).
# Output: $OUT (or benchmarks/results)/<date>_<gpu>_matmul_vs_cublas.txt
# AUTOTUNE selects how autotune is run (default: python3 -m autotune).
set -euo pipefail
run=${AUTOTUNE:-python3 -m autotune}
trials=${TRIALS:-8}
search_s=${SEARCH_S:-45}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../gpu_info.sh"
dest=${OUT:-$here/results}
mkdir -p "$dest"
db="sqlite:///$(mktemp -d)/autotune.db"
all=(--kernel matmul_naive --kernel matmul_tiled --kernel matmul_reg --kernel matmul_warp)
{
  echo "# matrix products through autotune against cuBLAS (issue 15)"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')  device: $gpu  driver: $driver  $(nvcc --version | tail -1)"
  echo "# CUPY_TF32=${CUPY_TF32:-unset} (cuBLAS in FP32, not TF32); database: fresh SQLite file"
  echo
  set -x
  $run search --kernel matmul_tiled --size 4096 --sampler grid --repeats 20 --rounds 3 --db "$db"
  $run search --kernel matmul_reg --size 4096 --trials "$trials" --timeout "$search_s" --seed 1 --repeats 20 \
       --rounds 3 --db "$db"
  $run search --kernel matmul_warp --size 4096 --trials "$trials" --timeout "$search_s" --seed 1 --repeats 20 \
       --rounds 3 --db "$db"
  $run bench "${all[@]}" --size 4096 --repeats 20 --db "$db"
  $run bench "${all[@]}" --size 2048 --repeats 20 --db "$db"
  $run bench "${all[@]}" --m 3999 --n 4001 --k 4003 --repeats 20 --db "$db"
  $run search --kernel matmul_warp --size 4096 --dtype float64 --sampler grid \
       --space "$here/spaces/matmul_warp_f64.toml" --repeats 20 --rounds 3 --db "$db"
  $run bench --kernel matmul_reg --kernel matmul_warp --size 4096 --dtype float64 --repeats 20 --db "$db"
  set +x
  python3 - "$db" <<'EOF'
import sys

import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
import sqlalchemy as sa

d = drv.Context.get_device()
sms, clock_khz = d.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT), d.get_attribute(drv.device_attribute.CLOCK_RATE)
peak = sms * 64 * 2 * clock_khz * 1e3 / 1e9  # 64 FP64 lanes per SM (sm_90), one FMA = 2 FLOP
engine = sa.create_engine(sys.argv[1])
with engine.connect() as c:
    run_id = c.execute(sa.text("select max(id) from autotune_bench_runs where dtype = 'float64'")).scalar()
    rows = c.execute(sa.text("select name, source, gflops from autotune_bench_rows where run_id = :r and "
                             "gflops is not null order by position"), {"r": run_id}).all()
print(f"FP64 SIMT peak of this device: {sms} SMs x 64 lanes x 2 x {clock_khz / 1e6:.2f} GHz = {peak:,.0f} GFLOP/s")
for name, source, gflops in rows:
    print(f"  {name} ({source or 'vendor'}): {gflops:,.0f} GFLOP/s = {100 * gflops / peak:.1f}% of the FP64 SIMT peak")
EOF
} 2>&1 | tee "$dest/${day}_${tag}_matmul_vs_cublas.txt"
