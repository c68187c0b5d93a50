"""The NVRTC stage of the seed's torch models, measured without a GPU: each model runs once
under torch.compile(backend="kiln") on the CPU, and every graph kiln compiles is also emitted
for an H200 (sm_90, 132 multiprocessors) and cut into NVRTC units as the pipeline cuts them
on a machine of --cores cores. Each unit is compiled by NVRTC in this process, one at a time;
the stage of a graph lasts as long as its slowest unit (the units compile in parallel helper
processes), so that is what is reported, for the units balanced by estimated cost (kiln's
split, codegen/cuda/compilation_units.h) and for runs of functions in source order with the
loops kiln now unrolls 4 steps at a time unrolled whole (before both). Times are NVRTC's CPU
time in this thread (a busy machine's wall time is mostly waiting), after a first compile that
pays NVRTC's start; a real stage adds a helper's start (about 0.3 s on the H200 machine).

    python -m kiln.bench.nvrtc_units [--cases resnet18,bert_1x8,...] [--cores 16]
                                     [--functions]   (also each function's own time)

Needs NVRTC (pip's nvidia-cuda-nvrtc; $KILN_NVRTC_DIR) and torch, transformers for BERT and
GPT-2. The graphs are traced for the CPU: a few layouts may differ from a GPU run's.
"""
import argparse
import os
import tempfile

DEFAULT = "resnet18,bert_1x8,bert_8x128,gpt2_1x512"


import re

# What kiln caps to shorten NVRTC's time, put back for the "before" figures: loops the emitter
# unrolls 4 steps at a time (cap_unrolling) and the skinny products' K loop.
_CAPPED = ((re.compile(r"#pragma unroll 4  // \(NVRTC's time\)"), "#pragma unroll"),
           (re.compile(r"#pragma unroll 4\n  for \(int j = 0;"), "#pragma unroll\n  for (int j = 0;"))


def uncapped(text):
    for pattern, whole in _CAPPED:
        text = pattern.sub(whole, text)
    return text


def function_name(function):
    match = re.search(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(", function)
    return match.group(1) if match else "?"


def source_order_units(count, units):
    """The split before the balancing: runs of functions in source order."""
    return [list(range(u * count // units, (u + 1) * count // units)) for u in range(units)]


def unit_seconds(kiln_module, header, functions, units, architecture):
    return [kiln_module.nvrtc_compile_seconds(header + "".join(functions[k] for k in unit),
                                              architecture) for unit in units]


def capture_graphs(case_names, quick):
    """The CUDA source parts of every graph the cases compile, by case: [(case, parts)]."""
    import torch
    import kiln
    import kiln.torch  # noqa: F401  (the backend)
    from . import model_cases as C
    kiln_module = kiln._kiln
    captured = []
    real = kiln_module.compile_graph

    def compile_and_capture(trace, outputs, strides, options, **kwargs):
        captured.append((case.name, kiln_module.cuda_source_parts(trace, outputs, strides)))
        return real(trace, outputs, strides, options, **kwargs)

    cases = {case.name: case for case in C.make_cases()}
    kiln_module.compile_graph = compile_and_capture
    try:
        for name in case_names:
            case = cases[name]
            torch._dynamo.reset()
            call, _ = C.prepare(case, C.Variant("kiln", "default"), case.model(quick))
            with torch.no_grad() if not case.training else torch.enable_grad():
                call(*C.input_set(case, quick, 0))
    finally:
        kiln_module.compile_graph = real
    return captured


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=DEFAULT)
    parser.add_argument("--cores", type=int, default=16, help="the GPU machine's (H200: 16)")
    parser.add_argument("--architecture", type=int, default=90)
    parser.add_argument("--functions", action="store_true", help="each function's own time")
    parser.add_argument("--quick", action="store_true", help="the cases' small models")
    args = parser.parse_args(argv)
    os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp(prefix="kiln-bench-nvrtc-"))
    import kiln
    kiln_module = kiln._kiln
    graphs = capture_graphs([name.strip() for name in args.cases.split(",")], args.quick)
    kiln_module.nvrtc_compile_seconds("", args.architecture)  # NVRTC's start, not a unit's
    print(f"{'case':<12} {'graph':>5} {'kernels':>7} {'units':>5} {'header':>8} "
          f"{'slowest in order':>17} {'slowest balanced':>17}")
    totals = {}
    for number, (case, parts) in enumerate(graphs):
        header, functions, costs = parts["header"], parts["functions"], parts["costs"]
        balanced = kiln_module.cuda_unit_plan(costs, args.cores)
        in_order = source_order_units(len(functions), len(balanced))
        header_seconds = kiln_module.nvrtc_compile_seconds(header, args.architecture)
        before = unit_seconds(kiln_module, uncapped(header), [uncapped(f) for f in functions],
                              in_order, args.architecture)
        after = unit_seconds(kiln_module, header, functions, balanced, args.architecture)
        print(f"{case:<12} {number:>5} {len(functions):>7} {len(balanced):>5} "
              f"{header_seconds * 1e3:>6.0f}ms {max(before) * 1e3:>15.0f}ms "
              f"{max(after) * 1e3:>15.0f}ms")
        total = totals.setdefault(case, [0.0, 0.0])
        total[0] += max(before)
        total[1] += max(after)
        if args.functions:
            for k, function in enumerate(functions):
                seconds = kiln_module.nvrtc_compile_seconds(header + function, args.architecture)
                was = kiln_module.nvrtc_compile_seconds(uncapped(header) + uncapped(function),
                                                        args.architecture)
                print(f"    function {k:>3} {function_name(function)[:40]:<40} cost "
                      f"{costs[k]:>7} {(seconds - header_seconds) * 1e3:>6.0f}ms "
                      f"(uncapped {(was - header_seconds) * 1e3:.0f}ms)")
    for case, (before, after) in totals.items():
        print(f"{case}: NVRTC stage (sum of each graph's slowest unit): in source order "
              f"{before * 1e3:.0f} ms, balanced {after * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
