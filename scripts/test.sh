#!/usr/bin/env bash
# Everything CI checks, in order: set-up and build, C++ tests, Python tests, the install/consume
# round trip, the quick benchmark. Every step after set-up runs even when an earlier one failed,
# so one run shows all failures; the exit status is non-zero if any step failed.
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

build_dir="${KILN_BUILD_DIR:-build}"
export KILN_BUILD_DIR="$build_dir"
failed_steps=()

step() {
  local name="$1"
  shift
  echo "==== $name"
  local started=$SECONDS
  if ! "$@"; then
    echo "==== $name: FAILED" >&2
    failed_steps+=("$name")
  fi
  echo "==== $name: $(( SECONDS - started )) s"   # the suite should stay near 30 minutes
}

# Without a built tree nothing below means anything: stop here.
if ! bash scripts/setup.sh; then
  echo "test.sh: setup failed" >&2
  exit 1
fi

# Tests must not read or pollute the user's kernel cache.
cache_dir="$(mktemp -d)"
trap 'rm -rf "$cache_dir"' EXIT
export KILN_CACHE_DIR="$cache_dir"
# Where kiln finds NVRTC here (pip's nvidia-cuda-nvrtc in .venv, which scripts/setup.sh installs).
export KILN_NVRTC_DIR="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

step "C++ tests" ctest --test-dir "$build_dir" --output-on-failure -j2

python_tests() {
  # pytest's exit code 5 means "no tests collected": not a failure while the suite is empty.
  local status=0
  # --durations: the slowest tests in the log, to keep the suite near its budget.
  .venv/bin/python -m pytest -q --durations=25 $(bash scripts/pytest_workers.sh) tests/python \
    || status=$?
  [ "$status" -eq 0 ] || [ "$status" -eq 5 ]
}
python_test_files="$(find tests/python -name 'test_*.py' -o -name '*_test.py' 2>/dev/null)"
if [ -n "$python_test_files" ]; then
  # kiln is imported from .venv, where scripts/setup.sh installed it (never from the tree).
  step "Python tests" python_tests
fi

step "Python tests on NumPy 1.24" bash scripts/test_numpy1.sh

step "install and build examples/cpp" bash scripts/test_install.sh

# The harnesses must not rot: one smoke run of each (small sizes, one repetition; the Python
# harness's `--quick` run is tests/python/test_bench.py's).
step "quick benchmark (C++ seed programs)" "$build_dir/bench_seed" --quick
step "transformers zoo (two models)" .venv/bin/python bench/transformers_zoo.py train vit gpt2

if [ "${#failed_steps[@]}" -gt 0 ]; then
  echo "test.sh: FAILED steps: ${failed_steps[*]}" >&2
  exit 1
fi
echo "test.sh: all steps succeeded"
