"""torch's scaled dot-product attention alone, under no_grad, on the CPU: eager (torch's flash
kernel), torch.compile with Inductor and with kiln (its attention kernel), best of `--repeat`
calls each, from one process, each checked against eager:

    python bench/cpu_attention.py
    python bench/cpu_attention.py --backends kiln --repeat 50
    python bench/cpu_attention.py --one-thread   # CPU time of one thread: steadier when loaded
"""
import argparse
import os
import sys
import time

if "--one-thread" in sys.argv:  # before torch and kiln start their thread pools
    os.environ["OMP_NUM_THREADS"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# name: (batch, heads, length, features, causal, masked)
SHAPES = {
    "bert 8x128": (8, 12, 128, 64, False, True),
    "gpt2 1x512 causal": (1, 12, 512, 64, True, False),
    "prompt 1x1000 masked": (1, 4, 1000, 16, False, True),
    "prompt 1x4000 causal": (1, 8, 4000, 64, True, False),
}


def best_ms(function, arguments, repeat, clock):
    function(*arguments)
    times = []
    for _ in range(repeat):
        start = clock()
        function(*arguments)
        times.append(clock() - start)
    return min(times) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="kiln,inductor")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--one-thread", action="store_true",
                        help="one thread each, timed by the process's CPU time")
    args = parser.parse_args()
    clock = time.perf_counter
    if args.one_thread:
        torch.set_num_threads(1)
        clock = time.process_time
    torch.manual_seed(0)
    with torch.no_grad():
        for name, (batch, heads, length, features, causal, masked) in SHAPES.items():
            q, k, v = (torch.randn(batch, heads, length, features) for _ in range(3))
            mask = torch.randn(batch, 1, length, length) if masked else None

            def attend(q, k, v, mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
            want = attend(q, k, v, mask)
            row = [f"{name}: eager {best_ms(attend, (q, k, v, mask), args.repeat, clock):.3f} ms"]
            for backend in args.backends.split(","):
                torch._dynamo.reset()
                compiled = torch.compile(attend, backend=backend)
                error = (compiled(q, k, v, mask) - want).abs().max().item()
                row.append(f"{backend} {best_ms(compiled, (q, k, v, mask), args.repeat, clock):.3f} ms "
                           f"(max error {error:.1e})")
            print(", ".join(row), flush=True)


if __name__ == "__main__":
    main()
