"""`python -m kiln.bench`: kiln against eager NumPy, torch.compile, eager PyTorch, JAX and Numba.

    python -m kiln.bench                      # every workload, every installed baseline
    python -m kiln.bench --quick              # CI smoke run: small sizes, kiln and NumPy, < 60 s
    python -m kiln.bench --workloads seed --baselines all --repeat 7
    python -m kiln.bench --models             # PyTorch models: eager, Inductor, kiln (models.py)

Timings are medians of interleaved repetitions after warm-up (runner.py); compile time is the
first call (cold: a fresh kiln cache directory per run unless --cache-dir is given) and, for
kiln, the first call in a fresh process once the disk cache is warm (probe.py, which also
measures each call's peak memory).
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import baselines as _baselines
from . import load as _load
from . import models as _models
from . import report as _report
from . import runner as _runner
from . import workloads as _workloads
from . import device_problem

QUICK_BASELINES = "kiln,numpy"


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m kiln.bench",
        description="Benchmarks kiln.compile against eager NumPy, torch.compile (on the same "
        "NumPy code), eager PyTorch, JAX jit and Numba, side by side and interleaved.")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: small sizes, one repetition, kiln and numpy only "
                        "unless --baselines says otherwise")
    parser.add_argument("--baselines", default=None,
                        help="comma list of kiln,numpy,torch,torch.compile,torch_eager,jax,"
                        "numba,all (default: all that are installed; --quick: kiln,numpy)")
    parser.add_argument("--workloads", default="",
                        help="comma list of workload names, 'seed' or 'all' (default: all); "
                        "see --list")
    parser.add_argument("--background-load", action="store_true",
                        help="time every workload a second time beside a CPU-bound process "
                        "and report both columns")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="cuda: the GPU benches (kiln.bench.cuda, with --models "
                        "kiln.bench.cuda_models)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed repetitions per baseline (default 7; --quick 1)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed calls after the first one (default 2; --quick 1)")
    parser.add_argument("--min-time", type=float, default=None,
                        help="a timing loops the call until it lasts this many seconds "
                        "(default 0.01; --quick 0.002)")
    parser.add_argument("--kiln-mode", default="default",
                        choices=("default", "reduce-overhead", "max-autotune",
                                 "max-autotune-no-cudagraphs"))
    parser.add_argument("--no-probe", action="store_true",
                        help="skip the per-workload subprocesses (warm-cache compile time of "
                        "kiln, peak memory)")
    parser.add_argument("--cache-dir", default=None,
                        help="kiln cache directory (default: a fresh temporary one, so that "
                        "compile times are cold)")
    parser.add_argument("--json", default=os.path.join("bench", "results", "latest.json"),
                        help="where to write the JSON results (default %(default)s)")
    parser.add_argument("--png", default=None,
                        help="where to write the chart (default: the JSON path with .png)")
    _models.add_arguments(parser)
    return parser


def _main_on_cuda(arguments):
    """--device cuda: the GPU benches, side by side with torch.compile (and CuPy): the NumPy
    workloads (kiln.bench.cuda), or with --models the seed's torch models
    (kiln.bench.cuda_models)."""
    if arguments.models:
        from . import cuda_models
        return cuda_models.main([]) or 0
    from . import cuda
    return cuda.main(["--workloads", arguments.workloads] if arguments.workloads else []) or 0


def _probe(workload, baseline, arguments, log, cache_dir=None):
    """The fresh-process figures of one (workload, baseline): see probe.py. A probe killed by a
    signal comes back as {"crashed": signal number}."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment = dict(os.environ)
    if cache_dir is not None:
        environment["KILN_CACHE_DIR"] = cache_dir
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [package_root, environment.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "kiln.bench.probe", workload.name, baseline.name,
               "--kiln-mode", arguments.kiln_mode] + (["--quick"] if arguments.quick else [])
    try:
        completed = subprocess.run(command, capture_output=True, text=True, env=environment,
                                   timeout=600)
    except subprocess.TimeoutExpired:
        return {"probe_error": "timed out after 600 s"}
    lines = completed.stdout.strip().splitlines()
    if completed.returncode < 0:
        signal_number = -completed.returncode
        try:  # finished its work and died in interpreter teardown: the figures still count
            probed = json.loads(lines[-1]) if lines else None
        except ValueError:
            probed = None
        if isinstance(probed, dict):
            probed["exit_crash"] = (f"the fresh process crashed at interpreter exit (signal "
                                    f"{signal_number}) after its measurements")
            return probed
        return {"crashed": signal_number, "probe_error": f"killed by signal {signal_number}"}
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr.strip().splitlines() or ["(no output)"])[-1]
        log(f"  probe {baseline.name}: exit {completed.returncode}: {tail}")
        return {"probe_error": f"exit {completed.returncode}: {tail}"}
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"probe_error": f"unreadable probe output: {lines[-1][:200]}"}


def _progress(name, record):
    if record.get("median_seconds") is None:
        return f"{name} {record.get('status', '?')}"
    speedup = record.get("speedup")
    return (f"{name} {_report.format_seconds(record['median_seconds'])}"
            + (f" ({speedup:.2f}x)" if speedup and name != "numpy" else ""))


def _versions(chosen):
    versions = {}
    for baseline in chosen:
        try:
            versions[baseline.name] = baseline.version()
        except Exception:
            versions[baseline.name] = ""
    return versions


def main(argv=None):
    arguments = _parser().parse_args(argv)

    def log(text):
        print(text, file=sys.stderr, flush=True)

    if arguments.list and arguments.models:
        _models.list_cases(arguments.train_batch)
        return 0
    problem = device_problem(arguments.device)
    if problem:
        log(f"kiln.bench: {problem}")
        return 2
    if arguments.device == "cuda":
        return _main_on_cuda(arguments)
    if arguments.models:
        return _models.main(arguments, log)
    if arguments.list:
        for workload in _workloads.WORKLOADS:
            marker = "seed " if workload.seed else "     "
            print(f"{marker}{workload.name:20} {workload.size_text(False):>16}  "
                  f"{workload.description}")
        return 0
    quick = arguments.quick
    repeat = arguments.repeat if arguments.repeat is not None else (1 if quick else 7)
    warmup = arguments.warmup if arguments.warmup is not None else (1 if quick else 2)
    minimum_seconds = arguments.min_time if arguments.min_time is not None else (
        0.002 if quick else 0.01)
    baseline_words = arguments.baselines or (QUICK_BASELINES if quick else "all")
    try:
        chosen_workloads = _workloads.select(arguments.workloads)
        candidates = _baselines.make(baseline_words, arguments.kiln_mode, arguments.device)
    except ValueError as error:
        log(f"kiln.bench: {error}")
        return 2
    if repeat < 1:
        log("kiln.bench: --repeat must be at least 1")
        return 2

    temporary_cache = None
    if arguments.cache_dir:
        os.environ["KILN_CACHE_DIR"] = os.path.abspath(arguments.cache_dir)
    else:
        temporary_cache = tempfile.mkdtemp(prefix="kiln-bench-cache-")
        os.environ["KILN_CACHE_DIR"] = temporary_cache

    chosen, skipped = [], {}
    for baseline in candidates:
        reason = baseline.unavailable()
        if reason:
            skipped[baseline.name] = reason
            log(f"kiln.bench: skipping {baseline.name}: {reason}")
        else:
            chosen.append(baseline)
    names = [baseline.name for baseline in chosen]
    log(f"kiln.bench: {len(chosen_workloads)} workload(s) x {', '.join(names)}; repeat "
        f"{repeat}, warm-up {warmup}{', quick sizes' if quick else ''}; kiln cache "
        f"{os.environ['KILN_CACHE_DIR']}")

    started = time.time()
    results = []
    try:
        for workload in chosen_workloads:
            log(f"[{workload.name}] {workload.size_text(quick)}: {workload.description}")
            workload_start = time.perf_counter()
            try:
                records = _runner.run_workload(
                    workload, chosen, quick=quick, repeat=repeat, warmup=warmup,
                    minimum_seconds=minimum_seconds, log=log)
            except Exception as error:  # the NumPy reference itself failed: nothing to compare
                records = {"numpy": {"status": "ERROR", "message": _runner._error_text(error)}}
                log(f"  ERROR {records['numpy']['message']}")
            if arguments.background_load:
                with _load.background_load():
                    loaded = _runner.run_workload(
                        workload, chosen, quick=quick, repeat=repeat, warmup=warmup,
                        minimum_seconds=minimum_seconds, log=lambda text: None)
                _load.merge_loaded(records, loaded)
            if not arguments.no_probe:
                for baseline in chosen:
                    record = records.get(baseline.name, {})
                    if record.get("status") != "ok":
                        continue
                    if quick and baseline.name != "kiln":  # smoke run: kiln's warm compile only
                        continue
                    probed = _probe(workload, baseline, arguments, log)
                    if "first_call_seconds" in probed:
                        record["fresh_process_first_call_seconds"] = probed["first_call_seconds"]
                        if baseline.name == "kiln":
                            record["warm_compile_seconds"] = probed["first_call_seconds"]
                    for key in ("peak_bytes", "memory_method", "probe_error", "exit_crash"):
                        if key in probed:
                            record[key] = probed[key]
            log("  " + " | ".join(_progress(name, record) for name, record in records.items()))
            results.append({"workload": workload.name, "description": workload.description,
                            "size": workload.size_text(quick), "seed": workload.seed,
                            "seconds_spent": time.perf_counter() - workload_start,
                            "baselines": records})
    finally:
        if temporary_cache:
            shutil.rmtree(temporary_cache, ignore_errors=True)

    memory_methods = sorted({record["memory_method"] for entry in results
                             for record in entry["baselines"].values()
                             if "memory_method" in record})
    machine = _report.machine_description()
    document = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python -m kiln.bench " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine, "device": arguments.device, "quick": quick, "repeat": repeat,
        "warmup": warmup, "kiln_mode": arguments.kiln_mode, "baselines": names,
        "skipped_baselines": skipped, "versions": _versions(chosen),
        "timing": "median of interleaved repetitions after warm-up; spread = quartiles; "
                  "speed-up = NumPy median / baseline median; 1st call = compile + first run "
                  "in this process (kiln: cold cache); warm 1st = kiln's first call in a fresh "
                  "process with the disk cache warm",
        "memory_method": memory_methods[0] if len(memory_methods) == 1 else memory_methods,
        "seconds": time.time() - started, "results": results,
    }
    _report.print_flush(_report.table(results))
    _report.print_flush()
    _report.print_flush("speed-up over eager NumPy (median):")
    _report.print_flush(_report.speedup_matrix(results, names))
    _report.print_flush()
    if arguments.background_load:
        _report.print_flush("beside a CPU-bound process (--background-load):")
        _report.print_flush(_load.table(results))
        _report.print_flush()
    _report.print_flush(f"machine: {machine}")
    for name, reason in skipped.items():
        _report.print_flush(f"skipped {name}: {reason}")
    if memory_methods:
        _report.print_flush(f"peak memory: {'; '.join(memory_methods)}, in a fresh process "
                            "per workload and baseline")
    _report.write_json(arguments.json, document)
    _report.print_flush(f"wrote {arguments.json}")
    png = arguments.png or os.path.splitext(arguments.json)[0] + ".png"
    title = (f"kiln.bench{' --quick' if quick else ''} on {machine}")
    problem = _report.write_png(png, results, names, title)
    _report.print_flush(f"wrote {png}" if problem is None else f"no chart: {problem}")
    failed = failed_entries(results)
    if failed:
        _report.print_flush(f"{len(failed)} failed or erroring: {', '.join(failed)}")
    # Another library failing is its business; kiln failing is ours: a non-zero exit.
    return 1 if any(entry.endswith("/kiln") for entry in failed) else 0


def failed_entries(results):
    """'workload/baseline' for every result that FAILED (wrong answer) or raised an ERROR."""
    return [f"{entry['workload']}/{name}" for entry in results
            for name, record in entry["baselines"].items()
            if record["status"] in ("FAILED", "ERROR")]


if __name__ == "__main__":
    sys.exit(main())
