"""GPU and host time of one seed model case under torch's profiler, per backend and mode, on a
GPU machine after `scripts/gpu-check bench` (its environment: PYTHONPATH=.gpu-check/site, ...):

    python bench/gpu_step_profile.py resnet18_train kiln:reduce-overhead,inductor:reduce-overhead 30

prints each variant's first call and its host and total time per call (same inputs each call),
then its kernels by GPU time (the third argument: how many; default 30) and its top host-side
operations. A fourth argument, a folder, gets each variant's Chrome trace of the profiled calls
(kernels in order, with their grids and blocks: bench/gpu_trace_segments.py compares two)."""
import os
import sys
import tempfile
import time

os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp())
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import kiln.torch  # noqa: E402,F401  (registers the backend)
from kiln.bench import model_cases  # noqa: E402

PROFILED_CALLS = 3


def per_call_times(call, calls=30):
    """(host microseconds, total microseconds) per call, after a warm-up."""
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    host = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return host * 1e6, (time.perf_counter() - start) / calls * 1e6


def report(events, kernels):
    gpu = sorted((e for e in events if e.device_type == torch.autograd.DeviceType.CUDA),
                 key=lambda e: -e.self_device_time_total)
    total = sum(e.self_device_time_total for e in gpu) / PROFILED_CALLS
    count = sum(e.count for e in gpu) / PROFILED_CALLS
    print(f"  GPU: {count:.0f} kernels/call, {total:.0f} us/call", flush=True)
    for e in gpu[:kernels]:
        print(f"  {e.self_device_time_total / PROFILED_CALLS:8.0f} us "
              f"{e.count / PROFILED_CALLS:5.0f}x  {e.key[:110]}")
    host = sorted((e for e in events if e.device_type != torch.autograd.DeviceType.CUDA),
                  key=lambda e: -e.self_cpu_time_total)
    for e in host[:8]:
        print(f"  cpu {e.self_cpu_time_total / PROFILED_CALLS:8.0f} us "
              f"{e.count / PROFILED_CALLS:5.0f}x  {e.key[:90]}")


def main(name, variants, kernels, trace_folder=None):
    case = {c.name: c for c in model_cases.make_cases()}[name]
    model = case.model(quick=False).cuda()
    inputs = [v.cuda() if isinstance(v, torch.Tensor) else v
              for v in model_cases.input_set(case, False, 0)]
    for backend, mode in (variant.split(":") for variant in variants.split(",")):
        torch._dynamo.reset()
        call, _ = model_cases.prepare(
            case, model_cases.Variant(backend, None if mode == "none" else mode), model)
        with torch.enable_grad() if case.training else torch.no_grad():
            start = time.perf_counter()
            call(*inputs)
            torch.cuda.synchronize()
            first = time.perf_counter() - start
            host, total = per_call_times(lambda: call(*inputs))
            print(f"== {name} {backend} {mode}: first {first:.2f} s; host {host:.0f} us/call, "
                  f"total {total:.0f} us/call", flush=True)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                for _ in range(PROFILED_CALLS):
                    call(*inputs)
                torch.cuda.synchronize()
            report(p.key_averages(), kernels)
            if trace_folder:
                p.export_chrome_trace(os.path.join(trace_folder, f"{name}_{backend}_{mode}.json"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 30,
         sys.argv[4] if len(sys.argv) > 4 else None)
