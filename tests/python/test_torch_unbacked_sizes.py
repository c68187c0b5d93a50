"""Sizes the data decides (Dynamo's capture_scalar_outputs: `.item()` in the graph; and
capture_dynamic_output_shape_ops: nonzero, boolean mask indexing) are unbacked symbols, with no
number traced: the backward's inputs carry them, and kiln asked for their traced numbers (a
KeyError: the backend's compile failed, the training step raised). They stay symbols now, and
the nodes that need them run in eager PyTorch between kiln's parts, as in inference."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


def _data_sized(x, w):
    count = (x > 0).sum().item()
    scaled = x * count + w
    positions = torch.nonzero(x > 0.5)
    selected = x[x > 0.5]
    return scaled.sin(), positions, selected * 2, torch.ones(count) * 3


@pytest.mark.parametrize("training", [False, True])
def test_data_dependent_sizes_train_as_eager(training):
    generator = torch.Generator().manual_seed(0)
    x, w = torch.randn(5, 4, generator=generator), torch.randn(4, generator=generator)
    with torch._dynamo.config.patch(capture_scalar_outputs=True,
                                    capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(_data_sized, backend="kiln")
        results = []
        for run in (_data_sized, compiled):
            leaf = x.clone().requires_grad_(training)
            with torch.set_grad_enabled(training):
                outputs = run(leaf, w)
            results.append([out.detach() for out in outputs])
            if training:
                loss = (outputs[0] * torch.arange(4.0)).sum() + outputs[2].pow(2).sum()
                results[-1].append(torch.autograd.grad(loss, leaf)[0])
    for got, want in zip(*results):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
