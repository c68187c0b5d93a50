"""Complex numbers (complex64, complex128) through the tracer, the graph and the compiled code:
every NumPy function kiln lowers to real pairs (ir/complex_lowering.h) agrees with NumPy on both
dtypes, complex inputs are read in place whatever their strides, Python complex scalars are weak
as NEP 50 says, Mandelbrot- and FFT-style programs compile into one graph (the loop once, for
any trip count), and what kiln does not lower runs eagerly with the reason recorded."""
import numpy as np
import pytest

import kiln

RTOL = {np.complex64: 2e-5, np.complex128: 1e-12}


def complex_data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def check(f, *args, rtol=1e-12):
    """f compiled (one graph, no break) agrees with NumPy: values and dtypes."""
    expected = f(*args)
    report = kiln.explain(f)(*args)
    assert report.graph_count == 1 and report.graph_break_count == 0, str(report)
    got = kiln.compile(f, fullgraph=True)(*args)
    for actual, wanted in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, expected))):
        assert np.asarray(actual).dtype == np.asarray(wanted).dtype
        np.testing.assert_allclose(actual, wanted, rtol=rtol, atol=rtol)
    return report


UNARY = {
    "negative": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "log2": np.log2,
    "log10": np.log10, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "sinh": np.sinh,
    "cosh": np.cosh, "reciprocal": np.reciprocal, "square": np.square, "conj": np.conj,
    "real": np.real, "imag": np.imag, "angle": np.angle, "isnan": np.isnan,
    "isinf": np.isinf, "isfinite": np.isfinite, "logical_not": np.logical_not,
    "sum": np.sum, "mean": lambda z: np.mean(z, axis=0), "cumsum": lambda z: np.cumsum(z, 1),
    "any": np.any, "astype_bool": lambda z: z.astype(bool),
    "astype_real": lambda z: np.real(z).astype(np.float32),
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "equal": np.equal, "not_equal": np.not_equal,
    "logical_and": np.logical_and, "where": lambda z, w: np.where(z.real > 0, z, w),
    "matmul": lambda z, w: z @ w.T, "dot": lambda z, w: np.dot(z, w.T), "vdot": np.vdot,
    "inner": np.inner,
    "einsum": lambda z, w: np.einsum("ij,kj->ik", z, w),
    "concatenate": lambda z, w: np.concatenate([z, w], axis=1),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_unary_functions_match_numpy(dtype):
    z = complex_data((6, 7), dtype)
    z[0, 0] = 0
    for name, function in UNARY.items():
        wrapped = lambda z, function=function: function(z)  # noqa: E731
        wrapped.__name__ = name
        try:
            check(wrapped, z, rtol=RTOL[dtype])
        except AssertionError as error:
            raise AssertionError(f"{name} on {np.dtype(dtype).name}: {error}") from None


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_binary_functions_match_numpy(dtype):
    z, w = complex_data((5, 4), dtype, 1), complex_data((5, 4), dtype, 2)
    for name, function in BINARY.items():
        try:
            check(function, z, w, rtol=10 * RTOL[dtype])
        except AssertionError as error:
            raise AssertionError(f"{name} on {np.dtype(dtype).name}: {error}") from None


def test_division_by_zero_gives_numpys_infinities():
    """A zero divisor gives each part over zero (inf, nan for a zero part), not Smith's nan."""
    z = np.array([1 + 1j, -2 + 0.5j, 3 + 0j, 0j, 1j])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = z / np.zeros(5, complex)
        got = kiln.compile(lambda a, b: a / b)(z, np.zeros(5, complex))
    np.testing.assert_array_equal(got, expected)


def test_inputs_of_any_layout_are_read_in_place_and_outputs_are_complex():
    def f(z, w):
        return z * w + 1, np.abs(z - w)
    base = complex_data((8, 10), np.complex128)
    for z, w in [(base, base + 1), (base[:-1, ::2], base[1:, 1::2]), (base.T, base.T * 2)]:
        check(f, z, w)
    compiled = kiln.compile(f)
    result = compiled(base, base)[0]
    assert result.dtype == np.complex128 and result.flags.c_contiguous


def test_python_complex_scalars_are_weak():
    x32 = np.linspace(0, 1, 12, dtype=np.float32)
    check(lambda x: x * 1j, x32, rtol=1e-6)  # complex64, as NumPy 2 gives
    check(lambda x: np.exp(2j * np.pi * x) + (1 + 2j), x32, rtol=1e-5)
    check(lambda x: x + 1j, np.arange(5, dtype=np.int64))  # complex128
    check(lambda z: z * 2 - 1j, complex_data(4, np.complex64), rtol=1e-6)


def test_real_arrays_have_real_and_imaginary_parts():
    x = np.linspace(-2, 2, 9)
    check(lambda x: (np.real(x), np.imag(x), x.real + x.imag, np.conj(x), np.angle(x)), x)
    check(lambda z: (z.real, z.imag, z.conj(), np.angle(z, deg=True)),
          complex_data(9, np.complex128))


def test_complex_constants_and_creation():
    def f(z):
        table = np.array([1 + 2j, -1j, 3.5, 0])
        out = np.zeros(z.shape, dtype=complex)
        out[1:] = z[1:] * table[1:]
        return out + np.full(4, 2 - 1j) + np.ones(4, np.complex64)
    check(f, complex_data(4, np.complex128))


def test_in_place_updates_of_complex_arrays():
    def f(z):
        z[1:3] = z[1:3] * 1j
        z[z.real < 0] *= -1
        z[0] += 2j
        return z
    z = complex_data(16, np.complex128)
    expected = f(z.copy())
    np.testing.assert_allclose(kiln.compile(f)(z.copy()), expected, rtol=1e-12)


def mandelbrot(c, iterations):
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, np.int64)
    for _ in range(iterations):
        z = np.where(np.abs(z) <= 2, z * z + c, z)
        counts += np.abs(z) <= 2
    return counts


@pytest.mark.parametrize("iterations", [3, 200])
def test_mandelbrot_compiles_its_loop_once(iterations):
    c = np.linspace(-2, 1, 60)[None, :] + 1j * np.linspace(-1.5, 1.5, 40)[:, None]
    report = check(mandelbrot, c, iterations)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)


def newton_roots(z):
    steps = 0
    while np.max(np.abs(z ** 3 - 1)) > 1e-10 and steps < 60:
        z = z - (z ** 3 - 1) / (3 * z ** 2)
        steps += 1
    return z


def test_while_loop_with_a_complex_carried_value():
    z = complex_data(50, np.complex128, 4) + 0.5
    report = check(newton_roots, z, rtol=1e-9)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)


def dft(x):
    n = x.shape[-1]
    k = np.arange(n)
    return x @ np.exp(-2j * np.pi * np.outer(k, k) / n)


def test_dft_as_a_complex_matrix_product_matches_fft():
    x = np.random.default_rng(5).standard_normal((8, 64))
    check(dft, x, rtol=1e-9)
    np.testing.assert_allclose(kiln.compile(dft)(x), np.fft.fft(x), rtol=1e-9, atol=1e-9)


def test_what_kiln_does_not_lower_runs_eagerly_and_says_why():
    def lexicographic(z):
        return np.max(z) + np.sort(z)[0]
    z = complex_data(10, np.complex128, 6)
    report = kiln.explain(lexicographic)(z)
    assert report.graph_count == 0 and "complex" in str(report), str(report)
    assert kiln.compile(lexicographic)(z) == lexicographic(z)
    with pytest.raises(kiln.Unsupported, match="complex"):
        kiln.compile(lexicographic, fullgraph=True)(z)
