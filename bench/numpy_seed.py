"""NumPy side of bench_seed: times the seed programs in eager NumPy on the same sizes.

Prints one JSON object {workload: median_seconds}. Run by build/bench_seed, so that kiln and
NumPy are measured in one run on one machine.
"""
import json
import sys
import time

import numpy as np

# The seed programs, written once (the Python harness uses the same functions).
from kiln.bench.workloads import kmeans, numpy_fn


def median_time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main():
    sizes = json.loads(sys.argv[1])
    repeats = sizes.get("repeats", 3)
    rng = np.random.default_rng(0)
    results = {}
    n = sizes["kmeans_points"]
    for dtype in (np.float64, np.float32):
        X = rng.normal(size=(n, 2)).astype(dtype)
        means = np.array([[0.0, 0.0], [3.0, 3.0]], dtype=dtype)
        results["kmeans_" + np.dtype(dtype).name] = median_time(lambda: kmeans(X, means), repeats)
        del X
    rows, cols = sizes["numpy_fn_shape"]
    X = rng.normal(size=(rows, cols))
    Y = rng.normal(size=(rows, cols))
    results["numpy_fn"] = median_time(lambda: numpy_fn(X, Y), repeats)
    x = rng.normal(size=sizes["sin_cos_elements"]).astype(np.float32)
    results["sin_cos_large"] = median_time(lambda: np.sin(x) + np.cos(x), repeats)
    x0 = np.array(0.5)
    calls = 20000
    start = time.perf_counter()
    for _ in range(calls):
        np.sin(x0) + np.cos(x0)
    results["sin_cos_0d"] = (time.perf_counter() - start) / calls
    print(json.dumps(results))


if __name__ == "__main__":
    main()
