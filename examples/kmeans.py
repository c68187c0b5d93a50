"""Seed experiment 3: the k-means assignment step, compiled with kiln, in float64 and float32.

    labels = argmin(norm(X - means[:, None], axis=2), axis=0)

on 20M two-dimensional points scattered around two means. NumPy builds the (2, N, 2) difference
and the (2, N) distances in memory; kiln computes each point's label in one pass.

    python examples/kmeans.py                   # 20M points
    python examples/kmeans.py --points 100000
    python examples/kmeans.py --device cuda     # on a GPU (copies in and out)
"""
import argparse
import sys
import time

import numpy as np

import kiln
from kiln.bench import device_argument

MODES = ("default", "reduce-overhead", "max-autotune")


def kmeans(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def median_seconds(function, arguments, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(*arguments)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def points(count, means, rng):
    which = rng.integers(0, len(means), count)
    return rng.standard_normal((count, 2)) + means[which]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000_000)
    parser.add_argument("--device", type=device_argument, default="cpu",
                        help="cpu or cuda (NumPy arrays copied in and back)")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()

    rng = np.random.default_rng(0)
    means64 = np.array([[0.0, 0.0], [3.0, 3.0]])
    X64 = points(options.points, means64, rng)
    all_agree = True
    for dtype in (np.float64, np.float32):
        X, means = X64.astype(dtype, copy=False), means64.astype(dtype)
        expected = kmeans(X, means)
        eager = median_seconds(kmeans, (X, means), options.repeat)
        print(f"kmeans on {options.points} points, {np.dtype(dtype).name}: eager NumPy "
              f"{eager * 1e3:.2f} ms")
        for mode in MODES:
            compiled = kiln.compile(kmeans, mode=mode, device=options.device)
            start = time.perf_counter()
            labels = compiled(X, means)
            compile_seconds = time.perf_counter() - start
            # A point within rounding of the bisector may fall either way: allow a few.
            differing = int(np.count_nonzero(np.asarray(labels) != expected))
            agree = differing <= max(1, options.points // 100_000)
            all_agree &= agree
            seconds = median_seconds(compiled, (X, means), options.repeat)
            print(f"  mode={mode:16} kiln {seconds * 1e3:9.3f} ms   speed-up "
                  f"{eager / seconds:7.2f}x   compile {compile_seconds:6.3f} s   results "
                  f"{'agree' if agree else 'DIFFER'} ({differing} labels differ)")
        del X
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
