"""Two Chrome traces of one model step (bench/gpu_step_profile.py's fourth argument), compared
where their time differs: the generated kernels between consecutive library calls (cuDNN,
cuBLAS) summed per segment, the segments of both side by side in order, so that a layer whose
fused work is slower in one of them stands out:

    python bench/gpu_trace_segments.py kiln.json inductor.json [calls]

`calls`: how many profiled calls the traces hold (default 3); the first call's segments are
printed."""
import json
import re
import sys

LIBRARY = re.compile(r"xmma|cudnn|cutlass|cask|gemm|cublas|nchwTo|convertTensor|nhwc")


def kernels(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    found = [e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]
    return sorted(found, key=lambda e: e["ts"])


def segments(events, calls):
    """[(library kernel name, generated microseconds, [generated kernel names])] of one call."""
    per_call = len(events) // calls
    result, total, names = [], 0.0, []
    for e in events[:per_call]:
        if LIBRARY.search(e["name"]):
            result.append((e["name"], total, names))
            total, names = 0.0, []
        else:
            total += e["dur"]
            args = e.get("args", {})
            names.append(f"{e['name'][:50]} {e['dur']:.1f}us grid={args.get('grid')} "
                         f"block={args.get('block')}")
    result.append(("(end)", total, names))
    return result


def main(first, second, calls=3):
    a, b = segments(kernels(first), calls), segments(kernels(second), calls)
    print(f"{len(a)} and {len(b)} segments; generated time "
          f"{sum(s[1] for s in a):.0f} and {sum(s[1] for s in b):.0f} us")
    for k in range(max(len(a), len(b))):
        left = a[k] if k < len(a) else ("", 0.0, [])
        right = b[k] if k < len(b) else ("", 0.0, [])
        print(f"{k:3d} {left[1]:7.1f} {right[1]:7.1f}  {left[0][:50]:50s} | {right[0][:50]}")
        for name in left[2]:
            print(f"      < {name}")
        for name in right[2]:
            print(f"      > {name}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3)
