"""The torch backend's warm start (kiln/torch/_warm_start.py, _warm_training.py): a second
process with the same disk cache compiles an inference graph from its record, without
AOTAutograd's export, and gets eager PyTorch's results and runtime checks; a training step
starts warm too, with the cold process's losses, gradients and batch-norm statistics; a damaged
or foreign record or a changed input is a miss."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from kiln import _kiln

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


def read_record(cache, record):
    """A record's bytes, as kiln reads them (after its key, size and checksum)."""
    return _kiln.cache_load_record({"cache_dir": str(cache)}, record.name)


def write_record(cache, record, data):
    """Stores `data` as the record, with a header that matches: damage kiln did itself."""
    _kiln.cache_store_record({"cache_dir": str(cache)}, record.name, data)


def test_a_damaged_record_is_a_miss(tmp_path):
    run(tmp_path)
    (record,) = (tmp_path / "records").iterdir()
    header, graph = read_record(tmp_path, record).split(b"\n", 1)
    write_record(tmp_path, record, header + b"\n" + graph[: len(graph) // 2])  # truncated graph
    damaged = run(tmp_path)
    assert "warm-start record unusable" in damaged
    write_record(tmp_path, record, b"not json\n" + graph)
    assert "warm-start record unusable" in run(tmp_path)
    fields = json.loads(header)
    fields["tensor_positions"] = [99] * len(fields["tensor_positions"])  # past the inputs
    write_record(tmp_path, record, json.dumps(fields).encode() + b"\n" + graph)
    assert "warm-start record unusable (tensor positions)" in run(tmp_path)


# Two graphs of the same inputs; the results are checked against eager PyTorch.
TWO_GRAPHS = r"""
import torch, kiln.torch
f = lambda x, y: x * 2.5 + y
g = lambda x, y: x - y * 3
x, y = torch.arange(4.0), torch.ones(4)
with torch.no_grad():
    for function in (f, g):
        torch.testing.assert_close(torch.compile(function, backend="kiln")(x, y), function(x, y))
print("ok")
"""


def run_two_graphs(cache):
    result = subprocess.run(
        [sys.executable, "-c", TWO_GRAPHS], capture_output=True, text=True, timeout=600,
        env={**os.environ, "KILN_CACHE_DIR": str(cache), "KILN_LOGS": "cache"})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_an_altered_or_swapped_record_is_refused_and_rewritten(tmp_path):
    import struct
    run_two_graphs(tmp_path)
    records = sorted((tmp_path / "records").iterdir())
    assert len(records) == 2
    # A constant of f's graph altered in place (2.5 -> 3.5): the record's checksum differs.
    altered = 0
    for record in records:
        data = record.read_bytes()
        new = data.replace(struct.pack("<d", 2.5), struct.pack("<d", 3.5))
        record.write_bytes(new)
        altered += new != data
    assert altered == 1
    log = run_two_graphs(tmp_path)
    assert "refused: the record does not match its key, size and checksum" in log
    assert log.count("warm start from record") == 1  # g's, not altered
    assert run_two_graphs(tmp_path).count("warm start from record") == 2  # f's written again
    # Each graph's record under the other's key.
    first, second = (record.read_bytes() for record in records)
    records[0].write_bytes(second)
    records[1].write_bytes(first)
    swapped = run_two_graphs(tmp_path)
    assert swapped.count("refused: the record does not match") == 2
    assert "warm start from record" not in swapped


def test_no_records_without_the_disk_cache(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace('backend="kiln")',
                                              'backend="kiln", options={"disk_cache": False})')],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "KILN_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "records").exists()


# Training warm starts (kiln/torch/_warm_training.py): three SGD steps of a model through
# kiln, the losses, gradients, parameters and buffers saved to OUT. With FORBID_EXPORT,
# AOTAutograd's compile raises: only a warm start can compile the graph. MODEL=bn: a
# convolution, batch norm in train mode (its running statistics are inputs the forward
# mutates) and a residual add.
TRAIN_SCRIPT = r"""
import os, torch, kiln.torch
from kiln.torch import _backend

if os.environ.get("FORBID_EXPORT"):
    def refuse(*args, **kwargs):
        raise AssertionError("AOTAutograd's compile on a warm start")
    _backend.aot_autograd = refuse

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.skip = torch.nn.Conv2d(3, 8, 1)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)) + self.skip(x))
        return self.fc(h.mean((2, 3)))

torch.manual_seed(0)
if os.environ["MODEL"] == "bn":
    model, x = Block(), torch.randn(4, 3, 8, 8)
else:
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    x = torch.randn(8, 32)
target = torch.randint(0, 10, (x.shape[0],))
# One thread: on a busy machine kiln gives the libraries only the free cores (thread_budget.h),
# and oneDNN's gradient sums split by thread: two processes' runs would differ in their last bits.
compiled = torch.compile(model.train(), backend="kiln", options={"num_threads": 1})
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses, grads = [], []
for step in range(3):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(compiled(x), target)
    loss.backward()
    losses.append(loss.detach())
    grads.append({name: p.grad.clone() for name, p in model.named_parameters()})
    optimizer.step()
torch.save({"losses": losses, "grads": grads, "state": model.state_dict()}, os.environ["OUT"])
print("ok")
"""


def run_training(cache, out, model, **env):
    result = subprocess.run(
        [sys.executable, "-c", TRAIN_SCRIPT], capture_output=True, text=True, timeout=600,
        env={**os.environ, "KILN_CACHE_DIR": str(cache), "KILN_LOGS": "cache",
             "MODEL": model, "OUT": str(out), **env})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def assert_same_training(cold, warm):
    import torch
    cold, warm = torch.load(cold), torch.load(warm)
    for a, b in zip(cold["losses"], warm["losses"], strict=True):
        assert torch.equal(a, b)
    for a, b in zip(cold["grads"], warm["grads"], strict=True):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert cold["state"].keys() == warm["state"].keys()
    for name, value in cold["state"].items():
        assert torch.equal(value, warm["state"][name]), name


@pytest.mark.parametrize("model", ["mlp", "bn"])
def test_training_step_starts_warm_without_the_export(tmp_path, model):
    cache = tmp_path / "cache"
    cold = run_training(cache, tmp_path / "cold.pt", model)
    assert "warm start from record" not in cold
    warm = run_training(cache, tmp_path / "warm.pt", model, FORBID_EXPORT="1")
    assert "training graphs warm start from record" in warm
    assert_same_training(tmp_path / "cold.pt", tmp_path / "warm.pt")
    if model == "bn":  # the running statistics moved, identically (assert_same_training)
        import torch
        state = torch.load(tmp_path / "warm.pt")["state"]
        assert state["bn.num_batches_tracked"].item() == 3
        assert not torch.equal(state["bn.running_mean"], torch.zeros(8))


def test_a_damaged_or_foreign_training_record_is_a_miss(tmp_path):
    import pickle
    cache = tmp_path / "cache"
    run_training(cache, tmp_path / "cold.pt", "mlp")
    (record,) = (cache / "records").iterdir()
    data = read_record(cache, record)
    write_record(cache, record, data[: len(data) // 2])  # truncated
    damaged = run_training(cache, tmp_path / "damaged.pt", "mlp")
    assert "warm-start record unusable" in damaged
    assert_same_training(tmp_path / "cold.pt", tmp_path / "damaged.pt")

    class Foreign:  # a pickle that would run a command if it were unpickled freely
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'ran'}",))
    write_record(cache, record, pickle.dumps(Foreign()))
    foreign = run_training(cache, tmp_path / "foreign.pt", "mlp")
    assert "warm-start record unusable" in foreign and "system" in foreign
    assert not (tmp_path / "ran").exists()
    assert_same_training(tmp_path / "cold.pt", tmp_path / "foreign.pt")


@pytest.mark.parametrize("name", [
    "torch.ctypes.CDLL",  # a dotted name: pickle follows it through the module's attributes
    "partial",            # a class the module imported: functools', callable with anything
])
def test_a_training_record_names_only_classes_its_modules_define(name):
    import io
    import pickle
    from kiln.torch import _warm_training
    module = "torch._functorch._aot_autograd.utils"
    # GLOBAL module name, then REDUCE with ("/nonexistent.so",) as CDLL's or partial's call
    data = (b"\x80\x04\x8c" + bytes([len(module)]) + module.encode() + b"\x8c"
            + bytes([len(name)]) + name.encode() + b"\x93\x8c\x10/nonexistent.so\x85R.")
    with pytest.raises(pickle.UnpicklingError, match="not part of an AOTAutograd entry"):
        _warm_training._EntryUnpickler(io.BytesIO(data)).load()
