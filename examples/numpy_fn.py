"""Seed experiment 2: `numpy_fn`, a typical NumPy data-processing function, compiled with kiln.

It normalises X and Y column-wise, multiplies them by broadcasting and sums over the last two
axes (NumPy materialises a rows x columns x columns temporary: 3.4 GB at 1024x640), clips to
[-1, 1], takes exp, and adds 0.001 x the sum of squares. kiln fuses all of it.

    python examples/numpy_fn.py                 # 1024 x 640 float64
    python examples/numpy_fn.py --rows 64 --columns 40
    python examples/numpy_fn.py --device cuda   # on a GPU (copies in and out)
"""
import argparse
import sys
import time

import numpy as np

import kiln
from kiln.bench import device_argument

MODES = ("default", "reduce-overhead", "max-autotune")


def numpy_fn(X, Y):
    X_mean, X_std = X.mean(axis=0), X.std(axis=0)
    Y_mean, Y_std = Y.mean(axis=0), Y.std(axis=0)
    X_std[X_std == 0] = 1
    Y_std[Y_std == 0] = 1
    X_normalized = (X - X_mean) / X_std
    Y_normalized = (Y - Y_mean) / Y_std
    intermediate_result = np.sum(X_normalized[:, :, None] * Y_normalized[:, None, :], axis=(-2, -1))
    intermediate_result = np.clip(intermediate_result, -1, 1)
    result = np.exp(intermediate_result)
    regularization = 0.001 * np.sum(X_normalized ** 2)
    result += regularization
    return result


def median_seconds(function, arguments, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(*arguments)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--columns", type=int, default=640)
    parser.add_argument("--device", type=device_argument, default="cpu",
                        help="cpu or cuda (NumPy arrays copied in and back)")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()

    rng = np.random.default_rng(0)
    X = rng.standard_normal((options.rows, options.columns))
    Y = rng.standard_normal((options.rows, options.columns))
    expected = numpy_fn(X, Y)
    eager = median_seconds(numpy_fn, (X, Y), options.repeat)
    print(f"numpy_fn on {options.rows}x{options.columns} float64: eager NumPy {eager * 1e3:.2f} ms")

    all_agree = True
    for mode in MODES:
        compiled = kiln.compile(numpy_fn, mode=mode, device=options.device)
        start = time.perf_counter()
        result = compiled(X, Y)
        compile_seconds = time.perf_counter() - start
        agree = bool(np.allclose(result, expected, rtol=1e-6, atol=1e-9))
        all_agree &= agree
        seconds = median_seconds(compiled, (X, Y), options.repeat)
        print(f"  mode={mode:16} kiln {seconds * 1e3:9.3f} ms   speed-up {eager / seconds:7.2f}x"
              f"   compile {compile_seconds:6.3f} s   results {'agree' if agree else 'DIFFER'}")
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
