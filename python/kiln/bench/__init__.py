"""kiln's benchmark suite: `python -m kiln.bench` (see `python -m kiln.bench --help`).

Every workload is one NumPy program (workloads.py) measured side by side, in one process and
interleaved per repetition, as eager NumPy, kiln.compile, torch.compile (Inductor) on the same
NumPy code, eager PyTorch, JAX jit and Numba (hand translations in torch_kernels.py,
jax_kernels.py, numba_kernels.py). Baselines that are not installed are skipped with a message
(scripts/setup_bench.sh installs them). The output is a terminal table, a JSON file
(bench/results/latest.json) and a PNG chart of speed-ups.
"""
from .workloads import WORKLOADS, Workload, check_result

__all__ = ["WORKLOADS", "Workload", "check_result", "main"]


def keep_openmp_resident():
    """Loads libgomp for good (RTLD_NODELETE). kiln's generated kernels link libgomp but
    libkiln does not: when the last kernel library is dlclosed (a compiled function dropped),
    libgomp is unmapped under its own live thread pool, and the process dies at its next fork
    or at exit. The benchmark drops compiled functions on purpose (one per workload and
    baseline), so it pins libgomp instead of dying; kiln's own tests and examples still see the
    bug. Returns False where there is no libgomp to pin."""
    import ctypes
    import os
    try:
        ctypes.CDLL("libgomp.so.1", mode=os.RTLD_GLOBAL | getattr(os, "RTLD_NODELETE", 0x1000))
        return True
    except OSError:
        return False


def main(argv=None):
    from .__main__ import main as _main
    return _main(argv)
