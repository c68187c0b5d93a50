"""Sorts on the GPU (codegen/cuda/sort_kernels.cpp): argsort and sort steps run as generated
kernels, a block per row in shared memory or, for long rows, a radix sort's passes, in
extern/sort.h's order (stable, NaN last, -0.0 equal to 0.0, each element's own bits written).

Without a GPU (CI) each program's CUDA source is checked for its sort kernel and compiled by
nvcc, and the program runs on the CPU; on a GPU (scripts/gpu-check) it runs there against
NumPy."""
import os
import subprocess

import numpy as np
import pytest

import kiln
from kiln.bench import loop_programs

GPU = not kiln._kiln.cuda_unavailable_reason()
NVCC = next((p for p in (os.environ.get("KILN_NVCC"), "/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc",
                          "/usr/bin/nvcc") if p and os.path.exists(p)), "nvcc")


def with_specials(x):
    # NaN, both zeros and infinities among ties
    x = x.copy()
    x.flat[::7] = np.nan
    x.flat[3::11] = -0.0
    x.flat[5::11] = 0.0
    x.flat[9::13] = -np.inf
    x.flat[1::17] = np.inf
    return x


def stable_argsort_rows(x):
    return np.argsort(x, axis=1, kind="stable")


def stable_argsort_columns(x):
    return np.argsort(x, axis=0, kind="stable")


def sorted_values(x):
    return np.sort(x, kind="stable")  # (NumPy's quicksort leaves 0.0 and -0.0 in any order)


def sorted_columns(x):
    return np.sort(x, axis=0, kind="stable")


def row_medians(x):
    return np.median(x, axis=1)


def median_of_all(x):
    return np.median(x)


def sorted_view(x):
    return np.sort(x[1::3], kind="stable")


def argsort_of_view(x):
    return np.argsort(x[:, ::2], axis=0, kind="stable")


def quantiles(x):
    return np.quantile(x, [0.1, 0.5, 0.9], axis=1)


# (function, input); rows of up to 2048 sort in a block, longer ones by the radix sort (tiles
# of 4096: one partial, several, a last one partial; every key width)
CASES = [
    (sorted_values, lambda rng: with_specials(rng.standard_normal(300))),
    (stable_argsort_rows, lambda rng: with_specials(rng.standard_normal((37, 200)).round(1))),
    (stable_argsort_columns, lambda rng: rng.integers(-3, 3, (90, 7))),
    (stable_argsort_rows, lambda rng: rng.integers(-100, 100, (5, 33)).astype(np.int8)),
    (stable_argsort_rows, lambda rng: rng.integers(0, 9, (5, 2048)).astype(np.uint16)),
    (stable_argsort_rows, lambda rng: rng.random((6, 1000)) > 0.5),
    (sorted_values, lambda rng: with_specials(rng.standard_normal((3, 2049)).astype(np.float32))),
    (sorted_values, lambda rng: with_specials(rng.standard_normal(10000).astype(np.float16))),
    (stable_argsort_rows, lambda rng: with_specials(rng.standard_normal((2, 9000)).round(2))),
    (stable_argsort_rows, lambda rng: rng.integers(-2**40, 2**40, (3, 4097))),
    (stable_argsort_columns, lambda rng: rng.integers(0, 100, (5000, 3)).astype(np.int32)),
    (sorted_columns, lambda rng: with_specials(rng.standard_normal((2500, 4)))),
    (row_medians, lambda rng: rng.standard_normal((40, 31))),
    (row_medians, lambda rng: rng.standard_normal((3, 6000))),
    (median_of_all, lambda rng: rng.standard_normal((70, 70))),
    (quantiles, lambda rng: rng.standard_normal((9, 500))),
    (sorted_view, lambda rng: with_specials(rng.standard_normal(7000))),
    (argsort_of_view, lambda rng: rng.integers(0, 4, (300, 10)).astype(np.uint32)),
    (sorted_values, lambda rng: with_specials(rng.standard_normal(300_001).astype(np.float32))),
    (stable_argsort_rows, lambda rng: rng.integers(-128, 127, (3, 12_289)).astype(np.int8)),
    (stable_argsort_rows, lambda rng: rng.random((2, 8192)) > 0.3),
    (stable_argsort_rows, lambda rng: rng.integers(0, 2**63, (2, 20_000), dtype=np.uint64)),
    (median_of_all, lambda rng: rng.standard_normal(100_000).astype(np.float16)),
    # values of integers and bools sort by their keys alone, turned back into the values
    (sorted_values, lambda rng: rng.integers(-2**31, 2**31, (3, 9000)).astype(np.int32)),
    (sorted_values, lambda rng: np.concatenate(
        [rng.integers(-2**63, 2**63 - 1, 20_000), [-2**63, 2**63 - 1, 0, -1]])),
    (sorted_values, lambda rng: rng.integers(-128, 128, (2, 12_289)).astype(np.int8)),
    (sorted_values, lambda rng: rng.random(8193) > 0.5),
    (sorted_columns, lambda rng: rng.integers(0, 2**16, (10_000, 2)).astype(np.uint16)),
]


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "f":
        a, b = a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}")
    np.testing.assert_array_equal(a, b)


def nvcc_compiles(source, tmp_path):
    (tmp_path / "sort.cu").write_text(source)
    result = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "--fmad=false", "-diag-suppress",
                             "177", "-cubin", "-o", str(tmp_path / "sort.cubin"),
                             str(tmp_path / "sort.cu")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr, result.stderr[-3000:]


@pytest.mark.parametrize("fn, make", CASES, ids=[f"{c[0].__name__}{k}" for k, c in enumerate(CASES)])
def test_sorts_are_generated_kernels_with_numpys_order(fn, make, cuda_sources, tmp_path):
    """Each program's sort is a `kiln_sort<step>` kernel of its CUDA source, which nvcc
    compiles, and its results are NumPy's, bit for bit (stable ties, NaN last, each element's
    own zero): on the GPU where there is one, on the CPU otherwise (the same graph)."""
    compiled = kiln.compile(fn, device="cuda" if GPU else "cpu")
    rng = np.random.default_rng(7)
    for _ in range(2):
        x = make(rng)
        expected = fn(x)
        got = compiled(x)
        if fn in (sorted_values, sorted_columns, sorted_view):
            same_bits(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
    assert cuda_sources, "nothing compiled"
    source = cuda_sources[-1]
    assert "__global__ void __launch_bounds__" in source and " kiln_sort" in source, source[-3000:]
    nvcc_compiles(source, tmp_path)


def test_a_loop_of_row_sorts_runs_its_sorts_on_the_device(cuda_sources):
    # a loop of rows, each sorted (np.unique): a sort kernel each iteration, no host round trip
    x = np.random.default_rng(3).integers(0, 20, (30, 50))
    compiled = kiln.compile(loop_programs.row_modes, device="cuda" if GPU else "cpu")
    np.testing.assert_array_equal(compiled(x), loop_programs.row_modes(x))
    assert any(" kiln_sort" in source for source in cuda_sources)
