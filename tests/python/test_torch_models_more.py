"""torch.compile(backend="kiln") on more models, small configs with random weights, each against
eager PyTorch to float32 tolerance, inference and training (every gradient), compiled whole
(unsupported_ops="error": no part left to eager PyTorch) where the model converts whole:
- a dynamic batch (dynamic=True) compiled once for every batch size: transposed convolutions
  (a UNet decoder), convolution gradients and DLRM-style embedding bags, which compiled per batch
  (their builders needed every size as a number);
- transformers' GPT-2 (decoding with past_key_values), T5, ViT, DistilBERT, wav2vec2's
  feature encoder; a Llama-style decoder (RMSNorm, rotary embeddings, SiLU-gated MLP, grouped-
  query attention); nn.TransformerEncoder (on its inference fast path too) and
  nn.MultiheadAttention with masks; GRU (allow_rnn); a diffusion UNet block;
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
    (False, True, "padding"), (True, True, "both"), (True, False, "attention")])
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


# ---- transformers models (random weights from small configs; nothing downloaded) ----

def _without_dropout(config):
    """config with every dropout rate (and wav2vec2's masking and layer-drop chances) 0: a
    training step then draws nothing at random, so kiln and eager agree. (kiln's dropout draws
    other masks than eager's: python/kiln/torch/_aten_random.py.)"""
    for key, value in list(vars(config).items()):
        if isinstance(value, float) and ("drop" in key or key.endswith("_prob")):
            setattr(config, key, 0.0)
    return config


def _transformers_model(name):
    transformers = pytest.importorskip("transformers")
    if name == "t5":
        model = transformers.T5ForConditionalGeneration(_without_dropout(transformers.T5Config(
            d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, vocab_size=100,
            decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)))
        return model, (torch.randint(0, 100, (2, 9)), torch.ones(2, 9, dtype=torch.long),
                       torch.randint(0, 100, (2, 5)))
    if name == "vit":
        model = transformers.ViTModel(_without_dropout(transformers.ViTConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            image_size=16, patch_size=4)), add_pooling_layer=False)
        return model, (torch.randn(2, 3, 16, 16),)
    if name == "distilbert":
        model = transformers.DistilBertModel(_without_dropout(transformers.DistilBertConfig(
            dim=32, n_layers=2, n_heads=4, hidden_dim=64, vocab_size=100)))
        mask = torch.ones(2, 9, dtype=torch.long)
        mask[1, -3:] = 0
        return model, (torch.randint(0, 100, (2, 9)), mask)
    # wav2vec2: the convolutional feature encoder (conv1d, group norm, GELU) and two layers
    model = transformers.Wav2Vec2Model(_without_dropout(transformers.Wav2Vec2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4, feat_extract_norm="group")))
    return model, (torch.randn(2, 600),)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("name", ["t5", "vit", "distilbert", "wav2vec2"])
def test_transformers_models_match_eager(name, training):
    torch.manual_seed(0)
    model, inputs = _transformers_model(name)
    _check_against_eager(model, inputs, training)


def test_gpt2_decoding_with_past_key_values_matches_eager():
    # a prompt, then two tokens each given the cache of keys and values before it
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=32, n_layer=2, n_head=4, vocab_size=100, n_positions=32, bos_token_id=0,
        eos_token_id=0)).eval()
    prompt, steps = torch.randint(0, 100, (2, 7)), torch.randint(0, 100, (2, 2))

    def decode(run):
        with torch.no_grad():
            out = run(prompt, use_cache=True)
            logits = [out.logits]
            for k in range(steps.shape[1]):
                out = run(steps[:, k:k + 1], past_key_values=out.past_key_values, use_cache=True)
                logits.append(out.logits)
        return logits
    want = decode(model)
    got = decode(torch.compile(model, backend="kiln", **WHOLE))
    for g, w in zip(got, want):
        _assert_close(g, w)


def test_gpt2_decoding_runs_every_new_length_on_one_library(recompiles):
    # Each token is a new cache length (25 to 134), across the rows a reduction splits into one,
    # two and four registers of lanes (32, 64 and 128 float32 elements with AVX-512): every
    # length runs the size-generic code, none compiles on its own.
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=32, n_layer=1, n_head=2, vocab_size=100, n_positions=160, bos_token_id=0,
        eos_token_id=0)).eval()
    compiled = torch.compile(model, backend="kiln", **WHOLE)
    with torch.no_grad():
        prompt = torch.randint(0, 100, (1, 24))  # each run its own cache (updated in place)
        out, want = model(prompt, use_cache=True), model(prompt, use_cache=True)
        for step in range(110):
            token = torch.randint(0, 100, (1, 1))
            out = compiled(token, past_key_values=out.past_key_values, use_cache=True)
            want = model(token, past_key_values=want.past_key_values, use_cache=True)
            _assert_close(out.logits, want.logits)
    assert "compiles for" not in recompiles()


# ---- hand-written models ----

class _RMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).type_as(x) * self.weight


def _rotated(x, cos, sin):
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin


class _LlamaBlock(nn.Module):
    """RMSNorm, rotary embeddings, grouped-query attention (4 heads, 2 key-value heads), a
    SiLU-gated MLP."""

    def __init__(self, width=32, heads=4, kv_heads=2, hidden=64):
        super().__init__()
        self.heads, self.kv_heads, self.head = heads, kv_heads, width // heads
        self.q = nn.Linear(width, width, bias=False)
        self.kv = nn.Linear(width, 2 * kv_heads * self.head, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)
        self.norms = nn.ModuleList([_RMSNorm(width), _RMSNorm(width)])

    def forward(self, x):
        batch, length, width = x.shape
        inverse = 1.0 / (10000 ** (torch.arange(0, self.head, 2, dtype=torch.float32) / self.head))
        angles = torch.outer(torch.arange(length, dtype=torch.float32), inverse)
        angles = torch.cat([angles, angles], -1)
        cos, sin = angles.cos(), angles.sin()
        h = self.norms[0](x)
        q = self.q(h).view(batch, length, self.heads, self.head).transpose(1, 2)
        kv = self.kv(h).view(batch, length, 2 * self.kv_heads, self.head).transpose(1, 2)
        k, v = kv.chunk(2, 1)
        q, k = _rotated(q, cos, sin), _rotated(k, cos, sin)
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(attended.transpose(1, 2).reshape(batch, length, width))
        h = self.norms[1](x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class _Llama(nn.Module):
    def __init__(self, vocab=100, width=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab, width)
        self.blocks = nn.Sequential(_LlamaBlock(width), _LlamaBlock(width))
        self.norm = _RMSNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, tokens):
        return self.head(self.norm(self.blocks(self.embedding(tokens))))


class _UNetBlock(nn.Module):
    """A diffusion UNet's block: GroupNorm, SiLU, convolutions with a time embedding, spatial
    self-attention, nearest upsampling."""

    def __init__(self, channels=16, groups=4):
        super().__init__()
        self.norms = nn.ModuleList(nn.GroupNorm(groups, channels) for _ in range(3))
        self.convs = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=1) for _ in range(2))
        self.time = nn.Linear(8, channels)
        self.attention = nn.MultiheadAttention(channels, 4, batch_first=True)
        self.up = nn.Conv2d(channels, channels // 2, 3, padding=1)

    def forward(self, x, time):
        h = self.convs[0](F.silu(self.norms[0](x))) + self.time(F.silu(time))[:, :, None, None]
        h = self.convs[1](F.silu(self.norms[1](h))) + x
        batch, channels, height, width = h.shape
        tokens = self.norms[2](h).flatten(2).transpose(1, 2)
        attended, _ = self.attention(tokens, tokens, tokens, need_weights=False)
        h = h + attended.transpose(1, 2).reshape(batch, channels, height, width)
        return self.up(F.interpolate(h, scale_factor=2, mode="nearest"))


class _Recurrent(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(nn, kind)(8, 12, num_layers=2, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("model, inputs", [
    (_Llama, lambda: (torch.randint(0, 100, (2, 9)),)),
    (_UNetBlock, lambda: (torch.randn(2, 16, 6, 6), torch.randn(2, 8))),
    (lambda: _Recurrent("GRU"), lambda: (torch.randn(2, 5, 8),)),  # LSTM: model_patterns
], ids=["llama", "unet_block", "gru"])
def test_hand_written_models_match_eager(model, inputs, training):
    torch.manual_seed(0)
    with torch._dynamo.config.patch(allow_rnn=True):  # Dynamo traces the GRU whole
        _check_against_eager(model(), inputs(), training)


def test_a_unet_block_with_a_dynamic_batch_compiles_once(recompiles):
    torch.manual_seed(0)
    model = _UNetBlock()
    compiled = torch.compile(copy.deepcopy(model), backend="kiln", dynamic=True, **WHOLE)
    with torch.no_grad():
        for batch in (2, 3, 5):
            inputs = (torch.randn(batch, 16, 6, 6), torch.randn(batch, 8))
            _assert_close(compiled(*inputs), model(*inputs))
    log = recompiles()
    assert "variant 2" not in log and "compiles per size" not in log, log


# ---- training steps ----

def test_a_compiled_adamw_step_matches_eager():
    # the optimizer's step itself compiled (its foreach updates of every parameter), after
    # clip_grad_norm_; the same gradients on both sides
    torch.manual_seed(0)
    model = _Llama()
    mine = copy.deepcopy(model)
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
                  for m in (model, mine)]
    step = torch.compile(optimizers[1].step, backend="kiln")
    tokens = torch.randint(0, 100, (2, 9))
    for _ in range(3):
        for m in (model, mine):
            m.zero_grad()
            m(tokens).logsumexp(-1).mean().backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        for p, q in zip(mine.parameters(), model.parameters()):
            q.grad.copy_(p.grad)
        optimizers[0].step()
        step()
        for p, q in zip(mine.parameters(), model.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_training_steps_with_adamw_and_clipping_match_eager():
    # the model compiled (forward and backward), clip_grad_norm_ and AdamW as they are
    torch.manual_seed(0)
    model = _Llama()
    mine = copy.deepcopy(model)
    compiled = torch.compile(mine, backend="kiln", **WHOLE)
    tokens = torch.randint(0, 100, (2, 9))
    for m, run in ((model, model), (mine, compiled)):
        optimizer = torch.optim.AdamW(m.parameters(), lr=1e-3)
        for _ in range(3):
            optimizer.zero_grad()
            run(tokens).logsumexp(-1).mean().backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            optimizer.step()
    # Adam divides each gradient by its own magnitude: a rounding apart in a gradient near zero
    # moves a parameter by up to a step (lr); most move alike
    for p, q in zip(mine.parameters(), model.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=3e-3)
        assert (p - q).abs().median() < 1e-5


def test_a_bfloat16_mlp_reads_its_weights_in_place(capfd):
    # A bfloat16 model (not autocast): each linear layer's operands are cast to float32 for the
    # product; kiln's matmul reads the bfloat16 weights and activations in place (no kernel
    # writes float32 copies of the transposed weights on every call), as eager's oneDNN does.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(96, 160), nn.GELU(), nn.Linear(160, 64)).eval()
    model = model.to(torch.bfloat16)
    x = torch.randn(48, 96, dtype=torch.bfloat16)
    compiled = torch.compile(model, backend="kiln", **WHOLE)
    kiln.set_logs("schedule")
    try:
        with torch.no_grad():
            got, want = compiled(x), model(x)
    finally:
        kiln.set_logs("")
    log = capfd.readouterr().err
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2,
                               atol=2e-2 * float(want.float().abs().max()))
    assert "extern matmul" in log and "permute_cast" not in log, log
    assert "float32(160,96" not in log and "float32(96,160" not in log, log  # no f32 weights


@pytest.mark.parametrize("training", [False, True])
def test_bfloat16_autocast_matches_eager(training):
    torch.manual_seed(0)
    model = _Llama()
    tokens = torch.randint(0, 100, (2, 9))
    results = []
    for run in (model, torch.compile(copy.deepcopy(model), backend="kiln", **WHOLE)):
        module = run if isinstance(run, nn.Module) and not hasattr(run, "_orig_mod") \
            else run._orig_mod
        module.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16), torch.set_grad_enabled(training):
            out = run(tokens)
        assert out.dtype == torch.bfloat16
        if training:
            (out.float() * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
        results.append([out.float().detach()] + [p.grad for p in module.parameters()
                                                 if training])
    for got, want in zip(*results):
        # bfloat16 keeps 8 bits: a rounding apart is 2**-8 of the value
        torch.testing.assert_close(got, want, rtol=2e-2,
                                   atol=2e-2 * float(want.abs().max()))
