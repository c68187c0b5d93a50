"""Warm start: the first call of a compiled function in a fresh process whose disk cache already
holds its kernels, `import kiln` included (inputs are made before the clock starts). Also
prints each workload's op count, to name the largest graph of the suite.

    .venv/bin/python bench/warm_start.py [workload ...]     # default: numpy_fn and the largest
"""
import json
import os
import subprocess
import sys
import tempfile

FRESH_PROCESS = r"""
import json, sys, time
import numpy as np
name = sys.argv[1]
from kiln.bench import workloads
workload = workloads.BY_NAME[name]
inputs = workload.inputs(False, seed=0)
start = time.perf_counter()
import kiln
from kiln.bench.baselines import fresh_function
function = kiln.compile(fresh_function(workload.function))
function(*inputs)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def op_counts():
    import kiln
    from kiln.bench import workloads
    from kiln.bench.baselines import fresh_function
    counts = {}
    for workload in workloads.WORKLOADS:
        explained = kiln.explain(fresh_function(workload.function))(*workload.inputs(True, 0))
        counts[workload.name] = explained.op_count
    return counts


def run(name, environment):
    completed = subprocess.run([sys.executable, "-c", FRESH_PROCESS, name], env=environment,
                               capture_output=True, text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])["seconds"]


def main():
    counts = op_counts()
    largest = max(counts, key=counts.get)
    names = sys.argv[1:] or ["numpy_fn", largest]
    print("ops per workload:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items(),
                                                                      key=lambda kv: -kv[1])))
    with tempfile.TemporaryDirectory(prefix="kiln-warm-") as cache:
        environment = dict(os.environ, KILN_CACHE_DIR=cache)
        for name in names:
            cold = run(name, environment)  # fills the cache
            warm = min(run(name, environment) for _ in range(3))
            print(f"{name}: {counts[name]} ops; cold first call {cold * 1e3:.0f} ms, warm start "
                  f"(fresh process, disk hit, import kiln included) {warm * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
