"""GPU time per call of the seed's torch models, kernel by kernel, kiln beside Inductor: where
a model's wall time differs, whether the kernels or the host's work between them differ.

    python -m kiln.bench.cuda_kernels [--cases bert_8x128,resnet18_train] [--mode default]
                                      [--calls 10] [--top 18]

Each case (kiln.bench.model_cases', full size, on the GPU) is warmed up, then `--calls` calls
run under torch.profiler's CUDA activity. Printed per system: the GPU time per call (the sum of
its kernels' and copies' times) and the kernel count per call, then the kernels taking most
time, by name, with their time and count per call. Host time is not in these sums: compare
them with kiln.bench.cuda_models' wall times of the same case.
"""
import argparse
import collections
import itertools

DEFAULT = "bert_8x128,resnet18_train"


def _profile(torch, call, input_sets, calls, training):
    """{kernel name: (microseconds, count) per call} over `calls` calls after five warm-ups."""
    count = itertools.count()
    with torch.no_grad() if not training else torch.enable_grad():
        for _ in range(5):
            call(*input_sets[next(count) % len(input_sets)])
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as trace:
            for _ in range(calls):
                call(*input_sets[next(count) % len(input_sets)])
            torch.cuda.synchronize()
    times, counts = collections.Counter(), collections.Counter()
    for event in trace.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name] += event.device_time / calls
            counts[event.name] += 1 / calls
    return {name: (times[name], counts[name]) for name in times}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=DEFAULT)
    parser.add_argument("--mode", default="default", choices=("default", "reduce-overhead"))
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--top", type=int, default=18)
    args = parser.parse_args(argv)
    import torch
    import kiln.torch  # noqa: F401  (the backend)
    from . import model_cases as C
    from .cuda_models import _to_cuda
    from .runner import INPUT_SETS
    cases = {case.name: case for case in C.make_cases()}
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; GPU time per "
          f"call, mean of {args.calls} calls")
    for name in args.cases.split(","):
        case = cases[name.strip()]
        base = case.model(quick=False).cuda()
        input_sets = [_to_cuda(C.input_set(case, False, seed)) for seed in range(INPUT_SETS)]
        for backend in ("inductor", "kiln"):
            torch._dynamo.reset()
            call, _ = C.prepare(case, C.Variant(backend, args.mode), base)
            kernels = _profile(torch, call, input_sets, args.calls, case.training)
            total = sum(time for time, _ in kernels.values())
            launched = sum(count for _, count in kernels.values())
            print(f"{case.name} {backend} {args.mode}: {total:.0f} us of GPU time, "
                  f"{launched:.0f} kernels and copies")
            longest = sorted(kernels.items(), key=lambda item: -item[1][0])[:args.top]
            for kernel, (time, count) in longest:
                print(f"  {time:9.1f} us  x{count:4.0f}  {kernel[:100]}")


if __name__ == "__main__":
    main()
