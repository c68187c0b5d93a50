"""torch.compile(backend="kiln") on more models, small configs with random weights, each against
eager PyTorch to float32 tolerance, inference and training (every gradient), compiled whole
(unsupported_ops="error": no part left to eager PyTorch) where the model converts whole:
- a dynamic batch (dynamic=True) compiled once for every batch size: transposed convolutions
  (a UNet decoder), convolution gradients and DLRM-style embedding bags, which compiled per batch
  (their builders needed every size as a number);
- transformers' GPT-2 (decoding with past_key_values), T5, ViT, DistilBERT, wav2vec2's
  feature encoder; a Llama-style decoder (RMSNorm, rotary embeddings, SiLU-gated MLP, grouped-
  query attention); nn.TransformerEncoder (on its inference fast path too) and
  nn.MultiheadAttention with masks; GRU and LSTM (allow_rnn); a diffusion UNet block;
- training steps: AdamW with clip_grad_norm_, bfloat16 autocast, a compiled optimizer.step().
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln
import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _assert_close(got, want, scale=1e-5):
    """float32 tolerance, the absolute part relative to the largest value (a gradient is a sum
    of many terms, which fused reductions round in another order)."""
    largest = float(want.detach().abs().max()) if want.numel() else 0.0
    torch.testing.assert_close(got, want, rtol=1e-4, atol=scale * max(1.0, largest))


def _outputs(result):
    """The tensors of a model's result (a tensor, a tuple or a transformers ModelOutput)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if hasattr(result, "to_tuple"):
        result = result.to_tuple()
    tensors = []
    for item in result if isinstance(result, (tuple, list)) else []:
        if isinstance(item, (torch.Tensor, tuple, list)) or hasattr(item, "to_tuple"):
            tensors.extend(_outputs(item))
    return tensors


def _step(model, run, inputs, training):
    """The model's outputs, and with `training` the gradients of sum(out * R) for a fixed R."""
    model.zero_grad()
    with torch.set_grad_enabled(training):
        outputs = _outputs(run(*inputs))
    if not training:
        return outputs
    first = outputs[0]
    weights = torch.linspace(-1, 1, first.numel()).view(first.shape)
    (first.float() * weights).sum().backward()
    return [out.detach() for out in outputs] + [
        parameter.grad for parameter in model.parameters() if parameter.grad is not None]


def _check_against_eager(model, inputs, training, scale=1e-5, **compile_options):
    model.train(training)
    want = _step(model, model, inputs, training)
    mine = copy.deepcopy(model)
    compiled = torch.compile(mine, backend="kiln", **{**WHOLE, **compile_options})
    got = _step(mine, compiled, inputs, training)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_close(g, w, scale)


@pytest.fixture
def recompiles(capfd):
    """recompiles(): what KILN_LOGS=recompiles logged since the test began."""
    kiln.set_logs("recompiles")
    yield lambda: capfd.readouterr().err
    kiln.set_logs("")


# ---- a dynamic batch, compiled once ----

class _Decoder(nn.Module):
    """A UNet decoder's upsampling: ConvTranspose2d, then a convolution."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.conv = nn.Conv2d(4, 3, 3, padding=1)

    def forward(self, x):
        return self.conv(F.silu(self.up(x)))


class _Recommender(nn.Module):
    """DLRM's shape: embedding bags of sparse features, a dense MLP, their dot products."""

    def __init__(self, mode):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(40, 8, mode=mode) for _ in range(2))
        self.dense = nn.Linear(5, 8)
        self.top = nn.Linear(3 * 8 + 3, 1)

    def forward(self, dense, indices, offsets):
        features = [self.dense(dense)] + [bag(indices, offsets) for bag in self.bags]
        stacked = torch.stack(features, 1)
        products = torch.bmm(stacked, stacked.transpose(1, 2))
        upper = products[:, [0, 0, 1], [1, 2, 2]]
        return self.top(torch.cat(features + [upper], 1))


def _recommender_inputs(batch):
    generator = torch.Generator().manual_seed(batch)
    counts = torch.randint(0, 4, (batch,), generator=generator)  # empty bags too
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)[:-1]])
    indices = torch.randint(0, 40, (int(counts.sum()),), generator=generator)
    return torch.randn(batch, 5, generator=generator), indices, offsets


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("model, inputs", [
    (_Decoder, lambda batch: (torch.randn(batch, 8, 5, 6),)),
    (lambda: _Recommender("sum"), _recommender_inputs),
    (lambda: _Recommender("mean"), _recommender_inputs),
], ids=["conv_transpose", "embedding_bag_sum", "embedding_bag_mean"])
def test_a_dynamic_batch_compiles_once(model, inputs, training, recompiles):
    torch.manual_seed(0)
    model = model()
    mine = copy.deepcopy(model)
    compiled = torch.compile(mine, backend="kiln", dynamic=True, **WHOLE)
    model.train(training)
    mine.train(training)
    for batch in (2, 3, 5, 8):
        args = inputs(batch)
        want = _step(model, model, args, training)
        got = _step(mine, compiled, args, training)
        for g, w in zip(got, want):
            _assert_close(g, w)
    log = recompiles()
    assert "variant 2" not in log and "compiles per size" not in log, log


# ---- torch.nn's transformer layers, on PyTorch's inference fast path too ----

def _padding(batch, length):
    pad = torch.zeros(batch, length, dtype=torch.bool)
    pad[1, -3:] = True
    return pad


class _Encoder(nn.Module):
    def __init__(self, norm_first, activation):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation=activation,
                                           batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, pad, causal):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1]) if causal else None
        return self.encoder(x, mask=mask, src_key_padding_mask=pad)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("norm_first, activation, causal", [
    (False, "relu", False), (True, "gelu", False), (False, "gelu", True)])
def test_transformer_encoder_matches_eager(norm_first, activation, causal, training):
    # in eval mode without gradients its layers run aten._transformer_encoder_layer_fwd, which
    # ran in eager PyTorch (_fast_paths.py decomposes it)
    torch.manual_seed(0)
    inputs = (torch.randn(2, 7, 32), _padding(2, 7), causal)
    _check_against_eager(_Encoder(norm_first, activation), inputs, training)


def test_an_encoder_sample_of_padding_only_is_nan_as_on_eagers_fast_path():
    # the fast path's softmax over keys that are all masked is NaN (_masked_softmax on the CPU)
    torch.manual_seed(0)
    model = _Encoder(False, "relu").eval()
    pad = _padding(2, 7)
    pad[0] = True
    x = torch.randn(2, 7, 32)
    with torch.no_grad():
        want = model(x, pad, False)
        got = torch.compile(model, backend="kiln", **WHOLE)(x, pad, False)
    assert want[0].isnan().all() and want[1].isfinite().all()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


class _SelfAttention(nn.Module):
    def __init__(self, need_weights, average):
        super().__init__()
        self.attention = nn.MultiheadAttention(32, 4, batch_first=True)
        self.need_weights, self.average = need_weights, average

    def forward(self, x, mask, pad):
        out, weights = self.attention(x, x, x, attn_mask=mask, key_padding_mask=pad,
                                      need_weights=self.need_weights,
                                      average_attn_weights=self.average)
        return (out, weights) if self.need_weights else out


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("need_weights, average, masks", [
    (False, True, "padding"), (True, True, "both"), (True, False, "attention"),
    (False, True, "none")])
def test_multihead_self_attention_with_masks_matches_eager(need_weights, average, masks,
                                                          training):
    torch.manual_seed(0)
    causal = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
    inputs = (torch.randn(2, 6, 32), causal if masks in ("attention", "both") else None,
              _padding(2, 6) if masks in ("padding", "both") else None)
    _check_against_eager(_SelfAttention(need_weights, average), inputs, training)


def test_multihead_cross_attention_with_masks_matches_eager():
    torch.manual_seed(0)
    attention = nn.MultiheadAttention(32, 4, batch_first=True, kdim=24, vdim=24)

    class Cross(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = attention

        def forward(self, x, memory, mask, pad):
            return self.attention(x, memory, memory, attn_mask=mask, key_padding_mask=pad)
    mask = torch.zeros(5, 7)
    mask[:, -1] = float("-inf")  # a float (additive) mask
    inputs = (torch.randn(2, 5, 32), torch.randn(2, 7, 24), mask, _padding(2, 7))
    for training in (False, True):
        _check_against_eager(Cross(), inputs, training)
