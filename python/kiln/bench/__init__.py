"""kiln's benchmark suite: `python -m kiln.bench` (see `python -m kiln.bench --help`).

Every workload is one NumPy program (workloads.py) measured side by side, in one process and
interleaved per repetition, as eager NumPy, kiln.compile, torch.compile (Inductor) on the same
NumPy code, eager PyTorch, JAX jit and Numba (hand translations in torch_kernels.py,
jax_kernels.py, numba_kernels.py). Baselines that are not installed are skipped with a message
(scripts/setup_bench.sh installs them). The output is a terminal table, a JSON file
(bench/results/latest.json) and a PNG chart of speed-ups.
"""
from .workloads import WORKLOADS, Workload, check_result

__all__ = ["WORKLOADS", "Workload", "check_result", "device_argument", "device_problem", "main"]


def device_problem(device):
    """None where `device` ("cpu" or "cuda") can run here, else why not (for --device)."""
    if device == "cpu":
        return None
    from .. import _kiln
    reason = _kiln.cuda_unavailable_reason()
    return f"--device cuda: no usable GPU here: {reason}" if reason else None


def device_argument(text):
    """The argparse type of the examples' --device: "cpu", or "cuda" where a GPU can run."""
    import argparse
    if text not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"unknown device {text!r} (cpu or cuda)")
    problem = device_problem(text)
    if problem:  # argparse names the option itself
        raise argparse.ArgumentTypeError(problem.removeprefix("--device "))
    return text


def main(argv=None):
    from .__main__ import main as _main
    return _main(argv)
