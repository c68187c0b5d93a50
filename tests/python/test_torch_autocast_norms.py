"""Models with batch or group norm trained under torch.autocast("cpu", dtype=torch.bfloat16)
crashed with kiln, and layer norm's backward ran in eager PyTorch: the traced forward saves a
norm's mean and inverse standard deviation in bfloat16 (the input's dtype; eager's mixed-dtype
kernels keep float32), and the check of which dtypes eager's kernels refuse, asked with those
dtypes, left native_{batch,group,layer}_norm_backward whole, for eager PyTorch, which raised on
kiln's forward results ("mixed dtype (CPU): expect parameter to have scalar type of Float",
"expected scalar type BFloat16 but found Float"). The check now asks with the dtypes eager's
forward produces, and the backwards compile through PyTorch's decompositions."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _net(norm):
    if norm == "layer":
        return nn.Sequential(nn.Flatten(), nn.Linear(243, 16), nn.LayerNorm(16), nn.GELU(),
                             nn.Linear(16, 5))
    def normed(channels):
        return nn.BatchNorm2d(channels) if norm == "batch" else nn.GroupNorm(2, channels)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), normed(8), nn.SiLU(),
                         nn.Conv2d(8, 8, 3, padding=1, groups=4), normed(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))


@pytest.mark.parametrize("norm, memory_format", [
    ("batch", torch.contiguous_format), ("batch", torch.channels_last),
    ("group", torch.contiguous_format), ("layer", torch.contiguous_format)])
def test_autocast_bfloat16_norm_training_compiles_whole(norm, memory_format):
    torch.manual_seed(0)
    model = _net(norm).to(memory_format=memory_format)
    mine = copy.deepcopy(model)
    compiled = torch.compile(mine, backend="kiln", **WHOLE)
    images = torch.randn(4, 3, 9, 9, generator=torch.Generator().manual_seed(1))
    images = images.to(memory_format=memory_format)
    labels = torch.tensor([0, 1, 2, 3])
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, mine)]
    for _ in range(2):
        for run, optimizer in zip((model, compiled), optimizers):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = run(images)
            F.cross_entropy(logits.float(), labels).backward()
            optimizer.step()
    # (bfloat16 activations: kiln rounds its fused kernels' intermediates once, eager each op)
    for (name, want), got in zip(model.named_parameters(), mine.parameters()):
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2, msg=name)
    for want, got in zip(model.buffers(), mine.buffers()):
        torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)
