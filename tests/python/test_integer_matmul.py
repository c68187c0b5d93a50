"""Integer matmul (NumPy's: wrapping in the operands' own type). Tiny and matrix-vector products
are generated reductions fused with their neighbours; larger ones are kiln's own integer matmul
on the CPU (extern/integer_matmul.cpp: b read stride-1, all threads), since no BLAS has one."""
import numpy as np
import pytest

import kiln

INTEGER_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_products_wrap_like_numpy(dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 120, (3, 40, 70)).astype(dtype)  # products and sums overflow int8
    b = rng.integers(0, 120, (70, 30)).astype(dtype)
    v = rng.integers(0, 120, 70).astype(dtype)
    functions = [lambda a, b, v: a @ b, lambda a, b, v: v @ b, lambda a, b, v: a @ v,
                 lambda a, b, v: np.matmul(a[:, :, ::2], b[::2, ::-1]) + 1,
                 lambda a, b, v: np.dot(a[0], b).sum(axis=0)]
    for fn in functions:
        expected, got = fn(a, b, v), kiln.compile(fn)(a, b, v)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_a_large_integer_product_is_a_matmul_call():
    rng = np.random.default_rng(1)
    a = rng.integers(-1000, 1000, (300, 500))
    b = rng.integers(-1000, 1000, (500, 400))
    report = kiln.explain(lambda a, b: a @ b * 2)(a, b)
    np.testing.assert_array_equal(report.result, a @ b * 2)
    # The matmul call, then the doubling: no (300, 500, 400) reduction reading b down columns
    # (int64 256^3 took 7x eager torch's time that way).
    assert report.graph_count == 1 and report.kernels == ["kernel0_matmul_mul"]
    assert "matmul(" in str(report)


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", [((1, 33, 67, 45), (45, 129)), ((5, 17, 300), (5, 300, 3)),
                                    ((3, 1, 80, 64), (4, 64, 2100)), ((130, 70), (70, 1))],
                         ids=["odd", "batched", "broadcast-wide", "column"])
def test_integer_products_of_every_shape_match_numpy(dtype, shapes):
    # Widths past one column block of every dtype (2048 int8 columns), batches broadcast, and
    # operands read in place through a transpose (b packed first) and a negative stride.
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 127, shapes[0]).astype(dtype)
    b = rng.integers(-128, 127, shapes[1]).astype(dtype)
    bt = np.ascontiguousarray(np.swapaxes(b, -1, -2))
    functions = [lambda a, b, bt: a @ b, lambda a, b, bt: a @ np.swapaxes(bt, -1, -2),
                 lambda a, b, bt: a[..., ::-1, :] @ b]
    for fn in functions:
        expected, got = fn(a, b, bt), kiln.compile(fn)(a, b, bt)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("narrow", [np.int32, np.int16])
def test_small_products_of_mixed_widths_in_one_kernel_run(narrow):
    # One kernel reduces K = 4 (or 8) lanes of float64 beside lanes of a 4- (2-) byte integer:
    # GCC 12.2 put those lane arrays in the red zone misaligned for its vmovdqa (a segfault).
    rng = np.random.default_rng(7)
    functions = [lambda a, b: (np.dot(a, b), a.astype(narrow) @ b.astype(narrow)),
                 lambda a, b: (np.dot(a, b), a.astype(narrow) @ b.astype(narrow),
                               a.astype(np.float32) @ b)]
    for inner in (4, 8):
        a, b = rng.normal(size=(3, inner)), rng.normal(size=(inner, 3)) * 4
        for fn in functions:
            for got, expected in zip(kiln.compile(fn)(a, b), fn(a, b)):
                assert got.dtype == expected.dtype
                np.testing.assert_allclose(got, expected, rtol=1e-12)
