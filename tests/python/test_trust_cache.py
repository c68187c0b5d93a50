"""The disk cache holds code that kiln loads into the process: a probe of the attacks on it.
Each test plants something an attacker (another user of the machine) could, and checks kiln
refuses it or rebuilds, never runs it. Crash- or process-level probes run in a subprocess."""
import glob
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kiln
import kiln.cache
from kiln import _kiln

is_root = os.geteuid() == 0


def run_python(code, environment=None, timeout=120):
    """Runs `code` in a fresh interpreter (kiln's per-process state, e.g. the toolchain memo,
    starts empty); returns the CompletedProcess."""
    env = dict(os.environ)
    env.update(environment or {})
    env = {key: value for key, value in env.items() if value is not None}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def compile_and_run(offset=1.0):
    return kiln.compile(lambda x: np.sin(x) + offset)(np.ones(3))


def existing_cache(tmp_path):
    """A cache directory that exists before the first process: the toolchain memo is written
    only into one kiln already uses."""
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    return cache_dir


def entry_files(cache_dir, pattern):
    return glob.glob(os.path.join(str(cache_dir), "??", "*", pattern))


# ---- the directory ----
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o720])
def test_a_cache_directory_others_can_write_is_refused(tmp_path, mode):
    cache_dir = tmp_path / "shared-cache"
    cache_dir.mkdir()
    os.chmod(cache_dir, mode)
    with kiln.config.patch(cache_dir=str(cache_dir)):
        with pytest.raises(PermissionError, match="refusing the kernel cache directory.*writable"):
            compile_and_run()
    assert os.listdir(cache_dir) == []


@pytest.mark.skipif(not is_root, reason="chown to another user needs root")
def test_a_cache_directory_owned_by_another_user_is_refused(tmp_path):
    cache_dir = tmp_path / "their-cache"
    cache_dir.mkdir(mode=0o700)
    os.chown(cache_dir, 65534, 65534)
    with kiln.config.patch(cache_dir=str(cache_dir)):
        with pytest.raises(PermissionError, match="owned by uid 65534"):
            compile_and_run()


def test_files_and_directories_are_private_whatever_the_umask(tmp_path):
    cache_dir = tmp_path / "cache"
    result = run_python("""
        import os, numpy as np, kiln
        os.umask(0)
        print(kiln.compile(lambda x: x * 3)(np.ones(2)))
    """, {"KILN_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    for root, directories, files in os.walk(cache_dir):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in files:
            mode = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
            assert mode & 0o077 == 0, (name, oct(mode))
    assert entry_files(cache_dir, "kernel-*.so")


def test_without_home_the_default_is_never_a_shared_tmp_name():
    result = run_python("""
        import pwd, os
        from kiln import _kiln
        print(_kiln.cache_default_dir())
        print(pwd.getpwuid(os.getuid()).pw_dir)
    """, {"HOME": None, "KILN_CACHE_DIR": None, "XDG_CACHE_HOME": None})
    assert result.returncode == 0, result.stderr
    default, home = result.stdout.split("\n")[:2]
    assert not default.startswith("/tmp")
    assert default == (home + "/.cache/kiln" if home not in ("", "/") else "")


# ---- planted libraries ----
MALICIOUS_SOURCE = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
  FILE* f = fopen("MARKER", "w");
  if (f) { fputs("planted code ran", f); fclose(f); }
}
"""


def plant_library(tmp_path, marker):
    """A shared object whose constructor writes `marker`: the attacker's payload."""
    source = tmp_path / "planted.c"
    source.write_text(MALICIOUS_SOURCE.replace("MARKER", str(marker)))
    library = tmp_path / "planted.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    return library.read_bytes()


def fnv1a_64(data):
    value = 0xcbf29ce484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def replace_entry_object(cache_dir, payload):
    """Swaps the entry's object for `payload` and rewrites meta.txt to match: a checksum the
    attacker can compute. Returns the object's path."""
    (meta_path,) = entry_files(cache_dir, "meta.txt")
    entry = os.path.dirname(meta_path)
    checksum = fnv1a_64(payload)
    object_path = os.path.join(entry, f"kernel-{checksum}.so")
    for old in glob.glob(os.path.join(entry, "kernel-*.so")):
        os.remove(old)
    with open(object_path, "wb") as file:
        file.write(payload)
    lines = open(meta_path).read().split("\n")
    lines[2] = f"object kernel-{checksum}.so"
    lines[3] = f"size {len(payload)}"
    lines[4] = f"fnv1a64 {checksum}"
    os.remove(meta_path)
    with open(meta_path, "w") as file:
        file.write("\n".join(lines))
    return object_path, meta_path


@pytest.mark.parametrize("attack", ["group-writable object", "other-writable meta",
                                    "object owned by another user", "symlinked object"])
def test_a_planted_library_is_never_loaded(tmp_path, fresh_kiln, attack):
    if attack == "object owned by another user" and not is_root:
        pytest.skip("chown to another user needs root")
    marker = tmp_path / "planted-code-ran"
    payload = plant_library(tmp_path, marker)
    np.testing.assert_allclose(compile_and_run(), np.sin(1.0) + 1)
    object_path, meta_path = replace_entry_object(fresh_kiln, payload)
    if attack == "group-writable object":
        os.chmod(object_path, 0o770)
    elif attack == "other-writable meta":
        os.chmod(meta_path, 0o606)
    elif attack == "object owned by another user":
        os.chown(object_path, 65534, 65534)
    else:
        elsewhere = tmp_path / "elsewhere.so"
        os.rename(object_path, elsewhere)
        os.symlink(elsewhere, object_path)
    kiln.reset()  # the next call looks in the disk cache again
    np.testing.assert_allclose(compile_and_run(), np.sin(1.0) + 1)
    assert not marker.exists(), "kiln loaded a library it did not build"


def test_an_entry_planted_under_another_key_is_rebuilt(tmp_path):
    # g's entry (kiln's own build, same signature) copied to f's place, its meta.txt's key line
    # made f's: the object says which key it was built for, so f never runs g's code.
    cache_dir = tmp_path / "cache"
    program = """
        import os, numpy as np, kiln
        f = (lambda x, y: x * 2 + y) if os.environ["WHICH"] == "f" else (lambda x, y: x - y * 3)
        print(kiln.compile(f)(np.arange(4.0), np.ones(4)).tolist())
    """

    def run(which):
        result = run_python(program, {"KILN_CACHE_DIR": str(cache_dir), "WHICH": which})
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert run("f") == "[1.0, 3.0, 5.0, 7.0]"
    (f_entry,) = {os.path.dirname(path) for path in entry_files(cache_dir, "meta.txt")}
    assert run("g") == "[-3.0, -2.0, -1.0, 0.0]"
    (g_entry,) = {os.path.dirname(path) for path in entry_files(cache_dir, "meta.txt")} - {f_entry}
    shutil.rmtree(f_entry)
    shutil.copytree(g_entry, f_entry)
    meta = os.path.join(f_entry, "meta.txt")
    text = open(meta).read().replace(os.path.basename(g_entry), os.path.basename(f_entry))
    with open(meta, "w") as file:
        file.write(text)
    assert run("f") == "[1.0, 3.0, 5.0, 7.0]"


@pytest.mark.parametrize("planted", ["object", "meta.txt", "toolchain memo"])
def test_a_huge_planted_file_is_a_miss_never_read(tmp_path, planted):
    # 100 GiB (sparse: no disk) where kiln reads a file whole: refused by its size, rebuilt.
    cache_dir = existing_cache(tmp_path)
    program = "import numpy as np, kiln; print(kiln.compile(lambda x: x * 3 + 1)(np.ones(2)))"
    assert run_python(program, {"KILN_CACHE_DIR": str(cache_dir)}).returncode == 0
    (path,) = {"object": entry_files(cache_dir, "kernel-*.so"),
               "meta.txt": entry_files(cache_dir, "meta.txt"),
               "toolchain memo": glob.glob(str(cache_dir / "toolchain-*.txt"))}[planted]
    os.truncate(path, 100 << 30)
    result = run_python(program, {"KILN_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    assert "[4. 4.]" in result.stdout
    assert not os.path.exists(path) or os.path.getsize(path) < 1 << 30  # rebuilt


def test_a_planted_toolchain_memo_runs_nothing(tmp_path):
    cache_dir = existing_cache(tmp_path)
    marker = tmp_path / "wrapper-ran"
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\necho ran > {marker}\nexec \"$@\"\n")
    wrapper.chmod(0o755)
    program = "import numpy as np, kiln; print(kiln.compile(lambda x: x + {})(np.ones(2)))"
    first = run_python(program.format(1), {"KILN_CACHE_DIR": str(cache_dir)})
    assert first.returncode == 0, first.stderr
    (memo,) = glob.glob(str(cache_dir / "toolchain-*.txt"))
    text = open(memo).read()
    # The old format took line 1 as compiler flags; the new one must not take any.
    for planted in (f"-wrapper {wrapper}\n" + text,
                    text.replace("mvec 1", f"-wrapper {wrapper}").replace("mvec 0",
                                                                          f"-wrapper {wrapper}"),
                    text + f"-wrapper {wrapper}\n"):
        with open(memo, "w") as file:
            file.write(planted)
        result = run_python(program.format(np.random.rand()), {"KILN_CACHE_DIR": str(cache_dir)})
        assert result.returncode == 0, result.stderr
        assert not marker.exists(), "a planted memo ran a program"


def test_a_symlink_planted_at_the_memo_is_not_followed(tmp_path):
    cache_dir = existing_cache(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    program = "import numpy as np, kiln; print(kiln.compile(lambda x: x + 5)(np.ones(2)))"
    assert run_python(program, {"KILN_CACHE_DIR": str(cache_dir)}).returncode == 0
    (memo,) = glob.glob(str(cache_dir / "toolchain-*.txt"))
    os.remove(memo)
    os.symlink(victim, memo)
    result = run_python(program, {"KILN_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious"
    assert not os.path.islink(memo)  # replaced by a private file of kiln's own


# ---- generated source ----
@pytest.mark.parametrize("payload", [
    "x.py\n#error injected through a file name\n",
    "x.py\\\n#error injected through a line splice",
    "x.py */ #error injected /*",
    "x.py\r#error injected\x00\x7f\u2028",
])
def test_user_text_cannot_inject_code_into_generated_source(payload):
    trace = _kiln.Trace()
    trace.location = payload + ":1"
    x = trace.input("float64", [3])
    compiled = _kiln.compile_graph(trace, [_kiln.sin(x)], [[]], None)  # compiles: not injected
    np.testing.assert_allclose(compiled.run([np.ones(3)])[0], np.sin(np.ones(3)))
    for line in compiled.source.split("\n"):
        assert not line.lstrip().startswith("#error"), line


def test_a_function_defined_in_a_file_with_a_hostile_name_compiles():
    namespace = {"np": np}
    exec(compile("def f(x):\n    return np.cos(x) * 2\n", "evil\n#error injected\n.py", "exec"),
         namespace)
    np.testing.assert_allclose(kiln.compile(namespace["f"])(np.ones(3)), np.cos(1.0) * 2)


# ---- options, unusable directories ----
def test_disk_cache_false_writes_nothing_to_the_cache(fresh_kiln):
    function = kiln.compile(lambda x: np.tan(x) - 1, options={"disk_cache": False})
    np.testing.assert_allclose(function(np.ones(3)), np.tan(1.0) - 1)
    assert not entry_files(fresh_kiln, "*")


@pytest.mark.parametrize("options", ["{'disk_cache': False}", "{'cache_dir': %r}"])
def test_a_process_that_caches_elsewhere_or_not_at_all_leaves_the_default_be(tmp_path, options):
    default, elsewhere = tmp_path / "default", tmp_path / "elsewhere"
    result = run_python(f"""
        import numpy as np, kiln
        options = {options.replace("%r", repr(str(elsewhere)))}
        print(kiln.compile(lambda x: x * 5, options=options)(np.ones(2)))
    """, {"KILN_CACHE_DIR": str(default)})
    assert result.returncode == 0 and "[5. 5.]" in result.stdout, result.stderr
    assert not default.exists()  # the toolchain's memo made it


def test_a_cache_directory_with_a_nul_character_is_an_error(tmp_path):
    # The system calls read the path up to the NUL: kiln used another directory (here tmp/a)
    # than the one named, without a word.
    (tmp_path / "a").mkdir(mode=0o700)
    function = kiln.compile(lambda x: x * 5, options={"cache_dir": f"{tmp_path}/a\x00b"})
    with pytest.raises(ValueError, match="NUL character"):
        function(np.ones(2))
    assert not entry_files(tmp_path / "a", "*")


# /proc itself: root may write it by its mode (access says yes) but can create nothing there.
@pytest.mark.parametrize("directory", ["/proc/kiln-cannot-create-this", "/proc"])
def test_an_unusable_cache_directory_compiles_privately_with_a_warning(directory):
    if directory == "/proc" and not is_root:
        pytest.skip("/proc is root's: refused as not yours (PermissionError) for anyone else")
    before = set(glob.glob("/tmp/kiln-private-*"))
    result = run_python("""
        import numpy as np, kiln
        print(kiln.compile(lambda x: x * 7)(np.ones(2)))
    """, {"KILN_CACHE_DIR": directory, "TMPDIR": None})
    assert result.returncode == 0, result.stderr
    assert "[7. 7.]" in result.stdout
    assert "warning" in result.stderr and "private temporary directory" in result.stderr
    assert set(glob.glob("/tmp/kiln-private-*")) <= before  # removed at exit


@pytest.mark.skipif(not is_root, reason="mounting a tiny file system needs root")
def test_a_full_disk_compiles_privately_with_a_warning_and_leaves_no_half_entry(tmp_path):
    # 64 KiB: the source fits and the linker's object does not (the compiler's own error).
    full = tmp_path / "full"
    full.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=700", "tmpfs", str(full)],
                   check=True)
    try:
        program = """
            import numpy as np, kiln
            def f(x):
                for i in range(40):
                    x = np.sin(x) * 0.5 + np.cos(x[::-1]) * 0.25 + i
                return x
            g = f
            print(np.allclose(kiln.compile(f)(np.ones(16)), g(np.ones(16))))
        """
        for _ in range(2):  # the second finds nothing half made to trip on
            result = run_python(program, {"KILN_CACHE_DIR": str(full / "cache")})
            assert result.returncode == 0, result.stderr[-3000:]
            assert result.stdout.strip() == "True"
            assert "No space left on device" in result.stderr
            assert "private temporary directory" in result.stderr
        assert entry_files(full / "cache", "*") == []
    finally:
        subprocess.run(["umount", str(full)], check=True)


@pytest.mark.parametrize("value", ["garbage", "1e9", "-1", "99999999999999999999999"])
def test_a_bad_cache_size_limit_is_an_error_naming_it(fresh_kiln, monkeypatch, value):
    monkeypatch.setenv("KILN_CACHE_MAX_BYTES", value)
    message = f"KILN_CACHE_MAX_BYTES={re.escape(value)} is not a number of bytes"
    with pytest.raises(ValueError, match=message):
        compile_and_run()
    fresh_kiln.mkdir(exist_ok=True)
    shown = subprocess.run([sys.executable, "-m", "kiln.cache", "show"], capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 2 and re.search(message, shown.stderr), shown.stderr


# ---- stray files in the cache ----
def test_a_file_where_a_shard_belongs_is_removed(fresh_kiln):
    compile_and_run()
    (meta,) = entry_files(fresh_kiln, "meta.txt")
    shard = os.path.dirname(os.path.dirname(meta))
    shutil.rmtree(shard)
    with open(shard, "w") as file:
        file.write("junk")
    kiln.reset()
    np.testing.assert_allclose(compile_and_run(), np.sin(1.0) + 1)
    assert os.path.isdir(shard)
    stray = str(fresh_kiln / "zz")
    for command in ("verify", "clear"):
        with open(stray, "w") as file:
            file.write("junk")
        if command == "verify":
            assert [entry["path"] for entry in kiln.cache.verify(remove=True)] == [stray]
        else:
            assert kiln.cache.clear() == 2  # the entry and the stray file
        assert not os.path.exists(stray)


def test_a_directory_of_the_users_files_named_as_the_cache_keeps_them(tmp_path):
    # KILN_CACHE_DIR set to a project directory by mistake: eviction (its size counted the
    # user's files) removed `go/golang` as an entry, and clear also `ab`, `records` and
    # `toolchain-notes.txt`. Only what kiln made there may be evicted or cleared.
    project = tmp_path / "project"
    user_files = {"ab": "notes", "go/golang/main.go": "x" * 200000, "records/r.txt": "keep",
                  "toolchain-notes.txt": "keep", "go/go.tmp.999999999.x": "keep"}
    for name, text in user_files.items():
        (project / name).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        (project / name).write_text(text)
    result = run_python("""
        import numpy as np, kiln, kiln.cache
        np.testing.assert_array_equal(kiln.compile(lambda x: np.sin(x) + 1.0)(np.ones(3)),
                                      np.sin(np.ones(3)) + 1.0)
        try:
            kiln.cache.clear()
        except ValueError as error:
            print(error)
    """, {"KILN_CACHE_DIR": str(project), "KILN_CACHE_MAX_BYTES": "100000"})
    assert result.returncode == 0, result.stderr
    assert "not kiln's cache" in result.stderr  # the compile's warning: built elsewhere
    assert "not kiln's cache" in result.stdout and "nothing was changed" in result.stdout
    for name, text in user_files.items():
        assert (project / name).read_text() == text, name
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*")
                  if p.is_file()) == sorted(user_files)  # nothing of kiln's was added


def test_a_shard_others_can_write_is_refused_saying_what_to_do(fresh_kiln):
    compile_and_run()
    (meta,) = entry_files(fresh_kiln, "meta.txt")
    os.chmod(os.path.dirname(os.path.dirname(meta)), 0o777)
    kiln.reset()
    with pytest.raises(PermissionError, match="writable by others.*chmod 700 it"):
        compile_and_run()


# ---- killed compiles, size limit, the command ----
def slow_compile_script(tmp_path):
    """A script compiling a function big enough that g++ runs for a while (seconds)."""
    body = " + ".join(f"np.sin(x * {i})" for i in range(1200))
    script = tmp_path / "slow.py"
    script.write_text(f"import numpy as np, kiln\nkiln.compile(lambda x: {body})(np.ones(3))\n")
    return script


def processes_mentioning(text, name=""):
    """The live processes (named `name`, if given) whose command line mentions `text`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                status = open(f"/proc/{pid}/status").read()
                if "State:\tZ" not in status and f"Name:\t{name}" in status:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_killed_compile_leaves_no_compiler_running(tmp_path):
    script = slow_compile_script(tmp_path)
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path / "tmp"))
    process = subprocess.Popen([sys.executable, str(script)], env=env)
    compiler = None
    deadline = time.time() + 60
    while compiler is None and time.time() < deadline and process.poll() is None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                status = open(f"/proc/{pid}/status").read()
            except OSError:
                continue
            if f"PPid:\t{process.pid}\n" in status and "Name:\tg++" in status:
                compiler = int(pid)
        time.sleep(0.02)
    # And its cc1plus: a kill before the driver started it would prove nothing about it.
    while not processes_mentioning(str(tmp_path / "cache"), "cc1plus") and process.poll() is None:
        time.sleep(0.01)
    if compiler is None or process.poll() is not None:
        process.wait()
        pytest.fail("the compile finished before the compiler process was seen")
    process.send_signal(signal.SIGKILL)
    process.wait()
    deadline = time.time() + 10
    while time.time() < deadline and os.path.exists(f"/proc/{compiler}"):
        state = open(f"/proc/{compiler}/status").read() if os.path.exists(
            f"/proc/{compiler}") else ""
        if "State:\tZ" in state:
            break
        time.sleep(0.05)
    alive = os.path.exists(f"/proc/{compiler}") and "State:\tZ" not in open(
        f"/proc/{compiler}/status").read()
    assert not alive, "the compiler outlived the process that started it"
    # Its children too (cc1plus, as: GCC starts them through setpriv), and no temporary file
    # of theirs is left in $TMPDIR (they go beside the entry's, swept by the next build).
    # Each dies when its parent does (pdeathsig): on a loaded machine that chain takes a while.
    deadline = time.time() + 10
    while time.time() < deadline and processes_mentioning(str(tmp_path / "cache")):
        time.sleep(0.05)
    assert not processes_mentioning(str(tmp_path / "cache")), "cc1plus outlived kiln"
    assert os.listdir(tmp_path / "tmp") == []


def test_eviction_never_removes_a_build_in_progress(tmp_path, fresh_kiln, monkeypatch):
    # Another process compiles slowly (its compiler waits 5 s before each kernel's compile, so
    # the build is in progress whatever the machine's speed); this one's compiles enforce a
    # one-byte size limit meanwhile. The entry being built (no meta.txt yet) is in use: never
    # evicted.
    compiler = tmp_path / "slow-g++"
    compiler.write_text(f'#!/bin/sh\ncase "$*" in *kernel*) sleep 5;; esac\n'
                        f'exec {shutil.which("g++")} "$@"\n')
    compiler.chmod(0o755)
    slow = subprocess.Popen([sys.executable, str(slow_compile_script(tmp_path))],
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "KILN_CXX": str(compiler)})
    deadline = time.time() + 60
    while not entry_files(fresh_kiln, "kernel.cpp") and time.time() < deadline:
        time.sleep(0.01)
    monkeypatch.setenv("KILN_CACHE_MAX_BYTES", "1")
    for offset in (1.0, 2.0):
        compile_and_run(offset)
    assert slow.poll() is None, "the slow build ended before the others evicted"
    _, errors = slow.communicate(timeout=300)
    assert slow.returncode == 0, errors


def test_stale_temporary_files_are_cleaned(fresh_kiln):
    compile_and_run()
    (meta,) = entry_files(fresh_kiln, "meta.txt")
    entry = os.path.dirname(meta)
    stale = os.path.join(entry, "kernel.so.tmp.999999999.1234abcd")  # no such process
    open(stale, "w").close()
    kiln.reset()
    compile_and_run(2.0)  # any build cleans what dead builds left
    assert not os.path.exists(stale)


def test_the_cache_stays_under_its_size_limit(tmp_path):
    cache_dir = tmp_path / "cache"
    result = run_python("""
        import numpy as np, kiln
        for i in range(6):
            kiln.compile(lambda x: np.sin(x) * (i + 0.5))(np.ones(2))
    """, {"KILN_CACHE_DIR": str(cache_dir), "KILN_CACHE_MAX_BYTES": "150000"})
    assert result.returncode == 0, result.stderr
    sizes = [os.path.getsize(os.path.join(root, name))
             for root, _, files in os.walk(cache_dir) for name in files]
    assert sum(sizes) <= 150000
    assert 1 <= len(entry_files(cache_dir, "meta.txt")) < 6


def test_python_m_kiln_cache_show_verify_clear(fresh_kiln):
    for offset in (1.0, 2.0):
        compile_and_run(offset)
    env = {"KILN_CACHE_DIR": str(fresh_kiln)}

    def command(*arguments):
        return subprocess.run([sys.executable, "-m", "kiln.cache", *arguments], capture_output=True,
                              text=True, env=dict(os.environ, **env), timeout=60)

    shown = command("show")
    assert shown.returncode == 0 and "entries:   2" in shown.stdout, shown.stdout + shown.stderr
    assert command("verify").returncode == 0
    (object_path, *_) = entry_files(fresh_kiln, "kernel-*.so")
    damaged = open(object_path, "rb").read()[:100]
    os.remove(object_path)  # a new file: this process has the old one mapped
    with open(object_path, "wb") as file:
        file.write(damaged)
    verified = command("verify")
    assert verified.returncode == 1 and "BAD" in verified.stdout
    assert command("verify", "--remove").returncode == 0
    assert "1 of 1 entries verified" in command("verify").stdout
    cleared = command("clear")
    assert cleared.returncode == 0 and "removed 1 entries" in cleared.stdout
    assert not entry_files(fresh_kiln, "*")
