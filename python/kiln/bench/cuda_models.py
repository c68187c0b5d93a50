"""The seed's PyTorch models on a CUDA GPU: eager, torch.compile (Inductor) and
torch.compile(backend="kiln"), side by side in one run.

    python -m kiln.bench.cuda_models [--cases mlp,resnet18,...] [--repeats N]

Cases are kiln.bench.model_cases' (the CPU model bench's), full size, moved to the GPU:
inference in eval mode under no_grad, and training steps (forward, cross-entropy, backward, SGD).
Each call is timed on the host to completion (torch.cuda.synchronize after it): what a user
waits for, launch overhead included; each gets the next of INPUT_SETS input sets. "first" is the first call (Dynamo, AOTAutograd and the
backend; kiln with an empty disk cache). Results are checked against eager's on the GPU.
torch's default float32 flags apply to every system (TF32 convolutions, exact matmuls).
"""
import argparse
import itertools
import math
import os
import statistics
import tempfile

DEFAULT = "mlp,resnet18,bert_1x8,bert_8x128,mlp_train,resnet18_train,sin_cos_0d"
SYSTEMS = (("eager", None), ("inductor", "default"), ("inductor", "reduce-overhead"),
           ("kiln", "default"), ("kiln", "reduce-overhead"))


def _to_cuda(value):
    import torch
    if isinstance(value, torch.Tensor):
        return value.cuda()
    return type(value)(_to_cuda(v) for v in value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp(prefix="kiln-bench-cuda-models-"))
    import torch
    import kiln.torch  # noqa: F401  (the backend)
    from . import model_cases as C
    from .cuda import _first_call_seconds  # (seconds, result) of a call run to completion
    from .runner import INPUT_SETS
    cases = {case.name: case for case in C.make_cases()}
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print(f"{'case':<16} {'system':<28} {'status':<6} {'median':>10} {'first':>8} "
          f"{'vs eager':>8}")
    ratios = {}
    for name in args.cases.split(","):
        case = cases[name.strip()]
        base = case.model(quick=False).cuda()
        # Every timed call gets the next input set (new data, the same shapes).
        input_sets = [_to_cuda(C.input_set(case, False, seed)) for seed in range(INPUT_SETS)]
        times = {}
        expected = None
        for backend, mode in SYSTEMS:
            label = backend if mode is None else f"{backend} {mode}"
            torch._dynamo.reset()
            variant = C.Variant(backend, mode)
            try:
                call, model = C.prepare(case, variant, base)
                calls = itertools.count()

                def run():
                    return call(*input_sets[next(calls) % INPUT_SETS])
                context = torch.no_grad() if not case.training else torch.enable_grad()
                with context:
                    first, result = _first_call_seconds(torch, run)  # input set 0
                    if expected is None:
                        expected = result
                    ok, message = C.compare(expected, result,
                                            tolerance=2e-2 if case.training else 1e-2)
                    if not ok:
                        print(f"{case.name:<16} {label:<28} WRONG  {message}")
                        continue
                    for _ in range(3):
                        _first_call_seconds(torch, run)
                    median = statistics.median(_first_call_seconds(torch, run)[0]
                                               for _ in range(args.repeats))
            except Exception as error:  # a system that cannot run this case: say so
                text = str(error).splitlines()[0] if str(error) else type(error).__name__
                print(f"{case.name:<16} {label:<28} error  {text[:110]}")
                continue
            times[label] = median
            eager = times.get("eager")
            print(f"{case.name:<16} {label:<28} ok     {median * 1e3:>8.3f}ms {first:>7.2f}s "
                  f"{(eager / median if eager else 1):>7.2f}x")
        for other in ("inductor default", "inductor reduce-overhead"):
            if "kiln default" in times and other in times:
                ratios.setdefault(other, []).append(times[other] / times["kiln default"])
    for other, values in ratios.items():
        geomean = math.exp(sum(math.log(v) for v in values) / len(values))
        print(f"kiln default vs {other}: geomean {geomean:.2f}x over {len(values)} cases "
              f"(>1: kiln faster)")


if __name__ == "__main__":
    main()
