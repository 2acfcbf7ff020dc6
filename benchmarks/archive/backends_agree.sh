#!/usr/bin/env bash
# Issue 39 on the GPU machine, from the repository root: the wheel-only install and both CUDA backends.
#   install: a clean virtual environment installs 'cuda-autotune[cuda]' from wheels alone
#            (pip --no-index), timed, then runs the README's main job in it:
#            autotune search --kernel smem_pad --device 0 --size 8192 && autotune best --size 8192
#   tests:   the `gpu` tests with each backend (AUTOTUNE_BACKEND=cuda-bindings and =pycuda), the two
#            runs at once (benchmarks/gpu_tests.sh, GPU_TEST_JOBS groups each); PyCUDA runs the
#            runtime's tests (launches on PyTorch/CuPy arrays, which use no backend but for the
#            device's identity) only with PYCUDA_RUNTIME=1
#   timings: benchmarks/backends_agree.py: the same configs timed by both backends, alternating
# Needs: $WHEELS (default .whl), the cp312 wheels of autotune (pip wheel --no-deps -w .whl .), of
# cuda-bindings, cuda-pathfinder, nvidia-ml-py and of autotune's dependencies but numpy, matplotlib,
# pillow, fonttools, kiwisolver and contourpy, which are packed from this machine's own installed
# copies (benchmarks/wheels_from_installed.py: the 64 MiB a call carries does not hold them); for
# the tests and timings, the test environment (source .device/install.sh: pytest, PyCUDA, Optuna...).
#   STEPS="install tests timings" TESTS_TIMEOUT=180 bash benchmarks/backends_agree.sh
# Output in $OUT (or benchmarks/results): <date>_<gpu>_backends_install.txt,
# <date>_<gpu>_gpu_tests_<backend>.txt, <date>_<gpu>_backends_agree.md.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/../gpu_info.sh"
dest=${OUT:-$here/results}
mkdir -p "$dest"
wheels=${WHEELS:-$root/.whl}

install() {
  local house venv db t0 pip
  house=$(mktemp -d) venv=$(mktemp -d)/venv db=$(mktemp -d)
  cp "$wheels"/*.whl "$house"/
  t0=$(date +%s%N)
  env -u PYTHONPATH python3 "$here/wheels_from_installed.py" "$house" numpy matplotlib pillow fonttools kiwisolver contourpy
  echo "packed this machine's numpy, matplotlib & co. into wheels in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  t0=$(date +%s%N)
  if env -u PYTHONPATH python3 -m venv "$venv"; then pip=("$venv/bin/python" -m pip)
  else env -u PYTHONPATH python3 -m venv --without-pip "$venv" || return 1; pip=(python3 -m pip --python "$venv/bin/python"); fi
  env -u PYTHONPATH "${pip[@]}" install --no-index --find-links "$house" 'cuda-autotune[cuda]' || return 1
  echo "a clean venv installed 'cuda-autotune[cuda]' from wheels alone (pip --no-index) in $(( ($(date +%s%N) - t0) / 1000000 )) ms (the venv made, then pip)"
  env -u PYTHONPATH "${pip[@]}" list
  ( cd "$db" && export AUTOTUNE_DB="sqlite:///$db/autotune.db" PATH="$venv/bin:$PATH" && unset PYTHONPATH AUTOTUNE_BACKEND &&
    autotune info && t0=$(date +%s%N) &&
    autotune search --kernel smem_pad --device 0 --size 8192 && autotune best --size 8192 &&
    echo "the README's main job took $(( ($(date +%s%N) - t0) / 1000000 )) ms" )
}

tests() {
  # what measures (the backend's whole path: memory, events, modules, launches, the child process)
  local measure=(
    "tests/gpu/test_gpu_kernels.py:-k:smem_pad" "tests/gpu/test_gpu_bench.py" "tests/gpu/test_gpu_search.py"
    "tests/gpu/test_gpu_device_compare.py" "tests/gpu/test_gpu_isolation.py" "tests/gpu/test_gpu_planted.py"
    "tests/gpu/test_gpu_shared_memory.py" "tests/gpu/test_gpu_matmul.py"
    "tests/gpu/test_gpu_kernels.py:-k:smem_unroll_pad or smem_vec"
    "tests/gpu/test_gpu_kernels.py:-k:smem and not smem_pad and not smem_unroll_pad and not smem_vec"
    "tests/gpu/test_gpu_kernels.py:-k:not smem" "tests/gpu/test_gpu_vec_realign.py"
    "tests/gpu/test_gpu_bytes_realign.py" "tests/gpu/test_gpu_skinny.py" "tests/gpu/test_gpu_launcher.py")
  # the runtime's (tuned kernels launched on PyTorch/CuPy arrays: the backend only reads the device's identity)
  local runtime=(
    "tests/gpu/test_gpu_interop.py" "tests/gpu/test_gpu_transpose_types.py" "tests/gpu/test_gpu_transpose_views.py"
    "tests/gpu/test_gpu_aligned_out.py" "tests/gpu/test_gpu_bytes_aligned_out.py" "tests/gpu/test_gpu_flat.py"
    "tests/gpu/test_gpu_multi.py")
  AUTOTUNE_BACKEND=cuda-bindings GPU_TESTS_SUFFIX=_cuda-bindings timeout "${TESTS_TIMEOUT:-600}" \
    bash "$here/gpu_tests.sh" "${measure[@]}" "${runtime[@]}" 2>&1 | sed "s/^/[cuda-bindings] /" &
  if [ -n "${PYCUDA_RUNTIME:-}" ]; then measure+=("${runtime[@]}"); fi
  AUTOTUNE_BACKEND=pycuda GPU_TESTS_SUFFIX=_pycuda timeout "${TESTS_TIMEOUT:-600}" \
    bash "$here/gpu_tests.sh" "${measure[@]}" 2>&1 | sed "s/^/[pycuda] /" &
  wait
}

timings() {
  python3 "$here/backends_agree.py" --rounds "${ROUNDS:-3}" --out "$dest/${day}_${tag}_backends_agree.md"
}

for step in ${STEPS:-install tests timings}; do
  case $step in
    install) install > "$dest/${day}_${tag}_backends_install.txt" 2>&1; echo "install: exit $?"
             grep -E "^(packed|a clean venv|the README)|error" "$dest/${day}_${tag}_backends_install.txt" ;;
    tests) tests ;;
    timings) timings ;;
  esac
done
