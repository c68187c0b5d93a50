"""Ctrl-C while kiln waits for the C++ compiler: the call must stop then, with Python's
KeyboardInterrupt (or the user's own SIGINT handler run), the compiler killed, the cache left
usable, as NumPy's own work or time.sleep stop. Each attack runs in a child interpreter whose
compiler hangs until killed, so a kiln that waits for it shows as a child that never ends."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

# The compiler: g++, except that a kernel's compile writes its process id to `started` and
# then waits until killed (exec: the waiting process is the one kiln started).
HANGING_COMPILER = """#!/bin/sh
case "$*" in *kernel*) if [ -e {hang} ]; then echo $$ > {started}; exec sleep 600; fi;; esac
exec {gxx} "$@"
"""

# The child: waits for the compiler to start, sends itself SIGINT, and reports what the call
# raised; then compiles again with the compiler no longer hanging and checks the cache.
CHILD = """
import faulthandler, os, signal, threading, time
faulthandler.dump_traceback_later(200, exit=True)  # a hang shows where each thread waits
import numpy as np
import kiln, kiln.cache

# Python's own handler, as an interactive Python has it: a shell starts background jobs with
# SIGINT ignored, which the child would inherit (and then no Ctrl-C reaches it at all)
signal.signal(signal.SIGINT, signal.default_int_handler)

def interrupt_once_compiling():
    while not os.path.exists({started!r}):
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt_once_compiling, daemon=True).start()
{handler}
try:
    kiln.compile(lambda x: np.sin(x) * 3.0 + 1.0)(np.arange(4.0))
    print("no exception")
except BaseException as error:
    print("raised", type(error).__name__)
print("handled", HANDLED)
compiler = int(open({started!r}).read())
try:
    os.kill(compiler, 0)
    print("compiler", open(f"/proc/{{compiler}}/status").read().split("State:")[1].split()[0])
except ProcessLookupError:
    print("compiler gone")
os.unlink({hang!r})
result = kiln.compile(lambda x: np.sin(x) * 3.0 + 1.0)(np.arange(4.0))
print("again", np.allclose(result, np.sin(np.arange(4.0)) * 3.0 + 1.0))
"""


def interrupted_compile(tmp_path, handler=""):
    """What the child printed, one line a report."""
    hang, started = tmp_path / "hang", tmp_path / "started"
    hang.write_text("")
    compiler = tmp_path / "hanging-g++"
    compiler.write_text(HANGING_COMPILER.format(hang=hang, started=started,
                                                gxx=shutil.which("g++")))
    compiler.chmod(0o755)
    code = CHILD.format(started=str(started), hang=str(hang),
                        handler=textwrap.dedent(handler) or "HANDLED = None")
    env = dict(os.environ, KILN_CXX=str(compiler), KILN_CACHE_DIR=str(tmp_path / "cache"))
    try:
        done = subprocess.run([sys.executable, "-u", "-c", code], env=env, capture_output=True,
                              text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("Ctrl-C never ended the compile: the call waited for the hung compiler")
    finally:
        if started.exists():  # never leave the hung compiler behind, whatever happened
            try:
                os.kill(int(started.read_text()), 9)
            except (ProcessLookupError, ValueError):
                pass
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")


def test_ctrl_c_during_a_compile_raises_keyboard_interrupt_and_kills_the_compiler(tmp_path):
    report = interrupted_compile(tmp_path)
    assert "raised KeyboardInterrupt" in report
    assert "compiler gone" in report
    assert "again True" in report  # the cache holds no half entry the next compile trips on
    result = subprocess.run([sys.executable, "-m", "kiln.cache", "verify"], capture_output=True,
                            text=True, env=dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache")))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_users_sigint_handler_runs_and_the_compile_goes_on(tmp_path):
    # A handler that does not raise asks for no stop: the compile ends as it would have, and
    # the handler runs once (here after the compiler is let go by a second thread).
    handler = """
    HANDLED = 0
    def count(signum, frame):
        global HANDLED
        HANDLED += 1
    signal.signal(signal.SIGINT, count)
    def release_compiler():
        while not os.path.exists({started!r}):
            time.sleep(0.01)
        time.sleep(0.5)
        os.kill(int(open({started!r}).read()), signal.SIGKILL)
    threading.Thread(target=release_compiler, daemon=True).start()
    """.format(started=str(tmp_path / "started"))
    report = interrupted_compile(tmp_path, handler)
    assert "handled 1" in report
    # The compiler was killed by the second thread, not by kiln: its failure is kiln's
    # CompilerError, reported as such.
    assert "raised CompilerError" in report
    assert "again True" in report
