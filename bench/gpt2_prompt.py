"""A causal prompt through GPT-2 (transformers, random weights, no key-value cache: an additive
mask of -inf) at several lengths: eager, torch.compile with Inductor and with kiln, per-call
medians on new tokens each call, from one process, each checked against eager:

    python bench/gpt2_prompt.py                          # 2 layers, width 64: 100,500,1000 tokens
    python bench/gpt2_prompt.py --small --lengths 512    # GPT-2 small
    python bench/gpt2_prompt.py --device cuda
"""
import argparse
import statistics
import time

import torch

from kiln.bench.torch_models import gpt2


def model_of(small):
    torch.manual_seed(0)
    if small:
        return gpt2()
    return gpt2(n_embd=64, n_layer=2, n_head=4, vocab_size=500, n_positions=1024)


def median_ms(function, draw, device, repeat):
    """Median milliseconds of `function` on new tokens each call (drawn outside the timing)."""
    times = []
    for _ in range(repeat):
        tokens = draw()
        start = time.perf_counter()
        function(tokens)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", action="store_true", help="GPT-2 small (12 layers, 768)")
    parser.add_argument("--lengths", default="100,500,1000")
    parser.add_argument("--backends", default="kiln,inductor")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    model = model_of(args.small).to(args.device).eval()
    vocabulary = model.config.vocab_size
    with torch.no_grad():
        for length in (int(word) for word in args.lengths.split(",")):
            generator = torch.Generator().manual_seed(length)

            def draw():
                return torch.randint(0, vocabulary, (1, length), generator=generator).to(args.device)
            tokens = draw()
            want = model(tokens).last_hidden_state
            row = [f"{length} tokens: eager {median_ms(model, draw, args.device, args.repeat):.3f} ms"]
            for backend in args.backends.split(","):
                torch._dynamo.reset()
                compiled = torch.compile(model, backend=backend)
                error = (compiled(tokens).last_hidden_state - want).abs().max().item()
                milliseconds = median_ms(compiled, draw, args.device, args.repeat)
                row.append(f"{backend} {milliseconds:.3f} ms (max error {error:.1e})")
            print(", ".join(row), flush=True)


if __name__ == "__main__":
    main()
