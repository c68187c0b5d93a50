"""One model case's first call in a FRESH process:
`python -m kiln.bench.model_probe CASE BACKEND [MODE] [--quick] [--train-batch N] [--device D]`.

models.py runs it to measure the warm start a user's second program sees: kiln twice with the
same KILN_CACHE_DIR (the first process fills the disk cache, the second one's first call is
Dynamo + AOTAutograd + a kiln cache hit + one run), and the same first call with
backend="eager" (Dynamo's trace alone) and backend="aot_eager" (Dynamo + AOTAutograd, no
compiler), which say how much of the warm start is PyTorch's tracing rather than kiln.
Each first call includes one execution of the model. Imports and building the model are
timed apart. Prints one JSON object on the last line of stdout.
"""
import argparse
import json
import sys
import time


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln.bench.model_probe")
    parser.add_argument("case")
    parser.add_argument("backend")
    parser.add_argument("mode", nargs="?", default="default")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--train-batch", type=int, default=16)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (each call synchronised)")
    arguments = parser.parse_args(argv)

    start = time.perf_counter()
    import torch

    from . import model_cases as _cases
    from . import model_runner as _runner
    if arguments.backend == "kiln":
        import kiln.torch  # noqa: F401  (what the entry point would import on first use)
    import_seconds = time.perf_counter() - start

    _runner.configure_dynamo()
    case = next(case for case in _cases.make_cases(arguments.train_batch)
                if case.name == arguments.case)
    with torch.set_grad_enabled(case.training):
        base_model = case.model(arguments.quick).to(arguments.device)
        inputs = [value.to(arguments.device)
                  for value in _cases.input_set(case, arguments.quick, 0)]
        call, _ = _cases.prepare(case, _cases.Variant(arguments.backend, arguments.mode),
                                 base_model)

        def timed_call():
            start = time.perf_counter()
            call(*inputs)
            if arguments.device != "cpu":
                torch.cuda.synchronize()
            return time.perf_counter() - start
        first_call_seconds = timed_call()
        second_call_seconds = timed_call()
    print(json.dumps({"first_call_seconds": first_call_seconds,
                      "second_call_seconds": second_call_seconds,
                      "import_seconds": import_seconds}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
