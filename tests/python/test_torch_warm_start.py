"""The torch backend's warm start (kiln/torch/_warm_start.py): a second process with the same
disk cache compiles an inference graph from its record, without AOTAutograd's export, and gets
eager PyTorch's results and runtime checks; a damaged record or a changed input is a miss."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

# One process: a small model with an embedding (whose index check must survive the record),
# layer norm, GELU and a residual add, compiled under no_grad and compared with eager. With
# FORBID_EXPORT, AOTAutograd's export raises: only a warm start can compile the graph.
SCRIPT = r"""
import os, sys, torch, kiln.torch
from kiln.torch import _backend

if os.environ.get("FORBID_EXPORT"):
    def refuse(*args, **kwargs):
        raise AssertionError("AOTAutograd export on a warm start")
    _backend.aot_export_joint_simple = refuse

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(50, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, ids):
        h = self.norm(self.embedding(ids))
        return h + torch.nn.functional.gelu(self.linear(h))

device = os.environ.get("DEVICE", "cpu")
torch.manual_seed(0)
model = Model().eval().to(device)
compiled = torch.compile(model, backend="kiln")
length = int(os.environ.get("LENGTH", "7"))
ids = torch.randint(0, 50, (2, length), device=device)
with torch.no_grad():
    torch.testing.assert_close(compiled(ids), model(ids))
    try:
        compiled(torch.full((2, length), 60, device=device))
        compiled(ids)  # on the GPU a run's checks are raised by the next run
    except IndexError as error:
        print("index error:", str(error).splitlines()[0])
print("ok")
"""


def run(cache, **env):
    """Runs SCRIPT in a fresh process with `cache` as kiln's disk cache; its output."""
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600,
        env={**os.environ, "KILN_CACHE_DIR": str(cache), "KILN_LOGS": "cache", **env})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("ok")
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A cache directory after one cold process."""
    cache = tmp_path_factory.mktemp("kiln_cache")
    cold = run(cache)
    assert "warm start from record" not in cold
    assert "index error:" in cold
    return cache


def test_second_process_starts_warm_without_the_export(warm_cache):
    records = list((pathlib.Path(warm_cache) / "records").iterdir())
    assert len(records) == 1
    assert records[0].stat().st_mode & 0o777 == 0o600
    warm = run(warm_cache, FORBID_EXPORT="1")
    assert "warm start from record" in warm
    assert "index error:" in warm  # the embedding's bounds check came back with the graph


def test_another_input_shape_is_another_record(warm_cache):
    other = run(warm_cache, LENGTH="9")
    assert "warm start from record" not in other


def test_a_damaged_record_is_a_miss(tmp_path):
    run(tmp_path)
    (record,) = (tmp_path / "records").iterdir()
    data = record.read_bytes()
    header, graph = data.split(b"\n", 1)
    record.write_bytes(header + b"\n" + graph[: len(graph) // 2])  # truncated graph
    damaged = run(tmp_path)
    assert "warm-start record unusable" in damaged
    record.write_bytes(b"not json\n" + graph)
    assert "warm-start record unusable" in run(tmp_path)
    fields = json.loads(header)
    fields["tensor_positions"] = [99] * len(fields["tensor_positions"])  # past the inputs
    record.write_bytes(json.dumps(fields).encode() + b"\n" + graph)
    assert "warm-start record unusable (tensor positions)" in run(tmp_path)


def test_no_records_without_the_disk_cache(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace('backend="kiln")',
                                              'backend="kiln", options={"disk_cache": False})')],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "KILN_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "records").exists()
