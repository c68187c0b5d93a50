"""The guarded cache under re-entry and threads, and the GIL around kernels. A crash here kills
the interpreter, so each probe runs in a subprocess: a regression is a failed test."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

import kiln


def run_probe(code, timeout=300, env=None):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, timeout=timeout, env=env)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_a_yielding_eq_from_four_threads_while_new_shapes_compile():
    out = run_probe("""
        import threading, time
        import numpy as np, kiln

        class Scale:  # a plain object: a static of the guard, compared with __eq__
            def __init__(self, value): self.value = value
            def __eq__(self, other):
                time.sleep(0)  # lets another thread run in the middle of the guard walk
                return isinstance(other, Scale) and self.value == other.value
            __hash__ = object.__hash__

        @kiln.compile
        def f(x, scale):
            return x * scale.value + 1

        errors = []
        def worker(seed):
            try:
                for i in range(12):
                    n = 1 + (seed * 7 + i) % 9  # new shapes compile while others walk
                    x = np.full(n, float(i))
                    np.testing.assert_allclose(f(x, Scale(2.0)), x * 2 + 1)
            except Exception as error:
                errors.append(repr(error))
        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        assert not errors, errors
        print("ok")
    """)
    assert "ok" in out


def test_an_eq_that_calls_the_compiled_function_with_a_new_shape():
    out = run_probe("""
        import numpy as np, kiln

        class Key:
            depth = 0
            def __init__(self, value): self.value = value
            def __eq__(self, other):
                if Key.depth < 3:
                    Key.depth += 1
                    n = 2 + Key.depth
                    np.testing.assert_allclose(f(np.ones(n), Key(self.value)), np.ones(n) + self.value)
                return isinstance(other, Key) and other.value == self.value
            __hash__ = object.__hash__

        @kiln.compile
        def f(x, key):
            return x + key.value

        for n in (2, 3, 7, 2, 11):
            np.testing.assert_allclose(f(np.ones(n), Key(5.0)), np.ones(n) + 5.0)
        print("ok")
    """)
    assert "ok" in out


def test_an_eq_that_mutates_the_list_being_guarded():
    out = run_probe("""
        import numpy as np, kiln
        state = {"armed": False}
        class Shrinker:
            def __init__(self, victim): self.victim = victim
            def __eq__(self, other):
                if state["armed"]:
                    self.victim.clear()  # the list under the guard walk loses its items
                return isinstance(other, Shrinker)
            __hash__ = object.__hash__

        @kiln.compile
        def f(items):
            return items[1] * 2

        items = [None, np.ones(3)]
        items[0] = Shrinker(items)
        np.testing.assert_allclose(f(items), 2 * np.ones(3))
        state["armed"] = True
        items = [None, np.ones(3)]
        items[0] = Shrinker(items)
        try:
            f(items)  # any result or a Python error; never a crash
        except Exception:
            pass
        print("ok")
    """)
    assert "ok" in out


def test_a_long_kernel_lets_other_python_threads_run():
    @kiln.compile
    def heavy(x):
        for _ in range(6):
            x = np.sin(x) * 1.0001 + np.cos(x)
        return x

    x = np.random.rand(8_000_000)
    heavy(x)  # compiled outside the measurement
    ticks = []
    running = threading.Event()
    stop = threading.Event()

    def ticker():
        running.set()
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    running.wait()
    start = time.perf_counter()
    heavy(x)
    end = time.perf_counter()
    stop.set()
    thread.join()
    during = [tick for tick in ticks if start < tick < end]
    # With the GIL held for the whole kernel the other thread could not tick at all.
    assert len(during) >= 3, (len(during), end - start)


def test_concurrent_calls_of_one_compiled_function_are_correct():
    @kiln.compile
    def f(x, y):
        return np.sqrt(x * x + y) - x

    inputs = [(np.random.rand(300_000), np.random.rand(300_000)) for _ in range(6)]
    f(*inputs[0])
    results = [None] * len(inputs)

    def work(index):
        for _ in range(5):
            results[index] = f(*inputs[index])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for (x, y), result in zip(inputs, results):
        np.testing.assert_allclose(result, np.sqrt(x * x + y) - x)


def test_compiled_run_checks_what_it_is_handed():
    from kiln import _kiln
    trace = _kiln.Trace()
    x = trace.input("float64", [4])
    compiled = _kiln.compile_graph(trace, [_kiln.sin(x)], [[]], None)
    import pytest
    with pytest.raises(ValueError, match="takes 1 inputs, got 0"):
        compiled.run([])
    with pytest.raises(ValueError, match=r"compiled for float64 \(4,\)"):
        compiled.run([np.ones(1000)])
    with pytest.raises(TypeError, match="float32"):
        compiled.run([np.ones(4, np.float32)])
    with pytest.raises(ValueError, match="strides"):
        compiled.run([np.ones(8)[::2]])
    np.testing.assert_allclose(compiled.run([np.ones(4)])[0], np.sin(np.ones(4)))


def test_a_forked_child_runs_compiled_functions_after_the_parent_ran_parallel_ones():
    """GNU OpenMP is not fork-safe: a child forked after a parallel kernel inherits a thread
    pool without its threads, and its first parallel region waited for them forever. Kernels
    and the libraries (OpenBLAS) run single-threaded in a forked child."""
    out = run_probe("""
        import os, numpy as np, kiln
        total = kiln.compile(lambda x: (x * 2 + 1).sum())
        product = kiln.compile(lambda a, b: a @ b)
        x, a = np.ones(4_000_000), np.ones((300, 300))
        total(x), product(a, a)
        child = os.fork()
        if child == 0:
            print("child", total(x), product(a, a)[0, 0], flush=True)
            os._exit(0)
        _, status = os.waitpid(child, 0)
        print("status", status)
    """, timeout=120, env={k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"})
    assert "child 12000000.0 300.0" in out and "status 0" in out


def test_daemon_threads_running_kernels_while_the_interpreter_exits(tmp_path):
    """A daemon thread that finishes a kernel (run without the GIL) while the interpreter
    finalizes is ended by CPython with pthread_exit when it asks for the GIL back; unwound
    through the binding's catch (...) that aborted the process ("terminate called without an
    active exception"). The thread is parked instead and the process exits cleanly. With an
    empty cache the threads are still compiling when the interpreter exits (30 ms): the tables
    and the toolchain a compile reads are never destroyed (exit() destroyed them under a
    compiling thread: a crash in 5 of 60 such exits)."""
    for k, (delay, fresh_cache) in enumerate([(0.05, False), (0.3, False)] + [(0.03, True)] * 6):
        env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / str(k))) if fresh_cache else None
        run_probe(f"""
            import threading, time, numpy as np, kiln
            total = kiln.compile(lambda x: np.sin(x).sum() + x)
            big = np.ones(3_000_000)   # big enough to run without the GIL
            def loop():
                while True:
                    total(big)
            for _ in range(4):
                threading.Thread(target=loop, daemon=True).start()
            time.sleep({delay})
        """, timeout=120, env=env)


def test_the_first_calls_of_four_threads_at_once_all_finish(tmp_path):
    """Four threads' first calls at once: the guard's type checks look their types up on first
    use (array.array: `array` is not imported yet). Held in C++ function-local statics, the
    first thread imported `array` inside the static's initializer, giving up the GIL mid-way;
    the second waited on the static's guard holding the GIL: a deadlock in 4 of 6 runs
    (src/python/common.h: made_once). Each run's threads finish their calls and are joined."""
    for k in range(4):
        out = run_probe("""
            import threading, numpy as np, kiln
            total = kiln.compile(lambda x: np.sin(x).sum() + x)
            big = np.ones(3_000_000)
            results = []
            def call():
                for _ in range(3):
                    results.append(float(total(big)[0]))
            threads = [threading.Thread(target=call) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            agree = len(results) == 12 and np.allclose(results, np.sin(1.0) * 3_000_000 + 1, rtol=1e-9)
            print("finished", sum(not thread.is_alive() for thread in threads), agree)
        """, timeout=120, env=dict(os.environ, KILN_CACHE_DIR=str(tmp_path / str(k))))
        assert "finished 4 True" in out, out


def test_a_fork_while_another_thread_runs_a_kernel_gives_a_working_child():
    """A fork taken while another thread ran the same compiled function (without the GIL) left
    the child its executable's run mutex locked for good: the child's call waited forever. The
    fork now waits for runs in flight."""
    out = run_probe("""
        import os, threading, time, numpy as np, kiln
        total = kiln.compile(lambda x: (np.sin(x) * 2 + 1).sum())
        x = np.ones(4_000_000)
        expected = total(x)
        stop = False
        def loop():
            while not stop:
                total(x)
        thread = threading.Thread(target=loop)
        thread.start()
        hung = 0
        for i in range(4):
            time.sleep(0.01 * i)
            child = os.fork()
            if child == 0:
                os._exit(0 if total(x) == expected else 3)
            for _ in range(200):  # 10 s
                done, status = os.waitpid(child, os.WNOHANG)
                if done:
                    break
                time.sleep(0.05)
            else:
                os.kill(child, 9)
                os.waitpid(child, 0)
                hung += 1
                continue
            assert status == 0, status
        stop = True
        thread.join()
        print("hung", hung)
    """, timeout=300, env={k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"})
    assert "hung 0" in out


def test_a_kernel_library_loaded_while_the_process_exits_parks_its_thread(tmp_path):
    """glibc's exit runs each library's destructors and marks it uninitialized: a kernel library
    that a daemon thread's compile (run without the GIL) loaded after that ran libgomp's
    constructor a second time, which asserted ("goacc_register: Assertion ... failed") and
    aborted the process. Here a library loaded after libgomp, so finalized after it, waits 4 s
    in its destructor, and the compiler starts the kernel 1 s late: the compile ends inside the
    exit. Its load parks the thread, and the process exits cleanly."""
    slow_exit = tmp_path / "slow_exit.cpp"
    slow_exit.write_text("#include <unistd.h>\n"
                         "__attribute__((destructor)) static void slow_exit() { sleep(4); }\n")
    library = tmp_path / "libslow_exit.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(library), str(slow_exit)], check=True)
    late_compiler = tmp_path / "late-g++"
    started = tmp_path / "compiler-started"
    late_compiler.write_text(f'#!/bin/sh\ncase "$*" in *kernel.cpp*) touch {started}; sleep 1;; '
                             'esac\nexec g++ "$@"\n')
    late_compiler.chmod(0o755)
    out = run_probe(f"""
        import ctypes, os, threading, time
        import numpy as np, kiln
        ctypes.CDLL({str(library)!r})
        f = kiln.compile(lambda x: np.sin(x) * 3 + 1)
        def compile_while_exiting():
            f(np.ones(1_000_000))  # a parallel kernel: its library needs libgomp
            print("compiled before the exit", flush=True)
        threading.Thread(target=compile_while_exiting, daemon=True).start()
        while not os.path.exists({str(started)!r}):  # the compile, without the GIL, is
            time.sleep(0.01)                            # in its compiler
        print("exiting", flush=True)
    """, timeout=120, env={**os.environ, "KILN_CXX": str(late_compiler),
                           "KILN_CACHE_DIR": str(tmp_path / "cache")})
    assert out.strip() == "exiting"
