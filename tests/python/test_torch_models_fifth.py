"""torch.compile(backend="kiln") on a fifth set of models, small configs with random weights,
each against eager PyTorch: inference under no_grad, and AdamW steps in training (the losses,
every gradient, the parameters and buffers after the steps), compiled whole where the model
converts whole:
Longformer (a boolean mask write into its attention mask; Dynamo's own .item() break stays),
Pegasus, CLIP's text and vision towers with its contrastive logits, Mamba (a selective scan, its
reference implementation), DINOv2 (position embeddings interpolated to the image's size), Phi-3,
GPT-J. (dynamic=True and generate(): test_torch_models_fifth_decoding.py.)
"""
import copy

import pytest
import torch

import kiln.torch  # noqa: F401
from test_torch_models_fourth import (_DECODER, _ENCODER, _KeywordInputs, _check_inference,
                                      _check_training, _tokens, _without_dropout)
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}
TEXT = ("input_ids", "attention_mask")


def _image():
    return torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(2))


def _transformers_model(name):
    transformers = pytest.importorskip("transformers")
    ids, mask = _tokens()
    one_layer = dict(_ENCODER, num_hidden_layers=1)
    if name == "longformer":
        config = transformers.LongformerConfig(**one_layer, attention_window=4,
                                               max_position_embeddings=64)
        ids = torch.randint(3, 100, (2, 8), generator=torch.Generator().manual_seed(3))
        return (_KeywordInputs(transformers.LongformerModel(_without_dropout(config)), TEXT),
                (ids, torch.ones(2, 8, dtype=torch.long)))
    if name == "pegasus":
        config = transformers.PegasusConfig(
            d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=100,
            max_position_embeddings=40)
        model = transformers.PegasusForConditionalGeneration(_without_dropout(config))
        return (_KeywordInputs(model, TEXT + ("decoder_input_ids",)),
                (ids, mask, ids[:, :5].contiguous()))
    if name == "clip":
        config = transformers.CLIPConfig(
            text_config=dict(one_layer, max_position_embeddings=20),
            vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                               num_attention_heads=4, image_size=32, patch_size=8),
            projection_dim=16)
        return (_KeywordInputs(transformers.CLIPModel(_without_dropout(config)),
                               TEXT + ("pixel_values",)), (ids, mask, _image()))
    if name == "mamba":
        config = transformers.MambaConfig(hidden_size=32, state_size=4, num_hidden_layers=1,
                                          vocab_size=100, expand=2, conv_kernel=4,
                                          use_mambapy=False)
        return _KeywordInputs(transformers.MambaForCausalLM(config), ("input_ids",)), (ids,)
    if name == "dinov2":
        config = transformers.Dinov2Config(hidden_size=32, num_hidden_layers=1,
                                           num_attention_heads=4, mlp_ratio=2, image_size=32,
                                           patch_size=8)
        image = torch.randn(2, 3, 24, 40, generator=torch.Generator().manual_seed(2))
        return (_KeywordInputs(transformers.Dinov2Model(_without_dropout(config)),
                               ("pixel_values",)), (image,))
    if name == "phi3":
        config = transformers.Phi3Config(**dict(_DECODER, num_hidden_layers=1), pad_token_id=0)
        return (_KeywordInputs(transformers.Phi3ForCausalLM(_without_dropout(config)), TEXT),
                (ids, mask))
    assert name == "gptj"
    config = transformers.GPTJConfig(n_embd=32, n_layer=1, n_head=4, vocab_size=100,
                                     n_positions=64, rotary_dim=4)
    return (_KeywordInputs(transformers.GPTJForCausalLM(_without_dropout(config)), TEXT),
            (ids, mask))


@pytest.mark.parametrize("name", ["longformer", "pegasus", "clip", "mamba", "dinov2", "phi3",
                                  "gptj"])
def test_transformers_models_match_eager_in_inference_and_training(name):
    torch.manual_seed(0)
    model, inputs = _transformers_model(name)
    # (Longformer's global-attention test is an .item(), a graph break of Dynamo's own: each
    # of its graphs compiles whole)
    _check_inference(model, inputs)
    _check_training(model, inputs, steps=2)
