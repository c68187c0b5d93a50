#!/usr/bin/env bash
# The main job: set up (kiln, and the baselines it is compared with), then run the seed
# benchmark on the CPU, printing the table. Extra arguments go to `python -m kiln.bench`
# (e.g. --workloads all, --repeat 9, --baselines kiln,numpy,torch).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/setup_bench.sh
.venv/bin/python -m kiln.bench --workloads seed "$@"
echo
echo "The same seed programs through kiln's C++ API, beside NumPy:"
build/bench_seed
