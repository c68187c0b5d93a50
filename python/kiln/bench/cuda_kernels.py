"""GPU time per call of the seed's torch models, kernel by kernel, kiln beside Inductor: where
a model's wall time differs, whether the kernels or the host's work between them differ.

    python -m kiln.bench.cuda_kernels [--cases bert_8x128,resnet18_train] [--mode default]
                                      [--calls 10] [--top 18]

Each case (kiln.bench.model_cases', full size, on the GPU) is warmed up, then `--calls` calls
run under torch.profiler, each synchronised, as kiln.bench.cuda_models times them. Printed per
system:
- the GPU time per call (the sum of its kernels' and copies' times) and the kernel count;
- where the call's wall time goes (its timeline): before the first kernel starts (the host's
  work before its first launch), the GPU idle between its kernels (kernels waiting for the
  host's launches or a synchronisation), the GPU busy, and after the last kernel ends (the
  host's work after it and the synchronisation). Wall times here include the profiler's
  overhead: compare systems, not with kiln.bench.cuda_models;
- the host calls into the CUDA runtime and driver that took most time per call;
- the kernels taking most time, by name, with their time and count per call.
"""
import argparse
import collections
import itertools

DEFAULT = "bert_8x128,resnet18_train"
_CALL = "kiln.bench.call"  # the record_function range around each profiled call


def timeline(calls, kernels):
    """Where each call's wall time goes, mean microseconds per call: {"before first kernel",
    "idle between kernels", "busy", "after last kernel", "wall"}. `calls`: (start, end) host
    ranges; `kernels`: (start, end) GPU ranges, in the same clock (kineto's)."""
    parts = collections.Counter()
    for call_start, call_end in calls:
        inside = sorted((s, e) for s, e in kernels if s >= call_start and e <= call_end)
        parts["wall"] += call_end - call_start
        if not inside:
            continue
        parts["before first kernel"] += inside[0][0] - call_start
        reached = inside[0][0]
        for start, end in inside:
            if start > reached:
                parts["idle between kernels"] += start - reached
            parts["busy"] += max(0.0, end - max(start, reached))
            reached = max(reached, end)
        parts["after last kernel"] += call_end - reached
    return {part: time / max(1, len(calls)) for part, time in parts.items()}


def _profile(torch, call, input_sets, calls, training):
    """(kernels {name: (microseconds, count) per call}, timeline, host API {name: (microseconds,
    count) per call}) over `calls` synchronised calls after five warm-ups."""
    count = itertools.count()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.no_grad() if not training else torch.enable_grad():
        for _ in range(5):
            call(*input_sets[next(count) % len(input_sets)])
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=activities) as trace:
            for _ in range(calls):
                with torch.profiler.record_function(_CALL):
                    call(*input_sets[next(count) % len(input_sets)])
                    torch.cuda.synchronize()
    times, counts = collections.Counter(), collections.Counter()
    host_times, host_counts = collections.Counter(), collections.Counter()
    call_ranges, kernel_ranges = [], []
    for event in trace.events():
        span = (event.time_range.start, event.time_range.end)
        if event.name == _CALL:  # (the range has a GPU-side copy too: no kernel)
            if event.device_type != torch.autograd.DeviceType.CUDA:
                call_ranges.append(span)
        elif event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name] += event.device_time / calls
            counts[event.name] += 1 / calls
            kernel_ranges.append(span)
        elif event.name.startswith(("cuda", "cu")) and not event.name.startswith("cuda::"):
            host_times[event.name] += (span[1] - span[0]) / calls
            host_counts[event.name] += 1 / calls
    kernels = {name: (times[name], counts[name]) for name in times}
    host = {name: (host_times[name], host_counts[name]) for name in host_times}
    return kernels, timeline(call_ranges, kernel_ranges), host


def _longest(table, top):
    return sorted(table.items(), key=lambda item: -item[1][0])[:top]


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
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; per call, mean "
          f"of {args.calls} synchronised calls")
    for name in args.cases.split(","):
        case = cases[name.strip()]
        base = case.model(quick=False).cuda()
        input_sets = [_to_cuda(C.input_set(case, False, seed)) for seed in range(INPUT_SETS)]
        for backend in ("inductor", "kiln"):
            torch._dynamo.reset()
            call, _ = C.prepare(case, C.Variant(backend, args.mode), base)
            kernels, parts, host = _profile(torch, call, input_sets, args.calls, case.training)
            total = sum(time for time, _ in kernels.values())
            launched = sum(count for _, count in kernels.values())
            print(f"{case.name} {backend} {args.mode}: {total:.0f} us of GPU time, "
                  f"{launched:.0f} kernels and copies")
            print("  timeline: " + ", ".join(f"{part} {time:.0f} us" for part, time in
                                             parts.items()))
            for api, (time, count) in _longest(host, 6):
                print(f"  host {time:9.1f} us  x{count:4.0f}  {api}")
            for kernel, (time, count) in _longest(kernels, args.top):
                print(f"  {time:9.1f} us  x{count:4.0f}  {kernel[:100]}")


if __name__ == "__main__":
    main()
