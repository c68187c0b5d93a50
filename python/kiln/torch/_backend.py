"""kiln as a torch.compile backend: Dynamo captures, AOTAutograd hands over functionalised ATen
forward/backward (or inference) graphs, kiln compiles each.

    torch.compile(model, backend="kiln", mode="max-autotune", options={"num_threads": 2})

`mode` and `options` are kiln's words (kiln.list_mode_options(), kiln.list_options()).
"""
import contextlib
import functools
import itertools
import operator

import torch
from torch._dispatch.python import enable_python_dispatcher
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import aot_export_joint_simple
from torch._guards import TracingContext, detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.experimental.proxy_tensor import make_fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from .. import _kiln
from .._config import config
from . import _warm_training
from ._aten_table import TABLE
from ._eager_refusals import refuses as eager_refuses
from ._fast_paths import FAST_PATH_DECOMPOSITIONS
from ._bucketize import BUCKETIZE_DECOMPOSITIONS
from ._cdist import CDIST_DECOMPOSITIONS
from ._addbmm import ADDBMM_DECOMPOSITIONS
from ._replication_pad import REPLICATION_PAD_DECOMPOSITIONS
from ._trilinear import TRILINEAR_DECOMPOSITIONS
from ._embedding_renorm import EMBEDDING_RENORM_DECOMPOSITIONS
from ._value_checks import VALUE_CHECK_DECOMPOSITIONS, assert_quantile_ranges
from ._foreach import foreach_decompositions
from ._fresh_in_place import functionalize_fresh_in_place
from ._lowering import CompiledGraph
from ._mutated_saves import partition_reading_inputs_before_mutation
from ._in_place_casts import uncastable_write
from ._overlapping_writes import overlapping_write
from ._partition import compile_graph_module
from ._saved_layouts import report_output_strides, saved_outputs
from ._warm_start import recall, record_key, remember

_graph_numbers = itertools.count()


def decompositions():
    """The decomposition table kiln asks AOTAutograd for: PyTorch's Core ATen decompositions,
    except for the ops kiln's conversion table lowers itself (its own lowering fuses better).
    A new dict each call, of one table built once (building it takes 0.05-0.1 s: PyTorch
    materialises its lazy Core ATen table in full, and every compilation asks)."""
    return dict(_decompositions())


# Core ATen ops (Inductor lowers them itself, so the Core table leaves them whole) that kiln has
# no entry for, where PyTorch's own decomposition is made of ops kiln converts: without it,
# group norm (wav2vec2, diffusion UNets), F.normalize and clip_grad_norm_'s vector norms, ELU
# and instance norm ran in eager PyTorch between kiln's parts.
_CONVERTIBLE_DECOMPOSITIONS = [
    torch.ops.aten.native_group_norm,
    torch.ops.aten.linalg_vector_norm,
    torch.ops.aten.elu,
    torch.ops.aten._native_batch_norm_legit.no_stats,
    torch.ops.aten.addmv,  # (matrix-vector products with a bias: mv, mul, add)
]


def core_aten_table():
    """PyTorch's Core ATen decompositions of aten's ops. core_aten_decompositions() is a lazy
    table whose first read also collects the CompositeImplicitAutograd ops of every other
    namespace (quantized's packed-parameter accessors, mkldnn's queries, _test's): 0.1 s of each
    process's first compilation, for entries the trace never looks up, since the dispatcher
    decomposes such an op itself before it reaches the tracer."""
    table = core_aten_decompositions()
    aten_entries = getattr(table, "decomp_table", None)  # (a dict in PyTorch 2.5+, unread)
    return dict(aten_entries if isinstance(aten_entries, dict) else table)


@functools.lru_cache(maxsize=None)
def _decompositions():
    table = core_aten_table()
    table.update(get_decompositions(_CONVERTIBLE_DECOMPOSITIONS))
    table.update(FAST_PATH_DECOMPOSITIONS)
    table.update(foreach_decompositions())  # PyTorch has none: Inductor lowers them itself
    table.update(EMBEDDING_RENORM_DECOMPOSITIONS)
    table.update(CDIST_DECOMPOSITIONS)
    table.update(BUCKETIZE_DECOMPOSITIONS)
    table.update(TRILINEAR_DECOMPOSITIONS)
    table.update(REPLICATION_PAD_DECOMPOSITIONS)
    table.update(ADDBMM_DECOMPOSITIONS)
    table.update(VALUE_CHECK_DECOMPOSITIONS)
    return {op: _unless_eager_refuses(op, function) for op, function in table.items()
            if op not in TABLE}


def _unless_eager_refuses(op, decomposition):
    """The decomposition, except for arguments of a dtype eager's kernel refuses (hardswish of
    integers): then the op stays whole (NotImplemented), runs in eager PyTorch and raises."""
    def decompose(*args, **kwargs):
        if eager_refuses(op, args, kwargs):
            return NotImplemented
        return decomposition(*args, **kwargs)
    return functools.wraps(decomposition)(decompose)


@contextlib.contextmanager
def _onednn_off_while_tracing():
    """PyTorch's LSTM decomposition takes oneDNN's one-layer kernel (aten.mkldnn_rnn_layer) for
    CPU tensors whenever oneDNN is enabled: kiln has no such op (each layer ran in eager PyTorch
    between kiln graphs), and AOTAutograd fails on a training graph holding it (Inductor's and
    aot_eager's too). With oneDNN off while AOTAutograd traces, the decomposition is each step's
    matmuls and pointwise work, which kiln converts. Only the trace: calls run as they would."""
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)


def _settings(mode, options):
    options = dict(options or {})
    options.setdefault("mode", mode or "default")
    if config.cache_dir is not None:
        options.setdefault("cache_dir", str(config.cache_dir))
    _kiln.check_options(options)  # unsupported_ops too: one list of options, kiln.list_options()
    return options, options.pop("unsupported_ops", "eager")


def _needs_autograd(example_inputs):
    """Whether the graph's results may need a backward: grad mode is on and an input requires
    grad. Dynamo guards on both (grad mode globally, requires_grad per tensor input)."""
    return torch.is_grad_enabled() and any(
        isinstance(value, torch.Tensor) and value.requires_grad for value in example_inputs)


def _plain_inference_graph(graph_module, example_inputs):
    """The functionalised ATen inference graph when calling it needs none of AOTAutograd's
    runtime wrappers (no input is mutated, no output aliases an input, flat inputs and outputs);
    None otherwise. Such a graph is called directly: a call costs Dynamo's frame and kiln's run,
    not AOTAutograd's bookkeeping as well (a third of the call of a tiny function)."""
    fake_mode = detect_fake_mode(example_inputs)
    if fake_mode is None or any(node.op == "get_attr" for node in graph_module.graph.nodes):
        return None  # tensors held by the module (not inputs): their mutations would be lost
    if any(is_traceable_wrapper_subclass(value) for value in example_inputs):
        return None  # tensor subclasses are unwrapped by AOTAutograd's wrappers
    # Dynamo hands its inputs over as real tensors: the trace needs them fake, with the sizes
    # Dynamo made dynamic symbolic (as AOTAutograd fakes them: Dynamo's symbolic context of the
    # tensor), the rest static.
    tracing_context = TracingContext.try_get()

    def fake(value):
        if not isinstance(value, torch.Tensor) or isinstance(value, FakeTensor):
            return value
        context = tracing_context.tensor_to_context.get(value) if tracing_context else None
        if context is None:
            return fake_mode.from_tensor(value, static_shapes=True)
        return fake_mode.from_tensor(value, symbolic_context=context,
                                     source=context.tensor_source, trace=False)
    inputs = tuple(fake(value) for value in example_inputs)
    # The export traces under no_grad; Dynamo traced under the caller's grad mode, which a graph
    # may rely on without a node saying so (torch.func.grad's autograd.grad, under grad mode
    # on, gave zeros under no_grad): each node runs in the mode Dynamo traced it in.
    grad_mode = torch.is_grad_enabled()

    def run_recording_lines(*args):  # node by node, so each ATen node keeps the user's line
        with torch.fx.traceback.preserve_node_meta(), torch.set_grad_enabled(grad_mode):
            return torch.fx.Interpreter(graph_module).run(*args)

    try:
        with _onednn_off_while_tracing():
            graph = _traced_once(run_recording_lines, inputs, fake_mode)
            if graph is None:
                graph = aot_export_joint_simple(run_recording_lines, inputs, trace_joint=False,
                                                decompositions=decompositions())
    except Exception:  # noqa: BLE001  mutations, aliasing, anything else: AOTAutograd's
        return None    # general path handles it (or reports the real error)
    placeholders = [node for node in graph.graph.nodes if node.op == "placeholder"]
    return graph if len(placeholders) == len(inputs) else None  # e.g. effect tokens added


def _traced_once(run, inputs, fake_mode):
    """The ATen graph of `run` (kiln's decompositions) in one trace, where functionalising it
    would change nothing: static sizes, no op that mutates but on the graph's own fresh tensors
    (_fresh_in_place.py), no constant held by the graph, every op one kiln converts, no output
    that shares memory with an input or another output. None
    otherwise (aot_export_joint_simple then traces it twice: once for the metadata, once
    functionalised; 0.6 s of BERT-base's first call, against 0.28 s for this trace)."""
    def static(value):
        sizes = value.shape if isinstance(value, torch.Tensor) else [value]
        return not any(isinstance(size, torch.SymInt) for size in sizes)
    if not all(static(value) for value in inputs):
        return None
    with enable_python_dispatcher(), fake_mode:
        graph = make_fx(run, decomposition_table=decompositions(), record_module_stack=True)(*inputs)
    storages = [StorageWeakRef(value.untyped_storage()) for value in inputs
                if isinstance(value, torch.Tensor)]
    graph = functionalize_fresh_in_place(graph, storages, fake_mode, TABLE)
    for node in graph.graph.nodes:
        if node.op == "get_attr":
            return None
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and node.target is not operator.getitem and (
                node.target not in TABLE or getattr(schema, "is_mutable", False)):
            return None
        if node.op == "output":
            results = []
            torch.fx.node.map_arg(node.args, results.append)
            for result in results:
                value = result.meta.get("val")
                if not isinstance(value, torch.Tensor):
                    return None
                storage = StorageWeakRef(value.untyped_storage())
                if storage in storages:
                    return None
                storages.append(storage)
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return graph


def _donate_no_buffers():
    """Tells AOTAutograd that no saved tensor is donated to the backward being compiled: kiln's
    backward never reuses its inputs' memory (Inductor's writes into those in bw_donated_idxs).
    AOTAutograd refuses backward(retain_graph=True) where buffers are donated; its lazy
    backward compile empties the list when the first backward retains the graph, but a
    recorded graph's backward is compiled at once (_warm_training.py)."""
    context = TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context is not None else None
    if metadata is not None and metadata.bw_donated_idxs:
        metadata.bw_donated_idxs.clear()  # in place: the inner metadata (subclasses) shares it


def _unboxed(compiled):
    """Dynamo calls a backend's result with unpacked arguments; kiln's callables take a list."""
    def run(*args):
        return compiled(list(args))
    return run


def backend(graph_module, example_inputs, mode=None, options=None):
    """The torch.compile backend (also registered under the name "kiln")."""
    kiln_options, unsupported_ops = _settings(mode, options)
    number = next(_graph_numbers)
    assert_quantile_ranges(graph_module)
    refused, why = overlapping_write(graph_module), "whose operands overlap the written tensor"
    if refused is None:
        refused, why = uncastable_write(graph_module), "of a dtype the written tensor cannot hold"
    if refused is not None:  # eager raises its error (kiln computed a value)
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"{refused.target}: an in-place write {why} (eager torch "
                      "refuses it): runs eagerly")
        return graph_module.forward
    if not _needs_autograd(example_inputs):
        key = record_key(graph_module, example_inputs, kiln_options, unsupported_ops)
        recorded = (recall(key, example_inputs, kiln_options, f"inference{number}")
                    if key else None)
        if recorded is not None:
            return _unboxed(recorded)
        inference = _plain_inference_graph(graph_module, example_inputs)
        if inference is not None:
            compiled = compile_graph_module(inference, example_inputs, kiln_options,
                                            unsupported_ops, f"inference{number}",
                                            keep_record=key is not None)
            if key is not None:
                remember(key, compiled, kiln_options)
            return _unboxed(compiled)

    training_key = None  # a training graph kiln records for a warm start (_warm_training.py)
    if _needs_autograd(example_inputs):
        training_key = _warm_training.training_key(graph_module, example_inputs, kiln_options,
                                                   unsupported_ops)
    if training_key is not None:
        recorded = _warm_training.recall(training_key, kiln_options, f"training{number}")
        if recorded is not None:
            return recorded

    def compiler(kind):
        def compile_one(aten_graph, inputs):
            forward = kind == "forward"
            if kind == "backward":
                _donate_no_buffers()
            compiled = compile_graph_module(aten_graph, inputs, kiln_options, unsupported_ops,
                                            f"{kind}{number}",
                                            free_layouts=saved_outputs() if forward else None,
                                            keep_record=training_key is not None)
            if forward and isinstance(compiled, CompiledGraph) and not compiled.symbolic:
                report_output_strides(compiled.output_strides())
            return compiled
        # A recorded training graph's compilers return OutputCode: AOTAutograd's cache entry
        # holds them (_warm_training.py).
        return _warm_training.serializable(compile_one) if training_key else compile_one

    # keep_inference_input_mutations: an input the graph mutates that needs no gradient (batch
    # norm's running statistics, in training too) is copied into after kiln's graph, one
    # _foreach_copy_ per dtype, rather than by AOTAutograd's wrapper one copy_ each (60 a
    # resnet18 step).
    compile_with_aot_autograd = aot_autograd(
        fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"), decompositions=decompositions(),
        partition_fn=partition_reading_inputs_before_mutation, keep_inference_input_mutations=True)
    with _onednn_off_while_tracing():
        if training_key is None:
            return compile_with_aot_autograd(graph_module, example_inputs)
        with _warm_training.recording(training_key, kiln_options, f"training{number}"):
            return compile_with_aot_autograd(graph_module, example_inputs)
