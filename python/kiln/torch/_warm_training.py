"""Warm starts of training graphs: AOTAutograd's own cache entry, kept in kiln's records.

AOTAutograd builds, for each graph it compiles, an entry that rebuilds its autograd.Function
without tracing (AOTAutogradCache, `bundled_autograd_cache`): the forward and backward
compilers' results as OutputCode objects, and the runtime metadata of its wrappers (which
inputs the forward mutates, such as batch norm's running statistics; the tensors saved for the
backward; aliased outputs; ...). PyTorch rebuilds the callable from an entry alone
(deserialize_bundled_cache_entry, what torch's precompile uses).

kiln keeps that entry, not AOTAutogradCache: torch's key leaves the backend out (an Inductor
entry and a kiln entry of one graph share a key), its files are plain pickles in torch's cache
directory, loaded as found, and disk_cache=False does not reach it. So for the compile of a
training graph kiln hooks the two ends of AOTAutogradCache (try_load: no lookup, kiln's record
key; save: the entry goes to kiln's disk cache as a record) and compiles through
SerializableAOTDispatchCompiler, whose OutputCode (KilnOutputCode) keeps kiln's compiled graph
as its warm-start record (_warm_start.graph_record). A later process with the same key reads
the record (a private file, _warm_start.py), unpickles it with an allowlist of the classes an
entry holds (a class outside it makes the record unusable: a miss), rebuilds each kiln graph
from its record (verified as it is read), and calls deserialize_bundled_cache_entry: no joint
export, no partitioning, no ATen conversion.
"""
import contextlib
import dataclasses
import io
import json
import pickle
import time
from unittest import mock

import torch
from torch._functorch import config as functorch_config
from torch._functorch._aot_autograd import aot_autograd_result
from torch._functorch._aot_autograd.autograd_cache import AOTAutogradCache
from torch._functorch._aot_autograd.schemas import (AOTAutogradCacheInfo,
                                                    SerializableAOTDispatchCompiler)
from torch._inductor.output_code import OutputCode

from .. import _kiln
from ._warm_start import (RECORD_ERRORS, graph_from_record, graph_record, plain_tensor, record_key,
                          store)

# The two hooks follow torch 2.13's AOTAutogradCache (try_load returns the compiled function
# and the config; torch 2.11's returns the function alone): on other versions each process
# traces its training graphs again.
_HOOKS_FIT = torch.torch_version.TorchVersion(torch.__version__) >= (2, 13)

# functorch settings kiln sets for a recorded compile (they decide how, not what, is compiled).
_SET_HERE = {"bundled_autograd_cache": True, "enable_autograd_cache": True,
             "force_non_lazy_backward_lowering": True}


class KilnOutputCode(OutputCode):
    """A forward or backward graph kiln compiled, as AOTAutograd's cache entry holds it: the
    compiled callable in this process, its warm-start record once serialized."""

    def __init__(self, compiled, input_count):
        self.compiled = compiled
        self.input_count = input_count
        self.record = None
        self.name = getattr(compiled, "name", "graph")
        self.options = None  # set where a record is rebuilt: that process's options
        self._boxed_call = True  # an instance attribute: wrappers copy __dict__

    def __call__(self, inputs):
        return self.compiled(inputs)

    def prepare_for_serialization(self):
        """Called on the entry's copy: the graph's record replaces the compiled graph."""
        self.record = graph_record(self.compiled)
        if self.record is None:
            raise NotRecordable(f"torch graph {self.name} is not one kiln graph kept for a record")
        self.compiled = None

    def post_compile(self, example_inputs, constants, graph_kwargs):
        if self.compiled is None:
            self.compiled = graph_from_record(self.record, self.input_count, self.options,
                                              self.name)

    def set_triton_bundle(self, triton_bundle):
        pass


class NotRecordable(Exception):
    pass


def _input_description(example_inputs):
    """How the inputs share memory and whether they are leaves: AOTAutograd's wrappers
    (deduplication, synthetic bases, mutations of views) depend on both."""
    first_of_storage, fields = {}, []
    for position, value in enumerate(example_inputs):
        storage = value.untyped_storage()._cdata
        first = first_of_storage.setdefault(storage, position)
        fields.append(f"{first} {value.storage_offset()} {value.is_leaf} {value._is_view()}")
    return ";".join(fields)


def _functorch_settings():
    """AOTAutograd's settings as text; None when one is a callable (a custom pass or
    estimator: what it does cannot be keyed)."""
    settings = {name: value for name, value in functorch_config.save_config_portable().items()
                if name not in _SET_HERE}
    if any(callable(value) for value in settings.values()):
        return None
    return json.dumps(settings, sort_keys=True, default=repr)


def training_key(graph_module, example_inputs, options, unsupported_ops):
    """The record key of a training graph; None when kiln does not record it: a torch whose
    AOTAutogradCache the hooks do not fit, tensors or submodules the graph module holds (not
    inputs: AOTAutograd would lift them), a size Dynamo made dynamic, custom AOTAutograd
    passes, autocast."""
    if (not _HOOKS_FIT
            or any(node.op == "get_attr" for node in graph_module.graph.nodes)
            or any(True for _ in graph_module.children())
            or any(True for _ in graph_module.parameters())
            or any(True for _ in graph_module.buffers())
            or torch._C._is_any_autocast_enabled()):
        return None
    settings = _functorch_settings()
    if settings is None or not all(plain_tensor(value) for value in example_inputs):
        return None
    return record_key(graph_module, example_inputs, options, unsupported_ops, extra=[
        "training", settings, _input_description(example_inputs),
        f"deterministic {torch.are_deterministic_algorithms_enabled()}"])


def serializable(compile_one):
    """An AOTAutograd compiler whose results AOTAutograd's cache entry can hold."""
    def compile_output_code(graph_module, example_inputs):
        compiled = compile_one(graph_module, example_inputs)
        if not getattr(compiled, "_boxed_call", False):  # KilnOutputCode is called boxed
            raise TypeError(f"kiln's compiler returned {compiled!r}, not a boxed callable")
        return KilnOutputCode(compiled, len(example_inputs))
    return SerializableAOTDispatchCompiler(KilnOutputCode, compile_output_code)


@contextlib.contextmanager
def recording(key, options, name):
    """AOTAutograd's compile of one training graph, its cache entry stored as kiln's record
    under `key` (see the module docstring); torch's own AOTAutogradCache is not used."""
    def try_load(mod, args, aot_config, *rest, **kwargs):
        info = AOTAutogradCacheInfo(key, time.time_ns(), forward_symints=[])
        return None, dataclasses.replace(aot_config, cache_info=info)

    def save(cache_key, entry, remote):
        if cache_key == key:
            _store_entry(key, entry, options, name)

    with functorch_config.patch(_SET_HERE), \
            mock.patch.object(AOTAutogradCache, "try_load", staticmethod(try_load)), \
            mock.patch.object(AOTAutogradCache, "save", staticmethod(save)):
        yield


def _store_entry(key, entry, options, name):
    try:
        entry.pre_save()
        _strip(entry)
        with torch.utils._python_dispatch._disable_current_modes():
            record = pickle.dumps(entry)
    except (NotRecordable, pickle.PicklingError, TypeError, AttributeError) as error:
        if _kiln.log_enabled("cache"):
            _kiln.log("cache", f"torch graph {name}: no warm-start record ({error})")
        return
    store(key, record, options, name)


def _strip(entry):
    """Leaves out what a record need not hold: the graphs as text (for TORCH_LOGS) and the
    backward's FX module, which rebuilds by running its Python source (compiled autograd's
    use; on a warm-started graph torch says that it needs AOTAutogradCache off)."""
    for field in ("aot_joint_graph_str", "aot_forward_graph_str", "aot_backward_graph_str",
                  "min_cut_info_str", "serialized_bw_module"):
        setattr(entry, field, None)


# ---- reading an entry back ----------------------------------------------------------------

# The globals an entry's pickle names (resnet18's and an MLP's entries): builtin containers,
# classes of AOTAutograd's metadata and of Dynamo's sources (the entry's AOTConfig names its
# inputs' sources). Classes only, never a function: what unpickling calls builds data.
_ALLOWED = {
    ("builtins", "list"), ("builtins", "set"), ("builtins", "frozenset"),
    ("collections", "OrderedDict"),
    ("collections", "defaultdict"), ("torch", "Size"), ("torch", "device"), ("torch", "Tensor"),
    ("torch._subclasses.functional_tensor", "FunctionalTensor"),
    ("kiln.torch._warm_training", "KilnOutputCode"),
}
_CLASS_MODULES = ("torch._functorch._aot_autograd.", "torch._dynamo.source")


class _EntryUnpickler(pickle.Unpickler):
    """Rebuilds classes only from the allowlist: a record naming anything else (a function,
    os.system) is unusable, never called."""

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        # A class those modules define, by its own name: pickle follows dotted names through
        # attributes ("torch.ctypes.CDLL" of an AOTAutograd module is ctypes.CDLL), and a name
        # a module imported (operator.methodcaller) is another module's.
        if module.startswith(_CLASS_MODULES) and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type) and found.__module__ == module:
                return found
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of an AOTAutograd entry")


def _load_entry(record, options):
    entry = _EntryUnpickler(io.BytesIO(record)).load()
    if (not isinstance(entry, aot_autograd_result.BundledAOTAutogradResult)
            or entry.serialized_bw_module is not None):
        raise ValueError("not an AOTAutograd entry kiln recorded")
    parts = [entry.compiled_fw] + ([entry.compiled_bw] if entry.compiled_bw is not None else [])
    for part in parts:
        if (not isinstance(part.result, KilnOutputCode) or part.result.compiled is not None
                or not isinstance(part.result.record, bytes)):
            raise ValueError("an entry of graphs kiln did not compile")
        part.result.options = options
    return entry


def recall(key, options, name):
    """The callable Dynamo gets for the training graph recorded under `key`; None on a miss."""
    record = _kiln.cache_load_record(options, key)
    if record is None:
        return None
    try:
        entry = _load_entry(record, options)
        compiled = aot_autograd_result.deserialize_bundled_cache_entry(entry)
    except (*RECORD_ERRORS, pickle.UnpicklingError, EOFError, ImportError, AssertionError,
            RuntimeError) as error:  # damaged: a miss, the cold compile follows
        if _kiln.log_enabled("cache"):
            _kiln.log("cache", f"torch graph {name}: warm-start record unusable ({error}); "
                      "tracing again")
        return None
    if _kiln.log_enabled("cache"):
        _kiln.log("cache", f"torch graph {name}: training graphs warm start from record "
                  f"{key[:16]}")
    return torch._dynamo.disable(compiled, reason="do not trace AOT-compiled graph")
