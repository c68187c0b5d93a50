"""The model benchmark's terminal tables: per-call times, first calls, warm starts, geomeans."""
import math

from .report import format_seconds


def _ratio(value):
    return f"{value:.2f}x" if value else "-"


def _align(rows, left_columns):
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) if column < left_columns else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(row, widths))))
        if number == 0:
            lines.append("  ".join("-" * width for width in widths))
    return lines


TIMING_HEADER = ["case", "size", "variant", "status", "median", "IQR", "vs eager",
                 "vs Inductor", "1st call (cold)", "graphs"]


def timing_table(results):
    """One row per (case, variant); a blank line between cases; notes (checks, errors) after."""
    rows, notes, case_starts = [TIMING_HEADER], [], []
    for entry in results:
        case_starts.append(len(rows))
        for number, (name, record) in enumerate(entry["variants"].items()):
            timed = record.get("median_seconds") is not None
            spread = (f"{format_seconds(record['q1_seconds'])}.."
                      f"{format_seconds(record['q3_seconds'])}" if timed else "-")
            rows.append([entry["case"] if number == 0 else "",
                         entry["size"] if number == 0 else "", name, record["status"],
                         format_seconds(record.get("median_seconds")), spread,
                         _ratio(record.get("speedup_vs_eager")),
                         _ratio(record.get("speedup_vs_inductor")),
                         format_seconds(record.get("first_call_seconds")),
                         str(record.get("dynamo_graphs", "-"))])
            if record["status"] != "ok" and record.get("message"):
                notes.append(f"{entry['case']} / {name}: {record['status']}: "
                             f"{record['message']}")
    lines = _align(rows, 4)
    # A blank line before each case after the first (two header lines precede row 1).
    for offset, start in enumerate(case_starts[1:]):
        lines.insert(start + 1 + offset, "")
    if notes:
        lines += ["", "notes:"] + ["  " + note for note in notes]
    return "\n".join(lines)


def geomean_lines(results, modes):
    """The geometric mean of kiln's speed-up over Inductor, per mode, over the cases where both
    ran and agreed with eager."""
    lines = []
    for mode in modes:
        ratios = [entry["variants"][f"kiln {mode}"]["speedup_vs_inductor"] for entry in results
                  if entry["variants"].get(f"kiln {mode}", {}).get("speedup_vs_inductor")]
        if not ratios:
            lines.append(f"kiln vs Inductor, mode {mode}: no case where both were timed")
            continue
        geomean = math.exp(sum(math.log(ratio) for ratio in ratios) / len(ratios))
        lines.append(f"kiln vs Inductor, mode {mode}: geomean {geomean:.2f}x over "
                     f"{len(ratios)} case(s) (>1: kiln faster)")
    return lines


WARM_HEADER = ["case", "kiln cold 1st", "kiln warm 1st", "Dynamo only", "Dynamo+AOT",
               "warm 1st - Dynamo+AOT", "import"]


def _probe_cell(probe):
    if probe is None:
        return "-"
    if "first_call_seconds" in probe:
        return format_seconds(probe["first_call_seconds"])
    return "error"


def warm_start_table(warm_starts):
    """Fresh-process first calls (model_probe.py): kiln cold then warm (same KILN_CACHE_DIR),
    and PyTorch's own tracing (backend="eager": Dynamo; "aot_eager": Dynamo + AOTAutograd)."""
    rows, notes = [WARM_HEADER], []
    for case, probes in warm_starts.items():
        warm = probes.get("kiln_warm", {}).get("first_call_seconds")
        tracing = probes.get("aot_eager", {}).get("first_call_seconds")
        rest = format_seconds(warm - tracing) if warm is not None and tracing is not None \
            and warm >= tracing else ("<0 (noise)" if warm is not None and tracing is not None
                                      else "-")
        import_seconds = probes.get("kiln_warm", {}).get("import_seconds")
        rows.append([case, _probe_cell(probes.get("kiln_cold")),
                     _probe_cell(probes.get("kiln_warm")), _probe_cell(probes.get("eager")),
                     _probe_cell(probes.get("aot_eager")), rest,
                     format_seconds(import_seconds)])
        for name, probe in probes.items():
            if probe and "probe_error" in probe:
                notes.append(f"{case} / {name}: {probe['probe_error']}")
    lines = _align(rows, 1)
    if notes:
        lines += ["", "probe errors:"] + ["  " + note for note in notes]
    return "\n".join(lines)
