#!/usr/bin/env bash
# The README's main job as a newcomer runs it, timed end to end: the wall of the `autotune`
# process, from its start to its exit.
#
#   WHEELS=DIR bash benchmarks/main_job.sh [RUNS] [OUT]
#
# DIR holds autotune's wheel (`python -m pip wheel --no-deps -w DIR .`) and the wheels of the
# dependencies this machine lacks. They are installed by pip into a fresh folder, with their
# bytecode compiled, as `python -m pip install '.[cuda]'` does. Then
# `autotune search --kernel smem_pad --device 0 --size 8192` runs RUNS times (default 3) with
# an empty HOME and no AUTOTUNE_DB, so with a fresh database and an empty cubin cache ("cold"),
# and RUNS times more with an empty HOME and the cubin cache of the first cold run ("warm").
# PYTHONDONTWRITEBYTECODE is unset, as on a user's machine: where a host sets it and its
# packages were installed without bytecode, each process compiles every module it imports
# again (SQLAlchemy, Optuna, Alembic, autotune), about 1 s for each of the command's two
# processes on the H200 host.
#
# Prints one line per run (its wall time, s, and the command's own "where the time went"
# line), then the median of each kind, and writes them to OUT (default: stdout only).
set -euo pipefail
runs=${1:-3}
out=${2:-/dev/null}
: "${WHEELS:?WHEELS must name the folder of autotune's wheel and its dependencies' wheels}"
ls "$WHEELS"/cuda_autotune-*.whl >/dev/null
unset PYTHONDONTWRITEBYTECODE AUTOTUNE_DB AUTOTUNE_CACHE_DIR
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$site" "$WHEELS"/*.whl
export PYTHONPATH="$site" PATH="$site/bin:$PATH"
cd "$(mktemp -d)"  # nothing of a checkout on the import path
version=$(autotune --version)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null || echo "unknown GPU")
{
  echo "# benchmarks/main_job.sh: $version on $gpu, $(nproc) cores, $(date -u '+%F %H:%M') UTC"
  echo "# autotune search --kernel smem_pad --device 0 --size 8192; an empty HOME each run, no AUTOTUNE_DB"
} | tee -a "$out"
cache=""
walls_cold=() walls_warm=()
for kind in cold warm; do
  for i in $(seq "$runs"); do
    home=$(mktemp -d)
    if [ "$kind" = warm ]; then export AUTOTUNE_CACHE_DIR="$cache"; fi
    start=$(date +%s.%N)
    HOME=$home autotune search --kernel smem_pad --device 0 --size 8192 > "$home.log" 2>&1 || {
      echo "run $kind $i failed:"; tail -5 "$home.log"; exit 1; }
    end=$(date +%s.%N)
    wall=$(python3 -c "print(f'{$end - $start:.2f}')")
    if [ "$kind" = cold ] && [ -z "$cache" ]; then cache="$home/.cache/autotune/cubins"; ls "$cache" >/dev/null; fi
    if [ "$kind" = cold ]; then walls_cold+=("$wall"); else walls_warm+=("$wall"); fi
    echo "$kind $i  wall $wall s  $(grep -o 'where the time went.*' "$home.log")" | tee -a "$out"
  done
done
python3 - "${walls_cold[*]}" "${walls_warm[*]}" <<'EOF' | tee -a "$out"
import statistics, sys
for kind, walls in zip(("cold", "warm"), sys.argv[1:]):
    values = [float(w) for w in walls.split()]
    print(f"{kind}: median {statistics.median(values):.2f} s of {len(values)} runs ({', '.join(walls.split())})")
EOF
