"""The seed's PyTorch models, built as a user would: an MLP (1024 -> 1024 -> 1024), resnet18 and
BERT-base. torchvision's wheels on PyPI are built for CUDA torch and do not import on the CPU
build, so resnet18 is defined here with torchvision's layers and parameter names (a torchvision
state dict loads into it); where torchvision imports (the GPU machine), its own model is used.
BERT comes from `transformers` (BertModel(BertConfig()), random weights, nothing downloaded).
"""
import time

import torch
from torch import nn


def mlp(width=1024):
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision.models.ResNet with BasicBlocks (same module tree and parameter names)."""

    def __init__(self, layers=(2, 2, 2, 2), num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18():
    try:
        import torchvision
        return torchvision.models.resnet18()
    except Exception:  # no torchvision, or one built for another torch (the CPU machine)
        return ResNet()


def bert(**config):
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig(**config))


def gpt2(**config):
    """GPT-2 (GPT-2 small by default) without its key-value cache: a causal prompt's forward."""
    from transformers import GPT2Config, GPT2Model
    return GPT2Model(GPT2Config(use_cache=False, **config))


# ---- what the examples (examples/torch_*.py) share ----------------------------------------

def compile_with(model, backend, mode):
    """torch.compile with Inductor or kiln, traced from scratch (its first call is its own)."""
    torch._dynamo.reset()
    if backend == "inductor":
        return torch.compile(model, mode=mode)
    return torch.compile(model, backend=backend, mode=mode)


def synchronize(tensor):
    """Waits for the GPU's work where `tensor` is a CUDA tensor (a timed call ends there)."""
    if tensor.is_cuda:
        torch.cuda.synchronize(tensor.device)


def median_seconds(function, argument, repeat):
    """The median time of `repeat` calls, each to completion on the GPU where the input is
    there; `argument` may be a callable making each call's input (new data every call, made
    outside the timing)."""
    times = []
    for _ in range(repeat):
        given = argument() if callable(argument) else argument
        synchronize(given)
        start = time.perf_counter()
        function(given)
        synchronize(given)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def report_backend(model, argument, expected, backend, mode, eager_seconds, repeat,
                   result_of=lambda output: output):
    """One line of an example's table: the compiled model's median time, speed-up over eager,
    first call, and whether its result agrees with eager's (relative to the largest value:
    libraries sum in different orders). Returns whether it agrees."""
    compiled = compile_with(model, backend, mode)
    start = time.perf_counter()
    result = result_of(compiled(argument))
    synchronize(result)
    first_call = time.perf_counter() - start
    error = ((result - expected).abs().max() / expected.abs().max()).item()
    agree = error < 1e-3
    seconds = median_seconds(compiled, argument, repeat)
    print(f"  {backend:8} mode={mode:16} {seconds * 1e3:9.2f} ms   vs eager "
          f"{eager_seconds / seconds:5.2f}x   first call {first_call:6.2f} s   results "
          f"{'agree' if agree else 'DIFFER'} (max error {error:.1e})")
    return agree
