"""What `python -m kiln.bench --models` measures: the seed's PyTorch models, each run as a user
would (eval mode under torch.no_grad(), or one training step), and the systems that run them.

A case is one model on one input shape, inference or training. A variant is one way to run it:
eager PyTorch, or torch.compile with a backend ("inductor", "kiln") in a mode. Every variant of a
case gets its own copy of the model, so that a training step of one never moves another's
weights, and Dynamo's guards see a different module per variant.
"""
import copy
import dataclasses
from typing import Callable

import torch

from . import torch_models

BACKENDS = ("eager", "inductor", "kiln")
MODES = ("default", "reduce-overhead", "max-autotune")


def _sin_cos(x):
    return torch.sin(x) + torch.cos(x)


class SinCos(torch.nn.Module):
    """The seed's sin + cos as a module, so that it goes through the same code as the models."""

    def forward(self, x):
        return _sin_cos(x)


def _quick_bert():
    # Same module tree as BERT-base, tiny widths: a smoke run compiles every op kind in seconds.
    return torch_models.bert(hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=128, vocab_size=1000, max_position_embeddings=64)


def _tokens(batch, length, vocabulary):
    def inputs(generator):
        return (torch.randint(0, vocabulary, (batch, length), generator=generator),)
    return inputs


def _normal(*shape):
    def inputs(generator):
        return (torch.randn(*shape, generator=generator),)
    return inputs


@dataclasses.dataclass
class Case:
    name: str
    description: str
    build: Callable[[], torch.nn.Module]      # full size
    inputs: Callable                         # generator -> tuple of tensors (full size)
    size: str
    quick_build: Callable[[], torch.nn.Module]
    quick_inputs: Callable
    quick_size: str
    training: bool = False
    # Modes every run measures for kiln, whatever --modes says (the seed's 0-d experiment is
    # about reduce-overhead's per-call cost).
    kiln_modes: tuple = ()
    # Also measure torch.compile(backend="eager") ("dynamo"): Dynamo's own per-call cost, the
    # floor under every backend's figure for a tiny function.
    dynamo_floor: bool = False
    classes: int = 1000  # training: the cross-entropy target's number of classes
    quick_classes: int = 1000

    def model(self, quick):
        torch.manual_seed(0)  # the same weights in every process (warm-start probes)
        return (self.quick_build if quick else self.build)()

    def make_inputs(self, quick, seed):
        generator = torch.Generator().manual_seed(seed)
        return (self.quick_inputs if quick else self.inputs)(generator)

    def size_text(self, quick):
        return self.quick_size if quick else self.size


def make_cases(train_batch=16):
    """Every case; train_batch is resnet18's training batch (--train-batch)."""
    return [
        Case("mlp", "MLP 1024->1024->1024 (Linear, ReLU, Linear)", torch_models.mlp,
             _normal(1024, 1024), "batch 1024",
             lambda: torch_models.mlp(64), _normal(16, 64), "width 64, batch 16"),
        Case("resnet18", "resnet18 (torchvision layout), eval", torch_models.resnet18,
             _normal(16, 3, 224, 224), "16x3x224x224",
             torch_models.resnet18, _normal(1, 3, 32, 32), "1x3x32x32"),
        Case("bert_1x8", "BERT-base (BertModel(BertConfig()), random weights), eval",
             torch_models.bert, _tokens(1, 8, 30522), "1x8 tokens",
             _quick_bert, _tokens(1, 8, 1000), "1 layer, width 64, 1x8 tokens"),
        Case("bert_8x128", "BERT-base (BertModel(BertConfig()), random weights), eval",
             torch_models.bert, _tokens(8, 128, 30522), "8x128 tokens",
             _quick_bert, _tokens(2, 16, 1000), "1 layer, width 64, 2x16 tokens"),
        Case("gpt2_1x512", "GPT-2 small (GPT2Model(GPT2Config()), random weights), eval: a "
             "causal prompt", torch_models.gpt2, _tokens(1, 512, 50257), "1x512 tokens",
             lambda: torch_models.gpt2(n_embd=64, n_layer=1, n_head=4, vocab_size=1000,
                                       n_positions=128),
             _tokens(1, 64, 1000), "1 layer, width 64, 1x64 tokens"),
        Case("mlp_train", "MLP training step: forward, cross-entropy, backward, SGD step",
             torch_models.mlp, _normal(1024, 1024), "batch 1024",
             lambda: torch_models.mlp(64), _normal(16, 64), "width 64, batch 16",
             training=True, classes=1024, quick_classes=64),
        Case("resnet18_train", "resnet18 training step: forward, cross-entropy, backward, SGD",
             torch_models.resnet18, _normal(train_batch, 3, 224, 224),
             f"{train_batch}x3x224x224" + ("" if train_batch == 16 else
                                           f" (--train-batch {train_batch}, not 16)"),
             # Not smaller: batch norm's training statistics over layer4's 2x2 maps of 4 images
             # are still well conditioned (over 1x1 maps of 2 they are not, and every compiler
             # then disagrees with eager by a few per cent).
             torch_models.resnet18, _normal(4, 3, 64, 64), "4x3x64x64", training=True),
        Case("sin_cos_0d", "torch.sin(x) + torch.cos(x) on a 0-d float32 tensor: per-call cost",
             SinCos, lambda generator: (torch.randn((), generator=generator),), "0-d",
             SinCos, lambda generator: (torch.randn((), generator=generator),), "0-d",
             kiln_modes=("default", "reduce-overhead"), dynamo_floor=True),
    ]


def select(cases, words):
    """The cases named in a comma list ('' or 'all': every one)."""
    names = [word.strip() for word in words.split(",") if word.strip()]
    if not names or names == ["all"]:
        return list(cases)
    by_name = {case.name: case for case in cases}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise ValueError(f"unknown model case(s) {', '.join(unknown)}; known: "
                         f"{', '.join(by_name)}")
    return [by_name[name] for name in names]


@dataclasses.dataclass(frozen=True)
class Variant:
    backend: str          # eager | inductor | kiln (probes also use eager-backend words)
    mode: str = ""        # "" for eager PyTorch

    @property
    def name(self):
        return self.backend if not self.mode else f"{self.backend} {self.mode}"


def variants(case, backends, modes):
    """The variants of one case, eager first (it is the reference every other is checked
    against)."""
    chosen = [Variant("eager")] if "eager" in backends else []
    if case.dynamo_floor and "eager" in backends:
        chosen.append(Variant("dynamo"))
    for backend in ("inductor", "kiln"):
        if backend not in backends:
            continue
        wanted = list(modes) + [mode for mode in (case.kiln_modes if backend == "kiln" else ())
                                if mode not in modes]
        chosen += [Variant(backend, mode) for mode in MODES if mode in wanted]
    return chosen


def compile_model(model, variant, kiln_cache_dir=None):
    """The callable a user would write for this variant (eager: the module itself)."""
    if variant.backend == "eager" and not variant.mode:
        return model
    if variant.backend == "kiln":
        if not kiln_cache_dir:
            return torch.compile(model, backend="kiln", mode=variant.mode)
        # torch.compile takes mode or options, not both; kiln reads its mode from options too.
        return torch.compile(model, backend="kiln",
                             options={"mode": variant.mode, "cache_dir": kiln_cache_dir})
    if variant.backend == "inductor":
        return torch.compile(model, mode=variant.mode)
    if variant.backend == "dynamo":
        return torch.compile(model, backend="eager")
    return torch.compile(model, backend=variant.backend)  # probes: "eager", "aot_eager"


def training_step(model, compiled):
    """One SGD step on `model`'s parameters through `compiled` (its compiled forward)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_function = torch.nn.CrossEntropyLoss()

    def step(inputs, target):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_function(compiled(inputs), target)
        loss.backward()
        optimizer.step()
        return loss.detach()
    return step


def prepare(case, variant, base_model, kiln_cache_dir=None):
    """(call, model copy) for one variant: call(*inputs) runs once to completion. Training
    cases take (inputs, target) and return the loss; the copy is returned for the check."""
    model = copy.deepcopy(base_model)
    model.train(case.training)
    compiled = compile_model(model, variant, kiln_cache_dir)
    if not case.training:
        return compiled, model
    return training_step(model, compiled), model


def training_inputs(case, quick, seed):
    (inputs,) = case.make_inputs(quick, seed)
    generator = torch.Generator().manual_seed(1000 + seed)
    classes = case.quick_classes if quick else case.classes
    return inputs, torch.randint(0, classes, (inputs.shape[0],), generator=generator)


def input_set(case, quick, seed):
    return training_inputs(case, quick, seed) if case.training else case.make_inputs(quick, seed)


def output_tensors(result):
    """The tensors of a model's output, in order (BERT returns a ModelOutput)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if hasattr(result, "to_tuple"):
        result = result.to_tuple()
    if isinstance(result, (tuple, list)):
        return [tensor for item in result for tensor in output_tensors(item)]
    return []


def compare(expected, actual, tolerance=1e-3):
    """(ok, message): every tensor within tolerance x its largest magnitude (float32 GEMMs and
    convolutions sum in different orders in every library)."""
    expected, actual = output_tensors(expected), output_tensors(actual)
    if len(expected) != len(actual) or not expected:
        return False, f"{len(actual)} output tensor(s), expected {len(expected)}"
    worst = 0.0
    for reference, value in zip(expected, actual):
        if reference.shape != value.shape:
            return False, f"shape {tuple(value.shape)}, expected {tuple(reference.shape)}"
        scale = max(1.0, reference.detach().abs().max().item()) if reference.numel() else 1.0
        error = (value.detach().double() - reference.detach().double()).abs().max().item() \
            / scale if reference.numel() else 0.0
        if not error <= tolerance:  # NaN fails too
            return False, f"max error {error:.3g} of the largest magnitude > {tolerance}"
        worst = max(worst, error)
    return True, f"max error {worst:.2g}"


def parameters_of(model):
    return [parameter.detach() for parameter in model.parameters()]
