"""`python -m kiln.bench --models`: the seed's PyTorch models under eager PyTorch,
torch.compile with Inductor and torch.compile with kiln, side by side in one run.

    python -m kiln.bench --models                          # every case, mode default
    python -m kiln.bench --models --quick                  # smoke run: tiny sizes, eager + kiln
    python -m kiln.bench --models --workloads mlp,bert_1x8 --modes default,reduce-overhead
    python -m kiln.bench --models --workloads resnet18_train --train-batch 4

Per case (model_cases.py): per-call time (median of interleaved repetitions after warm-up,
model_runner.py), speed-up over eager and over Inductor in the same mode, the cold first call
(Dynamo + compile + one run, empty caches), and in fresh processes (model_probe.py) kiln's
warm start with its disk cache filled, beside PyTorch's own tracing time.
"""
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import model_report as _model_report
from . import report as _report

# model_cases, model_runner and torch are imported inside the functions below: a NumPy-only run
# of `python -m kiln.bench` must neither pay for nor need PyTorch.
BACKENDS = ("eager", "inductor", "kiln")
MODES = ("default", "reduce-overhead", "max-autotune")
QUICK_BACKENDS = "eager,kiln"


def add_arguments(parser):
    """The options only --models reads (the shared ones are __main__.py's)."""
    parser.add_argument("--models", action="store_true",
                        help="benchmark the PyTorch models (MLP, resnet18, BERT, training "
                        "steps, sin+cos 0-d) under eager, Inductor and kiln instead of the "
                        "NumPy workloads; --workloads then names model cases, --baselines "
                        "takes eager,inductor,kiln (--quick: eager,kiln)")
    parser.add_argument("--modes", default="default",
                        help="--models: comma list of torch.compile modes for Inductor and "
                        "kiln: default, reduce-overhead, max-autotune, all (default: default; "
                        "Inductor's max-autotune on CPU can take many minutes per model)")
    parser.add_argument("--train-batch", type=int, default=16,
                        help="--models: resnet18's training-step batch (default 16; smaller "
                        "is faster on a small machine, and the table says so)")


def _words(text, allowed, what):
    words = [word.strip() for word in text.split(",") if word.strip()]
    if words == ["all"]:
        return list(allowed)
    unknown = [word for word in words if word not in allowed]
    if unknown or not words:
        raise ValueError(f"--{what}: unknown {', '.join(unknown) or '(empty)'}; choose from "
                         f"{', '.join(allowed)} or all")
    return [word for word in allowed if word in words]


def _load_average():
    """The 1-minute load average: on a shared machine it says how far to trust the medians."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def list_cases(train_batch):
    from . import model_cases as _cases
    for case in _cases.make_cases(train_batch):
        print(f"{case.name:16} {case.size:>24}  {case.description}")


def _probe(case, backend, mode, arguments, environment):
    command = [sys.executable, "-m", "kiln.bench.model_probe", case.name, backend, mode,
               "--train-batch", str(arguments.train_batch)] + (
                   ["--quick"] if arguments.quick else [])
    try:
        completed = subprocess.run(command, capture_output=True, text=True, env=environment,
                                   timeout=600)
    except subprocess.TimeoutExpired:
        return {"probe_error": "timed out after 600 s"}
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"probe_error": f"exit {completed.returncode}: {tail[:300]}"}
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"probe_error": f"unreadable probe output: {lines[-1][:200]}"}


def warm_start(case, arguments, scratch, log):
    """kiln's first call in a second fresh process sharing the first one's KILN_CACHE_DIR, and
    the same first call through backend="eager" and "aot_eager" (PyTorch's tracing alone)."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [package_root, environment.get("PYTHONPATH", "")]))
    environment["KILN_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"{case.name}-kiln-", dir=scratch)
    environment["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-", dir=scratch)
    probes = {}
    for label, backend in (("kiln_cold", "kiln"), ("kiln_warm", "kiln"), ("eager", "eager"),
                           ("aot_eager", "aot_eager")):
        probes[label] = _probe(case, backend, "default", arguments, environment)
        if "probe_error" in probes[label]:
            log(f"  probe {label}: {probes[label]['probe_error']}")
        else:
            log(f"  fresh process {label}: first call "
                f"{probes[label]['first_call_seconds']:.3g} s")
    return probes


def main(arguments, log):
    quick = arguments.quick
    repeat = arguments.repeat if arguments.repeat is not None else (1 if quick else 7)
    warmup = arguments.warmup if arguments.warmup is not None else (1 if quick else 2)
    minimum_seconds = arguments.min_time if arguments.min_time is not None else (
        0.002 if quick else 0.01)
    if arguments.device != "cpu":
        log("kiln.bench --models: only --device cpu is measured so far")
        return 2
    if repeat < 1 or arguments.train_batch < 1:
        log("kiln.bench: --repeat and --train-batch must be at least 1")
        return 2
    try:
        backends = _words(arguments.baselines or (QUICK_BACKENDS if quick else "all"),
                          BACKENDS, "baselines")
        modes = _words(arguments.modes, MODES, "modes")
        import torch  # not installed: one line saying so, not a traceback
    except ImportError as error:
        log(f"kiln.bench --models: PyTorch is not importable ({error})")
        return 2
    except ValueError as error:
        log(f"kiln.bench: {error}")
        return 2
    from . import model_cases as _cases
    try:
        cases = _cases.select(_cases.make_cases(arguments.train_batch), arguments.workloads)
    except ValueError as error:
        log(f"kiln.bench: {error}")
        return 2
    if arguments.cache_dir:
        log("kiln.bench --models: --cache-dir is not used: every first call gets an empty "
            "cache directory of its own")

    from . import model_runner as _runner

    scratch = tempfile.mkdtemp(prefix="kiln-bench-models-")
    log(f"kiln.bench --models: {len(cases)} case(s) x {', '.join(backends)}; modes "
        f"{', '.join(modes)}; repeat {repeat}, warm-up {warmup}"
        f"{', quick sizes' if quick else ''}; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; scratch {scratch}")
    started = time.time()
    load_at_start = _load_average()
    results, warm_starts = [], {}
    try:
        _runner.configure_dynamo()
        _runner.warm_imports(backends, scratch)
        for number, case in enumerate(cases):
            log(f"[{case.name}] {case.size_text(quick)}: {case.description}")
            case_start = time.perf_counter()
            variants = _cases.variants(case, backends, modes)
            records = _runner.measure_case(case, variants, quick=quick, repeat=repeat,
                                           warmup=warmup, minimum_seconds=minimum_seconds,
                                           scratch=scratch, log=log)
            # Warm starts: every case in a full run; the smoke run checks the path on one.
            if "kiln" in backends and not arguments.no_probe and (not quick or number == 0):
                warm_starts[case.name] = warm_start(case, arguments, scratch, log)
            results.append({"case": case.name, "description": case.description,
                            "size": case.size_text(quick), "training": case.training,
                            "seconds_spent": time.perf_counter() - case_start,
                            "variants": records})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    machine = _report.machine_description()
    _report.print_flush(_model_report.timing_table(results))
    _report.print_flush()
    for line in _model_report.geomean_lines(results, modes):
        _report.print_flush(line)
    if warm_starts:
        _report.print_flush()
        _report.print_flush("first call in a fresh process (each includes one run of the model;"
                            " kiln warm = second process, same KILN_CACHE_DIR; Dynamo only = "
                            "backend='eager'; Dynamo+AOT = backend='aot_eager'):")
        _report.print_flush(_model_report.warm_start_table(warm_starts))
    _report.print_flush()
    load_at_end = _load_average()
    _report.print_flush(f"machine: {machine}; torch {torch.__version__}, "
                        f"{torch.get_num_threads()} threads; 1-minute load average "
                        f"{load_at_start} at the start, {load_at_end} at the end")
    _report.print_flush("timing: median of interleaved repetitions after warm-up, IQR = "
                        "quartiles; vs eager / vs Inductor = their median / this median; "
                        "1st call (cold) = Dynamo + compile + one run with empty kiln and "
                        "Inductor caches (imports excluded: each backend compiled a trivial "
                        "function first); graphs = Dynamo graphs captured; dynamo = "
                        "torch.compile(backend='eager'), Dynamo's own per-call cost (a floor "
                        "under every backend's figure)")
    document = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python -m kiln.bench " + " ".join(sys.argv[1:]),
        "machine": machine, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "quick": quick, "repeat": repeat, "warmup": warmup, "backends": backends,
        "modes": modes, "train_batch": arguments.train_batch,
        "load_average": [load_at_start, load_at_end],
        "seconds": time.time() - started, "results": results, "warm_starts": warm_starts,
    }
    json_path = arguments.json
    if json_path == os.path.join("bench", "results", "latest.json"):  # the NumPy run's default
        json_path = os.path.join("bench", "results", "models.json")
    _report.write_json(json_path, document)
    _report.print_flush(f"wrote {json_path}")
    failed = [f"{entry['case']}/{name}" for entry in results
              for name, record in entry["variants"].items()
              if record["status"] in ("FAILED", "ERROR")]
    if failed:
        _report.print_flush(f"{len(failed)} failed or erroring: {', '.join(failed)}")
    # Inductor failing is PyTorch's business; kiln failing is ours: a non-zero exit.
    return 1 if any("/kiln" in entry for entry in failed) else 0
