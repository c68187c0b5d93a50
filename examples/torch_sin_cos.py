"""Seed experiment 1 in PyTorch: torch.sin(x) + torch.cos(x) through torch.compile.

On a 0-d tensor the work is nothing and the cost of getting into and out of the compiled code
is everything: eager PyTorch's dispatcher, Inductor's generated wrapper and guards, kiln's call
path (reduce-overhead: a preplanned arena, no allocation). On a large tensor, one fused pass with
vectorised sin and cos decides.

    python examples/torch_sin_cos.py                       # 100,000 0-d calls, 16M elements
    python examples/torch_sin_cos.py --calls 1000 --size 100000
    python examples/torch_sin_cos.py --device cuda         # CUDA tensors
"""
import argparse
import sys
import time

import torch

from kiln.bench import device_argument
from kiln.bench.torch_models import synchronize

VARIANTS = (("inductor", "default"), ("kiln", "default"), ("kiln", "reduce-overhead"))


def sin_cos(x):
    return torch.sin(x) + torch.cos(x)


def per_call_seconds(function, argument, calls):
    synchronize(argument)
    start = time.perf_counter()
    for _ in range(calls):
        function(argument)
    synchronize(argument)  # on a GPU: the calls queued, then all of them done
    return (time.perf_counter() - start) / calls


def compile_with(backend, mode):
    torch._dynamo.reset()  # each variant traces from scratch: its first call is its own
    if backend == "inductor":
        return torch.compile(sin_cos, mode=mode)
    return torch.compile(sin_cos, backend=backend, mode=mode)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls on the 0-d tensor")
    parser.add_argument("--size", type=int, default=16 * 1024 * 1024,
                        help="elements of the float32 tensor")
    parser.add_argument("--backends", default="inductor,kiln",
                        help="comma list of torch.compile backends to compare with eager")
    parser.add_argument("--device", type=device_argument, default="cpu", help="cpu or cuda")
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    chosen = [(backend, mode) for backend, mode in VARIANTS
              if backend in options.backends.split(",")]

    torch.manual_seed(0)
    scalar = torch.tensor(0.5, device=options.device)
    vector = torch.randn(options.size, device=options.device)
    cases = ((f"0-d x{options.calls}", scalar, options.calls, 1e6, "us/call"),
             (f"{options.size} f32", vector, options.repeat, 1e3, "ms"))
    all_agree = True
    with torch.no_grad():
        for label, argument, calls, scale, unit in cases:
            expected = sin_cos(argument)  # also eager's warm-up call
            eager = per_call_seconds(sin_cos, argument, calls)
            print(f"{label}: eager {eager * scale:.3f} {unit}")
            for backend, mode in chosen:
                compiled = compile_with(backend, mode)
                start = time.perf_counter()
                result = compiled(argument)
                synchronize(result)
                first_call = time.perf_counter() - start
                agree = bool(torch.allclose(result, expected, rtol=1e-5, atol=1e-6))
                all_agree &= agree
                per_call = per_call_seconds(compiled, argument, calls)
                print(f"  {backend:8} mode={mode:16} {per_call * scale:10.3f} {unit}   "
                      f"vs eager {eager / per_call:6.2f}x   first call {first_call:6.3f} s   "
                      f"results {'agree' if agree else 'DIFFER'}")
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
