#!/usr/bin/env bash
# Brings a fresh Debian machine (or CI) to a built kiln: system packages, the Python venv and
# the CMake build in build/. Idempotent: when everything is already in place it prints nothing
# and returns in about a second, so test.sh and CI can call it unconditionally.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

build_dir="${KILN_BUILD_DIR:-build}"
# What the Python side needs: the test runner, and the build backend of the package itself
# (pip install --no-build-isolation below uses these instead of downloading them per build);
# pytest-xdist runs the test files on every core (scripts/test.sh).
# matplotlib: the benchmark's chart, which the tests check. torch (pinned: the CPU wheel that
# lies on this machine; a plain `torch` pulls the multi-GB CUDA build), transformers (BERT from
# its config) and expecttest (torch's OpInfo samples import it): the PyTorch front end.
# nvidia-cuda-nvrtc (CUDA 13.0's runtime compiler, which needs no GPU): the tests compile the
# CUDA emitter's output with it, as kiln does on a GPU (tests/cpp/test_cuda_emitter.cpp).
python_packages=(numpy pytest pytest-xdist nanobind scikit-build-core matplotlib torch==2.13.0 transformers
  expecttest "nvidia-cuda-nvrtc==13.0.*")
python_check='import numpy, pytest, xdist, nanobind, scikit_build_core, matplotlib, torch, transformers, expecttest, nvidia.cu13'

say() { echo "setup: $*"; }

# Runs a noisy command with its output kept in a log; shows the log only when it fails, so a
# successful setup stays one line per step.
run_logged() {
  local log
  log="$(mktemp)"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "setup: FAILED: $*" >&2
    return 1
  fi
  rm -f "$log"
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# ---- Debian packages -----------------------------------------------------------------------
debian_package_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing_packages=()
command -v g++ >/dev/null 2>&1 || missing_packages+=(g++)
command -v make >/dev/null 2>&1 || command -v ninja >/dev/null 2>&1 || missing_packages+=(make)
# ocl-icd-opencl-dev: Debian's oneDNN is built with the OpenCL GPU runtime, and its CMake config
# stops configuring when OpenCL's headers and library are absent. libhwy-dev (Highway's vqsort) is
# optional: without it the sort kernel keeps its radix passes (CMakeLists.txt).
for package in libgtest-dev libopenblas-dev libopenblas0-openmp libdnnl-dev ocl-icd-opencl-dev libhwy-dev; do
  debian_package_installed "$package" || missing_packages+=("$package")
done
# Debian's own python3 needs python3-venv for `python3 -m venv`; pyenv's Python has it built in.
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing_packages+=(python3-venv)
fi

if [ "${#missing_packages[@]}" -gt 0 ]; then
  say "installing Debian packages: ${missing_packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  run_logged as_root apt-get update -qq
  run_logged as_root apt-get install -y -qq --no-install-recommends "${missing_packages[@]}"
fi

# ---- Python virtual environment ------------------------------------------------------------
# A venv whose interpreter no longer runs (the base Python moved) is rebuilt rather than patched.
if ! .venv/bin/python -c '' >/dev/null 2>&1; then
  say "creating .venv"
  run_logged python3 -m venv --clear .venv
fi
if ! .venv/bin/python -c "$python_check" >/dev/null 2>&1; then
  say "installing Python packages into .venv: ${python_packages[*]}"
  run_logged .venv/bin/python -m pip install -q --disable-pip-version-check "${python_packages[@]}"
fi

# ---- CMake configure and build -------------------------------------------------------------
# Configure only until a build system exists: afterwards `cmake --build` re-runs CMake by itself
# when CMakeLists.txt or a globbed source list changes. A configure that failed half-way leaves a
# cache but no build system, so it is retried with the generator the cache already names.
if [ ! -f "$build_dir/build.ninja" ] && [ ! -f "$build_dir/Makefile" ]; then
  generator_arguments=()
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    generator_arguments=(-G "Unix Makefiles")
    command -v ninja >/dev/null 2>&1 && generator_arguments=(-G Ninja)
  fi
  say "configuring $build_dir/ (Release)"
  run_logged cmake -S . -B "$build_dir" "${generator_arguments[@]}" -DCMAKE_BUILD_TYPE=Release
fi

build_log="$(mktemp)"
build_start=$SECONDS
if ! cmake --build "$build_dir" -j2 >"$build_log" 2>&1; then
  cat "$build_log" >&2
  rm -f "$build_log"
  echo "setup: FAILED: cmake --build $build_dir -j2" >&2
  exit 1
fi
# Ninja says "no work to do" and Make prints no "Building"/"Linking" line when up to date.
if grep -qE 'Building|Linking|Re-running CMake|Generating' "$build_log" &&
  ! grep -q 'ninja: no work to do' "$build_log"; then
  say "built $build_dir/ in $((SECONDS - build_start)) s"
fi
rm -f "$build_log"

# ---- the Python package ----------------------------------------------------------------------
# `pip install .` (scikit-build-core + nanobind, pyproject.toml) into .venv, reusing
# $build_dir/python so a rerun recompiles only what changed. Skipped while the installed package
# imports and no source it is built from is newer than the last install.
python_build_dir="$build_dir/python"
install_stamp="$python_build_dir/.kiln-installed"
python_sources=(python src include CMakeLists.txt pyproject.toml)
needs_install=1
if [ -f "$install_stamp" ] && .venv/bin/python -c 'import kiln._kiln' >/dev/null 2>&1 &&
  [ -z "$(find "${python_sources[@]}" -newer "$install_stamp" -print -quit 2>/dev/null)" ]; then
  needs_install=0
fi
if [ "$needs_install" -eq 1 ]; then
  install_start=$SECONDS
  mkdir -p "$python_build_dir"
  CMAKE_BUILD_PARALLEL_LEVEL=2 run_logged .venv/bin/python -m pip install -q \
    --disable-pip-version-check --no-build-isolation --no-deps \
    -Cbuild-dir="$python_build_dir" .
  touch "$install_stamp"
  say "installed the kiln Python package into .venv in $((SECONDS - install_start)) s"
fi
