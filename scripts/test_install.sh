#!/usr/bin/env bash
# Checks that an installed kiln is usable by a separate CMake project: installs build/ into a
# temporary prefix, builds examples/cpp against it with find_package(kiln), and runs the
# example on a small input. Catches missing installed headers and a broken package config.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

build_dir="${KILN_BUILD_DIR:-build}"
example_size="${KILN_EXAMPLE_SIZE:-100000}"

if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  echo "test_install: no build in $build_dir/; run scripts/setup.sh first" >&2
  exit 1
fi

work_dir="$(mktemp -d)"
trap 'rm -rf "$work_dir"' EXIT
prefix="$work_dir/prefix"

# Output is kept in a log and shown only on failure.
run_logged() {
  local log="$work_dir/step.log"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "test_install: FAILED: $*" >&2
    return 1
  fi
}

generator="Unix Makefiles"
command -v ninja >/dev/null 2>&1 && generator="Ninja"

run_logged cmake --install "$build_dir" --prefix "$prefix"
run_logged cmake -S examples/cpp -B "$work_dir/example-build" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
run_logged cmake --build "$work_dir/example-build" -j2

# A fresh kernel cache: the example must compile its kernel from nothing.
export KILN_CACHE_DIR="$work_dir/cache"
"$work_dir/example-build/kmeans" "$example_size"
echo "test_install: installed kiln builds and runs examples/cpp"
