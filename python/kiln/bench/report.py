"""The benchmark's outputs: a terminal table, a JSON file and a PNG chart of speed-ups."""
import json
import os
import platform
import sys


def _seconds(value):
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


format_seconds = _seconds


def _bytes(value):
    if value is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value} B"


def _spread(record):
    if record.get("q1_seconds") is None:
        return "-"
    return f"{_seconds(record['q1_seconds'])}..{_seconds(record['q3_seconds'])}"


def _row(workload_name, name, record):
    status = record["status"]
    timed = record.get("median_seconds") is not None
    speedup = record.get("speedup")
    return [workload_name, name, status if status != "ok" else "ok",
            _seconds(record.get("median_seconds")) if timed else "-",
            _spread(record) if timed else "-",
            f"{speedup:.2f}x" if speedup else "-",
            _seconds(record.get("compile_seconds")),
            _seconds(record.get("warm_compile_seconds")),
            _bytes(record.get("peak_bytes"))]


HEADER = ["workload", "baseline", "status", "median", "IQR", "vs NumPy", "1st call",
          "warm 1st", "peak mem"]


def table(results):
    """The readable table: one row per (workload, baseline), notes underneath."""
    rows = [HEADER]
    notes = []
    for entry in results:
        for name, record in entry["baselines"].items():
            rows.append(_row(entry["workload"], name, record))
            if record.get("message"):
                notes.append(f"{entry['workload']} / {name}: {record['message']}")
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADER))]
    lines = []
    previous = None
    for number, row in enumerate(rows):
        shown = list(row)
        if number > 0 and row[0] == previous:
            shown[0] = ""
        elif number > 1:
            lines.append("")
        previous = row[0]
        lines.append("  ".join(cell.ljust(width) if column < 3 else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(shown, widths))))
        if number == 0:
            lines.append("  ".join("-" * width for width in widths))
    if notes:
        lines.append("")
        lines.append("notes:")
        lines.extend("  " + note for note in notes)
    return "\n".join(lines)


def speedup_matrix(results, baseline_names):
    """A compact view: speed-up over NumPy, one row per workload, one column per baseline."""
    shown = [name for name in baseline_names if name != "numpy"]
    rows = [["workload", "size"] + shown]
    for entry in results:
        row = [entry["workload"], entry["size"]]
        for name in shown:
            record = entry["baselines"].get(name)
            if record is None:
                row.append("")
            elif record.get("speedup"):
                row.append(f"{record['speedup']:.2f}x")
            else:
                row.append(record["status"])
        rows.append(row)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) if column < 2 else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(row, widths))))
        if number == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def machine_description():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = ""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        pass
    return f"{cpu}, {os.cpu_count()} logical cores{memory}, {platform.system()} " \
           f"{platform.release()}, Python {platform.python_version()}"


def write_json(path, document):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w") as output:
        json.dump(document, output, indent=1, default=str)
        output.write("\n")
    os.replace(temporary, path)  # a reader never sees half a file


def write_png(path, results, baseline_names, title):
    """Grouped bars of speed-up over NumPy (log scale); returns None or why it was not drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except Exception as error:
        return f"matplotlib is not importable ({type(error).__name__}): no chart"
    shown = [name for name in baseline_names if name != "numpy"]
    if not shown or not results:
        return "nothing to chart"
    figure, axes = pyplot.subplots(figsize=(min(18, 4 + 0.25 * len(results) * len(shown)), 6))
    width = 0.8 / len(shown)
    for index, name in enumerate(shown):
        positions, values = [], []
        for number, entry in enumerate(results):
            record = entry["baselines"].get(name, {})
            if record.get("speedup"):
                positions.append(number + (index - (len(shown) - 1) / 2) * width)
                values.append(record["speedup"])
        axes.bar(positions, values, width=width, label=name)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_yscale("log")
    axes.set_xticks(range(len(results)))
    axes.set_xticklabels([entry["workload"] for entry in results], rotation=40, ha="right")
    axes.set_ylabel("speed-up over eager NumPy (median, log scale)")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    axes.grid(axis="y", which="both", alpha=0.3)
    figure.tight_layout()
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return None


def print_flush(text=""):
    print(text)
    sys.stdout.flush()
