"""Processes around kiln: forked children that exit as Python programs do (atexit handlers run),
and the private directory a process compiles in without a usable disk cache. Each probe runs in
a subprocess with its own TMPDIR, so that what it leaves behind is counted."""
import os
import subprocess
import sys
import textwrap


def run_probe(code, tmp_path, timeout=300, **environment):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(temporary))
    env.update(environment)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, timeout=timeout, env=env)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout, sorted(path.name for path in temporary.iterdir())


def test_a_forked_child_that_exits_leaves_the_parents_private_directory(tmp_path):
    # The child inherited the parent's atexit handler and its directory: a child that exited
    # normally removed the directory the parent was compiling in (the parent's compiles failed
    # with CompilerError "produced no usable shared object"), and a child compiling there lost
    # its kernels when the parent exited first.
    out, left = run_probe("""
        import glob, os, sys
        import numpy as np, kiln
        x = np.arange(10.0)
        private = {"disk_cache": False}
        assert np.allclose(kiln.compile(lambda x: np.sin(x) + 1, options=private)(x),
                           np.sin(x) + 1)
        parents = glob.glob(os.path.join(os.environ["TMPDIR"], "kiln-private-*"))
        assert len(parents) == 1, parents
        pid = os.fork()
        if pid == 0:
            ok = np.allclose(kiln.compile(lambda x: np.cos(x) * 3, options=private)(x),
                             np.cos(x) * 3)
            mine = set(glob.glob(os.path.join(os.environ["TMPDIR"], "kiln-private-*")))
            sys.exit(0 if ok and len(mine - set(parents)) == 1 else 3)  # atexit runs
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        now = glob.glob(os.path.join(os.environ["TMPDIR"], "kiln-private-*"))
        print("after the child", sorted(now) == sorted(parents))
        assert np.allclose(kiln.compile(lambda x: np.tan(x) - 2, options=private)(x),
                           np.tan(x) - 2)
    """, tmp_path)
    assert "after the child True" in out
    assert left == []  # each process removed its own directory at exit


def test_a_tmpdir_that_is_gone_falls_back_to_tmp(tmp_path):
    # Without a usable disk cache, every compile failed (CompilerError "cannot create a
    # temporary directory in /gone/kiln-private-XXXXXX"); Python's tempfile falls back too.
    (tmp_path / "file").write_text("")  # KILN_CACHE_DIR: unusable, the private directory used
    out, _ = run_probe("""
        import numpy as np, kiln
        x = np.arange(10.0)
        for options in ({"disk_cache": False}, {}):
            assert np.allclose(kiln.compile(lambda x: np.sin(x) * 7, options=options)(x),
                               np.sin(x) * 7)
        print("compiled")
    """, tmp_path, TMPDIR=str(tmp_path / "gone"), KILN_CACHE_DIR=str(tmp_path / "file"))
    assert "compiled" in out
