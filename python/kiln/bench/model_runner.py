"""Measuring one model case against every variant, side by side in this process.

For each variant, in order (eager first): a copy of the model is compiled and its FIRST CALL is
timed cold — Dynamo's trace, AOTAutograd, the backend's compile and one run, with kiln given an
empty cache directory and Inductor a fresh cache directory and cleared in-memory caches
(torch._inductor.utils.fresh_cache). The result is checked against eager PyTorch (inference:
the outputs; training: the loss and every parameter after one SGD step from the same weights);
a variant that disagrees is FAILED and not timed, one that raises is ERROR, and neither stops
the run. Then, as in runner.py, each variant is warmed up and calibrated on its own and the
repetitions are INTERLEAVED round-robin, every timed call getting the next of INPUT_SETS input
sets. Reported: median, quartiles, min and max of the per-call times.
"""
import copy
import gc
import itertools
import math
import os
import statistics
import time

import torch

from . import model_cases as _cases
from . import runner as _runner

# Each variant compiles its own copy of the model, and every copy is one more cache entry on the
# same forward code object: past Dynamo's default limit of 8 it would silently run eagerly.
RECOMPILE_LIMIT = 64


def configure_dynamo():
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    torch._dynamo.config.fail_on_recompile_limit_hit = True  # never a silent eager fallback


def warm_imports(backends, scratch):
    """Compile a trivial function once with each backend, so that the first case's first call
    is not charged with importing Inductor's or kiln's Python modules (every later case would
    not pay it either)."""
    for backend in backends:
        if backend == "eager":
            continue
        variant = _cases.Variant(backend, "default")
        try:
            with _fresh_caches(variant, scratch, "imports"):
                compiled = _cases.compile_model(_cases.SinCos(), variant,
                                                os.path.join(scratch, "imports-kiln"))
                compiled(torch.ones(3))
        except Exception:
            pass  # the case itself will report the error
    torch._dynamo.reset()


class _fresh_caches:
    """Cold caches for one variant's first call: kiln gets an empty directory (through its
    cache_dir option, see prepare), Inductor a fresh TORCHINDUCTOR_CACHE_DIR and cleared
    in-memory caches. The directories stay until the run ends (loaded code lives there)."""

    def __init__(self, variant, scratch, label):
        self.variant, self.scratch, self.label = variant, scratch, label
        self.context = None

    def __enter__(self):
        if self.variant.backend != "eager" or self.variant.mode:
            from torch._inductor.utils import fresh_cache
            self.context = fresh_cache(dir=self.scratch, delete=False)
            self.context.__enter__()
        return self

    def __exit__(self, *exception):
        if self.context is not None:
            return self.context.__exit__(*exception)
        return False


def _graph_count():
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def _reference(case, base_model, inputs):
    """Eager PyTorch's answer on the first input set: outputs, or (loss, parameters after one
    step) for a training case."""
    model = copy.deepcopy(base_model)
    model.train(case.training)
    if not case.training:
        return model(*inputs)
    step = _cases.training_step(model, model)
    return step(*inputs), _cases.parameters_of(model)


def _check(case, reference, result, model):
    if not case.training:
        return _cases.compare(reference, result)
    reference_loss, reference_parameters = reference
    ok, message = _cases.compare(reference_loss, result)
    if not ok:
        return False, "loss: " + message
    ok, parameter_message = _cases.compare(reference_parameters, _cases.parameters_of(model))
    if not ok:
        return False, "parameters after one step: " + parameter_message
    return True, f"loss {message}; parameters {parameter_message}"


def _first_call(case, variant, base_model, input_sets, scratch):
    """(call, model, first-call seconds, result, graphs) for one variant, caches cold."""
    label = f"{case.name}-{variant.name.replace(' ', '-')}"
    kiln_directory = os.path.join(scratch, label + "-kiln")
    with _fresh_caches(variant, scratch, label):
        call, model = _cases.prepare(case, variant, base_model, kiln_directory)
        graphs_before = _graph_count()
        start = time.perf_counter()
        result = call(*input_sets[0])
        seconds = time.perf_counter() - start
        graphs = _graph_count() - graphs_before
    return call, model, seconds, result, graphs


def _timed(call, sets, count):
    start = time.perf_counter()
    for _ in range(count):
        call(*next(sets))
    return (time.perf_counter() - start) / count


def measure_case(case, chosen_variants, *, quick, repeat, warmup, minimum_seconds, scratch,
                 log):
    """{variant name: record} for one case; a record has status ok / FAILED / ERROR, a
    message, first_call_seconds and, when ok, the timings in seconds."""
    torch._dynamo.reset()
    with torch.set_grad_enabled(case.training):
        base_model = case.model(quick)
        input_sets = [_cases.input_set(case, quick, seed) for seed in range(_runner.INPUT_SETS)]
        reference = _reference(case, base_model, input_sets[0])
        records, prepared = {}, {}
        for variant in chosen_variants:
            record = records[variant.name] = {"status": "ok", "message": "",
                                              "backend": variant.backend, "mode": variant.mode}
            try:
                call, model, seconds, result, graphs = _first_call(
                    case, variant, base_model, input_sets, scratch)
            except Exception as error:
                record.update(status="ERROR", message=_runner._error_text(error))
                log(f"  {variant.name}: ERROR {record['message']}")
                continue
            record["first_call_seconds"] = seconds
            if variant.mode:
                record["dynamo_graphs"] = graphs
            ok, message = _check(case, reference, result, model)
            record["message"] = message
            if not ok:
                record["status"] = "FAILED"
                log(f"  {variant.name}: FAILED {message}")
                continue
            log(f"  {variant.name}: first call {seconds:.3g} s, {message}")
            prepared[variant.name] = call
        _measure_steady(records, prepared, input_sets, repeat=repeat, warmup=warmup,
                        minimum_seconds=minimum_seconds)
    _speedups(records)
    return records


def _measure_steady(records, prepared, input_sets, *, repeat, warmup, minimum_seconds):
    """Warm-up, calibration, then interleaved repetitions (runner.py's method)."""
    calls, cycles = {}, {}
    for name, call in list(prepared.items()):
        cycles[name] = itertools.cycle(input_sets)
        try:
            single = math.inf
            for _ in range(max(1, warmup)):
                single = min(single, _timed(call, cycles[name], 1))
            count = 1 if single >= minimum_seconds else math.ceil(
                minimum_seconds / max(single, 1e-9))
            calls[name] = min(_runner.MAXIMUM_CALLS_PER_TIMING, count)
        except Exception as error:
            records[name].update(status="ERROR",
                                 message="in warm-up: " + _runner._error_text(error))
            del prepared[name]
    names = list(prepared)
    times = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for repetition in range(repeat):
            shift = repetition % len(names) if names else 0
            for name in names[shift:] + names[:shift]:
                if records[name]["status"] != "ok":
                    continue
                # Always, unlike runner.py's --quick: one quick sample of eager PyTorch taken
                # while the previous variant's OpenMP threads still spin reads 10x too slow.
                time.sleep(_runner.SETTLE_SECONDS)
                try:
                    times[name].append(_timed(prepared[name], cycles[name], calls[name]))
                except Exception as error:
                    records[name].update(status="ERROR", message="while timed: "
                                         + _runner._error_text(error))
            gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()
    for name in names:
        samples = times[name]
        if records[name]["status"] != "ok" or not samples:
            continue
        first_quartile, third_quartile = _runner._quartiles(samples)
        records[name].update(median_seconds=statistics.median(samples),
                             q1_seconds=first_quartile, q3_seconds=third_quartile,
                             min_seconds=min(samples), max_seconds=max(samples),
                             calls_per_timing=calls[name], samples_seconds=samples)


def _speedups(records):
    """vs eager: eager's median / this one's; vs Inductor: Inductor's median in the same mode
    / this one's (kiln rows only)."""
    eager = records.get("eager", {}).get("median_seconds")
    for record in records.values():
        median = record.get("median_seconds")
        if not median:
            continue
        if eager and record["backend"] != "eager":
            record["speedup_vs_eager"] = eager / median
        if record["backend"] == "kiln":
            inductor = records.get(f"inductor {record['mode']}", {}).get("median_seconds")
            if inductor:
                record["speedup_vs_inductor"] = inductor / median
