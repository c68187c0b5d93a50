"""3-d pooling (max with indices, average, adaptive average: video and volumetric CNNs) and the
average pools' gradients (2-d and 3-d; avg_pool1d is a 2-d one; ceil_mode, count_include_pad,
adaptive windows of unequal sizes), compiled by kiln against eager PyTorch, forward and
gradients, with nothing left to eager PyTorch."""
import pytest
import torch
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


def _matches_eager(f, x, **compile_options):
    torch.manual_seed(1)
    leaf = x.clone().requires_grad_()
    want = f(leaf)
    grad_out = torch.randn_like(want)
    want.backward(grad_out)
    mine = x.clone().requires_grad_()
    got = torch.compile(f, backend="kiln", **compile_options)(mine)
    got.backward(grad_out)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mine.grad, leaf.grad, rtol=1e-5, atol=1e-6)


VOLUME, IMAGE, SIGNAL = (2, 3, 6, 7, 8), (2, 3, 9, 10), (2, 4, 17)
CASES = {
    "max3d": (lambda x: F.max_pool3d(x, 2), VOLUME),
    "max3d strided dilated": (lambda x: F.max_pool3d(x, (3, 2, 3), stride=(2, 1, 2),
                                                     padding=(1, 0, 1), dilation=(1, 2, 1)), VOLUME),
    "avg3d": (lambda x: F.avg_pool3d(x, 2), VOLUME),
    "avg3d padded": (lambda x: F.avg_pool3d(x, 3, stride=2, padding=1), VOLUME),
    "avg3d divisor": (lambda x: F.avg_pool3d(x, 3, stride=(1, 2, 3), padding=1,
                                             divisor_override=5), VOLUME),
    "adaptive3d": (lambda x: F.adaptive_avg_pool3d(x, (3, 7, 4)), VOLUME),
    "avg2d": (lambda x: F.avg_pool2d(x, 2), IMAGE),
    "avg2d padded": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), IMAGE),
    "avg2d stride 1": (lambda x: F.avg_pool2d(x, 3, stride=1, padding=1), IMAGE),
    "avg2d stride past kernel": (lambda x: F.avg_pool2d(x, 2, stride=3), IMAGE),
    "adaptive2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 5)), IMAGE),
    "avg1d": (lambda x: F.avg_pool1d(x, 3, stride=2), SIGNAL),
    # ceil_mode's last windows overhang the input (torch's hold fewer places; a window that
    # would start in the padding is dropped), and divisors that count no padding
    "max2d ceil_mode": (lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True), IMAGE),
    "max2d ceil_mode padded": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1,
                                                      ceil_mode=True), IMAGE),
    "max3d ceil_mode": (lambda x: F.max_pool3d(x, 2, ceil_mode=True), VOLUME),
    "avg2d ceil_mode": (lambda x: F.avg_pool2d(x, 3, stride=2, ceil_mode=True), IMAGE),
    "avg2d ceil_mode padded": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1,
                                                      ceil_mode=True), IMAGE),
    "avg2d ceil_mode window dropped": (lambda x: F.avg_pool2d(x, 2, stride=2, padding=1,
                                                              ceil_mode=True), IMAGE),
    "avg2d ceil_mode without padding's places": (
        lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                               count_include_pad=False), IMAGE),
    "avg3d without padding's places": (lambda x: F.avg_pool3d(x, 3, padding=1,
                                                              count_include_pad=False), VOLUME),
    "avg1d ceil_mode": (lambda x: F.avg_pool1d(x, 2, ceil_mode=True), SIGNAL),
    # adaptive windows of unequal sizes (overlapping where a side is no multiple of the
    # output's), and more outputs than inputs
    "adaptive3d unequal windows": (lambda x: F.adaptive_avg_pool3d(x, (4, 3, 5)), VOLUME),
    "adaptive2d unequal windows": (lambda x: F.adaptive_avg_pool2d(x, (7, 4)), IMAGE),
    "adaptive2d upsampling": (lambda x: F.adaptive_avg_pool2d(x, (13, 3)), IMAGE),
    "adaptive1d unequal windows": (lambda x: F.adaptive_avg_pool1d(x, 5), SIGNAL),
    # adaptive max pools: global (CBAM's channel attention), and windows of one size
    "adaptive max2d global": (lambda x: F.adaptive_max_pool2d(x, 1), IMAGE),
    "adaptive max3d global": (lambda x: F.adaptive_max_pool3d(x, 1), VOLUME),
    "adaptive max2d": (lambda x: F.adaptive_max_pool2d(x, (3, 5)), IMAGE),
    "adaptive max3d": (lambda x: F.adaptive_max_pool3d(x, (3, 7, 2)), VOLUME),
    "adaptive max1d": (lambda x: F.adaptive_max_pool1d(x, 1), SIGNAL),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pools_and_their_gradients_compile_and_match_eager(case):
    f, shape = CASES[case]
    _matches_eager(f, torch.randn(*shape), options={"unsupported_ops": "error"})


class _VolumeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv3d(2, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm3d(8)
        self.conv2 = torch.nn.Conv3d(8, 16, 3, padding=1)

    def forward(self, x):  # max pooling of a channels-last activation (kiln's layout inside)
        x = F.max_pool3d(F.relu(self.norm(self.conv1(x))), 2)
        return F.adaptive_avg_pool3d(F.avg_pool3d(F.relu(self.conv2(x)), 2), 1).flatten(1)


def test_a_3d_cnn_trains_as_eager_does():
    torch.manual_seed(0)
    model = _VolumeNet()
    x = torch.randn(2, 2, 8, 8, 8)
    model(x).square().mean().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch.manual_seed(0)
    twin = _VolumeNet()
    compiled = torch.compile(twin, backend="kiln", options={"unsupported_ops": "error"})
    compiled(x).square().mean().backward()
    for p, expected in zip(twin.parameters(), want):
        torch.testing.assert_close(p.grad, expected, rtol=1e-4, atol=1e-5)
