"""A C++ compiler that never finishes (a stalled network file system, a wrapper waiting on a
lock) with no one there to press Ctrl-C: a server's call must not wait for it for ever. Past
KILN_COMPILE_SECONDS of wall-clock time the compiler is killed and the call fails with kiln's
CompilerError saying so, which kiln.config.suppress_errors turns into an eager run. Each attack
runs in a child interpreter, so a kiln that waits shows as a child that never ends."""
import os
import shutil
import subprocess
import sys

import pytest

HANGING_COMPILER = """#!/bin/sh
case "$*" in *kernel*) echo $$ > {started}; exec sleep 600;; esac
exec {gxx} "$@"
"""

CHILD = """
import os
import numpy as np
import kiln
try:
    kiln.compile(lambda x: np.sin(x) * 3.0)(np.arange(4.0))
    print("no exception")
except kiln.CompilerError as error:
    print("raised CompilerError", "KILN_COMPILE_SECONDS" in str(error))
compiler = int(open({started!r}).read())
try:
    os.kill(compiler, 0)
    print("compiler alive")
except ProcessLookupError:
    print("compiler gone")
with kiln.config.patch(suppress_errors=True):
    result = kiln.compile(lambda x: np.cos(x) * 2.0)(np.arange(4.0))
print("eager", np.allclose(result, np.cos(np.arange(4.0)) * 2.0))
"""


def run_with_hanging_compiler(tmp_path, seconds):
    started = tmp_path / "started"
    compiler = tmp_path / "hanging-g++"
    compiler.write_text(HANGING_COMPILER.format(started=started, gxx=shutil.which("g++")))
    compiler.chmod(0o755)
    env = dict(os.environ, KILN_CXX=str(compiler), KILN_CACHE_DIR=str(tmp_path / "cache"),
               KILN_COMPILE_SECONDS=seconds)
    try:
        return subprocess.run([sys.executable, "-c", CHILD.format(started=str(started))],
                              env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the call waited for the hung compiler past its bound")
    finally:
        if started.exists():
            try:
                os.kill(int(started.read_text()), 9)
            except (ProcessLookupError, ValueError):
                pass


def test_a_hung_compiler_is_killed_after_its_bound_and_the_call_can_run_eagerly(tmp_path):
    done = run_with_hanging_compiler(tmp_path, "2")
    assert done.returncode == 0, done.stderr
    report = done.stdout.split("\n")
    assert "raised CompilerError True" in report
    assert "compiler gone" in report
    assert "eager True" in report


@pytest.mark.parametrize("value", ["0", "-5", "ten", "1e3"])
def test_a_bad_compile_bound_is_an_error_naming_it(tmp_path, value):
    env = dict(os.environ, KILN_COMPILE_SECONDS=value, KILN_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", "import numpy as np, kiln\n"
                           "kiln.compile(lambda x: x + 1)(np.ones(2))"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"KILN_COMPILE_SECONDS={value}" in done.stderr
