"""Where the one-thread threshold lies, and what a busy machine costs: per-call times of two
kernels (sin+cos, a row sum of squares) from 2^12 to 2^24 float32 elements, compiled with
num_threads=1 and with two threads. Run it once on an idle machine and once beside a CPU-bound
process; bench/oversubscription.md has the figures.

    .venv/bin/python bench/oversubscription.py
    python3 -c "while True: pass" & .venv/bin/python bench/oversubscription.py; kill %1
"""
import time

import numpy as np
import kiln

def timeit(f, x, min_time=0.2, least=5):
    """Median seconds of f(x) over at least `min_time` and `least` calls, after two."""
    f(x); f(x)
    start = time.perf_counter()
    times = []
    while True:
        t0 = time.perf_counter(); f(x); times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > min_time and len(times) >= least: break
    return float(np.median(times))

def kernels(threads):
    opts = {"num_threads": threads}
    def sincos(x): return np.sin(x) + np.cos(x)
    def rowsum(x): return (x * x).sum(axis=-1)
    return {"sincos": kiln.compile(sincos, options=opts), "rowsum": kiln.compile(rowsum, options=opts)}


def main():
    results = {}
    for threads in (1, 2):
        ks = kernels(threads)
        for log2 in (12, 14, 16, 18, 20, 22, 24):
            x = np.random.rand(2 ** log2).astype(np.float32)
            x2 = x.reshape(-1, 64)
            results[(threads, log2, "sincos")] = timeit(ks["sincos"], x)
            results[(threads, log2, "rowsum")] = timeit(ks["rowsum"], x2)
    for k in ("sincos", "rowsum"):
        for log2 in (12, 14, 16, 18, 20, 22, 24):
            t1, t2 = results[(1, log2, k)], results[(2, log2, k)]
            print(f"{k:7s} 2^{log2}: 1 thread {t1*1e6:9.1f} us  2 threads {t2*1e6:9.1f} us  ratio {t2/t1:5.2f}")


if __name__ == "__main__":
    main()
