"""kiln's NumPy workloads on a CUDA GPU, against torch.compile and CuPy, in one run.

    python -m kiln.bench.cuda [--workloads a,b,...] [--repeats N] [--autotune]
                              [--systems kiln,cupy,...]

Each workload's unchanged NumPy function runs on GPU-resident data (torch CUDA tensors):
  kiln           kiln.wrap_numpy(fn)
  kiln autotune  kiln.wrap_numpy(fn, mode="max-autotune") (with --autotune)
  torch.compile  torch.compile(torch.compiler.wrap_numpy(fn)) (Inductor, Triton kernels)
  cupy           fn on CuPy arrays (CuPy's own kernels, one per NumPy call)
and, when JAX is installed, on JAX arrays:
  jax.jit        the workload's jax.numpy translation (kiln.bench.jax_kernels) under jax.jit
  kiln (jax)     kiln.wrap_numpy(fn) on the JAX arrays, read and returned by DLPack
Results are checked against NumPy on the CPU. Times are medians of CUDA-event timings after
warm-up, each timed call on the next of INPUT_SETS input sets (new data, the same shapes), and
queued behind a short GPU sleep so that the GPU's time is measured, not the host's launch work
(the first line measures that); "first" is the first call (tracing and compiling; kiln's with
an empty disk cache). Before each timed call a 256 MiB buffer is zeroed, which evicts the inputs
and results of the calls before it from L2 (50 MiB on an H100), as triton.testing.do_bench does
(--l2 warm leaves it out: three input sets of a small workload then stay in L2).
JAX runs on streams of its own, which torch's events do not see: its rows (and kiln's on JAX
arrays, which waits for its results) are host times of a call that waits for the results.
A device-to-device copy of 1 GiB measured in the same run gives the bandwidth the
memory-bound workloads are compared with (bytes read + written / time). A first line gives the
host time of a tiny call (sin + cos of a 0-d tensor) for kiln, eager torch, torch.compile and CuPy.
"""
import argparse
import math
import os
import statistics
import tempfile
import time

import numpy as np

from . import workloads as W
from .runner import INPUT_SETS


def _sin_cos_64m(rng, n):
    return (rng.standard_normal(n).astype(np.float32),)


EXTRA = [W.Workload("sin_cos_64m", "sin(x)+cos(x) on 64M float32 (the issue's size)",
                    W.sin_cos, _sin_cos_64m, 64 * 1024 * 1024, 100_000)]
DEFAULT = ("sin_cos_64m,kmeans_f32,kmeans_f64,numpy_fn,softmax,layer_norm,pairwise_distances,"
           "stencil,option_pricer,masked_reduction,integer_hash,polynomial,gelu,logsumexp")


# GPU cycles of sleep queued before each timed call (about half a millisecond): the host's work
# for the call (its launches) overlaps them, so the events time the GPU's work, as
# triton.testing.do_bench's cache-clearing launch before each call does. Without it every
# system's host time per call (the tiny-call line) was added to its kernels' time.
_HOST_COVER_CYCLES = 1_000_000


def _l2_flush(torch, warm):
    """What evicts L2 before a timed call: zeroing a buffer four times L2's size (256 MiB at
    least), or nothing with --l2 warm."""
    if warm:
        return lambda: None
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)
    buffer = torch.empty(max(256 << 20, 4 * l2), dtype=torch.uint8, device="cuda")
    return buffer.zero_


def _gpu_time_ms(torch, call, repeats, flush):
    """The median of `repeats` timings of call(k), k the repetition (callers pick the next input
    set with it): the GPU's time from the call's first launch to its last one's end."""
    call(0)
    torch.cuda.synchronize()
    times = []
    for k in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush()
        torch.cuda._sleep(_HOST_COVER_CYCLES)
        start.record()
        call(k)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _wall_time_ms(torch, call, repeats, flush):
    """The median host time of call(k) that returns once its results are ready."""
    call(0)
    times = []
    for k in range(repeats):
        flush()
        torch.cuda.synchronize()
        started = time.perf_counter()
        call(k)
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def _jax_systems(kiln, workload, input_sets):
    """(name, make, argument sets, timer) for JAX's rows, or [] without a GPU JAX."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU
    try:
        import jax
        from . import jax_kernels
        device = jax.devices("gpu")[0]
    except Exception:  # no JAX, or a CPU-only one
        return []
    kernel = getattr(jax_kernels, workload.name, None)
    sets = [[jax.device_put(a, device) for a in one] for one in input_sets]

    def ready(value):
        return jax.block_until_ready(value)

    systems = [("kiln (jax)", lambda: kiln.wrap_numpy(workload.function), sets, ready)]
    if kernel is not None:
        systems.insert(0, ("jax.jit", lambda: jax.jit(kernel), sets, ready))
    return systems


def _host_microseconds_per_call(call, calls=2000, rounds=10):
    """The best over `rounds` of the mean host time of `calls` calls that do not wait for the
    GPU (a queue's worth of tiny launches: what a Python loop of calls costs)."""
    call()
    best = math.inf
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1e6


def _tiny_call_line(torch, kiln, cupy):
    """Host time per call of sin(x) + cos(x) on a 0-d float32 CUDA tensor: kiln.wrap_numpy in
    both modes, eager torch (three launches), torch.compile in reduce-overhead, and CuPy's
    elementwise kernel (one launch and its result's allocation). The issue's bar for kiln's
    reduce-overhead call: 10 us."""
    x = torch.randn((), device="cuda")
    figures = []
    for mode in ("default", "reduce-overhead"):
        function = kiln.wrap_numpy(W.sin_cos, mode=mode)
        figures.append((f"kiln {mode}", _host_microseconds_per_call(lambda: function(x))))
    figures.append(("eager torch", _host_microseconds_per_call(lambda: torch.sin(x) + torch.cos(x))))
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: torch.sin(t) + torch.cos(t), mode="reduce-overhead")
    for _ in range(3):
        compiled(x)
    figures.append(("torch.compile reduce-overhead",
                    _host_microseconds_per_call(lambda: compiled(x), calls=500)))
    if cupy is not None:
        kernel = cupy.ElementwiseKernel("float32 x", "float32 y", "y = sinf(x) + cosf(x)", "sin_cos")
        value = cupy.asarray(0.5, dtype=cupy.float32)
        figures.append(("cupy kernel", _host_microseconds_per_call(lambda: kernel(value))))
    torch.cuda.synchronize()
    return "tiny call, host time per call (sin + cos of a 0-d tensor): " + ", ".join(
        f"{name} {us:.1f} us" for name, us in figures)


def _first_call_seconds(torch, call):
    torch.cuda.synchronize()
    started = time.perf_counter()
    result = call()
    torch.cuda.synchronize()
    return time.perf_counter() - started, result


def _to_numpy(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_to_numpy(v) for v in value)
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        return value.get()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _bytes_moved(inputs, expected):
    moved = sum(np.asarray(a).nbytes for a in inputs)
    outputs = expected if isinstance(expected, tuple) else (expected,)
    return moved + sum(np.asarray(o).nbytes for o in outputs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--autotune", action="store_true",
                        help="also kiln in mode max-autotune (launch shapes timed on the first call)")
    parser.add_argument("--systems", default=None,
                        help="only these systems (kiln, kiln autotune, torch.compile, cupy, "
                             "jax.jit, kiln (jax)): torch.compile unrolls a loop program's "
                             "Python loop for up to a minute, so a run may time it apart")
    parser.add_argument("--l2", choices=("cold", "warm"), default="cold",
                        help="cold (the default): L2 evicted before each timed call")
    args = parser.parse_args(argv)
    os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp(prefix="kiln-bench-cuda-"))
    import torch
    import kiln
    try:
        import cupy
    except ImportError:
        cupy = None
    by_name = {**W.BY_NAME, **{w.name: w for w in EXTRA}}
    chosen = [by_name[name.strip()] for name in args.workloads.split(",") if name.strip()]

    copy_source = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    copy_target = torch.empty_like(copy_source)
    started = time.perf_counter()
    while time.perf_counter() - started < 2.0:  # the clocks up before the first timing
        copy_target.copy_(copy_source)
        torch.cuda.synchronize()
    flush = _l2_flush(torch, args.l2 == "warm")
    copy_ms = _gpu_time_ms(torch, lambda k: copy_target.copy_(copy_source), args.repeats, flush)
    copy_bandwidth = 2 * copy_source.numel() * 4 / (copy_ms * 1e-3)
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}"
          + (f", cupy {cupy.__version__}" if cupy else "")
          + f"; device-to-device copy of 1 GiB: {copy_bandwidth / 1e12:.2f} TB/s (read + write)"
          + f"; L2 {args.l2} before each timed call")
    if not args.systems:  # (a run of some systems is a part of a whole run)
        print(_tiny_call_line(torch, kiln, cupy))
    print(f"{'workload':<20} {'system':<14} {'status':<6} {'median':>10} {'first call':>11} "
          f"{'of copy bw':>10}")
    ratios = {"torch.compile": [], "cupy": [], "jax.jit": [], "kiln autotune": []}
    for workload in chosen:
        torch._dynamo.reset()  # each workload's wrap_numpy function: its own Dynamo cache
        # Every timed call gets the next input set (new data, the same shapes), as the CPU
        # harness does: nothing that remembers a result can look fast.
        input_sets = [workload.inputs(quick=False, seed=seed) for seed in range(INPUT_SETS)]
        inputs = input_sets[0]
        expected = workload.function(*inputs)
        # (np.require keeps a 0-d array 0-d; np.ascontiguousarray makes it 1-d)
        gpu_sets = [[torch.from_numpy(np.require(a, requirements="C")).cuda() for a in one]
                    for one in input_sets]
        systems = [("kiln", lambda: kiln.wrap_numpy(workload.function), gpu_sets, None)]
        if args.autotune:
            systems.append(("kiln autotune",
                            lambda: kiln.wrap_numpy(workload.function, mode="max-autotune"),
                            gpu_sets, None))
        systems.append(("torch.compile",
                        lambda: torch.compile(torch.compiler.wrap_numpy(workload.function)),
                        gpu_sets, None))
        if cupy is not None:
            systems.append(("cupy", lambda: workload.function,
                            [[cupy.asarray(a) for a in one] for one in input_sets], None))
        systems += _jax_systems(kiln, workload, input_sets)
        if args.systems:
            wanted = [name.strip() for name in args.systems.split(",")]
            systems = [system for system in systems if system[0] in wanted]
        moved = _bytes_moved(inputs, expected)
        times = {}
        for system, make, argument_sets, ready in systems:
            try:
                function = make()
                first, result = _first_call_seconds(
                    torch, lambda: (ready or (lambda v: v))(function(*argument_sets[0])))
                ok, message = W.check_result(workload, expected, _to_numpy(result))
                if not ok:
                    print(f"{workload.name:<20} {system:<14} {'WRONG':<6} {message}")
                    continue
                call = lambda k: function(*argument_sets[k % INPUT_SETS])  # noqa: E731
                median = (_gpu_time_ms(torch, call, args.repeats, flush) if ready is None else
                          _wall_time_ms(torch, lambda k: ready(call(k)), args.repeats, flush))
            except Exception as error:  # a system that cannot run this program: say so
                text = str(error).splitlines()[0] if str(error) else type(error).__name__
                print(f"{workload.name:<20} {system:<14} {'error':<6} {text[:100]}")
                continue
            times[system] = median
            if system == "kiln (jax)" and "jax.jit" in times:
                ratios["jax.jit"].append(times["jax.jit"] / median)
            share = moved / (median * 1e-3) / copy_bandwidth
            print(f"{workload.name:<20} {system:<14} {'ok':<6} {median * 1e3:>8.1f}us "
                  f"{first:>10.2f}s {share:>9.0%}")
        for other in ("torch.compile", "cupy", "kiln autotune"):
            if "kiln" in times and other in times:
                ratios[other].append(times[other] / times["kiln"])
    for other, values in ratios.items():
        if values:
            geomean = math.exp(sum(math.log(v) for v in values) / len(values))
            mine = {"jax.jit": "kiln (jax)", "kiln autotune": "kiln default"}.get(other, "kiln")
            print(f"{mine} vs {other}: geomean {geomean:.2f}x over {len(values)} workloads "
                  f"(>1: kiln faster)")


if __name__ == "__main__":
    main()
