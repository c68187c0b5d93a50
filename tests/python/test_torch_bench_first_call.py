"""`python -m kiln.bench.first_call` splits a model's first call by stage, cold and warm: the
cold process exports to ATen, converts and compiles; the warm one, over the cache the cold one
filled, starts from its record (no export, no conversion). Timings are never asserted."""
import os
import subprocess
import sys


def _run(arguments, tmp_path):
    return subprocess.run([sys.executable, "-m", "kiln.bench.first_call", *arguments],
                          cwd=tmp_path, env=dict(os.environ, KILN_CACHE_DIR=str(tmp_path)),
                          capture_output=True, text=True, timeout=600)


def _stages(line):
    words = line.split()
    return dict(zip(words[2::2], (float(value) for value in words[3::2])))


def test_cold_and_warm_lines_name_their_stages(tmp_path):
    completed = _run(["mlp", "--repeat", "1"], tmp_path)
    assert completed.returncode == 0, completed.stderr[-4000:]
    lines = {tuple(line.split()[:2]): line for line in completed.stdout.splitlines()
             if line.startswith("mlp")}
    cold, warm = _stages(lines["mlp", "cold"]), _stages(lines["mlp", "warm"])
    assert {"first", "dynamo", "backend", "export", "table", "convert", "compile",
            "toolchain"} <= set(cold)
    assert {"first", "dynamo", "backend", "recall"} <= set(warm)
    assert not {"export", "table", "convert"} & set(warm)
    assert completed.stdout.startswith("load average")


def test_an_unknown_model_is_a_clear_error(tmp_path):
    completed = _run(["bert_large", "--repeat", "1"], tmp_path)
    assert completed.returncode != 0
    assert "unknown model 'bert_large'" in completed.stderr
