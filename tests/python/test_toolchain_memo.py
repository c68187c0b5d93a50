"""The toolchain memo (runtime/toolchain.cpp) and what it decides for a compile: what probing
the compiler found is remembered on disk as yes/no bits (libmvec, the setpriv wrapper, the gold
linker), so that a warm process runs no probe, and the executable image linked into the
library by .incbin (runtime/embedded_bytes.h) loads in a fresh process."""
import ast
import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

_PROGRAM = """
import numpy as np, kiln
print(kiln.compile(lambda x: np.sin(x) * {0} + 1)(np.arange(4.0)).tolist())
"""


def agrees(stdout, scale):
    """Whether the program printed NumPy's values: to an ulp of sin, which kiln takes from
    libmvec and NumPy from its own SIMD code or libm (NumPy 1.24's sin(2.0) is an ulp off
    NumPy 2's, whose value kiln's equals)."""
    import numpy as np
    return np.allclose(ast.literal_eval(stdout.strip()), np.sin(np.arange(4.0)) * scale + 1,
                       rtol=4e-16, atol=0)


def run_python(code, environment):
    env = dict(os.environ)
    env.update(environment)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def logged_compiler(tmp_path):
    """(environment, log path): a cache directory of kiln's and a compiler that logs each of its
    command lines before running g++."""
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    log = tmp_path / "compiler.log"
    compiler = tmp_path / "logged-g++"
    compiler.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {log}\n"
                        f"exec {shutil.which('g++')} \"$@\"\n")
    compiler.chmod(0o755)
    return {"KILN_CACHE_DIR": str(cache_dir), "KILN_CXX": str(compiler)}, log


def memo_path(environment):
    (memo,) = glob.glob(os.path.join(environment["KILN_CACHE_DIR"], "toolchain-*.txt"))
    return memo


def compiles_run(log):
    """The command lines the compiler ran since the log was last cleared."""
    lines = log.read_text().splitlines() if log.exists() else []
    log.write_text("")
    return lines


def test_the_memo_holds_each_finding_as_a_bit(logged_compiler):
    environment, log = logged_compiler
    run_python(_PROGRAM.format(2), environment)
    lines = open(memo_path(environment)).read().splitlines()
    assert lines[0] == "kiln-toolchain-memo 3"
    assert lines[1] == "mvec 1"  # glibc 2.36 here ships libmvec
    assert lines[2] == "wrapper " + ("1" if shutil.which("setpriv") else "0")
    assert lines[3] == "gold " + ("1" if shutil.which("ld.gold") else "0")


def test_a_warm_process_probes_nothing_and_uses_the_memo(logged_compiler):
    environment, log = logged_compiler
    run_python(_PROGRAM.format(2), environment)
    assert any("/dev/null" in line for line in compiles_run(log))  # the cold process probed
    result = run_python(_PROGRAM.format(3), environment)  # a new graph: one compile, no probe
    assert agrees(result.stdout, 3)
    (compile_line,) = compiles_run(log)
    assert "/dev/null" not in compile_line and "--version" not in compile_line
    if shutil.which("setpriv"):
        assert "-wrapper" in compile_line and "--pdeathsig,KILL" in compile_line
    if shutil.which("ld.gold"):
        assert "-fuse-ld=gold" in compile_line


def test_bits_the_memo_turns_off_are_not_used(logged_compiler):
    environment, log = logged_compiler
    run_python(_PROGRAM.format(2), environment)
    memo = memo_path(environment)
    text = open(memo).read().replace("wrapper 1\n", "wrapper 0\n").replace("gold 1\n", "gold 0\n")
    with open(memo, "w") as file:
        file.write(text)
    compiles_run(log)
    result = run_python(_PROGRAM.format(4), environment)
    assert agrees(result.stdout, 4)
    (compile_line,) = compiles_run(log)
    assert "-wrapper" not in compile_line and "-fuse-ld=gold" not in compile_line


@pytest.mark.parametrize("unit_bytes", [None, "1"])  # one translation unit; one per kernel
def test_a_library_with_the_image_assembled_in_loads_in_a_fresh_process(tmp_path, unit_bytes):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    environment = {"KILN_CACHE_DIR": str(cache_dir), "KILN_LOGS": "cache"}
    if unit_bytes:
        environment["KILN_UNIT_BYTES"] = unit_bytes
    program = """
    import numpy as np, kiln
    def f(x):
        y = np.sin(x) * 5 + 1
        return np.cumsum(y) + y.sum()
    print(kiln.compile(f)(np.arange(6.0)).tolist())
    """
    import numpy as np
    y = np.sin(np.arange(6.0)) * 5 + 1
    want = np.cumsum(y) + y.sum()
    cold = run_python(program, environment)
    np.testing.assert_allclose(ast.literal_eval(cold.stdout.strip()), want, rtol=1e-12)
    assert "miss " in cold.stderr
    # The image is in the library, not in the source, and nothing it was assembled from is left.
    (source,) = glob.glob(str(cache_dir / "??" / "*" / "*.cpp"))
    assert "kiln_executable_image" not in open(source).read()
    leftovers = [path for path in glob.glob(str(cache_dir / "**"), recursive=True)
                 if path.endswith((".bin", ".s", ".o"))]
    assert leftovers == []
    (library,) = glob.glob(str(cache_dir / "??" / "*" / "kernel-*.so"))
    symbols = subprocess.run(["nm", "-D", library], capture_output=True, text=True).stdout
    assert " R kiln_executable_image\n" in symbols and " R kiln_executable_image_size\n" in symbols
    warm = run_python(program, environment)
    np.testing.assert_allclose(ast.literal_eval(warm.stdout.strip()), want, rtol=1e-12)
    assert "hit " in warm.stderr and "miss " not in warm.stderr
