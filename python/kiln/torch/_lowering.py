"""An ATen FX graph as one kiln graph, and the compiled result as a callable on torch tensors.

Inputs are read in place (torch tensor -> NumPy view of the same memory -> kiln), results come
back as torch tensors that own kiln's memory (NumPy array -> torch.from_numpy): no copy either
way. A graph is compiled for the strides of its example inputs; a call with other strides
compiles (once) for those.
"""
import operator
import re

import torch
from torch._subclasses.fake_tensor import FakeTensor

from .. import _kiln
from .._device import torch_current_stream
from .._result_pool import ResultPool
from . import (_aten_antialias, _aten_attention, _aten_bags,  # noqa: F401 (fill the table)
               _aten_convolution, _aten_diagonals, _aten_gradients, _aten_linear,
               _aten_pointwise, _aten_pooling, _aten_random, _aten_sampling, _aten_slice_writes,
               _aten_scans, _aten_sorting, _aten_special, _aten_structure,
               _value_checks)
from ._aten_table import (METADATA_ASSERTIONS, TABLE, LoweringContext, Unconvertible, cast,
                          kiln_dtype, meta, tensor_dtype_supported)
from ._input_mutations import donations, split_mutations, write_mutations
from ._node_support import static_sizes, unsupported_reason
from ._size_checks import SizeChecks
from ._graph_devices import graph_devices, host_outputs
from ._graph_values import (float_arithmetic, is_float_arithmetic, is_scalar_input,
                            tensor_constant)
from ._output_plan import inverse_permutation, output_plan
from ._output_views import output_view
from ._size_symbols import SizeSymbols

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def source_line(node):
    """The user's file:line that produced an FX node (the innermost frame Dynamo recorded)."""
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    if not frames:
        return ""
    path, line = frames[-1]
    return f"{path}:{line}"


def describe(node):
    where = source_line(node)
    return f"{node.target}" + (f" at {where}" if where else "")


class UnconvertibleNode(Exception):
    def __init__(self, node, reason):
        super().__init__(f"{describe(node)}: {reason}" if node is not None else reason)
        self.node, self.reason = node, reason


def _map_arguments(value, converted):
    if isinstance(value, torch.fx.Node):
        return converted[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_map_arguments(item, converted) for item in value)
    if isinstance(value, dict):
        return {key: _map_arguments(item, converted) for key, item in value.items()}
    return value


def _check_result(context, node, result):
    """The entry's result against the shape and dtype torch recorded; casts a dtype that the
    entry left to be cast, rejects a shape that differs (a bug in the entry, named)."""
    expected = meta(node)
    if isinstance(expected, (tuple, list)):
        if not isinstance(result, tuple) or len(result) != len(expected):
            raise UnconvertibleNode(node, "the entry returned the wrong number of results")
        return tuple(_check_result_one(context, node, item, want)
                     for item, want in zip(result, expected))
    return _check_result_one(context, node, result, expected)


def _check_result_one(context, node, result, expected):
    if expected is None:  # a result not asked for
        if result is not None:
            raise UnconvertibleNode(node, "kiln computed a result torch does not ask for (a "
                                          "bug in kiln's conversion table)")
        return None
    shape = tuple(int(extent) if context.sizes is None else context.sizes.size(extent)
                  for extent in expected.shape)
    if tuple(result.shape) != shape:
        raise UnconvertibleNode(node, f"kiln's result has shape {tuple(result.shape)}, torch's "
                                       f"{shape} (a bug in kiln's conversion table)")
    kind = kiln_dtype(expected.dtype)
    return result if result.dtype == kind else _kiln.astype(result, kind)


def trace_graph(graph_module, on_refusal=None, symbolic=False, free_layouts=None,
                fixed_sizes=None):
    """Records the FX graph in a new kiln Trace. Returns (trace, (outputs, output plan,
    single, draws)): the plan says per FX output whether it is kiln output k (with its torch dtype),
    graph input k passed through or viewed (_output_views.py), or a constant; `draws`: the
    graph draws random numbers, keyed by a last input each call draws (_aten_random.py).

    Without `on_refusal`, a node kiln cannot convert raises UnconvertibleNode. With it, the
    node is reported (`on_refusal(node, reason)`) and the trace goes on as if its result were
    a graph input: one pass finds every node that must stay in eager PyTorch.

    `symbolic`: the graph's dynamic sizes (SymInts) become kiln size symbols (one trace for
    every size); an entry that needs a number for one raises (TypeError, _kiln.Unsupported).

    `free_layouts`: a slice of the FX outputs whose strides kiln may choose (_saved_layouts.py).
    `fixed_sizes`: {sympy symbol: number} for the symbols that are numbers in this trace."""
    trace = _kiln.Trace()
    context = LoweringContext(trace)
    if symbolic:
        context.sizes = SizeSymbols(trace, fixed_sizes)
        for node in graph_module.graph.nodes:
            for lengths in _aten_attention.equal_lengths(node):
                context.sizes.assume_equal(*lengths)
    converted = {}
    placeholders = [node for node in graph_module.graph.nodes if node.op == "placeholder"]
    if symbolic:
        context.sizes.bind_input_sizes([extent for node in placeholders
                                    if isinstance(meta(node), torch.Tensor)
                                    for extent in meta(node).shape])
    # The placeholders first, wherever a partition put them: the random key (draw_key) is the
    # trace's last input, as each call passes it (CompiledGraph._run)
    for node in [*placeholders, *(node for node in graph_module.graph.nodes
                                  if node.op != "placeholder")]:
        if node.op == "output":  # a tolerant trace is only for its refusals: no outputs
            for result in node.all_input_nodes:
                size = context.sizes is not None and isinstance(meta(result), torch.SymInt)
                if (result.op != "placeholder" and not size
                        and not isinstance(meta(result), torch.Tensor)):
                    # a number torch reads (`.item()` of a tensor: _graph_values.py); a size
                    # the graph computes from its symbols is an output of its own (below)
                    _refuse(result, UnconvertibleNode(result, "a number the graph returns to "
                                                      "torch"), on_refusal)
            if context.sizes is not None and on_refusal is None:  # (each part checks its own)
                try:
                    context.sizes.check_bound([converted.get(p) for p in placeholders])
                except Unconvertible as error:
                    raise UnconvertibleNode(None, str(error)) from None
            try:
                plan = None if on_refusal else output_plan(
                    context, node, converted, placeholders, free_layouts, context.mutations)
            except Unconvertible as error:
                raise UnconvertibleNode(None, str(error)) from None
            return trace, None if on_refusal else (
                *plan, context.random_key is not None, context.sizes and context.sizes.conditions)
        try:
            if node.op == "placeholder":
                if context.sizes is None or not isinstance(meta(node), torch.SymInt):
                    converted[node] = _input(context, node)
                # (a size argument is converted where an op reads it: size arithmetic reads
                # its own expression, which may be a whole input dimension's symbol)
                continue
            if node.op == "get_attr":
                context.trace.location = source_line(node)
                converted[node] = tensor_constant(context, graph_module, node)
                continue
            if node.op != "call_function":
                raise UnconvertibleNode(node, f"FX node kind {node.op}")
            if node.target in METADATA_ASSERTIONS:
                continue
            if _is_input_mutation(node, placeholders):
                context.mutations.append((node, _mutated_value(context, node, converted)))
                continue
            if context.sizes is not None and isinstance(meta(node), torch.SymInt):
                # size arithmetic (sym_size, mul, ...): its expression in the input symbols
                converted[node] = context.sizes.size(meta(node))
                continue
            for operand in node.all_input_nodes:
                if operand not in converted:  # refused before: its result comes from PyTorch
                    converted[operand] = _input(context, operand)
            if is_scalar_input(node):
                # a Python float Dynamo passes in as a 0-d tensor (dynamic=True): the ops that
                # compute with the number read that tensor as their operand
                converted[node] = converted[node.args[0]]
                continue
            if is_float_arithmetic(node):
                converted[node] = float_arithmetic(context, node,
                                                   _map_arguments(node.args, converted))
                continue
            converted[node] = _lower(context, node, converted)
        except Unconvertible as error:  # an input's size or size arithmetic (entries name theirs)
            _refuse(node, UnconvertibleNode(node, str(error)), on_refusal)
        except (UnconvertibleNode, ValueError, TypeError, IndexError, _kiln.Unsupported) as error:
            _refuse(node, error, on_refusal)
    raise UnconvertibleNode(None, "the graph has no output node")


def _refuse(node, error, on_refusal):
    """Raise `error` (as UnconvertibleNode, naming the node), or in a tolerant trace report
    `node` (an input kiln cannot read is not reported: it refuses its users)."""
    if on_refusal is None:
        if isinstance(error, UnconvertibleNode):
            raise error
        raise UnconvertibleNode(node, f"kiln refused it: {error}") from error
    if node.op != "placeholder":
        on_refusal(node, error.reason if isinstance(error, UnconvertibleNode) else
                   f"kiln refused it: {error}")


def _is_input_mutation(node, placeholders):
    """AOTAutograd's epilogue for an input the graph mutates (keep_inference_input_mutations:
    batch norm's running statistics): copy_(input, new value), its result unused or returned
    (a static key-value cache's length, `cumulative_length.add_(n)`, which the first call's
    graph also returns: copy_ returns its input, which the output plan passes through)."""
    return (node.target is torch.ops.aten.copy_.default
            and all(user.op == "output" for user in node.users)
            and isinstance(node.args[0], torch.fx.Node) and node.args[0] in placeholders)


def _mutated_value(context, node, converted):
    """The new value of a mutated input, a kiln output the call copies into the input."""
    target, source = meta(node.args[0]), node.args[1]
    if not isinstance(source, torch.fx.Node) or source not in converted:
        raise UnconvertibleNode(node, "a copy into an input of what kiln does not compute")
    if tuple(meta(source).shape) != tuple(target.shape):
        raise UnconvertibleNode(node, "a copy into an input that broadcasts")
    try:
        return cast(converted[source], target.dtype)
    except Unconvertible as error:
        raise UnconvertibleNode(node, str(error)) from None


def _input(context, node):
    trace, sizes = context.trace, context.sizes
    value = meta(node)
    if isinstance(value, (int, float, bool)) and node.op == "placeholder":
        return value  # a size the graph was specialised for (_dynamic_sizes.py)
    if sizes is not None and isinstance(value, torch.SymInt) and node.op == "placeholder":
        return sizes.size(value)
    if not isinstance(value, torch.Tensor):
        what = ("a graph input" if node.op == "placeholder" else
                f"the result of {node.target} (run in eager PyTorch)")
        raise UnconvertibleNode(node, f"{what} is not a tensor")
    kind = kiln_dtype(value.dtype)
    if not tensor_dtype_supported(value):
        raise UnconvertibleNode(node, f"kiln has no {value.dtype} {value.layout} tensors on "
                                      f"{value.device}")
    if not static_sizes(value) or (sizes is None and not all(
            type(extent) is int for extent in value.shape)):
        raise UnconvertibleNode(node, "a size that depends on the data")
    trace.location = source_line(node)
    return trace.input(kind, [extent if sizes is None else sizes.size(extent)
                              for extent in value.shape])


def _lower(context, node, converted):
    context.trace.location = source_line(node)
    context.original = node.meta.get("original_aten")
    args = _map_arguments(node.args, converted)
    kwargs = _map_arguments(node.kwargs, converted)
    if node.target is operator.getitem:
        return args[0][args[1]]
    refusal = unsupported_reason(node)
    if refusal is not None:
        raise UnconvertibleNode(node, refusal)
    lowering = TABLE[node.target]
    try:
        result = lowering(context, node, *args, **kwargs)
    except Unconvertible as error:
        raise UnconvertibleNode(node, str(error)) from None
    return _check_result(context, node, result)


def _element_strides(tensor):
    """kiln's stride spec of a torch tensor: [] when contiguous, else its element strides."""
    return [] if tensor.is_contiguous() else list(tensor.stride())


def as_torch(array, dtype):
    """A torch tensor owning a kiln result array; a bfloat16 result comes as uint16 bits."""
    tensor = torch.from_numpy(array)
    return tensor.view(torch.bfloat16) if dtype == torch.bfloat16 else tensor


_NOT_YET = object()
_KEYS = 2 ** 63 - 1  # a random key is drawn from [0, _KEYS)


class CompiledGraph:
    """An FX graph compiled by kiln. Called with a list of torch tensors (AOTAutograd's boxed
    convention: `_boxed_call`), returns a list of torch tensors."""

    def __init__(self, graph_module, example_inputs, options, name="graph", symbolic=False,
                 free_layouts=None, keep_record=False, fixed_sizes=None):
        devices = graph_devices(graph_module)
        self._setup(graph_module, options, name,
                    torch.device(devices.pop()) if len(devices) == 1 else torch.device("cpu"),
                    [position for position, node in enumerate(
                        node for node in graph_module.graph.nodes if node.op == "placeholder")
                     if isinstance(meta(node), torch.Tensor)])
        self.symbolic = symbolic  # dynamic sizes stay size symbols (trace_graph)
        self.fixed_sizes = fixed_sizes  # but these (trace_graph)
        # Outputs whose strides kiln chooses: with static sizes.
        self.free_layouts = free_layouts if not symbolic else None
        # keep_record: (graph bytes, checks, input strides) of the compile, for a warm start
        # in a later process (_warm_start.py).
        self._keep_record = keep_record and not symbolic
        self.record = None
        if self.on_cuda:  # outputs torch computes on the CPU beside the GPU's (graph_devices)
            self._host_outputs = host_outputs(graph_module)
            self._keep_record = self._keep_record and not self._host_outputs
        self._traced = None
        if symbolic:  # traced now (an entry may refuse a symbol); compiled on the first call,
            self._traced = self._trace()  # whose real tensors say their strides
            self._set_plan(*self._traced[1][1:3])
            self.draws = self._traced[1][3]
            self.size_checks = SizeChecks(graph_module, self._traced[1][4])
            self.compiled = _NOT_YET
        else:
            self.compiled = self._compile(example_inputs)

    def _setup(self, graph_module, options, name, device, tensor_positions):
        # An instance attribute: wrappers (functools.wraps) copy __dict__, not class attributes.
        self._boxed_call = True
        self.graph_module = graph_module
        self.options = dict(options, device="cuda") if device.type == "cuda" else options
        self.name = name
        self.device = device
        self.on_cuda = device.type == "cuda"
        self.tensor_positions = tensor_positions
        self._host_scalars = None  # _run: positions of CPU tensors a GPU graph reads
        self._host_outputs = ()  # __call__: positions of CPU tensors a GPU graph returns
        self.symbolic, self.fixed_sizes = False, None
        self.size_checks = ()  # SizeChecks of the calls' sizes (symbolic graphs)
        self.past_conditions = None  # what runs calls past the size conditions, else eager
        self.layouts = {}  # input strides -> Compiled
        self._output_pool = None  # the ResultPool of the last call's compiled graph
        self._output_dtypes = self._output_orders = None  # by kiln output, from the plan
        self._lazy_positions = None  # _resolved: inputs with torch's conjugate or negative bit
        self.draws = False  # a last input, the random key, drawn per call (_aten_random.py)

    @classmethod
    def from_record(cls, trace, outputs, strides, plan, single, tensor_positions, device,
                    options, name, draws=False):
        """A graph compiled from a warm-start record (_warm_start.py): kiln's traced graph,
        with no FX graph behind it."""
        self = cls.__new__(cls)
        self._setup(None, options, name, device, tensor_positions)
        self.free_layouts, self._keep_record, self.record = None, False, None
        self._set_plan(plan, single)
        self.draws = draws
        self.compiled = self._compile_traced(trace, outputs, strides)
        return self

    def _trace(self):
        traced, self._traced = self._traced, None
        return traced or trace_graph(self.graph_module, symbolic=self.symbolic,
                                     free_layouts=self.free_layouts,
                                     fixed_sizes=self.fixed_sizes)

    def _compile(self, inputs):
        inputs = [inputs[position] for position in self.tensor_positions]
        strides = [_element_strides(tensor) for tensor in inputs]
        key = tuple(tuple(item) for item in strides)
        found = self.layouts.get(key)
        if found is not None:
            return found
        if self.graph_module is None:  # Dynamo guards strides: a new layout is a new graph
            raise RuntimeError(f"kiln: torch graph {self.name}, loaded from a warm-start record, "
                               f"was called with input strides {strides} it was not traced for")
        self._note_input_layouts(inputs)
        trace, (outputs, plan, single, self.draws, _) = self._trace()
        self._set_plan(plan, single)
        if self._keep_record and outputs:
            self.record = (*_kiln.serialize_trace(trace, outputs), strides)
        return self._compile_traced(trace, outputs, strides, inputs)

    def _compile_traced(self, trace, outputs, strides, inputs=None):
        if not outputs:  # only inputs and constants come out: nothing for kiln to run
            compiled = None
        else:
            compiled = _kiln.compile_graph(trace, outputs, strides, self.options,
                                           donated=donations(len(outputs), self, inputs))
            if _kiln.log_enabled("perf"):
                _kiln.log("perf", f"torch graph {self.name}: {compiled.op_count} ops, "
                          f"{compiled.kernel_count} kernels, compiled in "
                          f"{compiled.compile_seconds * 1e3:.1f} ms")
        self.layouts[tuple(tuple(item) for item in strides)] = compiled
        return compiled

    def _note_input_layouts(self, inputs):
        """The placeholders' recorded values get the strides this compile is for, where the
        example inputs are fake tensors with other strides (AOTAutograd restrides the backward's
        saved activations to the forward's, not the graph's records): entries that choose by
        layout read them (max-pool's gradient of a channels-last input)."""
        placeholders = [node for node in self.graph_module.graph.nodes if node.op == "placeholder"]
        for position, value in zip(self.tensor_positions, inputs):
            node = placeholders[position]
            recorded = meta(node)
            if (isinstance(value, FakeTensor) and isinstance(recorded, torch.Tensor)
                    and value.stride() != recorded.stride()):
                node.meta["val"] = value

    def _set_plan(self, plan, single):
        self.plan, self.single = plan, single
        self._output_dtypes = self._output_orders = None
        # Every FX output is kiln's output of its position: a call returns kiln's results.
        self.results_are_outputs = all(
            kind in ("kiln", "kiln channels-last") and value[0] == position
            for position, (kind, value) in enumerate(plan))
        # What a call does with the plan, decided once: per FX output (0, kiln output),
        # (1, input position), (2, constant), (3, kiln output read as a number), (4, (kiln
        # output, shape, strides, offset)) for a view of another output, or (5, a view made
        # at the call's sizes: _output_views.py); and the inputs kiln's outputs update in place.
        self._outputs = [(0, value[0]) if kind in ("kiln", "kiln channels-last") else
                         (1, value) if kind == "input" else
                         (3, value[0]) if kind == "kiln number" else
                         (4, (value[0], *value[2:])) if kind == "view" else
                         (5, value) if kind in ("input view", "output view") else (2, value)
                         for kind, value in plan if kind != "mutation"]
        self._mutations = [(value[0], value[2]) for kind, value in plan if kind == "mutation"]
        self._copied_mutations, self._in_place = self._mutations, ()  # split_mutations
        self._output_pool = None  # its results are this plan's

    def _resolved(self, args):
        """`args` with the tensors torch marks conjugated or negated (z.conj(), z.conj().imag:
        views whose memory holds the values unconjugated, un-negated) made real: kiln reads
        memory, and read them as their negatives. Which inputs those are is found on the first
        call: Dynamo guards the bits, so a graph's calls all have the same ones (checking every
        call cost 0.24 us a tensor)."""
        if self._lazy_positions is None:
            self._lazy_positions = [
                position for position in self.tensor_positions
                if args[position].is_neg() or args[position].is_conj()]
        if not self._lazy_positions:
            return args
        args = list(args)
        for position in self._lazy_positions:
            args[position] = args[position].resolve_conj().resolve_neg()
        return args

    def __call__(self, args):
        if checks := self.size_checks:
            past = checks.past_condition(args)
            if past and self.past_conditions is not None:
                return self.past_conditions(args)
            if outside := past or checks.below_two(args):
                return self._run_eagerly(args, outside)
        inputs = self._resolved(args)  # what kiln reads; `args` what the plan returns or updates
        if self.compiled is _NOT_YET:
            self.compiled = self._compile(inputs)
        compiled = self.compiled
        results = [] if compiled is None else self._run(compiled, inputs)
        if self.results_are_outputs and len(results) == len(self.plan) and not self._host_outputs:
            return results  # (a runtime check's outputs come after the plan's: the loop drops them)
        outputs = [results[value] if kind == 0 else args[value] if kind == 1 else
                   int(results[value]) if kind == 3 else output_view(results, *value) if kind == 4
                   else value(args, results) if kind == 5 else value
                   for kind, value in self._outputs]
        if self._mutations:
            write_mutations(self._copied_mutations, self._in_place, self._lazy_positions, args,
                            inputs, results)
        for position in self._host_outputs:
            outputs[position] = outputs[position].cpu()
        return outputs

    def _run_eagerly(self, args, outside):
        """The FX graph in eager PyTorch: sizes the size symbols do not stand for."""
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"torch graph {self.name} runs in eager PyTorch for "
                      f"{outside}")
        outputs = self.graph_module(*args)
        return [outputs] if self.single else list(outputs)

    def _run(self, compiled, args, recompiled=False):
        """Inputs read in place, results written into pooled tensors (kiln/_result_pool.py:
        reused once nothing holds them, the caller given detached aliases); on CUDA the work
        queued on torch's current stream, torch's TF32 flags applying. A graph with dynamic
        sizes returns kiln's arrays (device arrays, or NumPy's on the CPU). A tiny graph's call
        is mostly this function: it is kept short (sin + cos of a 0-d tensor on the CPU:
        __call__ 3.4 -> 2.5 us)."""
        tensors = [args[position] for position in self.tensor_positions]
        if self.draws:  # this call's random key, from torch's generator (torch.manual_seed)
            tensors.append(torch.randint(_KEYS, (), dtype=torch.int64, device=self.device))
        if self.on_cuda:
            if self._host_scalars is None:  # graph_devices: CPU inputs, found once
                self._host_scalars = [k for k, tensor in enumerate(tensors) if not tensor.is_cuda]
            for k in self._host_scalars:
                tensors[k] = tensors[k].to(self.device, non_blocking=True)
        pool = self._output_pool
        try:
            if pool is None or pool.compiled is not compiled:
                if self.symbolic:
                    return self._run_symbolic(compiled, tensors)
                pool = self._output_pool = self._result_pool(compiled)
                self._in_place, self._copied_mutations = split_mutations(self, compiled)
            addresses, results = pool.take_all()
            if self.on_cuda:
                compiled.run_tensors(tensors, addresses, torch_current_stream(torch, self.device),
                                     torch.backends.cuda.matmul.allow_tf32,
                                     torch.backends.cudnn.allow_tf32)
            else:
                compiled.run_tensors(tensors, addresses)
        except ValueError as error:  # other strides than compiled for: that layout's graph
            if "strides" not in str(error) or recompiled:
                raise
            return self._run(self._compile(args), args, recompiled=True)
        return results

    def _output_dtype(self, index):
        """The torch dtype of kiln output `index` (the plan's; None for a runtime check's)."""
        if self._output_dtypes is None:
            self._output_dtypes = dict(value[:2] for kind, value in self.plan if kind in (
                "kiln", "kiln channels-last", "kiln number", "mutation", "view"))
            self._output_orders = {value[0]: value[2] for kind, value in self.plan
                                   if kind == "kiln channels-last"}
        return self._output_dtypes.get(index)

    def _output_order(self, index):
        """The permutation a call returns kiln output `index` through (a channels-last
        activation in its logical order), or None."""
        self._output_dtype(index)
        return self._output_orders.get(index)

    def _result_pool(self, compiled):
        in_place = {index for index, _ in compiled.in_place_outputs}
        specs = [None if index in in_place else
                 (shape, self._output_dtype(index), self._output_order(index))
                 for index, shape in enumerate(compiled.output_shapes)]
        return ResultPool(torch, compiled, specs, self.device)

    def _run_symbolic(self, compiled, tensors):
        """Results as torch tensors in the plan's layouts, as _run's pooled ones."""
        if not self.on_cuda:
            results = [as_torch(result, self._output_dtype(index))
                       for index, result in enumerate(compiled.run(tensors, cpu_tensors=True))]
        else:
            arrays = compiled.run([tensor.detach() for tensor in tensors],
                                  stream=torch_current_stream(torch, self.device))
            # bfloat16 leaves as float16 bits (the CUDA Array Interface has no bfloat16)
            results = [torch.as_tensor(result, device=self.device) for result in arrays]
            results = [result if dtype is None else result.view(dtype) for result, dtype in
                       zip(results, map(self._output_dtype, range(len(results))))]
        orders = [self._output_order(index) for index in range(len(results))]
        return [result if order is None else result.permute(order)
                for result, order in zip(results, orders)]

    def output_strides(self):
        """The strides of each FX output as calls return them (None: not a tensor)."""
        results = next(node for node in self.graph_module.graph.nodes if node.op == "output").args[0]
        results = [results] if self.single else list(results)
        strides = []
        for (kind, value), result in zip(self.plan, results):
            tensor = meta(result) if isinstance(result, torch.fx.Node) else None
            if not isinstance(tensor, torch.Tensor):
                strides.append(None)
            elif kind in ("input", "view", "input view", "output view"):
                strides.append(tuple(tensor.stride()))
            elif kind == "kiln channels-last":  # any permutation of a row-major result
                stored = [tensor.shape[axis] for axis in inverse_permutation(value[2])]
                strides.append(tuple(torch.empty(stored, device="meta").permute(value[2]).stride()))
            else:
                strides.append(tuple(torch.empty(tensor.shape, device="meta").stride()))
        return strides

    @property
    def kernel_count(self):
        return sum(c.kernel_count for c in self.layouts.values() if c is not None)
