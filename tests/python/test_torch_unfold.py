"""Tensor.unfold (aten.unfold: sliding windows along a dim as a new last axis, as audio framing
and patch extraction take them) ran in eager PyTorch: it was not in kiln's conversion table. It
is one gather now, and its gradient (unfold_backward, PyTorch's decomposition) converts too."""
import pytest
import torch
import torch.nn as nn

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _windows(x):
    frames = x.unfold(-1, 4, 2)  # overlapping frames of the last dim
    patches = x.unfold(1, 2, 2).unfold(2, 3, 3)  # non-overlapping 2x3 patches, a tail dropped
    return frames.pow(2).sum(-1), patches.flatten(-2).amax(-1), x.unfold(0, 1, 1).exp()


def _close(got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("training", [False, True])
def test_unfold_windows_and_their_gradient_compile_whole(training):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 9, generator=generator, requires_grad=training)
    weights = [torch.randn(shape, generator=generator) for shape in ((2, 5, 3), (2, 2, 3),
                                                                      (2, 5, 9, 1))]
    results = []
    for run in (_windows, torch.compile(_windows, backend="kiln", **WHOLE)):
        with torch.set_grad_enabled(training):
            outputs = run(x)
        results.append(list(outputs))
        if training:
            loss = sum((out * w).sum() for out, w in zip(outputs, weights))
            results[-1].append(torch.autograd.grad(loss, x)[0])
    for got, want in zip(*results):
        _close(got.detach(), want.detach())


class _FramedSpectrum(nn.Module):
    """A learned filter bank over overlapping frames of a waveform (an audio front end)."""

    def __init__(self):
        super().__init__()
        self.bank = nn.Linear(8, 6)

    def forward(self, wave):
        frames = wave.unfold(-1, 8, 4) * torch.hann_window(8)
        return torch.log1p(self.bank(frames).pow(2))


def test_a_framed_audio_front_end_trains_whole():
    torch.manual_seed(0)
    model = _FramedSpectrum()
    mine = _FramedSpectrum()
    mine.load_state_dict(model.state_dict())
    compiled = torch.compile(mine, backend="kiln", **WHOLE)
    wave = torch.randn(3, 40, generator=torch.Generator().manual_seed(1))
    for module, run in ((model, model), (mine, compiled)):
        run(wave).mean().backward()
    _close(compiled(wave).detach(), model(wave).detach())
    for got, want in zip(mine.parameters(), model.parameters()):
        _close(got.grad, want.grad)
