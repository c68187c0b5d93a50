"""Normalisations whose statistics reduce over merged axes, compiled and compared with eager
PyTorch / NumPy: group norm (statistics over each group's channels and pixels), layer norm over
the last two dims, instance norm, batch norm in training (statistics over N, H, W), and NumPy's
x.reshape(n, g, -1).mean(-1) / .var(-1). The statistics read the flat index (no division in the
reduction: KILN_LOGS=schedule) and Welford's SIMD lanes share one count per step, with the
elements after the last full step (lengths that are no multiple of the lanes) counted apart."""
import re

import numpy as np
import pytest
import torch

import kiln
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


class ResBlock(torch.nn.Module):
    """A diffusion UNet's residual block: (GroupNorm, SiLU, conv 3x3) twice, plus the input."""
    def __init__(self, channels):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.GroupNorm(4, channels), torch.nn.GroupNorm(4, channels)
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        h = self.conv1(torch.nn.functional.silu(self.norm1(x)))
        return x + self.conv2(torch.nn.functional.silu(self.norm2(h)))


@pytest.mark.parametrize("make, shape, training", [
    (lambda: torch.nn.GroupNorm(4, 16), (2, 16, 6, 10), False),
    (lambda: torch.nn.GroupNorm(3, 12), (3, 12, 7, 5), False),  # 4 * 35 = 140 a group
    (lambda: torch.nn.GroupNorm(2, 8), (2, 8, 40, 40), False),  # 6400 a group: blocked lanes
    (lambda: torch.nn.LayerNorm([9, 11]), (4, 6, 9, 11), False),
    (lambda: torch.nn.InstanceNorm2d(8, affine=True), (2, 8, 12, 12), False),
    (lambda: torch.nn.BatchNorm2d(8), (4, 8, 6, 6), True),
    (lambda: ResBlock(8), (2, 8, 8, 8), False),
])
def test_norms_match_eager(make, shape, training):
    torch.manual_seed(0)
    model = make().train(training)
    for p in model.parameters():  # affine weights away from 1 and 0
        torch.nn.init.normal_(p)
    eager_model = make().train(training)
    eager_model.load_state_dict(model.state_dict())
    x = torch.randn(*shape) * 3 + 5  # a mean well away from 0: Welford's cancellation
    with torch.no_grad():
        got = torch.compile(model, backend="kiln", **WHOLE)(x)
        want = eager_model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    if training:  # the running statistics updated alike
        torch.testing.assert_close(model.running_mean, eager_model.running_mean)
        torch.testing.assert_close(model.running_var, eager_model.running_var)


def _group_stats(x):
    grouped = x.reshape(x.shape[0], 4, -1)
    return grouped.mean(-1), grouped.var(-1), grouped.std(-1, ddof=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 8, 5, 7), (3, 16, 33, 33), (1, 4, 1, 2)])
def test_numpy_group_statistics_match_numpy(dtype, shape):
    x = (np.random.default_rng(0).standard_normal(shape) * 2 + 100).astype(dtype)
    got = kiln.compile(_group_stats, fullgraph=True)(x)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got, _group_stats(x)):
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("length", [63, 64, 1000, 4096 + 100, 70001])
def test_variance_of_rows_with_a_remainder_matches_numpy(length):
    # lanes of 64 (or fewer), blocks of 64 steps: the last elements of a row fill no SIMD step
    x = (np.random.default_rng(length).standard_normal((3, length)) + 1000).astype(np.float32)
    got = kiln.compile(lambda a: (a.var(-1), a.mean(-1)), fullgraph=True)(x)
    np.testing.assert_allclose(got[0], x.astype(np.float64).var(-1), rtol=1e-4)
    np.testing.assert_allclose(got[1], x.astype(np.float64).mean(-1), rtol=1e-6)


def test_group_statistics_read_the_flat_index_in_one_pass(compile_logged):
    x = np.random.default_rng(1).standard_normal((2, 16, 8, 8)).astype(np.float32)

    def normalized(x):
        grouped = x.reshape(2, 4, -1)
        centred = grouped - grouped.mean(-1, keepdims=True)
        return (centred / np.sqrt(grouped.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    log, got = compile_logged(normalized, (x,), "schedule")
    np.testing.assert_allclose(got, normalized(x), rtol=1e-4, atol=1e-5)
    reductions = [line for line in log.splitlines() if line.strip().startswith("reduce ")]
    assert len(reductions) == 1, log  # the mean and the variance in one pass
    assert "sum(" in reductions[0] and "var(" in reductions[0], log
    assert not re.search(r"//|%", reductions[0]), log  # no division in the reduction
    assert len(re.findall(r"^kernel\d+", log, flags=re.M)) == 1, log
