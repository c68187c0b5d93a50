"""Conformance matrix generated from the tracer's tables (kiln._numpy_api.UFUNCS and FUNCTIONS):
each supported NumPy function is traced, compiled and run, and compared with eager NumPy on
values and dtypes, over several dtypes (float, integer, bool), broadcasting shapes, 0-d, size-0
and non-contiguous inputs. One compile per table entry: all its samples are outputs of one
graph."""
import itertools

import numpy as np
import pytest

import kiln
from kiln import _numpy_api

import samples_math
import samples_manipulation
import samples_selection
import samples_sorting
import samples_statistics
from conformance import DEVICE, DTYPES, check, one, reductions, sample_array, shapes_for

def ufunc_samples(ufunc, rng):
    positive = ufunc in (np.log, np.log2, np.log10, np.sqrt, np.arccosh, np.reciprocal,
                         np.power, np.float_power, np.gcd, np.lcm, np.floor_divide,
                         np.remainder, np.fmod, np.divmod, np.left_shift, np.right_shift,
                         np.divide)
    samples = []
    for dtype in DTYPES:
        for shapes in shapes_for(ufunc.nin):
            view = shapes[-1] == "view"
            shapes = shapes[:-1] if view else shapes
            arrays = []
            for shape in shapes:
                base = sample_array(rng, dtype, ((shape[0] * 2,) + shape[1:]) if view else shape,
                                    positive)
                if ufunc in (np.arcsin, np.arccos, np.arctanh) and dtype != "bool":
                    base = (base / 4).astype(dtype) if np.dtype(dtype).kind == "f" else base * 0
                if ufunc in (np.left_shift, np.right_shift) and dtype != "bool":
                    base = np.minimum(base, 3).astype(dtype)
                arrays.append(base[::2] if view else base)
            try:
                with np.errstate(all="ignore"):
                    ufunc(*arrays)
            except TypeError:
                break  # NumPy has no loop for this dtype
            samples.append(tuple(arrays))
    return samples


ELEMENTWISE_EXCLUDED = {np.matmul}
if hasattr(np, "vecdot"):
    ELEMENTWISE_EXCLUDED |= {np.vecdot, np.matvec, np.vecmat}


@pytest.mark.parametrize("ufunc", [u for u in _numpy_api.UFUNCS if u not in ELEMENTWISE_EXCLUDED],
                         ids=lambda u: u.__name__)
def test_ufunc(ufunc):
    rng = np.random.default_rng(7)
    samples = ufunc_samples(ufunc, rng)
    assert samples, f"no dtype has a NumPy loop for {ufunc.__name__}"
    check(ufunc, samples)


def test_operators_and_scalars():
    rng = np.random.default_rng(1)
    samples = [(sample_array(rng, d, (3, 4)),) for d in ["float32", "int8", "uint8", "bool",
                                                           "int64", "float64"]]

    def operators(x):
        results = [x + 1, 2 * x, x - True, x ** 2, x // 2, x % 3, x > 1, x == 2, 1.5 * x,
                   -x if x.dtype != np.bool_ else ~x, x & 1 if x.dtype.kind in "biu" else x]
        return tuple(results)
    check(lambda x: operators(x), [s for s in samples if s[0].dtype != np.bool_])


SAMPLES = {
    np.sinc: one(np.sinc, dtypes=("float64", "float32", "int32")),  # an op-table entry
    np.sum: reductions(np.sum, where=np.array([True, False, True, True]), initial=2),
    np.prod: reductions(np.prod, dtype=np.float64),
    np.max: reductions(np.max, initial=1, where=np.array([True, False, True, True])),
    np.min: reductions(np.min), np.any: reductions(np.any), np.all: reductions(np.all),
    np.mean: reductions(np.mean, where=np.array([True, False, True, True])),
    np.var: reductions(np.var, ddof=1), np.std: reductions(np.std, ddof=1),
    np.argmax: one(lambda x: (np.argmax(x), np.argmax(x, axis=1))),
    np.argmin: one(lambda x: (np.argmin(x), np.argmin(x, axis=0, keepdims=True))),
    np.cumsum: one(lambda x: (np.cumsum(x), np.cumsum(x, axis=1))),
    np.cumprod: one(lambda x: (np.cumprod(x, axis=0),)),
    np.ptp: one(lambda x: np.ptp(x, axis=0), dtypes=("float64", "int32")),
    np.count_nonzero: one(lambda x: (np.count_nonzero(x), np.count_nonzero(x, axis=1))),
    np.reshape: one(lambda x: (np.reshape(x, (4, 3)), x.reshape(-1, 2), x.reshape(12))),
    np.ravel: one(lambda x: np.ravel(x.T)),
    np.transpose: one(lambda x: (np.transpose(x), x.T, x.transpose(1, 0))),
    np.swapaxes: one(lambda x: np.swapaxes(x, 0, 1)),
    np.moveaxis: one(lambda x: np.moveaxis(x[None], 0, -1)),
    np.rollaxis: one(lambda x: (np.rollaxis(x[None], 2), np.rollaxis(x[None], 0, 3),
                                np.rollaxis(x, 1, 1))),
    np.squeeze: one(lambda x: np.squeeze(x[:, None]), shape=(3, 4)),
    np.expand_dims: one(lambda x: (np.expand_dims(x, 1), np.expand_dims(x, (0, -1)))),
    np.broadcast_to: one(lambda x: np.broadcast_to(x, (2, 3, 4))),
    np.concatenate: one(lambda x: (np.concatenate([x, x], 1), np.concatenate([x, x], None))),
    np.stack: one(lambda x: (np.stack([x, x]), np.stack([x, x], axis=-1))),
    np.hstack: one(lambda x: np.hstack([x, x])), np.vstack: one(lambda x: np.vstack([x, x])),
    np.atleast_1d: one(lambda x: np.atleast_1d(x[0, 0])),
    np.atleast_2d: one(lambda x: np.atleast_2d(x[0])),
    np.atleast_3d: one(lambda x: np.atleast_3d(x)),
    np.where: one(lambda x: (np.where(x > 0, x, 0), np.where(x > 1, 2.5, x))),
    np.clip: one(lambda x: (np.clip(x, 0, 2), np.clip(x, 0.5, None)), dtypes=("float64",
                                                                               "int32")),
    np.copy: one(lambda x: np.copy(x)), np.flip: one(lambda x: (np.flip(x), np.flip(x, 1))),
    np.triu: one(lambda x: np.triu(x, 1)), np.tril: one(lambda x: np.tril(x)),
    np.zeros_like: one(lambda x: np.zeros_like(x)), np.ones_like: one(np.ones_like),
    np.empty_like: one(lambda x: np.empty_like(x, dtype=np.int64) * 0),
    np.full_like: one(lambda x: np.full_like(x, 3, dtype=np.float32)),
    np.dot: one(lambda x: np.dot(x, x.T), dtypes=("float64", "int32")),
    np.inner: one(lambda x: np.inner(x, x), dtypes=("float64",)),
    np.outer: one(lambda x: np.outer(x[0], x[1]), dtypes=("float64", "int32")),
    np.einsum: one(lambda x: np.einsum("ij,kj->ik", x, x), dtypes=("float64",)),
    np.tensordot: one(lambda x: np.tensordot(x, x, axes=([1], [1])), dtypes=("float64",)),
    np.vdot: one(lambda x: np.vdot(x, x), dtypes=("float64",)),
    np.linalg.norm: one(lambda x: (np.linalg.norm(x), np.linalg.norm(x, axis=1),
                                    np.linalg.norm(x, np.inf, axis=1)), dtypes=("float64",
                                                                               "int32")),
    np.shape: one(lambda x: x + np.shape(x)[0]), np.ndim: one(lambda x: x + np.ndim(x)),
    np.result_type: one(lambda x: (x.astype(np.result_type(x, np.float32)) + 1,
                                   np.zeros(2, np.result_type(x, np.int8, 1.5)))),
    np.size: one(lambda x: x * np.size(x)),
    np.real: one(lambda x: (np.real(x), x.real), dtypes=("complex128", "complex64", "int32")),
    np.imag: one(lambda x: (np.imag(x), x.imag), dtypes=("complex128", "float32", "int32")),
    np.angle: one(lambda x: (np.angle(x), np.angle(x, deg=True)),
                  dtypes=("complex128", "complex64", "float64", "int32")),
    np.iscomplexobj: one(lambda x: x + np.iscomplexobj(x), dtypes=("complex128", "float64")),
    np.isrealobj: one(lambda x: x + np.isrealobj(x), dtypes=("complex64", "int32")),
    np.may_share_memory: one(lambda x: (x + np.may_share_memory(x, x.T),
                                        x + np.may_share_memory(x * 2, x))),
    np.shares_memory: one(lambda x: (x + np.shares_memory(x.reshape(-1), x),
                                     x + np.shares_memory(x, x * 1))),
}
if hasattr(np, "astype"):
    SAMPLES[np.astype] = one(lambda x: np.astype(x, np.float32))
SAMPLES[np.amax] = SAMPLES[np.max]
SAMPLES[np.amin] = SAMPLES[np.min]
SAMPLES.update(samples_statistics.SAMPLES)
SAMPLES.update(samples_manipulation.SAMPLES)
SAMPLES.update(samples_selection.SAMPLES)
SAMPLES.update(samples_math.SAMPLES)
SAMPLES.update(samples_sorting.SAMPLES)


if hasattr(np, "matrix_transpose"):  # NumPy 2
    SAMPLES[np.matrix_transpose] = one(lambda x: (np.matrix_transpose(x[None]),))
    SAMPLES[np.unstack] = one(lambda x: np.unstack(x, axis=1))


def test_every_function_has_samples():
    missing = [getattr(f, "__name__", str(f)) for f in _numpy_api.FUNCTIONS if f not in SAMPLES]
    assert not missing, f"functions without conformance samples: {missing}"


@pytest.mark.parametrize("function", list(_numpy_api.FUNCTIONS),
                         ids=lambda f: getattr(f, "__name__", str(f)))
def test_function(function):
    rng = np.random.default_rng(3)
    cases = SAMPLES[function](rng)
    callables = [case[0] for case in cases]
    samples = [case[1] for case in cases]
    position = itertools.count()

    def dispatch(*arrays):
        return callables[next(position) % len(callables)](*arrays)
    check(dispatch, samples)


def test_fuzzer_regressions():
    """Found by test_fuzz_numpy.py: NEP 50 scalars in where and clip, argmax over a non-empty
    axis of a size-0 array, float16 and bool matrix products."""
    rng = np.random.default_rng(9)
    u8 = sample_array(rng, "uint8", (3, 4))

    def scalars(u8):
        return (np.clip(u8, -1, 3), np.clip(u8, 1, 1000), np.argmax(u8[:0], axis=1),
                np.argmin(u8[:, :0], axis=0), u8 > 2 ** 2,
                (u8 > 2) ** 2)   # bool ** 2 is NumPy's np.square: int8
    check(scalars, [(u8,)])
    # NumPy 2.0-2.4 wrap these ints to uint8, 2.5 raises OverflowError: kiln does as NumPy does
    check(lambda u8: np.where(u8 > 2, u8, -2), [(u8,)])
    check(lambda u8: np.where(u8 > 2, 300, u8), [(u8,)])
    for dtype in ["float16", "bool"]:
        x = sample_array(rng, dtype, (3, 4))
        check(lambda x: (x @ x.T, np.dot(x[0], x[1]), np.einsum("ij,kj->ik", x, x),
                         np.tensordot(x, x, ([1], [1])), np.inner(x, x), np.outer(x[0], x[1])),
              [(x,)])


def test_numpy_scalar_results():
    """Where eager NumPy returns a NumPy scalar, so does kiln (fuzzer): 1-d @ 1-d, and the
    astype, copy, T and reshape methods of a NumPy scalar."""
    def scalars(x):
        total = x.sum()                          # a NumPy scalar
        return (x @ x, total.astype(np.float32), total.copy(), total.T, np.squeeze(total),
                total.reshape(()), np.sum(x[0:1]).view(), x.sum(keepdims=True).astype(int))
    x = np.arange(3.0)
    got = kiln.compile(scalars, fullgraph=True, device=DEVICE)(x)
    expected = scalars(x)
    assert [type(g) for g in got] == [type(e) for e in expected]
    for value, reference in zip(got, expected):
        np.testing.assert_array_equal(value, reference)


def test_indexing_and_mutation():
    rng = np.random.default_rng(5)
    x = sample_array(rng, "float64", (4, 5))
    i = sample_array(rng, "int32", (4, 5))

    def indexing(x, i):
        return (x[1], x[:, ::-2], x[None, 1:, -1], x[..., 2], x[[0, 3]], x[:, np.array([4, 0])],
                x[1:3, 2:], i[-1, -1])
    check(indexing, [(x, i)])

    def mutation(x, i):
        x += 1
        x[1:, ::2] = 7
        row = x[0]
        row *= 2
        i[i > 2] += 10
        i[0] = -1
        return x, i
    check(mutation, [(x.copy(), i.copy())])


def test_einsum_ellipsis_sublists_and_size_one_broadcasting_compile():
    """np.einsum's '...' (aligned from the right, first in an implicit output), the sublist
    form einsum(a, [0, 1], b, [1, 2], [0, 2]) and size-1 axes broadcast against longer ones
    compile (no eager fallback) and give NumPy's shapes and values."""
    rng = np.random.default_rng(3)
    t, a, b = rng.random((2, 3, 4)), rng.random((3, 4)), rng.random((4, 5))

    def equations(t, a, b, row, column):
        return (np.einsum("...ij->...ji", t), np.einsum("...ji", t), np.einsum("i...->...", t),
                np.einsum("...ij,...jk->...ik", t, b), np.einsum("...i,i...->...", a, a.T),
                np.einsum("...i,...i", column, a), np.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                np.einsum(a, [0, 1], b, [1, 2]), np.einsum(t, [Ellipsis, 1], [Ellipsis]),
                np.einsum("ij,ij->ij", row, a), np.einsum("aB", a))
    arguments = (t, a, b, rng.random((1, 4)), rng.random((2, 1, 4)))
    explained = kiln.explain(equations)(*arguments)
    assert explained.graph_break_count == 0, explained.break_reasons
    for got, expected in zip(kiln.compile(equations)(*arguments), equations(*arguments)):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    with pytest.raises(ValueError, match="no '...' ellipsis"):
        kiln.compile(lambda a: np.einsum("...i->i", a))(a)
