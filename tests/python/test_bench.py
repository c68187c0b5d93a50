"""The benchmark harness and the seed examples stay runnable: `python -m kiln.bench --quick` and
each examples/*.py on small sizes, in fresh processes with a fresh kernel cache. Timings are
never asserted (DESIGN.md section 5); the tables, the JSON and the correctness checks are."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def _run(arguments, tmp_path, timeout):
    environment = dict(os.environ)
    environment["KILN_CACHE_DIR"] = str(tmp_path / "kiln-cache")
    completed = subprocess.run([sys.executable] + arguments, cwd=tmp_path, env=environment,
                               capture_output=True, text=True, timeout=timeout)
    assert completed.returncode == 0, (
        f"{' '.join(arguments)} exited {completed.returncode}\n--- stdout\n"
        f"{completed.stdout[-4000:]}\n--- stderr\n{completed.stderr[-4000:]}")
    return completed.stdout


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One `--quick` run shared by the checks below (it takes most of this file's time)."""
    directory = tmp_path_factory.mktemp("bench")
    output = _run(["-m", "kiln.bench", "--quick", "--json", "out/quick.json"], directory,
                  timeout=300)
    return output, directory / "out" / "quick.json", directory / "out" / "quick.png"


def test_quick_run_prints_the_table(quick_run):
    output, _, _ = quick_run
    assert "workload" in output and "vs NumPy" in output
    assert "speed-up over eager NumPy" in output
    for name in ("sin_cos_0d", "numpy_fn", "kmeans_f64", "kmeans_f32", "softmax", "mlp"):
        assert name in output


def test_quick_run_writes_the_json(quick_run):
    _, json_path, _ = quick_run
    document = json.loads(json_path.read_text())
    assert document["quick"] is True and document["repeat"] == 1
    assert document["baselines"][:2] == ["numpy", "kiln"]
    workloads = {entry["workload"]: entry for entry in document["results"]}
    assert len(workloads) >= 15
    for entry in workloads.values():
        numpy_record = entry["baselines"]["numpy"]
        assert numpy_record["status"] == "ok"
        assert numpy_record["median_seconds"] > 0
        assert numpy_record["speedup"] == pytest.approx(1.0)
        for record in entry["baselines"].values():
            assert record["status"] in ("ok", "FAILED", "ERROR", "skipped")
            if record["status"] != "ok":  # failed results are reported, never timed
                assert "median_seconds" not in record and record["message"]
    # Every kiln workload passes: a FAILED or ERROR kiln result fails this test (and the run).
    failing = [name for name, entry in workloads.items()
               if entry["baselines"].get("kiln", {}).get("status") in ("FAILED", "ERROR")]
    assert not failing, f"kiln FAILED or raised on: {failing}"
    # kiln's warm-cache compile time is measured in a fresh process for a passing workload.
    kiln_records = [entry["baselines"]["kiln"] for entry in workloads.values()
                    if entry["baselines"].get("kiln", {}).get("status") == "ok"]
    assert kiln_records, "kiln passed no workload at all"
    assert any("warm_compile_seconds" in record for record in kiln_records)


def test_quick_run_draws_the_chart(quick_run):  # scripts/setup.sh installs matplotlib
    _, _, png_path = quick_run
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_check_result_fails_a_wrong_answer_and_passes_a_close_one():
    import numpy as np

    from kiln.bench import workloads

    softmax = workloads.BY_NAME["softmax"]
    expected = np.array([[0.25, 0.75]], dtype=np.float32)
    assert workloads.check_result(softmax, expected, expected * (1 + 1e-6))[0]
    ok, message = workloads.check_result(softmax, expected, np.array([[0.25, 0.70]],
                                                                      dtype=np.float32))
    assert not ok and "0.05" in message
    assert not workloads.check_result(softmax, expected, expected[0])[0]  # wrong shape
    integer = workloads.BY_NAME["integer_hash"]
    values = np.array([1, 2, 3])
    assert workloads.check_result(integer, values, values.copy())[0]
    assert not workloads.check_result(integer, values, np.array([1, 2, 4]))[0]


def test_timed_calls_get_new_data_every_call():
    """A baseline that remembered results by input contents must not look fast: consecutive
    timed calls see different data (same shapes), for every workload."""
    import numpy as np

    from kiln.bench import baselines, runner, workloads

    for workload in workloads.WORKLOADS:
        seen = []
        prepared = baselines.Prepared(lambda *arrays: seen.append(arrays))
        sets = [prepared.convert(workload.inputs(True, seed=seed))
                for seed in range(runner.INPUT_SETS)]
        call = runner.rotating(prepared, sets)
        for _ in range(2 * runner.INPUT_SETS):
            call()
        for previous, current in zip(seen, seen[1:]):
            assert [a.shape for a in previous] == [a.shape for a in current]
            assert any(not np.array_equal(a, b) for a, b in zip(previous, current)), workload.name


def test_a_failing_kiln_workload_is_caught():
    """The check above cannot pass silently: a kiln workload that FAILED is reported by
    failed_entries, and makes the exit status non-zero (another library's failure does not)."""
    from kiln.bench import __main__ as bench_main

    results = [{"workload": "softmax", "baselines": {"numpy": {"status": "ok"},
                                                     "kiln": {"status": "FAILED"},
                                                     "jax": {"status": "ERROR"}}},
               {"workload": "gelu", "baselines": {"kiln": {"status": "ok"}}}]
    assert bench_main.failed_entries(results) == ["softmax/kiln", "softmax/jax"]


def test_all_workloads_and_the_background_load(tmp_path):
    from kiln.bench import load, workloads

    assert workloads.select("all") == workloads.select("") == list(workloads.WORKLOADS)
    output = _run(["-m", "kiln.bench", "--quick", "--no-probe", "--workloads", "all",
                   "--background-load", "--json", "loaded.json"], tmp_path, timeout=300)
    assert "beside a CPU-bound process" in output
    document = json.loads((tmp_path / "loaded.json").read_text())
    assert len(document["results"]) == len(workloads.WORKLOADS)
    kiln_records = [entry["baselines"]["kiln"] for entry in document["results"]]
    assert all(record["loaded_median_seconds"] > 0 for record in kiln_records)
    with load.background_load() as process:
        assert process.poll() is None
    assert process.poll() is not None  # stopped on leaving the block


def test_unknown_workload_and_cuda_are_clear_errors(tmp_path):
    environment = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"))
    for arguments, expected in ((["--workloads", "no_such_thing"], "unknown workload"),
                                (["--device", "cuda"], "no usable GPU here")):
        completed = subprocess.run([sys.executable, "-m", "kiln.bench"] + arguments,
                                   cwd=tmp_path, env=environment, capture_output=True,
                                   text=True, timeout=60)
        assert completed.returncode == 2
        assert expected in completed.stderr


@pytest.mark.parametrize("script", ["sin_cos.py", "numpy_fn.py", "kmeans.py", "torch_sin_cos.py",
                                    "torch_resnet18.py", "torch_bert.py"])
def test_examples_say_when_there_is_no_gpu_for_device_cuda(script, tmp_path):
    """CI has no GPU: --device cuda is refused with kiln's reason before anything runs
    (`scripts/gpu-check run` runs each with --device cuda on a GPU)."""
    completed = subprocess.run([sys.executable, str(EXAMPLES / script), "--device", "cuda"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache")))
    assert completed.returncode == 2, completed.stderr
    assert "argument --device: cuda: no usable GPU here" in completed.stderr


@pytest.mark.parametrize("script, arguments", [
    ("sin_cos.py", ["--calls", "200", "--size", "50000", "--repeat", "2"]),
    ("numpy_fn.py", ["--rows", "48", "--columns", "32", "--repeat", "2"]),
    ("kmeans.py", ["--points", "50000", "--repeat", "2"]),
])
def test_example_runs_all_modes_and_agrees(script, arguments, tmp_path):
    output = _run([str(EXAMPLES / script)] + arguments, tmp_path, timeout=180)
    for mode in ("default", "reduce-overhead", "max-autotune"):
        assert f"mode={mode}" in output
    assert "speed-up" in output and "compile" in output
    assert "DIFFER" not in output and "agree" in output


# The PyTorch model benchmark (`--models`, kiln/bench/models.py) and its examples. Its --quick run
# compiles with eager and kiln only (Inductor's first compiles take minutes on 2 cores).
@pytest.fixture(scope="module")
def models_quick_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bench-models")
    output = _run(["-m", "kiln.bench", "--models", "--quick", "--json", "out/models.json"],
                  directory, timeout=900)  # 8 models' compiles: minutes on a loaded machine
    return output, json.loads((directory / "out" / "models.json").read_text())


def test_models_quick_run_measures_every_case(models_quick_run):
    output, document = models_quick_run
    assert "vs Inductor" in output and "1st call (cold)" in output and "machine:" in output
    assert document["quick"] is True and document["backends"] == ["eager", "kiln"]
    cases = {entry["case"]: entry["variants"] for entry in document["results"]}
    assert set(cases) == {"mlp", "resnet18", "bert_1x8", "bert_8x128", "gpt2_1x512", "mlp_train",
                          "resnet18_train", "sin_cos_0d"}
    for name, variants in cases.items():
        assert variants["eager"]["status"] == "ok"
        for variant, record in variants.items():
            assert record["status"] in ("ok", "FAILED", "ERROR")
            assert record["status"] == "ok" or record["message"]  # never a silent failure
            if record["status"] == "ok":
                assert record["median_seconds"] > 0 and record["first_call_seconds"] > 0
    assert set(cases["sin_cos_0d"]) == {"eager", "dynamo", "kiln default", "kiln reduce-overhead"}


def test_models_quick_run_measures_a_warm_start(models_quick_run):
    _, document = models_quick_run
    (probes,) = document["warm_starts"].values()  # the smoke run probes its first case
    assert set(probes) == {"kiln_cold", "kiln_warm", "eager", "aot_eager"}
    for probe in probes.values():
        assert probe.get("first_call_seconds", 0) > 0, probe


def test_models_options_are_checked(tmp_path):
    environment = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"))
    for arguments, expected in ((["--workloads", "no_such_model"], "unknown model case"),
                                (["--modes", "fastest"], "--modes: unknown fastest"),
                                (["--baselines", "numba"], "--baselines: unknown numba")):
        completed = subprocess.run([sys.executable, "-m", "kiln.bench", "--models"] + arguments,
                                   cwd=tmp_path, env=environment, capture_output=True,
                                   text=True, timeout=120)
        assert completed.returncode == 2, completed.stderr
        assert expected in completed.stderr


@pytest.mark.parametrize("script, arguments", [
    ("torch_sin_cos.py", ["--calls", "200", "--size", "50000", "--repeat", "2",
                          "--backends", "kiln"]),
    ("torch_resnet18.py", ["--batch", "1", "--image", "32", "--repeat", "2",
                           "--backends", "kiln"]),
    ("torch_bert.py", ["--layers", "1", "--hidden", "64", "--shapes", "1x8", "--repeat", "2",
                       "--backends", "kiln"]),
])
def test_torch_example_runs_and_agrees(script, arguments, tmp_path):
    output = _run([str(EXAMPLES / script)] + arguments, tmp_path, timeout=300)
    assert "eager" in output and "kiln" in output and "first call" in output
    assert "DIFFER" not in output and "agree" in output


def test_dynamic_shapes_quick_run_agrees_for_every_length():
    from kiln.bench import dynamic_shapes
    lines = []
    rows = dynamic_shapes.run([24, 17, 40], ["kiln"], quick=True, repeat=1, log=lines.append)
    assert [length for length, _ in rows] == [24, 17, 40] and len(lines) == 3
    for _, row in rows:
        first, steady, error = row["kiln"]
        assert first > 0 and steady > 0 and error < 1e-4


def test_the_kernel_timeline_splits_each_call_into_host_and_gpu_parts():
    # kiln.bench.cuda_kernels' analysis of a profile (runs on the GPU machine): two calls, the
    # first with overlapping kernels and an idle gap, the second with one kernel
    from kiln.bench.cuda_kernels import timeline
    parts = timeline([(0, 100), (200, 300)], [(10, 20), (15, 30), (40, 50), (210, 290), (95, 120)])
    assert parts == {"wall": 100.0, "before first kernel": 10.0, "busy": 55.0,
                     "idle between kernels": 5.0, "after last kernel": 30.0}
