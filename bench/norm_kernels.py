"""Normalisations on the CPU, side by side in one process: eager PyTorch, kiln and Inductor
(torch.compile's default), inference (no_grad) unless noted. Group norm alone, a diffusion
UNet's residual block (GroupNorm, SiLU, conv 3x3, twice, plus the input), BERT's layer norm,
layer norm over the last two dims, instance norm, batch norm in training.

    THREADS=1 python bench/norm_kernels.py [case ...]

Each figure is the fastest of REPS calls (default 60): on a machine whose cores other jobs share,
a median measures the load more than the kernels. THREADS (default 2) is given to torch and to
kiln (options num_threads); kiln's runtime still gives kernels only the cores it finds free
(src/runtime/thread_budget.h), so compare at THREADS=1 on a busy machine.
"""
import os
import sys
import time

import torch
import torch.nn as nn

import kiln.torch  # noqa: F401 (registers the backend)

THREADS = int(os.environ.get("THREADS", "2"))
REPS = int(os.environ.get("REPS", "60"))


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, channels), nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(32, channels), nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        h = self.conv1(nn.functional.silu(self.norm1(x)))
        return x + self.conv2(nn.functional.silu(self.norm2(h)))


CASES = {  # name: (model, input shape, training)
    "groupnorm": (lambda: nn.GroupNorm(32, 256), (8, 256, 32, 32), False),
    "resblock": (lambda: ResBlock(128), (2, 128, 32, 32), False),
    "layernorm": (lambda: nn.LayerNorm(768), (8, 128, 768), False),
    "layernorm2d": (lambda: nn.LayerNorm([32, 32]), (8, 256, 32, 32), False),
    "instancenorm": (lambda: nn.InstanceNorm2d(256, affine=True), (8, 256, 32, 32), False),
    "batchnorm_train": (lambda: nn.BatchNorm2d(256), (8, 256, 32, 32), True),
}


def fastest_ms(f, x):
    for _ in range(3):
        f(x)
    times = []
    for _ in range(REPS):
        start = time.perf_counter()
        f(x)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main(names):
    torch.manual_seed(0)
    torch.set_num_threads(THREADS)
    print(f"{'case':16s} {'shape':18s} {'eager':>9s} {'kiln':>9s} {'inductor':>9s}  (ms, "
          f"fastest of {REPS}, {THREADS} thread(s))")
    for name in names:
        make, shape, training = CASES[name]
        model = make().train(training)
        x = torch.randn(*shape)
        with torch.set_grad_enabled(False):
            want = model(x)
            row = [fastest_ms(model, x)]
            for backend, options in (("kiln", {"options": {"num_threads": THREADS}}), ("inductor", {})):
                compiled = torch.compile(model, backend=backend, **options)
                error = (compiled(x) - want).abs().max().item()
                assert error < 1e-3, (name, backend, error)
                row.append(fastest_ms(compiled, x))
                torch._dynamo.reset()
        print(f"{name:16s} {str(shape):18s} " + " ".join(f"{t:9.3f}" for t in row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
