"""The first call of torch.compile(model, backend="kiln"), split by stage, cold and warm:

    python -m kiln.bench.first_call mlp resnet18 bert_1x8 bert_8x128 [--repeat 3]
                                     [--device cuda]

Each repeat runs two fresh processes over one new cache directory: cold (the directory empty)
then warm (the directory the cold process filled). Per stage, the minimum over the repeats, in
seconds (the machine may be shared: the load average is printed beside them):

- first: the first call, end to end (Dynamo, kiln's backend, and running the model once);
- dynamo: the first call less kiln's backend and a second call (Dynamo's trace and guards);
- backend: all of kiln's backend, of which
  - export: the trace to ATen (kiln._backend._plain_inference_graph), of which table: building
    the decomposition table (once per process);
  - convert: the ATen graph to kiln's graph (trace_graph);
  - compile: kiln's compile_graph: passes, schedule, codegen, the C++ compiler, loading;
    toolchain: the C++ compiler's part of it, or on CUDA nvrtc: the NVRTC stage, its units
    compiled in parallel (KILN_LOGS=perf);
  - recall: looking up a warm-start record and, on a hit (warm), compiling from it.
The stages are timed by wrapping the functions named above in the measured process.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

from ..torch import _backend, _lowering
from .. import _kiln
from .torch_models import bert, mlp, resnet18

_STAGES = [(_backend, "backend", "backend"), (_backend, "_plain_inference_graph", "export"),
           (_backend, "decompositions", "table"), (_lowering, "trace_graph", "convert"),
           (_kiln, "compile_graph", "compile"), (_backend, "recall", "recall")]


_MODEL_NAMES = re.compile(r"mlp|resnet18|bert_(\d+)x(\d+)")


def _model(name, device):
    """(model, arguments) on `device` for `name`: mlp (1024 wide, batch 1024), resnet18 (batch
    16, 224x224), bert_BxS (BERT-base, batch B of S tokens)."""
    torch.manual_seed(0)
    if name == "mlp":
        model, arguments = mlp(), (torch.randn(1024, 1024),)
    elif name == "resnet18":
        model, arguments = resnet18(), (torch.randn(16, 3, 224, 224),)
    else:
        match = _MODEL_NAMES.fullmatch(name)
        batch, length = int(match[1]), int(match[2])
        model, arguments = bert(), (torch.randint(0, 30000, (batch, length)),)
    return model.eval().to(device), tuple(a.to(device) for a in arguments)


def _timed(module, attribute, label, seconds):
    original = getattr(module, attribute)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            seconds[label] = seconds.get(label, 0.0) + time.perf_counter() - start
    setattr(module, attribute, wrapper)


def measure_in_this_process(name, device="cpu"):
    """{stage: seconds} of the first call of model `name` on `device` in this process."""
    seconds = {}
    for module, attribute, label in _STAGES:
        _timed(module, attribute, label, seconds)
    model, arguments = _model(name, device)
    wait = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    wait()  # (CUDA's start, the weights' copy: before the clock)
    torch._dynamo.reset()
    with torch.no_grad():
        # The backend Dynamo calls is the wrapped one: the registered name resolves to it.
        compiled = torch.compile(model, backend=_backend.backend)
        start = time.perf_counter()
        compiled(*arguments)
        wait()
        seconds["first"] = time.perf_counter() - start
        start = time.perf_counter()
        compiled(*arguments)
        wait()
        second = time.perf_counter() - start
    seconds["dynamo"] = seconds["first"] - seconds.get("backend", 0.0) - second
    return seconds


def _measure_in_a_new_process(name, cache_dir, device):
    environment = dict(os.environ, KILN_CACHE_DIR=cache_dir, KILN_LOGS="perf")
    process = subprocess.run([sys.executable, "-m", "kiln.bench.first_call", "--in-process",
                              "--device", device, name], env=environment, capture_output=True,
                             text=True, check=True)
    seconds = json.loads(process.stdout.strip().splitlines()[-1])
    for stage in ("toolchain", "nvrtc"):
        found = re.findall(rf"\b{stage}: ([0-9.]+) ms", process.stderr)
        if found:
            seconds[stage] = sum(float(value) for value in found) / 1e3
    return seconds


def _line(name, start, results):
    stages = ["first", "dynamo", "backend", "export", "table", "convert", "compile",
              "toolchain", "nvrtc", "recall"]
    shown = [f"{stage} {min(result.get(stage, 0.0) for result in results):.3f}"
             for stage in stages if any(stage in result for result in results)]
    return f"{name:12} {start:5}  " + "  ".join(shown)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    for name in arguments.models:
        if not _MODEL_NAMES.fullmatch(name):
            parser.error(f"unknown model {name!r}: mlp, resnet18 or bert_BxS (bert_1x8)")
    if arguments.in_process:
        print(json.dumps(measure_in_this_process(arguments.models[0], arguments.device)))
        return
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; seconds, the "
          f"minimum of {arguments.repeat}")
    for name in arguments.models:
        cold, warm = [], []
        for _ in range(arguments.repeat):
            with tempfile.TemporaryDirectory() as cache_dir:
                cold.append(_measure_in_a_new_process(name, cache_dir, arguments.device))
                warm.append(_measure_in_a_new_process(name, cache_dir, arguments.device))
        print(_line(name, "cold", cold))
        print(_line(name, "warm", warm))
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
