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

DTYPES = ["float64", "float32", "int64", "int32", "int8", "uint8", "bool"]


def compile_and_run(function, arrays):
    """Compiles `function` with kiln.compile (whole graph, no breaks allowed) and runs it."""
    result = kiln.compile(function, fullgraph=True)(*arrays)
    return list(result) if isinstance(result, (list, tuple)) else [result]


def sample_array(rng, dtype, shape, positive=False):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind == "f":
        values = rng.uniform(0.1 if positive else -3, 3, shape)
    else:
        low = 1 if positive or np.dtype(dtype).kind == "u" else -5
        values = rng.integers(low, 6, shape)
    return values.astype(dtype)


def shapes_for(arity):
    """(shapes, view): broadcasting, 0-d, size-0, and a non-contiguous view."""
    if arity == 1:
        return [((3, 4),), ((),), ((0, 3),), ((5, 4), "view")]
    return [((3, 4), (4,)), ((), ()), ((0, 3), (1, 3)), ((5, 4), (5, 4), "view")]


def check(function, samples):
    """Runs every sample (a tuple of arrays) compiled in one graph, compares with NumPy."""
    arrays = [a for sample in samples for a in sample]
    sizes = [len(sample) for sample in samples]

    def batched(*inputs):
        results, position = [], 0
        for size in sizes:
            result = function(*inputs[position:position + size])
            results.extend(result if isinstance(result, tuple) else (result,))
            position += size
        return tuple(results)

    with np.errstate(all="ignore"):
        expected = batched(*[a.copy() for a in arrays])
    got = compile_and_run(batched, arrays)
    assert len(got) == len(expected)
    for index, (value, reference) in enumerate(zip(got, expected)):
        reference = np.asarray(reference)
        assert value.dtype == reference.dtype, (index, value.dtype, reference.dtype)
        assert value.shape == reference.shape, (index, value.shape, reference.shape)
        tolerance = {"float16": 1e-2, "float32": 1e-5}.get(reference.dtype.name, 1e-10)
        np.testing.assert_allclose(value, reference, rtol=tolerance, atol=tolerance,
                                   equal_nan=True, err_msg=f"output {index}")


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


# Sample arguments for each function of FUNCTIONS: f(rng) -> list of (callable, arrays).
def _reductions(function, **extra):
    def samples(rng):
        cases = []
        for dtype in ["float64", "float32", "int32", "int8", "bool"]:
            for kwargs in [{}, {"axis": 0}, {"axis": (0, 1), "keepdims": True}, {"axis": -1},
                           dict(extra)]:
                cases.append((lambda x, kw=kwargs: function(x, **kw),
                              (sample_array(rng, dtype, (3, 4)),)))
            cases.append((lambda x: function(x, axis=1), (sample_array(rng, dtype, (6, 4))[::2],)))
        return cases
    return samples


def _one(function, shape=(3, 4), dtypes=("float64", "int32", "bool")):
    return lambda rng: [(function, (sample_array(rng, d, shape),)) for d in dtypes]


SAMPLES = {
    np.sum: _reductions(np.sum, where=np.array([True, False, True, True]), initial=2),
    np.prod: _reductions(np.prod, dtype=np.float64),
    np.max: _reductions(np.max, initial=1, where=np.array([True, False, True, True])),
    np.min: _reductions(np.min), np.any: _reductions(np.any), np.all: _reductions(np.all),
    np.mean: _reductions(np.mean, where=np.array([True, False, True, True])),
    np.var: _reductions(np.var, ddof=1), np.std: _reductions(np.std, ddof=1),
    np.argmax: _one(lambda x: (np.argmax(x), np.argmax(x, axis=1))),
    np.argmin: _one(lambda x: (np.argmin(x), np.argmin(x, axis=0, keepdims=True))),
    np.cumsum: _one(lambda x: (np.cumsum(x), np.cumsum(x, axis=1))),
    np.cumprod: _one(lambda x: (np.cumprod(x, axis=0),)),
    np.ptp: _one(lambda x: np.ptp(x, axis=0), dtypes=("float64", "int32")),
    np.count_nonzero: _one(lambda x: (np.count_nonzero(x), np.count_nonzero(x, axis=1))),
    np.reshape: _one(lambda x: (np.reshape(x, (4, 3)), x.reshape(-1, 2), x.reshape(12))),
    np.ravel: _one(lambda x: np.ravel(x.T)),
    np.transpose: _one(lambda x: (np.transpose(x), x.T, x.transpose(1, 0))),
    np.swapaxes: _one(lambda x: np.swapaxes(x, 0, 1)),
    np.moveaxis: _one(lambda x: np.moveaxis(x[None], 0, -1)),
    np.squeeze: _one(lambda x: np.squeeze(x[:, None]), shape=(3, 4)),
    np.expand_dims: _one(lambda x: (np.expand_dims(x, 1), np.expand_dims(x, (0, -1)))),
    np.broadcast_to: _one(lambda x: np.broadcast_to(x, (2, 3, 4))),
    np.concatenate: _one(lambda x: (np.concatenate([x, x], 1), np.concatenate([x, x], None))),
    np.stack: _one(lambda x: (np.stack([x, x]), np.stack([x, x], axis=-1))),
    np.hstack: _one(lambda x: np.hstack([x, x])), np.vstack: _one(lambda x: np.vstack([x, x])),
    np.atleast_1d: _one(lambda x: np.atleast_1d(x[0, 0])),
    np.atleast_2d: _one(lambda x: np.atleast_2d(x[0])),
    np.atleast_3d: _one(lambda x: np.atleast_3d(x)),
    np.where: _one(lambda x: (np.where(x > 0, x, 0), np.where(x > 1, 2.5, x))),
    np.clip: _one(lambda x: (np.clip(x, 0, 2), np.clip(x, 0.5, None)), dtypes=("float64",
                                                                               "int32")),
    np.copy: _one(lambda x: np.copy(x)), np.flip: _one(lambda x: (np.flip(x), np.flip(x, 1))),
    np.triu: _one(lambda x: np.triu(x, 1)), np.tril: _one(lambda x: np.tril(x)),
    np.zeros_like: _one(lambda x: np.zeros_like(x)), np.ones_like: _one(np.ones_like),
    np.empty_like: _one(lambda x: np.empty_like(x) * 0),
    np.full_like: _one(lambda x: np.full_like(x, 3, dtype=np.float32)),
    np.dot: _one(lambda x: np.dot(x, x.T), dtypes=("float64", "int32")),
    np.inner: _one(lambda x: np.inner(x, x), dtypes=("float64",)),
    np.outer: _one(lambda x: np.outer(x[0], x[1]), dtypes=("float64", "int32")),
    np.einsum: _one(lambda x: np.einsum("ij,kj->ik", x, x), dtypes=("float64",)),
    np.tensordot: _one(lambda x: np.tensordot(x, x, axes=([1], [1])), dtypes=("float64",)),
    np.vdot: _one(lambda x: np.vdot(x, x), dtypes=("float64",)),
    np.linalg.norm: _one(lambda x: (np.linalg.norm(x), np.linalg.norm(x, axis=1),
                                    np.linalg.norm(x, np.inf, axis=1)), dtypes=("float64",
                                                                               "int32")),
    np.shape: _one(lambda x: x + np.shape(x)[0]), np.ndim: _one(lambda x: x + np.ndim(x)),
    np.size: _one(lambda x: x * np.size(x)),
}
if hasattr(np, "astype"):
    SAMPLES[np.astype] = _one(lambda x: np.astype(x, np.float32))
SAMPLES[np.amax] = SAMPLES[np.max]
SAMPLES[np.amin] = SAMPLES[np.min]


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
