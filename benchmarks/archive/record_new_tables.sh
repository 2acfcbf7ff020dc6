#!/usr/bin/env bash
# Issue 35's new recorded tables (three spaces of 500+ valid configs of kernels other than smem_vec
# and matmul_warp) and issue 40's flags against macros, each measured whole on the GPU by
# benchmarks/record_tables.sh (a bounded, resumable grid):
#   matmul_reg 2048^3 float32 over benchmarks/spaces/matmul_reg_1024.toml (688 configs);
#   the histogram example at 16 Mi bytes over benchmarks/spaces/histogram_768.toml (768);
#   the softmax example 4096x1024 float32 with nvcc flags as tunables,
#     benchmarks/kernels/softmax_flags.toml (624: macros x register cap x fast math);
#   matmul_warp 2048^3 and smem_vec 4096^2 float32 at their tables' best macro config with the
#     flags swept (benchmarks/kernels/{matmul_warp,smem_vec}_flags.toml, 30 and 12 configs).
#   bash benchmarks/record_new_tables.sh [SECONDS_EACH]      # default 150
# Output: $OUT (or benchmarks/results): each table's CSV and record log, as record_tables.sh writes
# (<date>_<gpu>_<kernel>_<dims>_<dtype>_table.csv); the replay (large_space_search.find_tables)
# reads them as <date>_<gpu>_table_<kernel>_<shape>_<dtype>.csv, the names they are committed under.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
s=${1:-150}
bash "$here/record_tables.sh" matmul_reg "$here/spaces/matmul_reg_1024.toml" m=2048,n=2048,k=2048 float32 "$s"
bash "$here/record_tables.sh" "$here/../examples/histogram/histogram.toml" "$here/spaces/histogram_768.toml" n=16777216 uint8 "$s"
bash "$here/record_tables.sh" "$here/kernels/softmax_flags.toml" "" rows=4096,cols=1024 float32 "$s"
bash "$here/record_tables.sh" "$here/kernels/matmul_warp_flags.toml" "" m=2048,n=2048,k=2048 float32 "$s"
bash "$here/record_tables.sh" "$here/kernels/smem_vec_flags.toml" "" rows=4096,cols=4096 float32 "$s"
