"""What a long-running process needs: a bounded number of loaded kernel libraries
(KILN_MAX_LOADED_LIBRARIES; each costs memory maps, and ~13k of them hit vm.max_map_count),
and other threads running while the C++ compiler does. Each probe runs in a subprocess (a
crash kills the interpreter; the environment is read at start)."""
import os
import subprocess
import sys
import textwrap

import pytest


MAPPED_KERNELS = """
import os
def mapped_kernels():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            # kiln maps a sealed copy of each library: "/memfd:kiln:kernel-<checksum>.so"
            if len(parts) >= 6 and parts[5].startswith("/memfd:kiln:kernel-"):
                paths.add(parts[5])
    return len(paths)
"""


def run_probe(code, tmp_path, timeout=600, **environment):
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"), **environment)
    code = MAPPED_KERNELS + textwrap.dedent(code)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, timeout=timeout, env=env)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_many_shapes_keep_at_most_the_limit_of_libraries_loaded(tmp_path):
    out = run_probe("""
        import os
        import numpy as np, kiln
        @kiln.compile(dynamic=True)
        def f(x):
            return np.sin(x) * 2 + 1

        @kiln.compile(dynamic=True)
        def g(x, y):
            return (x[:, None] * y[None, :]).sum(axis=1)

        most = 0
        for round in range(2):  # the second round loads every unloaded library again
            for n in range(1, 13):
                x = np.arange(n, dtype=np.float64)
                y = np.arange(n + 1, dtype=np.float64)
                assert np.allclose(f(x), np.sin(x) * 2 + 1), n
                assert np.allclose(g(x, y), (x[:, None] * y[None, :]).sum(axis=1)), n
                most = max(most, mapped_kernels())
        print("most", most)
    """, tmp_path, KILN_MAX_LOADED_LIBRARIES="3")
    assert "most 3" in out


def test_unloaded_libraries_reload_from_threads_and_rebuild_when_evicted(tmp_path):
    out = run_probe("""
        import glob, os, shutil, threading
        import numpy as np, kiln
        @kiln.compile(dynamic=True)
        def f(x):
            return np.cos(x) * 3 - 1

        for n in range(1, 16):
            f(np.arange(n, dtype=np.float64))
        # The entries leave the disk (another process's eviction, `kiln.cache clear`): an
        # unloaded library is rebuilt from its program, never a crash or a stale answer.
        for shard in glob.glob(os.environ["KILN_CACHE_DIR"] + "/??"):
            shutil.rmtree(shard)
        errors = []
        def worker(seed):
            rng = np.random.default_rng(seed)
            try:
                for _ in range(25):
                    x = rng.random(int(rng.integers(1, 16)))
                    if not np.allclose(f(x), np.cos(x) * 3 - 1):
                        errors.append(x.size)
            except Exception as error:
                errors.append(repr(error))
        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        print("errors", errors, "mapped", mapped_kernels())
    """, tmp_path, KILN_MAX_LOADED_LIBRARIES="2")
    errors, mapped = out.split("mapped")
    assert errors.strip() == "errors []"
    assert int(mapped) <= 2 + 4  # the limit, plus those calls were running in when a load came


@pytest.mark.parametrize("value", ["0", "-3", "many", " 4", "9" * 30])
def test_a_bad_library_limit_is_a_value_error_naming_it(tmp_path, value):
    out = run_probe("""
        import numpy as np, kiln
        try:
            kiln.compile(lambda x: x + 1)(np.ones(3))
        except ValueError as error:
            print("ValueError", error)
    """, tmp_path, KILN_MAX_LOADED_LIBRARIES=value)
    assert "ValueError" in out and "KILN_MAX_LOADED_LIBRARIES" in out


def waiting_compiler(tmp_path, name, required):
    """A KILN_CXX wrapper that, compiling a library, touches tmp_path/started and then waits (at
    most 20 s) for tmp_path/`name` before running g++; without it, fails when `required`."""
    wrapper = tmp_path / "cxx"
    give_up = f"[ -e {tmp_path}/{name} ] || exit 3 " if required else ""
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case " $* " in
          *" -o "*)
            touch {tmp_path}/started
            i=0
            while [ ! -e {tmp_path}/{name} ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
            {give_up};;
        esac
        exec g++ "$@"
        """))
    wrapper.chmod(0o755)
    return wrapper


def test_other_threads_run_while_the_compiler_does(tmp_path):
    # The compiler is a wrapper that waits (at most 20 s) for a file another Python thread
    # writes once it sees the compile start: with the GIL held through the compile that thread
    # never runs, the wrapper gives up and the compile fails.
    wrapper = waiting_compiler(tmp_path, "go", required=True)
    out = run_probe(f"""
        import os, threading, time
        import numpy as np, kiln

        def other():
            while not os.path.exists("{tmp_path}/started"):
                time.sleep(0.01)
            open("{tmp_path}/go", "w").close()  # Python code, run while the compiler runs

        thread = threading.Thread(target=other)
        thread.start()
        print(kiln.compile(lambda x: x * 2)(np.arange(3.0)))
        thread.join()
    """, tmp_path, KILN_CXX=str(wrapper))
    assert "[0. 2. 4.]" in out


def test_a_fork_while_another_thread_compiles_leaves_a_child_that_compiles(tmp_path):
    # The compile in the thread waits in the compiler until the fork has been asked for; the
    # fork waits for that compile (it may hold kiln's locks), then the child compiles its own.
    wrapper = waiting_compiler(tmp_path, "forking", required=False)
    out = run_probe(f"""
        import glob, os, subprocess, threading, time, warnings
        import numpy as np, kiln
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads

        thread = threading.Thread(target=lambda: kiln.compile(lambda x: x - 1)(np.ones(4)))
        thread.start()
        while not os.path.exists("{tmp_path}/started"):
            time.sleep(0.01)
        # Not a Python thread: the fork holds the GIL while it waits for the compile.
        subprocess.Popen(["sh", "-c", "sleep 0.3; touch {tmp_path}/forking"])
        pid = os.fork()
        if pid == 0:
            # The fork came after the thread's compile: its entry is in the cache.
            if not glob.glob(os.environ["KILN_CACHE_DIR"] + "/*/*/meta.txt"):
                os._exit(6)
            result = kiln.compile(lambda x: x * 3)(np.arange(3.0))
            os._exit(0 if list(result) == [0.0, 3.0, 6.0] else 5)
        for _ in range(600):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            status = "hung"
        thread.join()
        print("child", status)
    """, tmp_path, KILN_CXX=str(wrapper))
    assert "child 0" in out


@pytest.mark.parametrize("name", ["KILN_UNIT_BYTES", "KILN_CACHE_MAX_BYTES",
                                  "KILN_MAX_LOADED_LIBRARIES"])
@pytest.mark.parametrize("value", [" -5", " 7", "99999999999999999999999", "+3"])
def test_whole_number_settings_take_digits_only(tmp_path, name, value):
    # strtoull read " -5" as 2**64 - 5 and the overlong number as its maximum, silently.
    out = run_probe("""
        import numpy as np, kiln
        try:
            print(kiln.compile(lambda x: x + 1)(np.ones(3)))
        except ValueError as error:
            print("ValueError", error)
    """, tmp_path, **{name: value})
    assert f"ValueError kiln: {name}={value} is not" in out, out
