"""What the conformance tests share: sample arrays, the compiled-vs-NumPy check, and sample
builders for the SAMPLES tables (test_numpy_conformance.py, samples_*.py).

KILN_CONFORMANCE_DEVICE=cuda runs the compiled side on the GPU (`scripts/gpu-check run` does)."""
import os

import numpy as np
import pytest

import kiln

DTYPES = ["float64", "float32", "int64", "int32", "int8", "uint8", "bool"]
DEVICE = os.environ.get("KILN_CONFORMANCE_DEVICE", "cpu")


def compile_and_run(function, arrays):
    """Compiles `function` with kiln.compile (whole graph, no breaks allowed) on DEVICE and
    runs it."""
    result = kiln.compile(function, fullgraph=True, device=DEVICE)(*arrays)
    return list(result) if isinstance(result, (list, tuple)) else [result]


def sample_array(rng, dtype, shape, positive=False):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind == "c":
        parts = [rng.uniform(0.1 if positive else -3, 3, shape) for _ in range(2)]
        values = parts[0] + 1j * parts[1]
    elif np.dtype(dtype).kind == "f":
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

    try:
        with np.errstate(all="ignore"):
            expected = batched(*[a.copy() for a in arrays])
    except (OverflowError, TypeError, ValueError) as error:
        # what this NumPy refuses (its NEP 50 rules moved between versions), kiln refuses too
        with pytest.raises(type(error)):
            compile_and_run(batched, arrays)
        return
    got = compile_and_run(batched, arrays)
    assert len(got) == len(expected)
    for index, (value, reference) in enumerate(zip(got, expected)):
        if isinstance(reference, (bool, int, float, complex)):  # np.count_nonzero(x) on NumPy 1.x
            assert type(value) is type(reference), (index, type(value), type(reference))
        value, reference = np.asarray(value), np.asarray(reference)
        assert value.dtype == reference.dtype, (index, value.dtype, reference.dtype)
        assert value.shape == reference.shape, (index, value.shape, reference.shape)
        tolerance = {"float16": 1e-2, "float32": 1e-5}.get(reference.dtype.name, 1e-10)
        np.testing.assert_allclose(value, reference, rtol=tolerance, atol=tolerance,
                                   equal_nan=True, err_msg=f"output {index}")


# Sample arguments for each function of FUNCTIONS: f(rng) -> list of (callable, arrays).
def reductions(function, **extra):
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


def one(function, shape=(3, 4), dtypes=("float64", "int32", "bool")):
    return lambda rng: [(function, (sample_array(rng, d, shape),)) for d in dtypes]


