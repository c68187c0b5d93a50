"""Outputs that view another output's memory (eager returns y and y[..., :1].expand_as(y), or y
and y.t(), sharing memory) in graphs with size symbols. AOTAutograd rebuilds such an output
from the tensor the compiled graph returned for it, by as_strided with that tensor's strides: a
contiguous copy made the expand a plain view of y (a training graph's forward gave wrong values
with dynamic=True, or after a recompile for new sizes)."""
import pytest
import torch

import kiln.torch  # noqa: F401  (registers the backend)


def expand_of_slice(x):
    y = x * 2.0
    return y, y.contiguous()[..., :1].expand_as(y)


def transpose_and_flatten(x):
    y = torch.sin(x) + 1.0
    return y, y.t(), y.view(-1)


def narrow_rows(x, w):
    y = x @ w
    return y.narrow(0, 1, 2), y


@pytest.mark.parametrize("dynamic", [True, None])
@pytest.mark.parametrize("function", [expand_of_slice, transpose_and_flatten, narrow_rows])
def test_outputs_viewing_another_output_match_eager_at_every_size(function, dynamic):
    torch._dynamo.reset()
    compiled = torch.compile(function, backend="kiln", dynamic=dynamic)
    for rows, columns in [(3, 16), (4, 18), (5, 7)]:
        generator = torch.Generator().manual_seed(rows)
        arguments = [torch.randn(rows, columns, generator=generator)]
        if function is narrow_rows:
            arguments.append(torch.randn(columns, columns, generator=generator))
        eager_inputs = [a.clone().requires_grad_() for a in arguments]
        kiln_inputs = [a.clone().requires_grad_() for a in arguments]
        expected, actual = function(*eager_inputs), compiled(*kiln_inputs)
        for got, want in zip(actual, expected):
            torch.testing.assert_close(got, want)
            assert got.stride() == want.stride()
        weights = [torch.randn(w.shape, generator=generator) for w in expected]
        sum((w * o).sum() for w, o in zip(weights, expected)).backward()
        sum((w * o).sum() for w, o in zip(weights, actual)).backward()
        for got, want in zip(kiln_inputs, eager_inputs):
            torch.testing.assert_close(got.grad, want.grad)
