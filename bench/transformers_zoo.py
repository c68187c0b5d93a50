"""kiln on `transformers` models it was not tuned for: 25 architectures built from small random
configs (nothing downloaded), each compiled with backend="kiln" and compared with eager PyTorch:

    python bench/transformers_zoo.py eval            # inference
    python bench/transformers_zoo.py train [names]   # a training step: forward and every gradient
    python bench/transformers_zoo.py dynamic [names] # dynamic=True over four lengths (batches)
    KILN_ZOO_DEVICE=cuda python bench/transformers_zoo.py train

The exit status is 1 when a model fails or disagrees (CI runs two in its smoke step). In
`dynamic`, a model whose graphs compiled code for a length of their own (KILN_LOGS=recompiles's
"compiles for" lines) is marked SLOW, without failing.

A training step runs with dropout off (both sides deterministic) and the loss sum(out * R) for a
fixed random R (a mean of squares after a final LayerNorm has a true gradient of zero, which
compares rounding). Errors are relative to the largest value (output) or gradient (parameters).
Where kiln and eager disagree, the same model in float64 eager decides: kiln's error is then
measured against it, and eager's is printed beside it.
"""
import copy
import os
import sys
import tempfile
import time
import traceback

import torch
import transformers as T

import kiln

DEVICE = os.environ.get("KILN_ZOO_DEVICE", "cpu")
torch.backends.cudnn.allow_tf32 = False  # eager and kiln both in full float32
TRAIN = sys.argv[1:2] == ["train"]
DYNAMIC = sys.argv[1:2] == ["dynamic"]

_init = T.PreTrainedModel.__init__


def _init_without_dropout(self, config, *args, **kwargs):
    _init(self, config, *args, **kwargs)
    if TRAIN:  # before the model's layers read their rates
        for key, value in list(vars(config).items()):
            if isinstance(value, float) and ("drop" in key or key.endswith("_prob")):
                setattr(config, key, 0.0)


T.PreTrainedModel.__init__ = _init_without_dropout
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
             vocab_size=500)


def config(cls, **changes):
    return cls(**dict(SMALL, **changes))


def text(batch=2, tokens=12, vocab=500):
    return dict(input_ids=torch.randint(0, vocab, (batch, tokens)),
                attention_mask=torch.ones(batch, tokens, dtype=torch.long))


def image(size=32):
    return dict(pixel_values=torch.randn(2, 3, size, size))


CASES = {
    "gpt2": lambda: (T.GPT2LMHeadModel(T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=500,
                                                    n_positions=64)), text()),
    "llama": lambda: (T.LlamaForCausalLM(config(T.LlamaConfig, num_key_value_heads=2,
                                                max_position_embeddings=64)), text()),
    "mistral": lambda: (T.MistralForCausalLM(config(T.MistralConfig, num_key_value_heads=2,
                                                    max_position_embeddings=64)), text()),
    "qwen2": lambda: (T.Qwen2ForCausalLM(config(T.Qwen2Config, num_key_value_heads=2,
                                                max_position_embeddings=64)), text()),
    "t5": lambda: (T.T5ForConditionalGeneration(T.T5Config(
        d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16, vocab_size=500)),
        dict(text(), decoder_input_ids=torch.randint(0, 500, (2, 7)))),
    "bart": lambda: (T.BartForConditionalGeneration(T.BartConfig(
        d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=500,
        max_position_embeddings=64)), text()),
    "roberta": lambda: (T.RobertaModel(config(T.RobertaConfig)), text()),
    "distilbert": lambda: (T.DistilBertModel(T.DistilBertConfig(
        dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=500)), text()),
    "albert": lambda: (T.AlbertModel(config(T.AlbertConfig, embedding_size=32)), text()),
    "electra": lambda: (T.ElectraModel(config(T.ElectraConfig, embedding_size=32)), text()),
    "deberta_v2": lambda: (T.DebertaV2Model(config(T.DebertaV2Config)), text()),
    "vit": lambda: (T.ViTModel(config(T.ViTConfig, image_size=32, patch_size=8)), image()),
    "convnext": lambda: (T.ConvNextModel(T.ConvNextConfig(
        hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], image_size=64)), image(64)),
    "resnet": lambda: (T.ResNetModel(T.ResNetConfig(
        hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], embedding_size=16)), image(64)),
    "swin": lambda: (T.SwinModel(T.SwinConfig(
        image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
        window_size=4)), image()),
    "clip_text": lambda: (T.CLIPTextModel(config(T.CLIPTextConfig, max_position_embeddings=64)),
                          text()),
    "whisper": lambda: (T.WhisperModel(T.WhisperConfig(
        d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=500,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        num_mel_bins=16, max_source_positions=32, max_target_positions=32)),
        dict(input_features=torch.randn(2, 16, 64), decoder_input_ids=torch.randint(0, 500, (2, 5)))),
    "mobilebert": lambda: (T.MobileBertModel(T.MobileBertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        vocab_size=500, embedding_size=32, intra_bottleneck_size=32, true_hidden_size=32)), text()),
    "gpt_neox": lambda: (T.GPTNeoXForCausalLM(config(T.GPTNeoXConfig, max_position_embeddings=64)),
                         text()),
    "opt": lambda: (T.OPTForCausalLM(T.OPTConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128, vocab_size=500,
        word_embed_proj_dim=64, max_position_embeddings=64)), text()),
    "falcon": lambda: (T.FalconForCausalLM(config(T.FalconConfig)), text()),
    "mixtral": lambda: (T.MixtralForCausalLM(config(
        T.MixtralConfig, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
        max_position_embeddings=64)), text()),
    "gemma": lambda: (T.GemmaForCausalLM(config(T.GemmaConfig, num_key_value_heads=2, head_dim=16,
                                                max_position_embeddings=64)), text()),
    "phi": lambda: (T.PhiForCausalLM(config(T.PhiConfig, max_position_embeddings=64)), text()),
    "segformer": lambda: (T.SegformerModel(T.SegformerConfig(
        hidden_sizes=[16, 32], depths=[1, 1], num_encoder_blocks=2, num_attention_heads=[1, 2],
        sr_ratios=[2, 1], patch_sizes=[7, 3], strides=[4, 2], decoder_hidden_size=32)), image()),
}


def first(out):
    """The output a user reads: logits, else the last hidden state."""
    if isinstance(out, torch.Tensor):
        return out
    if getattr(out, "logits", None) is not None:
        return out.logits
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


def _errors(got, want):
    """(output error, gradient error) of one step's results against another's."""
    (got_out, got_grads), (want_out, want_grads) = got, want
    out_error = ((got_out - want_out).abs().max() / (want_out.abs().max() + 1e-12)).item()
    if not TRAIN:
        return out_error, 0.0
    scale = max(grad.abs().max().item() for grad in want_grads) + 1e-12
    return out_error, max((g - w).abs().max().item() / scale for g, w in zip(got_grads, want_grads))


def _agree(errors):
    return max(errors) < 1e-3


def compare(name):
    """(kiln's errors against eager, eager's against float64 eager or None): float64 eager
    arbitrates where kiln and eager disagree (eager's float32 is not exact either: on the GPU
    some of cuDNN's algorithms round far more than others)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, inputs = CASES[name]()
    model = model.to(DEVICE).train(TRAIN)
    inputs = {key: value.to(DEVICE) for key, value in inputs.items()}
    initial = copy.deepcopy(model)
    projection = torch.Generator().manual_seed(1)

    def step(model, module, inputs):
        nonlocal projection
        model.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(TRAIN):
            out = first(module(**inputs))
        if TRAIN:
            if isinstance(projection, torch.Generator):
                projection = torch.randn(out.shape, generator=projection)
            (out * projection.to(out.device, out.dtype)).sum().backward()
        # A parameter the loss does not reach has no gradient in eager PyTorch and zeros through
        # AOTAutograd (its backend="aot_eager" too): both count as zeros.
        return out.detach().double(), [torch.zeros_like(p, dtype=torch.float64) if p.grad is None
                                       else p.grad.double() for p in model.parameters()]

    want = step(model, model, inputs)
    got = step(model, torch.compile(model, backend="kiln"), inputs)
    errors = _errors(got, want)
    if _agree(errors):
        return errors, None
    exact = initial.double()
    exact_inputs = {key: value.double() if value.is_floating_point() else value
                    for key, value in inputs.items()}
    reference = step(exact, exact, exact_inputs)
    return _errors(got, reference), _errors(want, reference)


def _stderr_of(run):
    """What `run()` writes to file descriptor 2 (kiln's logs come from C++)."""
    with tempfile.TemporaryFile(mode="w+") as captured:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            run()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        return captured.read()


def compare_dynamic(name):
    """(the largest output error over four sequence lengths, or batches for images, with
    dynamic=True; how many times a graph compiled code for one size of its own; the first
    time's log line, saying why)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, inputs = CASES[name]()
    model = model.to(DEVICE).eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True)
    errors = []

    def run():
        for n in (5, 9, 17, 12):
            if "input_ids" in inputs:
                sized = dict(input_ids=torch.randint(0, 500, (3, n)),
                             attention_mask=torch.ones(3, n, dtype=torch.long))
                if "decoder_input_ids" in inputs:
                    sized["decoder_input_ids"] = torch.randint(0, 500, (3, n + 1))
            else:
                sized = {key: torch.cat([value] * (n // 4 + 1))[:n // 4 + 2]
                         for key, value in inputs.items()}
            sized = {key: value.to(DEVICE) for key, value in sized.items()}
            with torch.no_grad():
                want, got = first(model(**sized)), first(compiled(**sized))
            errors.append(((got - want).abs().max() / (want.abs().max() + 1e-12)).item())
    kiln.set_logs("recompiles")
    try:
        log = _stderr_of(run)
    finally:
        kiln.set_logs("")
    lines = log.splitlines()
    own = [line for line in lines if "compiles for" in line]
    why = [line for line in lines if "no size-generic code" in line or "compiles per size" in line]
    return max(errors), len(own), (why or own or [""])[0]


def main_dynamic(names):
    failed = []
    for name in names:
        try:
            error, own_compiles, why = compare_dynamic(name)
        except Exception as failure:  # noqa: BLE001
            print(f"{name:12s} ERR {type(failure).__name__}: {str(failure)[:300]}", flush=True)
            failed.append(name)
            continue
        verdict = "BAD" if error >= 1e-4 else "SLOW" if own_compiles else "OK "
        print(f"{name:12s} {verdict} output {error:.1e}, "
              f"{own_compiles or 'no'} sizes compiled on their own", flush=True)
        if why:
            print(f"{'':12s}   first: {why[:400]}", flush=True)
        if verdict == "BAD":
            failed.append(name)
    return 1 if failed else 0


def main():
    names = sys.argv[2:] or list(CASES)
    if DYNAMIC:
        return main_dynamic(names)
    failed = []
    for name in names:
        start = time.time()
        try:
            (out_error, grad_error), eager_errors = compare(name)
        except Exception as error:  # noqa: BLE001  a model kiln fails on is a finding, not a stop
            print(f"{name:12s} ERR {type(error).__name__}: {str(error)[:300]}", flush=True)
            traceback.print_exc(file=sys.stderr)
            failed.append(name)
            continue
        verdict = "OK " if _agree((out_error, grad_error)) else "BAD"
        against = "" if eager_errors is None else (
            " (against float64 eager, where eager is off by output {:.1e} gradients {:.1e})"
            .format(*eager_errors))
        print(f"{name:12s} {verdict} output {out_error:.1e} gradients {grad_error:.1e}{against} "
              f"{time.time() - start:.1f} s", flush=True)
        if verdict == "BAD":
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
