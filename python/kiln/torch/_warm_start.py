"""The torch backend's warm start: what kiln does after Dynamo, skipped in a later process.

A new process traces the model with Dynamo again (that time is Dynamo's own), and then
AOTAutograd's export to ATen (about 1 s for BERT-base; for a training graph the joint trace and
its partition into forward and backward) and kiln's conversion would run again before a
disk-cache hit. Instead, what kiln compiled is recorded in the disk cache
(DiskCache::store_record) under a key of everything that decides it: the FX code Dynamo handed
over, each input's dtype, shape, strides, device and requires_grad, grad mode, kiln's options,
torch's version, the source of this front end and kiln's build. A later process with the same
key reads the record (a private file; a damaged or untrusted record is a miss) and compiles
kiln's graphs from it: disk-cache hits, with no export. `KILN_LOGS=cache` says which graphs
start warm.

- An inference graph that kiln compiled whole: one kiln graph (graph_record: a JSON header of
  how its outputs map to the FX outputs, then kiln's serialized graph, verified as it is read).
- A training graph (an input requires grad) whose forward and backward kiln compiled whole:
  AOTAutograd's own cache entry, holding both graphs' records and the runtime metadata that
  rebuilds its autograd.Function (mutated inputs such as batch norm's running statistics,
  saved tensors, aliasing); the key also holds AOTAutograd's settings and how the inputs share
  memory. _warm_training.py.
"""
import functools
import hashlib
import json
import pathlib

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from .. import _kiln
from ._lowering import CompiledGraph
from ._output_views import InputView

_FORMAT = 2  # 2: mutated inputs' new values in the plan


@functools.lru_cache(maxsize=None)
def _front_end_digest():
    """A digest of this package's source: a changed conversion makes old records unreachable."""
    digest = hashlib.sha256()
    for path in sorted(pathlib.Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def plain_tensor(value):
    """Whether an input is a dense tensor of no subclass: what a record's key can describe."""
    return (isinstance(value, torch.Tensor) and not is_traceable_wrapper_subclass(value)
            and value.layout == torch.strided and not value.is_quantized
            and not value.is_nested)


def record_key(graph_module, example_inputs, options, unsupported_ops, extra=()):
    """The record key of a graph Dynamo hands over; None when the graph is not one kiln
    records (an input that is not a plain tensor, such as a size Dynamo made dynamic).
    `extra`: more fields that decide the record (a training record's)."""
    fields = [f"format {_FORMAT}", torch.__version__, _front_end_digest(), graph_module.code,
              json.dumps(options, sort_keys=True, default=str), unsupported_ops,
              f"grad {torch.is_grad_enabled()}", _global_state(), *extra]
    for value in example_inputs:
        if not plain_tensor(value):
            return None
        fields.append(f"{value.dtype} {tuple(value.shape)} {value.stride()} {value.device} "
                      f"{value.requires_grad}")
    return _kiln.cache_record_key(fields)


def _global_state():
    """Global torch state the ATen graph of one Dynamo graph depends on while its code does
    not show it (Dynamo guards on it, and hands the same code over again): the default dtype of
    factory functions (torch.ones(3)) and autocast outside the graph. Without it a record made
    under float32 answered a call under float64 (float32 results, no error)."""
    return f"default dtype {torch.get_default_dtype()}; autocast " + ", ".join(
        f"{device} {torch.is_autocast_enabled(device)} {torch.get_autocast_dtype(device)}"
        for device in ("cpu", "cuda"))


def _plan_entry(kind, value):
    if kind == "kiln":
        index, dtype = value
        return ["kiln", index, str(dtype).removeprefix("torch.")]
    if kind == "kiln channels-last":  # a training forward's saved activation
        index, dtype, order = value
        return ["kiln channels-last", index, str(dtype).removeprefix("torch."), list(order)]
    if kind == "mutation":  # a mutated input's new value (batch norm's running statistics)
        index, dtype, position = value
        return ["mutation", index, str(dtype).removeprefix("torch."), position]
    if kind == "view":  # an output sharing another's memory
        index, dtype, shape, strides, offset = value
        return ["view", index, str(dtype).removeprefix("torch."), list(shape), list(strides),
                offset]
    if kind == "input":
        return ["input", value]
    if kind == "input view" and not value.places:  # static sizes: the layout is numbers
        return ["input view", value.position, *value.layout]
    if kind == "constant" and (value is None or type(value) in (bool, int, float)):
        return ["constant", value]
    return None  # not recorded


def graph_record(compiled):
    """The bytes that rebuild `compiled` (a CompiledGraph that kept its record) in a later
    process: a JSON header, a newline, kiln's serialized graph; None when it cannot be
    recorded (no record kept, a plan entry a record cannot hold)."""
    if not isinstance(compiled, CompiledGraph) or compiled.record is None:
        return None
    plan = [_plan_entry(kind, value) for kind, value in compiled.plan]
    if any(entry is None for entry in plan):
        return None
    graph, checks, strides = compiled.record
    header = {"format": _FORMAT, "plan": plan, "single": compiled.single, "strides": strides,
              "checks": checks, "tensor_positions": compiled.tensor_positions,
              "device": str(compiled.device), "draws": compiled.draws}
    compiled.record = None  # kept only until recorded
    return json.dumps(header).encode() + b"\n" + graph


def remember(key, compiled, options):
    """Records `compiled` (a CompiledGraph that kept its record) under `key`."""
    record = graph_record(compiled)
    if record is not None:
        store(key, record, options, compiled.name)


def store(key, record, options, name):
    try:
        _kiln.cache_store_record(options, key, record)
    except (OSError, RuntimeError) as error:  # a full disk: the next start is a cold one
        if _kiln.log_enabled("cache"):
            _kiln.log("cache", f"torch graph {name}: no warm-start record ({error})")


def _dtype(name):
    dtype = getattr(torch, name)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a dtype: {name}")
    return dtype


def _plan_from_record(plan):
    entries = []
    for entry in plan:
        kind = entry[0]
        if kind == "kiln":
            entries.append(("kiln", (int(entry[1]), _dtype(entry[2]))))
        elif kind == "kiln channels-last":
            order = tuple(int(axis) for axis in entry[3])
            if sorted(order) != list(range(len(order))):
                raise ValueError(f"not a permutation: {order}")
            entries.append(("kiln channels-last", (int(entry[1]), _dtype(entry[2]), order)))
        elif kind == "mutation":
            entries.append(("mutation", (int(entry[1]), _dtype(entry[2]), int(entry[3]))))
        elif kind == "view":
            entries.append(("view", (int(entry[1]), _dtype(entry[2]),
                                     *(tuple(int(n) for n in item) for item in entry[3:5]),
                                     int(entry[5]))))
        elif kind == "input":
            entries.append(("input", int(entry[1])))
        elif kind == "input view":
            sizes, strides = ([int(extent) for extent in item] for item in entry[2:4])
            entries.append(("input view",
                            InputView(int(entry[1]), sizes, strides, int(entry[4]), {})))
        elif kind == "constant":
            entries.append(("constant", entry[1]))
        else:
            raise ValueError(f"plan entry {kind!r}")
    return entries


def _check_indices(plan, positions, strides, outputs, input_count):
    """A record whose indices do not fit the call is damaged (its key says it fits)."""
    if (len(positions) != len(strides) or any(not 0 <= p < input_count for p in positions)
            or len(set(positions)) != len(positions)):
        raise ValueError("tensor positions")
    for kind, value in plan:
        checked = []  # (index, bound)
        if kind.startswith("kiln") or kind in ("mutation", "view"):
            checked.append((value[0], len(outputs)))
        if kind in ("input", "mutation", "input view"):
            position = (value if kind == "input" else value[2] if kind == "mutation"
                        else value.position)
            checked.append((position, input_count))
        for index, bound in checked:
            if not 0 <= index < max(bound, 1):
                raise ValueError(f"plan index {index}")


def graph_from_record(record, input_count, options, name):
    """The CompiledGraph that graph_record's bytes describe, compiled (a disk-cache hit), for
    a graph of `input_count` inputs. A damaged record raises ValueError (or TypeError,
    KeyError, IndexError, AttributeError): kiln's loader verifies the graph as it reads it."""
    header_bytes, graph = record.split(b"\n", 1)
    header = json.loads(header_bytes)
    if header.get("format") != _FORMAT:
        raise ValueError(f"record format {header.get('format')!r}")
    trace = _kiln.Trace()
    outputs = _kiln.load_trace(trace, graph, [tuple(check) for check in header["checks"]])
    plan = _plan_from_record(header["plan"])
    device = torch.device(header["device"])
    strides = [[int(stride) for stride in item] for item in header["strides"]]
    positions = [int(position) for position in header["tensor_positions"]]
    _check_indices(plan, positions, strides, outputs, input_count)
    return CompiledGraph.from_record(trace, outputs, strides, plan, bool(header["single"]),
                                     positions, device, options, name,
                                     bool(header.get("draws", False)))


RECORD_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def recall(key, example_inputs, options, name):
    """The CompiledGraph recorded under `key`, compiled; None on a miss."""
    record = _kiln.cache_load_record(options, key)
    if record is None:
        return None
    try:
        compiled = graph_from_record(record, len(example_inputs), options, name)
    except RECORD_ERRORS as error:
        if _kiln.log_enabled("cache"):
            _kiln.log("cache", f"torch graph {name}: warm-start record unusable ({error}); "
                      "tracing again")
        return None
    if _kiln.log_enabled("cache"):
        _kiln.log("cache", f"torch graph {name}: warm start from record {key[:16]}")
    return compiled
