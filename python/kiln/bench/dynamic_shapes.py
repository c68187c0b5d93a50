"""`python -m kiln.bench.dynamic_shapes`: BERT-base under torch.compile(dynamic=True) over a
sequence of lengths, with Inductor and with kiln, in one process. Per length: the time of the
first call at that length (Dynamo, compiling, or kiln's re-scheduling onto its size-generic
library) and the steady per-call median, beside eager PyTorch's.

    python -m kiln.bench.dynamic_shapes                      # BERT-base, lengths 128,100,77,128,160,200,512
    python -m kiln.bench.dynamic_shapes --quick              # a tiny BERT, smoke run
    python -m kiln.bench.dynamic_shapes --lengths 64,96 --backends kiln
"""
import argparse
import time

import torch

from . import torch_models

BACKENDS = ("inductor", "kiln")


def _model(quick):
    torch.manual_seed(0)
    if quick:
        return torch_models.bert(hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=128, vocab_size=1000,
                                 max_position_embeddings=64).eval()
    return torch_models.bert().eval()


def run(lengths, backends, quick=False, repeat=5, log=print):
    """Rows of (length, {backend: (first seconds, steady seconds, max error)}), eager's steady
    time under "eager"."""
    model = _model(quick)
    vocabulary = model.config.vocab_size
    compiled = {backend: torch.compile(model, backend=backend, dynamic=True)
                for backend in backends}
    rows = []
    with torch.no_grad():
        for length in lengths:
            generator = torch.Generator().manual_seed(length)

            def tokens():  # new data every timed call
                return torch.randint(0, vocabulary, (1, length), generator=generator)
            ids = tokens()
            expected = model(ids).last_hidden_state
            row = {"eager": (None, torch_models.median_seconds(model, tokens, repeat), 0.0)}
            for backend, function in compiled.items():
                start = time.perf_counter()
                result = function(ids).last_hidden_state
                first = time.perf_counter() - start
                error = (result - expected).abs().max().item()
                row[backend] = (first, torch_models.median_seconds(function, tokens, repeat),
                                error)
            rows.append((length, row))
            log(_line(length, row))
    return rows


def _line(length, row):
    parts = [f"length {length:4}: eager {row['eager'][1] * 1e3:8.1f} ms"]
    for backend, (first, steady, error) in row.items():
        if backend != "eager":
            parts.append(f"{backend} first {first * 1e3:8.0f} ms, steady {steady * 1e3:8.1f} ms "
                         f"(err {error:.1e})")
    return " | ".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln.bench.dynamic_shapes",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default=None, help="comma list of sequence lengths")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma list of torch.compile backends (inductor, kiln)")
    parser.add_argument("--quick", action="store_true", help="a tiny BERT, short lengths")
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args(argv)
    default = "24,17,40" if arguments.quick else "128,100,77,128,160,200,512"
    lengths = [int(word) for word in (arguments.lengths or default).split(",")]
    backends = [word for word in arguments.backends.split(",") if word]
    print(f"BERT{' (tiny)' if arguments.quick else '-base'}, batch 1, dynamic=True, torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads")
    rows = run(lengths, backends, arguments.quick, arguments.repeat)
    worst = max(error for _, row in rows for _, _, error in row.values())
    return 0 if worst < 1e-3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
