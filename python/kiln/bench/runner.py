"""Measuring one workload against every baseline, side by side in this process.

For each baseline: prepare it, time its first call (the compile time: tracing, compiling and
one run), check the result against NumPy's (a disagreeing baseline is FAILED and never timed;
one that raises is ERROR; neither stops the run), warm it up, and find how many calls one
timing needs so the timer resolves it (0-d workloads). Then the repetitions are INTERLEAVED:
each repetition times every baseline once, round-robin, starting from a different baseline
each time, so that noise from the shared machine hits all of them alike. Every timed call gets
the next of INPUT_SETS input sets (same shapes, new data), so nothing that remembers results by
content can look fast. Reported: median, quartiles, min and max of the per-call times.
"""
import gc
import itertools
import math
import statistics
import time
import traceback

import numpy as np

from . import workloads as _workloads

MAXIMUM_CALLS_PER_TIMING = 100_000


def _error_text(error):
    last = traceback.extract_tb(error.__traceback__)[-1:] if error.__traceback__ else []
    where = f" (at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno})" if last else ""
    text = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    first = text[0] if text else ""
    # Compilers put the reason on a later line ("...kernel.cpp: error: ..."): keep that one too.
    reason = next((line for line in text[1:] if "error" in line.lower()), "")
    if reason:
        first = f"{first} {reason}"
    if len(first) > 400:
        first = first[:400] + "..."
    return f"{type(error).__name__}: {first}{where}"


def _quartiles(times):
    if len(times) == 1:
        return times[0], times[0]
    quartiles = statistics.quantiles(times, n=4, method="inclusive")
    return quartiles[0], quartiles[2]


# A pause before each timing: OpenBLAS and OpenMP worker threads spin-wait after their work
# (OpenBLAS for about 2**28 cycles), so a baseline timed right after another would share the
# cores with that one's idle threads.
SETTLE_SECONDS = 0.1


# Every timed call gets the next of INPUT_SETS input sets (different data, the same shapes):
# an implementation that remembered results by content could not look fast.
INPUT_SETS = 3


def rotating(runner, converted_sets):
    """A call that feeds runner the next input set each time."""
    sets = itertools.cycle(converted_sets)
    call = runner.call
    return lambda: call(*next(sets))


def _time_calls(call, count):
    start = time.perf_counter()
    for _ in range(count):
        call()
    return (time.perf_counter() - start) / count


def run_workload(workload, baselines, *, quick, repeat, warmup, minimum_seconds, log):
    """{baseline name: record} for one workload. A record has status ok / FAILED / ERROR /
    skipped, a message, and for ok ones the timings in seconds."""
    input_sets = [workload.inputs(quick, seed=seed) for seed in range(INPUT_SETS)]
    inputs = input_sets[0]  # the first call, checked against NumPy's result on it
    records = {}
    prepared = {}
    reference = None
    for baseline in baselines:
        record = {"status": "ok", "message": ""}
        records[baseline.name] = record
        reason = baseline.unsupported(workload)
        if reason:
            record.update(status="skipped", message=reason)
            continue
        try:
            runner = baseline.prepare(workload)
            converted = [runner.convert(input_set) for input_set in input_sets]
            start = time.perf_counter()
            result = runner.call(*converted[0])
            record["compile_seconds"] = time.perf_counter() - start
            result = runner.to_numpy(result)
        except Exception as error:
            record.update(status="ERROR", message=_error_text(error))
            log(f"  {baseline.name}: ERROR {record['message']}")
            continue
        if reference is None:  # NumPy comes first in ORDER: its result is the reference
            if baseline.name != "numpy":
                raise RuntimeError("the NumPy baseline must run first")
            reference = np.asarray(result)
            record["result_dtype"] = str(reference.dtype)
            record["result_shape"] = list(reference.shape)
        ok, message = _workloads.check_result(workload, reference, result)
        del result
        if not ok:
            record.update(status="FAILED", message=f"result disagrees with NumPy: {message}")
            log(f"  {baseline.name}: FAILED {message}")
            continue
        record["message"] = message
        if hasattr(baseline, "explain"):
            try:
                record.update(baseline.explain(workload, inputs))
                if record["graph_breaks"] or not record["graphs"]:
                    record["message"] = (f"{record['graphs']} graph(s), {record['graph_breaks']}"
                                         " graph break(s): partly eager NumPy").strip()
            except Exception as error:
                record["explain_error"] = _error_text(error)
        prepared[baseline.name] = rotating(runner, converted)

    # Warm-up and calibration, each baseline on its own (nothing is being compared yet).
    calls = {}
    for name, runner in list(prepared.items()):
        try:
            single = math.inf
            for _ in range(max(1, warmup)):
                single = min(single, _time_calls(runner, 1))
            needed = max(minimum_seconds, workload.minimum_timing_seconds)
            count = 1 if single >= needed else math.ceil(needed / max(single, 1e-9))
            calls[name] = min(MAXIMUM_CALLS_PER_TIMING, count)
        except Exception as error:
            records[name].update(status="ERROR", message="in warm-up: " + _error_text(error))
            del prepared[name]

    names = list(prepared)
    times = {name: [] for name in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as timeit does: a collection inside one baseline's timing is noise
    try:
        for repetition in range(repeat):
            shift = repetition % len(names) if names else 0
            for name in names[shift:] + names[:shift]:
                if records[name]["status"] != "ok":
                    continue
                if not quick:
                    time.sleep(SETTLE_SECONDS)
                try:
                    times[name].append(_time_calls(prepared[name], calls[name]))
                except Exception as error:
                    records[name].update(status="ERROR", message="while timed: "
                                         + _error_text(error))
            gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()

    for name in names:
        record = records[name]
        if record["status"] != "ok" or not times[name]:
            continue
        samples = times[name]
        first_quartile, third_quartile = _quartiles(samples)
        record.update(median_seconds=statistics.median(samples), q1_seconds=first_quartile,
                      q3_seconds=third_quartile, min_seconds=min(samples),
                      max_seconds=max(samples), calls_per_timing=calls[name],
                      samples_seconds=samples)
    base = records.get("numpy", {}).get("median_seconds")
    for record in records.values():
        if base and record.get("median_seconds"):
            record["speedup"] = base / record["median_seconds"]
    return records
