"""Sizes that overflow int64 or exceed memory: NumPy's error (a ValueError "array is too big" where
the size overflows int64, a MemoryError where it exceeds memory) naming the op and the user's
line, never a crash or a wrong answer. Each case runs in a subprocess, so that a
regression to a crash is a failed test, not a dead test run."""
import subprocess
import sys
import textwrap

import pytest

CASES = {
    "ones_overflowing_elements": "lambda x: np.ones((2**32, 2**32)) + x",
    "zeros_overflowing_bytes": "lambda x: np.zeros((2**31, 2**31, 4), np.int8) + x",
    "sum_of_an_overflowing_array": "lambda x: np.ones((2**32, 2**32)).sum() + x",
    "full_overflowing": "lambda x: np.full((2**40, 2**40), 2.0) * x",
    # (an operand NumPy allocates before the overflow, np.ones(2**33), is its MemoryError first)
    "arange_times_overflowing_broadcast":
        "lambda x: np.arange(2.0)[:, None] * np.broadcast_to(np.ones(1), (2**62,)) + x",
    "an_output_larger_than_memory": "lambda x: np.ones((2**20, 2**20)) + x",
    "broadcast_to_overflowing": "lambda x: np.broadcast_to(x, (2**32, 2**32)) + 1.0",
    "tile_overflowing": "lambda x: np.tile(np.ones(2**20), 2**44) + x",
    # Python ints past int64 reaching a shape (were RuntimeError std::bad_cast, no op or line)
    "ones_past_int64": "lambda x: np.ones(2**64) + x",
    "ones_of_a_uint64_past_int64": "lambda x: np.ones(np.uint64(2**63)) + x",
    "arange_past_int64": "lambda x: np.arange(0.0, 2.0**64) + x",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_too_big_is_a_clear_error_and_the_process_survives(name):
    code = textwrap.dedent(f"""
        import numpy as np, kiln
        function = {CASES[name]}
        try:
            result = kiln.compile(function)(np.ones(()))
        except (MemoryError, ValueError) as error:
            print(type(error).__name__, error)
        else:
            print("RESULT", getattr(result, "shape", result))
        try:
            function(np.ones(()))
        except (MemoryError, ValueError) as error:  # NumPy's own (_ArrayMemoryError: a MemoryError)
            print("NUMPY", "MemoryError" if isinstance(error, MemoryError) else "ValueError")
        print("alive")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("alive")
    first, numpys = result.stdout.splitlines()[:2]
    assert numpys.startswith("NUMPY "), numpys
    assert first.startswith(numpys.split()[1]), (first, numpys)  # NumPy's class of error
    assert "<string>:3" in first or "<string>:4" in first, first  # the user's line
