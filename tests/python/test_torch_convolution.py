"""_kiln.convolution (torch's aten.convolution forward, run by oneDNN) compiled through a trace
built on the bindings, against torch.nn.functional.conv1d/conv2d/conv3d."""
import numpy as np
import pytest
import torch

from kiln import _kiln

functional = torch.nn.functional


def compile_trace(build, *arrays):
    """Traces build(*input tensors) directly on the bindings and compiles it."""
    trace = _kiln.Trace()
    inputs = [trace.input(a.dtype.name, list(a.shape)) for a in arrays]
    outputs = build(*inputs)
    if not isinstance(outputs, list):
        outputs = [outputs]
    strides = [[] if a.flags.c_contiguous else [s // a.itemsize for s in a.strides]
               for a in arrays]
    return _kiln.compile_graph(trace, outputs, strides, None)


def random(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


CASES = [
    # input shape, weight shape, bias, strides, padding, dilation, groups
    ((2, 4, 9, 10), (6, 4, 3, 3), True, [2, 2], [1, 1], [2, 2], 1),
    ((2, 4, 9, 10), (6, 4, 3, 3), False, [1, 1], [0, 0], [1, 1], 1),
    ((1, 4, 7, 7), (6, 2, 3, 3), True, [1, 1], [1, 1], [1, 1], 2),
    ((1, 8, 6, 6), (8, 1, 3, 3), False, [1, 1], [1, 1], [1, 1], 8),
    ((2, 3, 12), (5, 3, 4), True, [3], [2], [1], 1),
    ((1, 2, 5, 6, 4), (4, 1, 2, 3, 2), True, [1, 2, 1], [1, 1, 1], [1, 1, 1], 2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_convolution_matches_torch(case, dtype):
    input_shape, weight_shape, has_bias, strides, padding, dilation, groups = case
    x = random(input_shape, dtype, 1)
    w = random(weight_shape, dtype, 2)
    b = random(weight_shape[:1], dtype, 3)
    arrays = (x, w, b) if has_bias else (x, w)

    def build(*tensors):
        bias = tensors[2] if has_bias else None
        return _kiln.convolution(tensors[0], tensors[1], bias, strides, padding, dilation, groups)

    (result,) = compile_trace(build, *arrays).run(list(arrays))
    convolve = {3: functional.conv1d, 4: functional.conv2d, 5: functional.conv3d}[len(input_shape)]
    expected = convolve(torch.from_numpy(x), torch.from_numpy(w),
                        torch.from_numpy(b) if has_bias else None, strides, padding, dilation,
                        groups).numpy()
    assert result.shape == expected.shape and result.dtype == expected.dtype
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(result, expected, rtol=tolerance, atol=tolerance)


def test_channels_last_input_and_relu_epilogue():
    x = np.ascontiguousarray(random((2, 5, 6, 3), seed=4)).transpose(0, 3, 1, 2)  # NHWC storage
    w = random((4, 3, 3, 3), seed=5)
    b = random((4,), seed=6)
    compiled = compile_trace(
        lambda xs, ws, bs: _kiln.maximum(
            _kiln.convolution(xs, ws, bs, [1, 1], [1, 1], [1, 1], 1), 0.0), x, w, b)
    (result,) = compiled.run([x, w, b])
    expected = functional.relu(functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                                 torch.from_numpy(b), 1, 1)).numpy()
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)


def test_bad_operands_raise():
    trace = _kiln.Trace()
    x = trace.input("float32", [1, 3, 5, 5])
    w = trace.input("float32", [2, 4, 3, 3])
    with pytest.raises(ValueError, match="convolution"):
        _kiln.convolution(x, w, None, [1, 1], [0, 0], [1, 1], 1)
    ints = trace.input("int32", [1, 4, 5, 5])
    with pytest.raises(TypeError, match="convolution"):
        _kiln.convolution(ints, w, None, [1, 1], [0, 0], [1, 1], 1)
