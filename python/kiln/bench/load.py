"""`--background-load`: the suite timed again beside a CPU-bound process (a busy browser tab, a
compile, another job), because users' machines are busy and kiln must lose no more than the
lost core's share there (bench/oversubscription.md)."""
import contextlib
import subprocess
import sys

from . import report as _report


@contextlib.contextmanager
def background_load():
    """One busy-looping process for the duration of the block, stopped whatever happens."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def merge_loaded(records, loaded_records):
    """Adds each baseline's loaded median (and loaded / idle) to its idle record."""
    for name, record in records.items():
        loaded = loaded_records.get(name, {})
        if record.get("median_seconds") and loaded.get("median_seconds"):
            record["loaded_median_seconds"] = loaded["median_seconds"]
            record["loaded_over_idle"] = loaded["median_seconds"] / record["median_seconds"]
        elif loaded.get("status") not in (None, "ok"):
            record["loaded_status"] = loaded["status"]


def table(results):
    """Idle and loaded medians side by side, one row per (workload, baseline)."""
    rows = [("workload", "baseline", "idle", "beside a load", "loaded / idle")]
    for entry in results:
        for name, record in entry["baselines"].items():
            if "loaded_median_seconds" not in record:
                continue
            rows.append((entry["workload"], name, _report.format_seconds(record["median_seconds"]),
                         _report.format_seconds(record["loaded_median_seconds"]),
                         f"{record['loaded_over_idle']:.2f}"))
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths))
                     for row in rows)
