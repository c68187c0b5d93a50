"""One workload on one baseline in a FRESH process: `python -m kiln.bench.probe NAME BASELINE`.

The harness runs it after the timings, one process per (workload, baseline), for two figures a
long-lived process cannot give:
- the first call's time in a new process. For kiln, whose disk cache the main run has filled,
  that is the warm-disk-cache compile time (trace, cache hit, load) a user's second run sees.
- the memory a steady-state call needs. Native allocations (NumPy, kiln, PyTorch, XLA) are
  invisible to tracemalloc, so this reads the kernel's resident-set high-water mark: after
  compile and warm-up it is reset (`5` written to /proc/self/clear_refs), one call runs, and the
  figure is that call's VmHWM minus the resident set measured before the baseline was prepared
  (imports and inputs already resident). So it counts the call's temporaries and output plus
  what the baseline keeps resident between calls (caching allocators such as XLA's or
  PyTorch's, compiled code, compiler heaps); measuring from just before the call instead would
  miss every temporary a caching allocator serves from memory kept since the warm-up. Where the
  reset is not allowed, it falls back to the growth of getrusage's ru_maxrss over prepare,
  compile and calls (compile peaks included), and says so.
Prints one JSON object on the last line of stdout.
"""
import argparse
import json
import resource
import sys
import time


def _status_kilobytes(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def _reset_high_water_mark():
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln.bench.probe")
    parser.add_argument("workload")
    parser.add_argument("baseline")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--kiln-mode", default="default")
    arguments = parser.parse_args(argv)

    from . import baselines as _baselines
    from . import workloads as _workloads

    workload = _workloads.BY_NAME[arguments.workload]
    baseline = next(b for b in _baselines.make(arguments.baseline, arguments.kiln_mode)
                    if b.name == arguments.baseline)
    inputs = workload.inputs(arguments.quick)
    for module in baseline.needs:  # imports are not the workload's memory
        __import__(module)
    if baseline.name == "jax":
        __import__("kiln.bench.jax_kernels")
    start_maximum = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    resident_before_prepare = _status_kilobytes("VmRSS")
    runner = baseline.prepare(workload)
    converted = runner.convert(inputs)
    start = time.perf_counter()
    runner.call(*converted)
    first_call_seconds = time.perf_counter() - start
    runner.call(*converted)
    result = {"first_call_seconds": first_call_seconds}
    if _reset_high_water_mark():
        output = runner.call(*converted)
        peak = _status_kilobytes("VmHWM")
        del output
        result.update(peak_bytes=max(0, peak - resident_before_prepare) * 1024,
                      memory_method="peak RSS of one steady-state call (VmHWM reset) above "
                      "the RSS with imports and inputs, before compiling")
    else:
        output = runner.call(*converted)
        del output
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result.update(peak_bytes=max(0, peak - start_maximum) * 1024,
                      memory_method="ru_maxrss growth over compile and calls")
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
