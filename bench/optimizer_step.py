"""A compiled optimizer step (`torch.compile(optimizer.step)`) on the seed models' parameters:
eager PyTorch (its default foreach kernels), kiln and Inductor in one run, per-step medians of
interleaved repetitions, each backend's parameters checked against eager's after the same steps.

    python bench/optimizer_step.py [--models mlp,resnet18] [--optimizers adam,adamw,sgd]
                                   [--backends kiln,inductor] [--repeat 30] [--device cpu]
                                   [--mode default|reduce-overhead]
"""
import argparse
import statistics
import time

import torch

import kiln.torch  # noqa: F401
from kiln.bench.torch_models import mlp, resnet18

OPTIMIZERS = {
    "adam": lambda params: torch.optim.Adam(params, lr=1e-3),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01),
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-3, momentum=0.9),
}
MODELS = {"mlp": mlp, "resnet18": resnet18}


def parameters(make_model, device):
    torch.manual_seed(0)
    params = [p.detach().to(device).requires_grad_() for p in make_model().parameters()]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-2
    return params


def step_function(optimizer, backend, mode):
    if backend == "eager":
        return optimizer.step
    torch._dynamo.reset()
    return torch.compile(optimizer.step, backend=backend, mode=mode)


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="mlp,resnet18")
    parser.add_argument("--optimizers", default="adam,adamw,sgd")
    parser.add_argument("--backends", default="kiln,inductor")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--mode", default="default")
    args = parser.parse_args()
    backends = ["eager"] + args.backends.split(",")
    print(f"mode {args.mode}, device {args.device}")
    print(f"{'model':10} {'optimizer':9} " + " ".join(f"{b + ' ms':>12}" for b in backends)
          + "   first call s (" + ", ".join(backends[1:]) + ")")
    for model in args.models.split(","):
        for name in args.optimizers.split(","):
            runs, firsts, params_of, failed = {}, {}, {}, set()

            def timed_step(backend):
                step, times = runs[backend]
                start = time.perf_counter()
                try:
                    step()
                except RuntimeError as error:  # Inductor's CUDA graph trees on SGD's momentum
                    print(f"  {backend} failed: {str(error).splitlines()[0]}")
                    failed.add(backend)
                    return
                synchronize(args.device)
                times.append(time.perf_counter() - start)

            for backend in backends:
                params = parameters(MODELS[model], args.device)
                runs[backend] = (step_function(OPTIMIZERS[name](params), backend, args.mode), [])
                params_of[backend] = params
                timed_step(backend)
                firsts[backend] = runs[backend][1].pop() if runs[backend][1] else float("nan")
            for _ in range(args.repeat):  # interleaved: a noisy moment hits every backend
                for backend in backends:
                    if backend not in failed:
                        timed_step(backend)
            for backend in backends[1:]:  # the same number of steps from the same start
                for got, want in zip(params_of[backend], params_of["eager"]):
                    if backend not in failed:
                        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
            medians = [float("nan") if b in failed else statistics.median(runs[b][1]) * 1e3
                       for b in backends]
            print(f"{model:10} {name:9} " + " ".join(f"{m:12.3f}" for m in medians)
                  + "   " + ", ".join(f"{firsts[b]:.2f}" for b in backends[1:]), flush=True)


if __name__ == "__main__":
    main()
