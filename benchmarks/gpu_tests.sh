#!/usr/bin/env bash
# The `gpu` tests on the GPU machine, several pytest processes at once (one GPU, shared), each
# group's log kept: bash benchmarks/gpu_tests.sh GROUP... where a GROUP is pytest arguments in
# one word, ':' between them, e.g. tests/gpu/test_gpu_search.py or
# tests/gpu/test_gpu_kernels.py:-k:skinny. Groups run 4 at a time (GPU_TEST_JOBS); GPU_TEST_MARK=gpu_slow
# runs the slower tier (default: gpu, the fast one).
# Output: $OUT (or benchmarks/results)/<date>_<gpu>_gpu_tests<GPU_TESTS_SUFFIX>.txt, the groups' logs
# one after another; written also when the script is stopped (SIGTERM, e.g. by `timeout`): a group
# cut short says so.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu_info.sh"
dest=${OUT:-$here/results}
mkdir -p "$dest"
logs=$(mktemp -d)
out="$dest/${day}_${tag}_gpu_tests${GPU_TESTS_SUFFIX:-}.txt"
finish() {
  { echo "# gpu tests, $(date -u '+%F %H:%M') UTC, $tag, AUTOTUNE_BACKEND=${AUTOTUNE_BACKEND:-(default)}"
    for f in "$logs"/*.log; do [ -e "$f" ] || continue; echo; echo "## $(tail -n 1 "$f")"; cat "$f"; done; } > "$out"
  grep -h -E '^exit |^stopped |passed|failed|error' "$logs"/*.log
}
trap 'kill $(jobs -p) 2>/dev/null; wait; for f in "$logs"/*.log; do tail -n 1 "$f" | grep -q "^exit " || echo "stopped before the end" >> "$f"; done; finish; exit 124' TERM INT
i=0
for group in "$@"; do
  i=$((i + 1))
  ( IFS=':' read -r -a args <<< "$group"
    python3 -m pytest -q -m "${GPU_TEST_MARK:-gpu}" -p no:cacheprovider "${args[@]}" > "$logs/$(printf %02d $i).log" 2>&1
    echo "exit $? for: ${args[*]}" >> "$logs/$(printf %02d $i).log" ) &
  while [ "$(jobs -r | wc -l)" -ge "${GPU_TEST_JOBS:-4}" ]; do wait -n; done
done
wait
finish
