"""A small BERT's training step with dropout (transformers BertForMaskedLM, 2 layers, hidden
128, batch 8 x 64 tokens, dropout 0.1) on the CPU, side by side in one process: eager PyTorch,
kiln before (its dropout entries taken out of the table: native_dropout runs in eager PyTorch
between kiln graphs, as before session 44), kiln with them (one forward and one backward graph)
and Inductor (torch.compile's default).

    THREADS=2 python bench/dropout_training.py

Each figure is the fastest of REPS steps (default 30) after 3 warm-up steps, the variants taking
turns: on a machine whose cores other jobs share, a median measures the load more than the
kernels.
"""
import os
import time

import torch

import kiln.torch
from kiln.torch import _aten_table

THREADS = int(os.environ.get("THREADS", "2"))
REPS = int(os.environ.get("REPS", "30"))
aten = torch.ops.aten
RANDOM_OPS = [aten.native_dropout.default, aten.rand_like.default, aten.randn_like.default,
              aten.rand.default, aten.randn.default, aten.randint.default, aten.randint.low,
              aten.bernoulli.p]


def model():
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    config = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=512, max_position_embeddings=64,
                        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                        attn_implementation="eager")
    return BertForMaskedLM(config).train()


def stepper(forward, parameters, tokens):
    """One training step of `forward`, warmed up (compiled) by three steps."""
    optimizer = torch.optim.SGD(parameters, lr=0.01)

    def step():
        loss = forward(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    for _ in range(3):
        step()
    return step


def main():
    torch.set_num_threads(THREADS)
    tokens = torch.randint(0, 1000, (8, 64), generator=torch.Generator().manual_seed(1))
    options = {"num_threads": THREADS}
    steps = {}
    m = model()
    steps["eager"] = stepper(m, m.parameters(), tokens)
    removed = {op: _aten_table.TABLE.pop(op) for op in RANDOM_OPS}
    kiln.torch._backend._decompositions.cache_clear()
    m = model()
    steps["kiln before"] = stepper(torch.compile(m, backend="kiln", options=options),
                                   m.parameters(), tokens)
    _aten_table.TABLE.update(removed)
    kiln.torch._backend._decompositions.cache_clear()
    torch._dynamo.reset()
    m = model()
    steps["kiln"] = stepper(torch.compile(m, backend="kiln", options=options), m.parameters(),
                            tokens)
    torch._dynamo.reset()
    m = model()
    steps["inductor"] = stepper(torch.compile(m), m.parameters(), tokens)
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(REPS):  # interleaved: a change of the machine's load hits every variant
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            best[name] = min(best[name], time.perf_counter() - start)
    for name, seconds in best.items():
        print(f"{name:12s} {seconds * 1e3:8.2f} ms/step  ({best['eager'] / seconds:.2f}x eager)")


if __name__ == "__main__":
    main()
