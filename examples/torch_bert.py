"""Seed experiment 5: BERT-base inference through torch.compile, Inductor against kiln.

transformers' BertModel(BertConfig()) with random weights (nothing is downloaded), in eval mode
under torch.no_grad(), on token batches of two shapes: 1x8 (latency: call overhead and small
GEMMs) and 8x128 (throughput). A new shape is a new graph: each shape compiles afresh. Each
backend's first call is Dynamo's trace + the compile + one run; then the median of --repeat
calls. Both compiled results are checked against eager PyTorch.

    python examples/torch_bert.py                            # BERT-base, 1x8 and 8x128 tokens
    python examples/torch_bert.py --layers 1 --hidden 64 --shapes 1x8 --repeat 3
    python examples/torch_bert.py --device cuda              # on a GPU
"""
import argparse
import sys

import torch

from kiln.bench import device_argument
from kiln.bench.torch_models import bert, median_seconds, report_backend

VARIANTS = (("inductor", "default"), ("kiln", "default"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1x8,8x128", help="comma list of BATCHxTOKENS")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768, help="width (heads: width / 64)")
    parser.add_argument("--backends", default="inductor,kiln",
                        help="comma list of torch.compile backends to compare with eager")
    parser.add_argument("--device", type=device_argument, default="cpu", help="cpu or cuda")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    chosen = [(backend, mode) for backend, mode in VARIANTS
              if backend in options.backends.split(",")]

    torch.manual_seed(0)
    model = bert(num_hidden_layers=options.layers, hidden_size=options.hidden,
                 num_attention_heads=max(1, options.hidden // 64),
                 intermediate_size=4 * options.hidden).eval().to(options.device)
    all_agree = True
    with torch.no_grad():
        for shape in options.shapes.split(","):
            batch, length = (int(number) for number in shape.split("x"))
            tokens = torch.randint(0, model.config.vocab_size, (batch, length),
                                   device=options.device)
            expected = model(tokens).last_hidden_state
            eager = median_seconds(model, tokens, options.repeat)
            print(f"BERT ({options.layers} layers, width {options.hidden}), {batch}x{length} "
                  f"tokens: eager {eager * 1e3:.2f} ms")
            for backend, mode in chosen:
                all_agree &= report_backend(model, tokens, expected, backend, mode, eager,
                                            options.repeat,
                                            lambda output: output.last_hidden_state)
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
