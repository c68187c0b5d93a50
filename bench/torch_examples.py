"""Three pytorch/examples models (mnist's Net, super_resolution, minGPT: the restatements in
tests/python/test_torch_examples.py) on the CPU, side by side in one process: eager PyTorch,
Inductor and kiln, inference under no_grad and a training step (forward, backward, SGD).

    KILN_CACHE_DIR=$(mktemp -d) python bench/torch_examples.py [mnist super minGPT]

Each figure is the fastest of ROUNDS rounds (default 5) of 5 calls, the backends taking turns:
on a machine whose cores other jobs share, a median measures the load more than the kernels.
The first calls (compile included) are printed too; Inductor's own cache is not emptied.
"""
import copy
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln.torch  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import test_torch_examples as examples  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "5"))


def models():
    torch.manual_seed(0)
    mnist = examples._MnistNet()
    mnist.dropout1.p = mnist.dropout2.p = 0.0
    labels = torch.randint(0, 10, (64,))
    yield ("mnist Net, batch 64", mnist, (torch.randn(64, 1, 28, 28),),
           lambda out: F.nll_loss(out, labels))
    image, target = torch.randn(8, 1, 32, 32), torch.randn(8, 1, 96, 96)
    yield ("super_resolution, 8 x 32x32", examples._SuperResolutionNet(3), (image,),
           lambda out: F.mse_loss(out, target))
    gpt = examples._GPT(vocab_size=256, n_embd=128, n_head=4, block_size=64)
    gpt.blocks = nn.Sequential(*[examples._Block(128, 4, 64) for _ in range(2)])
    tokens, targets = torch.randint(0, 256, (8, 64)), torch.randint(0, 256, (8, 64))
    yield "minGPT 2 x 128, 8 x 64 tokens", gpt, (tokens, targets), lambda out: out[1]


def fastest(function, calls=5):
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def runners(model, inputs, loss_of, backend):
    inference, training = copy.deepcopy(model).eval(), copy.deepcopy(model).train()
    if backend != "eager":
        inference = torch.compile(inference, backend=backend)
    optimizer = torch.optim.SGD(training.parameters(), lr=1e-3)
    run_training = training if backend == "eager" else torch.compile(training, backend=backend)

    def infer():
        with torch.no_grad():
            inference(*inputs)

    def step():
        optimizer.zero_grad()
        loss_of(run_training(*inputs)).backward()
        optimizer.step()
    firsts = [fastest(infer, 1), fastest(step, 1)]
    for _ in range(3):
        infer()
        step()
    return infer, step, firsts


def main(chosen):
    for name, model, inputs, loss_of in models():
        if chosen and not any(word in name for word in chosen):
            continue
        backends = {backend: runners(model, inputs, loss_of, backend)
                    for backend in ("eager", "inductor", "kiln")}
        best = {backend: [float("inf"), float("inf")] for backend in backends}
        for _ in range(ROUNDS):
            for backend, (infer, step, _) in backends.items():
                best[backend][0] = min(best[backend][0], fastest(infer))
                best[backend][1] = min(best[backend][1], fastest(step))
        print(f"== {name}")
        eager_infer, eager_step = best["eager"]
        for backend, (infer_time, step_time) in best.items():
            firsts = backends[backend][2]
            print(f"  {backend:9s} inference {infer_time * 1e3:7.2f} ms "
                  f"({eager_infer / infer_time:4.2f}x eager), training step "
                  f"{step_time * 1e3:7.2f} ms ({eager_step / step_time:4.2f}x eager); first calls "
                  f"{firsts[0]:.1f} s / {firsts[1]:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
