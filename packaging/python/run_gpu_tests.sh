#!/usr/bin/env bash
# Every Python test on a machine with a GPU (torch, Triton; CuPy and JAX
# where installed) and the call-overhead measurement, against a build of
# the library made here (sm_90a kernel images; GPU_ARCHS overrides), then
# the wheel test. Logs go to $OUT (else ./python-gpu-logs): build.log,
# tests.log, overhead.log, overhead.json, wheel.log. Exits non-zero when a
# test fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/python-gpu-logs}
build=${BUILD:-/tmp/alphamoe-python-gpu}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX shares the GPU with torch

{ nvidia-smi -L; python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'
  if [ -d "$build" ]; then reconfigure=--reconfigure; else reconfigure=; fi
  meson setup "$build" $reconfigure -Dgpu_archs="${GPU_ARCHS:-90a}" -Dtests=false -Dtools=false &&
  ninja -C "$build"; } > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; echo "build failed"; exit 1; }

export ALPHAMOE_ROUTER_LIBRARY="$build/capi/libalphamoe_router.so.0" PYTHONPATH="$PWD/packaging/python"
python3 -m unittest discover -v -s packaging/python/tests > "$out/tests.log" 2>&1
tests=$?
grep -E '^(Ran|OK|FAILED)|skipped|\.\.\. (FAIL|ERROR)' "$out/tests.log"
[ "$tests" -eq 0 ] || sed -n '/^======/,$p' "$out/tests.log" | tail -200  # what failed, and why
python3 packaging/python/bench_overhead.py --json "$out/overhead.json" > "$out/overhead.log" 2>&1
bench=$?
cat "$out/overhead.log"
# pip install . and the tests against the wheel (exit 77: it cannot be built here, and says why).
python3 packaging/python/test_wheel.py --source "$PWD" --work "$build/wheel" --archs "${GPU_ARCHS:-90a}" \
  > "$out/wheel.log" 2>&1
wheel=$?
grep -E '^(SKIP|FAIL|Ran|OK|FAILED)' "$out/wheel.log"
echo "tests exit $tests, overhead exit $bench, wheel exit $wheel"
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ] && { [ "$wheel" -eq 0 ] || [ "$wheel" -eq 77 ]; }
