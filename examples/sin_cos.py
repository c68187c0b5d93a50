"""Seed experiment 1: sin(x) + cos(x), compiled with kiln, in the three modes.

Two questions in one program:
- call overhead: many calls on a 0-d array, where the work is nothing and the cost of getting
  into and out of the compiled code is everything;
- bandwidth: one call on 16M float32 elements, where vectorised sin/cos and one fused pass over
  memory (NumPy makes three) decide.

    python examples/sin_cos.py                        # 100,000 0-d calls, 16M elements
    python examples/sin_cos.py --calls 1000 --size 100000
    python examples/sin_cos.py --device cuda              # the same on a GPU (copies in and out)
"""
import argparse
import sys
import time

import numpy as np

import kiln
from kiln.bench import device_argument

MODES = ("default", "reduce-overhead", "max-autotune")


def sin_cos(x):
    return np.sin(x) + np.cos(x)


def per_call_seconds(function, argument, calls):
    start = time.perf_counter()
    for _ in range(calls):
        function(argument)
    return (time.perf_counter() - start) / calls


def median_seconds(function, argument, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(argument)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def first_call(function, argument):
    start = time.perf_counter()
    result = function(argument)
    return result, time.perf_counter() - start


def report(label, eager_seconds, compiled_seconds, compile_seconds, agree, unit=""):
    scale, suffix = (1e6, " us/call") if unit == "call" else (1e3, " ms")
    print(f"  {label:16} eager {eager_seconds * scale:9.3f}{suffix}   kiln "
          f"{compiled_seconds * scale:9.3f}{suffix}   speed-up {eager_seconds / compiled_seconds:6.2f}x"
          f"   compile {compile_seconds:6.3f} s   results {'agree' if agree else 'DIFFER'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls on the 0-d array")
    parser.add_argument("--size", type=int, default=16 * 1024 * 1024,
                        help="elements of the float32 array")
    parser.add_argument("--device", type=device_argument, default="cpu",
                        help="cpu or cuda (NumPy arrays copied in and back)")
    parser.add_argument("--repeat", type=int, default=7)
    arguments = parser.parse_args()

    scalar = np.array(0.5)
    vector = np.random.default_rng(0).standard_normal(arguments.size).astype(np.float32)
    eager_overhead = per_call_seconds(sin_cos, scalar, arguments.calls)
    eager_bandwidth = median_seconds(sin_cos, vector, arguments.repeat)
    expected_scalar, expected_vector = sin_cos(scalar), sin_cos(vector)

    all_agree = True
    for mode in MODES:
        print(f"mode={mode}")
        compiled = kiln.compile(sin_cos, mode=mode, device=arguments.device)
        result, compile_seconds = first_call(compiled, scalar)
        agree = bool(np.allclose(result, expected_scalar, rtol=1e-12, atol=0))
        report(f"0-d x{arguments.calls}", eager_overhead,
               per_call_seconds(compiled, scalar, arguments.calls), compile_seconds, agree,
               unit="call")
        all_agree &= agree
        result, compile_seconds = first_call(compiled, vector)  # a new shape: a new graph
        agree = bool(np.allclose(result, expected_vector, rtol=1e-5, atol=1e-6))
        report(f"{arguments.size} f32", eager_bandwidth,
               median_seconds(compiled, vector, arguments.repeat), compile_seconds, agree)
        all_agree &= agree
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
