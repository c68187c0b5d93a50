"""The host time of one seed model case through kiln, by Python function (cProfile), on a GPU
machine after `scripts/gpu-check bench` (its environment: PYTHONPATH=.gpu-check/site, ...):

    python bench/gpu_host_profile.py resnet18_train reduce-overhead [input sets] [backend]

prints the time per call, then the functions by their own time and by cumulative time over 20
calls. Calls take the input sets in turn (default 1: the same inputs each call; 3 is what
kiln.bench.cuda_models does); the backend is kiln's unless named (inductor: the same profile of
torch.compile's default backend)."""
import cProfile
import itertools
import os
import pstats
import sys
import tempfile
import time

os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp())
import torch  # noqa: E402

import kiln.torch  # noqa: E402,F401  (registers the backend)
from kiln.bench import model_cases  # noqa: E402

CALLS = 20


def main(case_name, mode, input_sets=1, backend="kiln"):
    case = {c.name: c for c in model_cases.make_cases()}[case_name]
    model = case.model(quick=False).cuda()
    sets = [[v.cuda() if isinstance(v, torch.Tensor) else v
             for v in model_cases.input_set(case, False, seed)] for seed in range(input_sets)]
    call, _ = model_cases.prepare(case, model_cases.Variant(backend, mode), model)
    turns = itertools.cycle(sets)

    def next_call():
        return call(*next(turns))
    with torch.enable_grad() if case.training else torch.no_grad():
        for _ in range(6):  # compile, capture, settle
            next_call()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(CALLS):
            next_call()
        torch.cuda.synchronize()
        print(f"{(time.perf_counter() - start) / CALLS * 1e3:.2f} ms per call", flush=True)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(CALLS):
            next_call()
        torch.cuda.synchronize()
        profile.disable()
    stats = pstats.Stats(profile).sort_stats("tottime")
    stats.print_stats(28)
    stats.sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "reduce-overhead",
         int(sys.argv[3]) if len(sys.argv) > 3 else 1, sys.argv[4] if len(sys.argv) > 4 else "kiln")
