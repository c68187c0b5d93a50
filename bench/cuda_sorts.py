"""GPU time of sorts on CUDA, side by side in one process: kiln (wrap_numpy on torch CUDA
tensors: np.sort, np.argsort(kind="stable"), np.median), torch.sort / argsort / quantile and
CuPy's sort, each the median of 10 calls timed by CUDA events, in microseconds; `ok` checks
kiln's sort and argsort against torch's stable ones bit for bit. Rows of 2,048 or fewer sort in
a block each, longer ones by radix passes (src/codegen/cuda/sort_kernels.cpp).

    python bench/cuda_sorts.py
"""
import statistics
import numpy as np
import torch
import kiln

try:
    import cupy
except ImportError:
    cupy = None


def timed(fn, x, repeats=10):
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return statistics.median(times)


kiln_sort = kiln.wrap_numpy(lambda x: np.sort(x, axis=-1))
kiln_argsort = kiln.wrap_numpy(lambda x: np.argsort(x, axis=-1, kind="stable"))
kiln_median = kiln.wrap_numpy(lambda x: np.median(x, axis=-1))
gen = torch.Generator(device="cuda").manual_seed(0)
for shape, dtype in (((1 << 20,), torch.float32), ((1 << 24,), torch.float32),
                     ((1 << 20,), torch.float64), ((1 << 22,), torch.int32),
                     ((16, 65536), torch.float32), ((64, 5000), torch.float64)):
    x = torch.randn(shape, device="cuda", generator=gen)
    x = (x * 1e6).to(dtype) if dtype == torch.int32 else x.to(dtype)
    ok = torch.equal(kiln_sort(x), torch.sort(x, dim=-1, stable=True).values) and torch.equal(
        kiln_argsort(x), torch.argsort(x, dim=-1, stable=True))
    row = [f"{str(shape):14s} {str(dtype)[6:]:8s} sort ok={ok}",
           f"kiln {timed(kiln_sort, x):9.1f}", f"torch {timed(lambda t: torch.sort(t, dim=-1), x):9.1f}"]
    if cupy is not None:
        row.append(f"cupy {timed(lambda t: cupy.sort(cupy.asarray(t), axis=-1), x):9.1f}")
    row.append(f"| argsort kiln {timed(kiln_argsort, x):9.1f} torch {timed(lambda t: torch.argsort(t, dim=-1, stable=True), x):9.1f}")
    row.append(f"| median kiln {timed(kiln_median, x):9.1f} torch {timed(lambda t: torch.quantile(t, 0.5, dim=-1) if t.shape[-1] < 2**24 and t.is_floating_point() else torch.median(t, dim=-1), x):9.1f}")
    print("  ".join(row), "us", flush=True)
