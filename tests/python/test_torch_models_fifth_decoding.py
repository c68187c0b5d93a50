"""torch.compile(backend="kiln") on decoding, small configs with random weights, against eager
PyTorch:
- XLNet with dynamic=True runs every length on one library (its float arange over a length
  and exact size divisions compiled per length before; RWKV's last-position select too, in
  test_torch_dynamic_size_expressions.py, which a model would take a minute to show here);
- generate(): beam search with several sequences returned (Llama), and T5's encoder-decoder
  beam search over a padded batch.
"""
import copy

import pytest
import torch

import kiln
import kiln.torch  # noqa: F401
from test_torch_models_fourth import _DECODER, _KeywordInputs, _tokens, _without_dropout
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}
TEXT = ("input_ids", "attention_mask")


@pytest.fixture
def recompiles(capfd):
    kiln.set_logs("recompiles")
    yield lambda: capfd.readouterr().err
    kiln.set_logs("")


def _xlnet():
    transformers = pytest.importorskip("transformers")
    config = transformers.XLNetConfig(d_model=32, n_layer=1, n_head=4, d_inner=64,
                                      vocab_size=100)
    return _KeywordInputs(transformers.XLNetModel(_without_dropout(config)), TEXT)


def test_xlnet_runs_every_length_on_one_library(recompiles):
    torch.manual_seed(0)
    model = _xlnet().eval()
    compiled = torch.compile(copy.deepcopy(model), backend="kiln", dynamic=True, **WHOLE)
    for length in (6, 9, 13):
        ids = torch.randint(3, 100, (2, length), generator=torch.Generator().manual_seed(length))
        with torch.no_grad():
            want, got = model(ids, torch.ones_like(ids))[0], compiled(ids, torch.ones_like(ids))[0]
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    log = recompiles()
    assert "compile per value" not in log and "compiles per size" not in log, log
    assert "variant 2" not in log, log


def _llama():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        **_DECODER, bos_token_id=0, eos_token_id=99, pad_token_id=99)).eval()


def _t5():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return transformers.T5ForConditionalGeneration(transformers.T5Config(
        d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, vocab_size=100,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)).eval()


@pytest.mark.parametrize("name", ["llama", "t5"])
def test_beam_search_matches_eager(name):
    model = _llama() if name == "llama" else _t5()
    ids, mask = _tokens()
    options = dict(max_new_tokens=5, min_new_tokens=5, num_beams=3, num_return_sequences=2,
                   do_sample=False)
    mine = copy.deepcopy(model)
    mine.forward = torch.compile(mine.forward, backend="kiln")
    want = model.generate(ids, attention_mask=mask, **options)
    assert torch.equal(mine.generate(ids, attention_mask=mask, **options), want)
