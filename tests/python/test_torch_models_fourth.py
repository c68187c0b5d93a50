"""torch.compile(backend="kiln") on a fourth set of models, small configs with random weights,
each against eager PyTorch: inference under no_grad, and three optimizer steps in training
(the losses, every gradient, the parameters and buffers after the steps):
- transformers: RoBERTa, ALBERT, Qwen2 and Mistral (grouped-query attention, a sliding window),
  CLIP's text model (a causal mask), Whisper's encoder, BART with labels (its loss), Gemma,
  BLOOM (ALiBi), DeBERTa-v2 (disentangled relative attention), Swin (shifted windows);
  generate() with a static key-value cache (updated in place by index_copy_);
- torch.nn: bidirectional LSTM and GRU over packed sequences (they run in eager PyTorch),
  Conv1d with GroupNorm and InstanceNorm keeping running statistics, depthwise convolutions,
  PixelShuffle/PixelUnshuffle, ConvTranspose2d with groups and dilation, nearest, bilinear,
  bicubic and area interpolation, MultiheadAttention with kdim/vdim and a key padding mask,
  EmbeddingBag (mean with padding_idx, sum with per-sample weights), a tied embedding;
- float64 and bfloat16 inputs, dynamic=True, inference_mode.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from test_torch_models_more import _outputs
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}
FLOAT32_TOLERANCE = 1e-4


def _assert_close(got, want, tolerance):
    """Relative tolerance, the absolute part relative to the largest value (a gradient is a
    sum of many terms, which fused reductions round in another order)."""
    want, got = want.detach(), got.detach()
    largest = float(want.abs().max()) if want.numel() else 0.0
    torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance * max(1.0, largest))


def _check_inference(model, inputs, tolerance=FLOAT32_TOLERANCE, context=torch.no_grad,
                     **options):
    model.eval()
    with context():
        want = _outputs(model(*inputs))
        got = _outputs(torch.compile(copy.deepcopy(model), backend="kiln",
                                     **{**WHOLE, **options})(*inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_close(g, w, tolerance)


def _loss(outputs):
    """A loss that reads every element of the first output, each with its own weight."""
    first = outputs[0]
    return (first * torch.linspace(-1, 1, first.numel()).view(first.shape)).mean()


def _check_training(model, inputs, steps=3, **options):
    """`steps` AdamW steps (eps 1e-5: a gradient that is zero but for rounding, as a key
    projection's bias has under softmax, stays a small step) compiled and eager."""
    model.train()
    mine = copy.deepcopy(model)
    compiled = torch.compile(mine, backend="kiln", **{**WHOLE, **options})
    runs = [(model, model, torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-5)),
            (mine, compiled, torch.optim.AdamW(mine.parameters(), lr=1e-3, eps=1e-5))]
    for _ in range(steps):
        losses = []
        for _, run, optimizer in runs:
            optimizer.zero_grad()
            loss = _loss(_outputs(run(*inputs)))
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        _assert_close(losses[1], losses[0], 1e-4)
    for (name, want), got in zip(model.named_parameters(), mine.parameters()):
        _assert_close(got, want, 1e-4)
    for want, got in zip(model.buffers(), mine.buffers()):
        _assert_close(got.double(), want.double(), 1e-4)


# ---- transformers models (random weights from small configs; nothing downloaded) ----

def _without_dropout(config):
    """config with every dropout rate 0: a training step draws nothing at random."""
    for key, value in list(vars(config).items()):
        if isinstance(value, float) and ("drop" in key or key.endswith("_prob")):
            setattr(config, key, 0.0)
    return config


class _KeywordInputs(nn.Module):
    """A transformers model called with its inputs by name (the positions differ per model)."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        return self.model(**dict(zip(self.names, inputs)))


_DECODER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=100, max_position_embeddings=64)
_ENCODER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                vocab_size=100)
_SEQ2SEQ = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                vocab_size=100)


def _tokens():
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 100, (2, 9), generator=generator)
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, -3:] = 0
    return ids, mask


def _transformers_model(name):
    transformers = pytest.importorskip("transformers")
    ids, mask = _tokens()
    text = ("input_ids", "attention_mask")
    configs = {
        "roberta": ("RobertaModel", "RobertaConfig", dict(_ENCODER, max_position_embeddings=40)),
        "albert": ("AlbertModel", "AlbertConfig", dict(_ENCODER, embedding_size=16)),
        "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", _DECODER),
        "mistral": ("MistralForCausalLM", "MistralConfig", dict(_DECODER, sliding_window=4)),
        "clip-text": ("CLIPTextModel", "CLIPTextConfig", dict(_ENCODER, max_position_embeddings=20)),
        "gemma": ("GemmaForCausalLM", "GemmaConfig", dict(_DECODER, head_dim=8)),
        "bloom": ("BloomForCausalLM", "BloomConfig", dict(hidden_size=32, n_layer=2, n_head=4,
                                                          vocab_size=100)),
        "deberta-v2": ("DebertaV2Model", "DebertaV2Config", dict(
            _ENCODER, max_position_embeddings=64, relative_attention=True, position_buckets=8,
            pos_att_type=["p2c", "c2p"])),
    }
    if name in configs:
        model_class, config_class, config = configs[name]
        config = _without_dropout(getattr(transformers, config_class)(**config))
        return _KeywordInputs(getattr(transformers, model_class)(config), text), (ids, mask)
    if name == "whisper-encoder":
        config = transformers.WhisperConfig(**_SEQ2SEQ, num_mel_bins=16, max_source_positions=20,
                                            max_target_positions=20, decoder_start_token_id=1,
                                            pad_token_id=0)
        model = transformers.WhisperForConditionalGeneration(_without_dropout(config))
        return model.get_encoder(), (torch.randn(2, 16, 40),)
    if name == "bart-labels":
        config = transformers.BartConfig(**_SEQ2SEQ, max_position_embeddings=40)
        model = transformers.BartForConditionalGeneration(_without_dropout(config))
        labels = ids[:, :5].clone()
        labels[1, -2:] = -100  # ignored by the loss
        return (_KeywordInputs(model, text + ("labels",)), (ids, mask, labels))
    assert name == "swin"
    config = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                                     num_heads=[2, 2], window_size=4)
    return _KeywordInputs(transformers.SwinModel(_without_dropout(config)),
                          ("pixel_values",)), (torch.randn(2, 3, 32, 32),)


_TRANSFORMERS = ["roberta", "albert", "qwen2", "mistral", "clip-text", "gemma", "bloom",
                 "deberta-v2", "whisper-encoder", "bart-labels", "swin"]


@pytest.mark.parametrize("name", _TRANSFORMERS)
def test_transformers_models_match_eager_in_inference_and_training(name):
    torch.manual_seed(0)
    model, inputs = _transformers_model(name)
    _check_inference(model, inputs)
    _check_training(model, inputs)


def test_qwen2_in_bfloat16_and_float64_under_inference_mode():
    # (its RMSNorm and rotary embeddings compute in float32 whatever the model's dtype: float64
    # results are float32's to the last few bits)
    for dtype, tolerance in ((torch.bfloat16, 2e-2), (torch.float64, 1e-5)):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model, inputs = _transformers_model("qwen2")
        _check_inference(model.to(dtype), inputs, tolerance, context=torch.inference_mode)


def _static_cache_decoder():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        **_DECODER, pad_token_id=0, bos_token_id=1, eos_token_id=2)).eval()


def test_generate_with_a_static_cache_compiles_whole_and_matches_eager():
    # The cache's length, counted up in place and returned by the prompt's graph (StaticCache:
    # `cumulative_length.add_(n)`), ran in eager PyTorch between kiln's parts
    model = _static_cache_decoder()
    ids, mask = _tokens()
    options = dict(max_new_tokens=6, min_new_tokens=6, do_sample=False,
                   cache_implementation="static")
    with torch.no_grad():
        want = model.generate(ids, attention_mask=mask, **options)
        model.forward = torch.compile(model.forward, backend="kiln", **WHOLE)
        assert torch.equal(model.generate(ids, attention_mask=mask, **options), want)


# ---- torch.nn patterns ----

class _PackedRecurrent(nn.Module):
    """Padded sequences of three lengths packed, run by a bidirectional LSTM and a GRU."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 12, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(24, 6, batch_first=True)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, (hidden, _) = self.lstm(packed)
        out, last = self.gru(out)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                  total_length=x.shape[1])
        return out.sum(1) + last[0] + hidden.sum(0).mean(-1, keepdim=True)


class _AudioNorms(nn.Module):
    """Conv1d, GroupNorm, a depthwise Conv1d, InstanceNorm1d keeping running statistics."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 5, stride=2, padding=2)
        self.group_norm = nn.GroupNorm(2, 8)
        # (no bias before an instance norm, which subtracts it: its gradient is zero but for
        # rounding, which AdamW scales up to a step)
        self.depthwise = nn.Conv1d(8, 8, 3, groups=8, padding="same", bias=False)
        self.instance_norm = nn.InstanceNorm1d(8, affine=True, track_running_stats=True)

    def forward(self, x):
        return self.instance_norm(self.depthwise(F.gelu(self.group_norm(self.conv(x)))))


class _Resampling(nn.Module):
    """Depthwise and pointwise convolutions, pixel (un)shuffles, a grouped dilated transposed
    convolution, and interpolation in several modes."""

    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.transposed = nn.ConvTranspose2d(4, 6, 3, stride=(2, 3), padding=(1, 0),
                                             output_padding=(1, 2), groups=2, dilation=2,
                                             bias=False)
        self.norm = nn.InstanceNorm2d(6, affine=True)

    def forward(self, x):
        y = F.pixel_shuffle(self.pointwise(F.relu(self.depthwise(x))), 2)  # 4 channels
        y = F.pixel_unshuffle(F.pixel_shuffle(y, 2), 2)
        y = self.norm(self.transposed(y))
        nearest = F.interpolate(y, scale_factor=1.7, mode="nearest")
        bilinear = F.interpolate(y, size=(13, 11), mode="bilinear", align_corners=False)
        bicubic = F.interpolate(y, scale_factor=2, mode="bicubic", align_corners=True)
        area = F.interpolate(y, size=(3, 4), mode="area")
        return torch.cat([nearest.amax((2, 3)), bilinear.mean((2, 3)), bicubic[..., 1, 2],
                          area.flatten(1)], 1)


class _CrossAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(16, 2, kdim=10, vdim=10, batch_first=True)

    def forward(self, query, memory, padding):
        out, weights = self.attention(query, memory, memory, key_padding_mask=padding,
                                      average_attn_weights=False)
        return out, weights


class _TiedBags(nn.Module):
    """EmbeddingBags (mean with padding_idx; sum with per-sample weights) and an output layer
    tied to an embedding."""

    def __init__(self):
        super().__init__()
        self.mean_bag = nn.EmbeddingBag(30, 8, mode="mean", padding_idx=0)
        self.sum_bag = nn.EmbeddingBag(30, 8, mode="sum")
        self.embedding = nn.Embedding(30, 8)
        self.output = nn.Linear(8, 30, bias=False)
        self.output.weight = self.embedding.weight

    def forward(self, rows, indices, offsets, weights, tokens):
        bags = self.mean_bag(rows) + self.sum_bag(indices, offsets, per_sample_weights=weights)
        return self.output(torch.tanh(self.embedding(tokens) + bags[:, None]))


def _nn_model(name):
    generator = torch.Generator().manual_seed(1)
    if name == "packed-recurrent":
        return _PackedRecurrent(), (torch.randn(3, 5, 8, generator=generator),
                                    torch.tensor([5, 2, 4]))
    if name == "audio-norms":
        return _AudioNorms(), (torch.randn(2, 4, 20, generator=generator),)
    if name == "resampling":
        return _Resampling(), (torch.randn(2, 8, 5, 4, generator=generator),)
    if name == "cross-attention":
        padding = torch.tensor([[False] * 5, [False, False, True, True, True]])
        return _CrossAttention(), (torch.randn(2, 3, 16, generator=generator),
                                   torch.randn(2, 5, 10, generator=generator), padding)
    assert name == "tied-bags"
    rows = torch.tensor([[0, 3, 4], [0, 0, 0], [5, 0, 7]])  # a bag of padding only: zeros
    return _TiedBags(), (rows, torch.randint(0, 30, (9,), generator=generator),
                         torch.tensor([0, 2, 2]), torch.randn(9, generator=generator),
                         torch.randint(0, 30, (3, 4), generator=generator))


_NN = ["audio-norms", "resampling", "cross-attention", "tied-bags"]


@pytest.mark.parametrize("name", _NN)
def test_nn_patterns_match_eager_in_inference_and_training(name):
    torch.manual_seed(0)
    model, inputs = _nn_model(name)
    _check_inference(model, inputs)
    _check_training(model, inputs)


def test_packed_recurrent_layers_match_eager_through_their_eager_parts():
    torch.manual_seed(0)
    model, inputs = _nn_model("packed-recurrent")
    options = {"options": {}}  # Dynamo runs the recurrent layers in eager PyTorch (allow_rnn off)
    _check_inference(model, inputs, **options)
    _check_training(model, inputs, **options)


@pytest.mark.parametrize("name", ["audio-norms", "cross-attention"])
def test_nn_patterns_in_float64_with_dynamic_sizes_match_eager(name):
    torch.manual_seed(0)
    model, inputs = _nn_model(name)
    inputs = tuple(x.double() if x.is_floating_point() else x for x in inputs)
    _check_inference(model.double(), inputs, 1e-9, dynamic=True)
