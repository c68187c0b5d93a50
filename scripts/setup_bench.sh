#!/usr/bin/env bash
# Installs the optional benchmark baselines (PyTorch, JAX, Numba, matplotlib, psutil) into the
# repo's .venv, so that `python -m kiln.bench` can measure kiln against them side by side.
# Idempotent: a baseline that already imports is skipped, and when all are present the script
# prints nothing and returns in about a second. Run scripts/setup.sh first (it creates .venv).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

python=.venv/bin/python
if ! "$python" -c '' >/dev/null 2>&1; then
  echo "setup_bench: no working .venv: run scripts/setup.sh first" >&2
  exit 1
fi

# module to import : what pip installs. torch is pinned to the CPU wheel that lies on this
# machine: a plain `torch` would pull the multi-GB CUDA build.
baselines=(
  "torch:torch==2.13.0"
  "jax:jax"
  "numba:numba"
  "matplotlib:matplotlib"
  "psutil:psutil"
)

missing=()
for entry in "${baselines[@]}"; do
  module="${entry%%:*}"
  requirement="${entry#*:}"
  "$python" -c "import $module" >/dev/null 2>&1 || missing+=("$requirement")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

# One pip call per package: one that cannot be installed (no wheel for this Python, say) must
# not stop the others; the harness skips whatever is missing and says so.
# The NumPy that kiln was built and tested against stays: a baseline that wants another NumPy
# gets an older release of itself that fits, or fails to install and is skipped.
numpy_pin="numpy==$("$python" -c 'import numpy; print(numpy.__version__)')"
status=0
for requirement in "${missing[@]}"; do
  echo "setup_bench: installing $requirement"
  log="$(mktemp)"
  if ! "$python" -m pip install -q --disable-pip-version-check "$requirement" "$numpy_pin" >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup_bench: FAILED to install $requirement (the benchmark will skip it)" >&2
    status=1
  fi
  rm -f "$log"
done
exit "$status"
