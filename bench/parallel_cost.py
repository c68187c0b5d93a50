"""Where a second thread pays, by what an element costs: per-call times of a cheap product, a
row sum (rows of 64), a division, exp and tanh from 2^12 to 2^18 float32 elements, compiled for one thread
and for two with every loop parallel (KILN_PARALLEL_THRESHOLD=1). bench/oversubscription.md
("Cost-weighted work") has the figures; run it on an idle machine (the runtime gives a busy
one's kernels fewer threads: runtime/thread_budget.h).

    .venv/bin/python bench/parallel_cost.py [kernel names]
"""
import os
import sys
import time

import numpy as np
import kiln

from oversubscription import timeit  # bench/'s own timer




KERNELS = {
    "product": lambda x: x * np.float32(3),
    "row sum": lambda x: x.reshape(-1, 64).sum(axis=-1),
    "quotient": lambda x: x / (x + np.float32(3)),
    "exp": np.exp,
    "tanh": np.tanh,
}


def main():
    sizes = range(12, 19)
    if len(sys.argv) > 1:  # kernels to run
        for name in set(KERNELS) - set(sys.argv[1:]):
            del KERNELS[name]
    times = {}
    for threads in (1, 2):
        if threads == 1:
            os.environ.pop("KILN_PARALLEL_THRESHOLD", None)
        else:
            os.environ["KILN_PARALLEL_THRESHOLD"] = "1"  # read when a function compiles
        for name, f in KERNELS.items():
            for log2 in sizes:  # a function per size: each compiled for its own
                x = np.random.rand(2 ** log2).astype(np.float32) - 0.5
                g = kiln.compile(f, dynamic=False, options={"num_threads": threads})
                times[threads, name, log2] = timeit(g, x, min_time=0.3, least=50)
    for name in KERNELS:
        for log2 in sizes:
            t1, t2 = times[1, name, log2], times[2, name, log2]
            print(f"{name:8s} 2^{log2}: 1 thread {t1 * 1e6:7.1f} us  2 threads {t2 * 1e6:7.1f} us"
                  f"  ratio {t2 / t1:5.2f}")


if __name__ == "__main__":
    main()
