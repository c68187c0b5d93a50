"""Scans on the CPU, side by side in one process: eager PyTorch, kiln and Inductor
(torch.compile's default): cumsum, cummax and cummin (values and indices) along the last and
the first dim of float32 arrays.

    THREADS=1 python bench/torch_scans.py [op ...]

Each figure is the fastest of REPS calls (default 100): on a machine whose cores other jobs
share, a median measures the load more than the kernels. THREADS (default 2) is given to torch
and to kiln (options num_threads).
"""
import os
import sys
import time

import torch

import kiln.torch  # noqa: F401 (registers the backend)

THREADS = int(os.environ.get("THREADS", "2"))
REPS = int(os.environ.get("REPS", "100"))
SHAPES = [(64, 512), (1024, 1024)]
OPS = {
    "cumsum": lambda x, dim: torch.cumsum(x, dim),
    "cummax": lambda x, dim: torch.cummax(x, dim),
    "cummin": lambda x, dim: torch.cummin(x, dim),
}


def fastest_ms(f, *args):
    for _ in range(3):
        f(*args)
    times = []
    for _ in range(REPS):
        start = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def same(got, want):
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    return all(torch.allclose(g.double(), w.double(), rtol=1e-4, atol=1e-4, equal_nan=True)
               for g, w in zip(got, want))


def main(names):
    torch.manual_seed(0)
    torch.set_num_threads(THREADS)
    print(f"{'op':7s} {'shape':12s} {'dim':>3s} {'eager':>8s} {'kiln':>8s} {'inductor':>8s}  "
          f"(ms, fastest of {REPS}, {THREADS} thread(s))")
    for name in names:
        for shape in SHAPES:
            x = torch.randn(*shape)
            for dim in (-1, 0):
                op = OPS[name]
                row = [fastest_ms(op, x, dim)]
                for backend, options in (("kiln", {"options": {"num_threads": THREADS}}),
                                         ("inductor", {})):
                    compiled = torch.compile(lambda t: op(t, dim), backend=backend,
                                             dynamic=False, **options)
                    assert same(compiled(x), op(x, dim)), (name, shape, dim, backend)
                    row.append(fastest_ms(compiled, x))
                    torch._dynamo.reset()
                print(f"{name:7s} {str(shape):12s} {dim:3d} " + " ".join(f"{t:8.3f}" for t in row),
                      flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(OPS))
