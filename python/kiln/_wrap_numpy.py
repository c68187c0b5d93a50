"""kiln.wrap_numpy: an unchanged NumPy function over GPU arrays and torch tensors, with no copy.

    step = kiln.wrap_numpy(kmeans_labels)       # written for NumPy arrays
    labels = step(points, means)                # torch CUDA tensors (or CuPy arrays) in and out

The function is traced with NumPy's semantics once per signature (each array argument's dtype,
shape and strides; every other argument's value, a list's, dict's or object's by a copy of its
contents: kiln/_static_keys.py) and compiled for CUDA. A Python float or int argument whose value
changes between calls (a learning rate, a step count) is a 0-d input from its first change on, as
in kiln.compile, unless the trace needs its value (then it stays static). Array arguments are the
positional and keyword arguments that export __cuda_array_interface__ (torch CUDA tensors, CuPy and
Numba device arrays) or DLPack on a CUDA device (JAX arrays), and are read in place; results are
new arrays of the first array argument's library (CuPy arrays over kiln's memory for CuPy inputs,
JAX arrays over it by DLPack for JAX inputs; for torch inputs, tensors torch allocates, which kiln
writes into and reuses once the caller has dropped them, kiln/_result_pool.py); a result NumPy
returns as an argument itself or a view of one (or of another result) is that array or a view of
its memory, laid out as NumPy's (kiln/_device_results.py). The work is queued
on that argument's current stream and the call does not wait for the GPU. DLPack arguments (JAX)
are exported for kiln's stream, which their producer makes wait for their writes, and kept until
kiln's reads are done; a consumer of the results (JAX's from_dlpack) names its own stream, which
waits for kiln's work. NumPy arrays among the arguments are copied in.

A graph break (a value the trace cannot know: `if x.sum() > 0`, float(x), .item()) splits the
function as kiln.compile does (kiln._compile): the graph so far runs on the device arrays and
only the value Python asks for is copied to the host; tracing goes on, and from then on every
call of that signature traces again (its graphs compiled once each). The data stays on the GPU.
A break the trace cannot continue past (a NumPy function kiln does not follow), or a function
whose breaks would compile more than SEGMENT_LIMIT graphs, runs as NumPy on host copies of the
arrays, its results copied back to the device (a RuntimeWarning says so once per function).
An argument the function assigns into (`x *= 2`, `x[mask] = 0`) gets its new value, as NumPy's
caller sees it (torch tensors and CuPy arrays; JAX arrays are immutable: a TypeError).

Gradients: when a torch tensor argument requires grad (and grad mode is on), the call goes
through torch.compile with kiln's backend, as torch.compile runs NumPy code: Dynamo traces the
NumPy calls as torch ops, AOTAutograd derives the backward, and kiln compiles the forward and
backward graphs for the tensors' device. The function must then trace whole (a graph break is
an error naming it: across a break, torch would drop the gradient), and an in-place update of a
value its gradient reads (`y = np.exp(x); y += 1`) is an error saying how to write it, as
torch's autograd refuses it.

torch CPU tensors (without gradients) run the function compiled for the CPU (kiln.compile) on
NumPy views of their memory; the results are torch tensors over kiln's arrays.
"""
import functools
import importlib
import re
import sys
import warnings

import numpy as np

from . import _kiln, _numpy_tracer, _pytree, _random_state
from ._arguments import DYNAMIC_DTYPES, dynamic_number
from ._compile import compile as compile_for_host
from ._config import config
from ._device_array_kinds import (_as_library_array, _is_device_array, _layout, _library_of,
                                  _stream_of)
from ._device_results import assembled, on_device_of, return_specs, write_back
from ._graph_breaks import GraphBreakSignal, raise_taken_signal, signals_raised
from ._library_calls import HostTorchCall, JaxCall, TorchCall, host_call, jax_importer
from ._environment import Environment
from ._numpy_names import with_numpy_names
from ._retrace import SEGMENT_LIMIT, NeedsStatic, Segments, _SegmentLimit, _TraceContext, held_output
from ._static_keys import TOO_LARGE, immutable, static_key
from ._tracing import location_of, with_loop_capture


def _environment_values(environment):
    """The current values of the globals and closure cells `environment` reads (None: unset),
    as kiln.compile's GuardedCache reads them."""
    values = []
    for holder, name, _ in environment.reads:
        values.append(holder.get(name) if isinstance(holder, dict) else getattr(holder, name, None))
    for cell in environment.cells or ():
        values.append(cell.cell_contents if _pytree.cell_holds(cell) else None)
    return values


def _environment_key(environment):
    """The part of a signature the environment's values decide (no arrays among them)."""
    return tuple(static_key(v) for v in environment)


def _host_copy(value):
    """A NumPy copy of an array argument (kiln._wrap_numpy._run_on_host)."""
    library = type(value).__module__.split(".")[0]
    if isinstance(value, np.ndarray):
        return value.copy()
    if library == "torch":
        return value.detach().cpu().numpy()
    if library == "cupy":
        return value.get()
    return np.array(value)  # JAX arrays and other producers of __array__


def _torch_cuda_tensors(args):
    """torch, when every argument is a torch CUDA tensor; else None."""
    torch = sys.modules.get("torch")
    if torch is None or not args:
        return None
    for value in args:
        if not isinstance(value, torch.Tensor) or not value.is_cuda:
            return None
    return torch


def _torch_entry(fn):
    """`fn` as a function of torch tensors for torch.compile to trace (as
    torch._dynamo.external_utils.wrap_numpy makes one), with a code object of its own: Dynamo
    keeps its compiled frames and recompile count per code object, and one shared by every
    wrapped function would reach Dynamo's recompile limit after a few of them."""
    torch = sys.modules["torch"]
    tree_map_only = importlib.import_module("torch.utils._pytree").tree_map_only

    def call_numpy(*args, **kwargs):
        args, kwargs = tree_map_only(torch.Tensor, lambda t: t.numpy(), (args, kwargs))
        return tree_map_only(np.ndarray, torch.as_tensor, fn(*args, **kwargs))
    name = re.sub(r"\W", "_", getattr(fn, "__name__", "fn"))
    call_numpy.__code__ = call_numpy.__code__.replace(co_name=f"wrap_numpy_{name}")
    return call_numpy


def _torch_tensors(torch, values):
    """The torch tensors among `values`, in tuples, lists and dicts too (pytree's order)."""
    tensors = []
    _leaves_mapped(torch.Tensor, tensors.append, list(values))
    return tensors


def _leaves_mapped(kinds, convert, tree):
    """`tree` with its leaves of `kinds` converted: tuples, lists and dicts walked here (torch's
    tree_map_only cost 25 us a call of one 0-d tensor, ten times the compiled call), any other
    container by torch's pytree, which knows namedtuples and registered classes."""
    if isinstance(tree, kinds):
        return convert(tree)
    kind = type(tree)
    if kind is tuple or kind is list:
        return kind(_leaves_mapped(kinds, convert, value) for value in tree)
    if kind is dict:
        return {key: _leaves_mapped(kinds, convert, value) for key, value in tree.items()}
    if isinstance(tree, (tuple, list, dict)) or (
            not isinstance(tree, (int, float, complex, str, bytes, bool, type(None), np.generic,
                                  np.ndarray)) and _is_torch_pytree_node(tree)):
        pytree = importlib.import_module("torch.utils._pytree")
        return pytree.tree_map_only(kinds, convert, tree)
    return tree


def _is_torch_pytree_node(value):
    pytree = sys.modules.get("torch.utils._pytree")
    return pytree is not None and type(value) in pytree.SUPPORTED_NODES


_NUMPY_DTYPE_NAMES = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                      "int64", "float16", "float32", "float64", "complex64", "complex128")


def _refuse_unreadable_tensors(tensors, name):
    """torch's conjugate and negative bits (z.conj(), z.conj().imag) mark views whose memory
    holds the values unconjugated, un-negated: kiln reads memory, so it would read them wrong
    (NumPy's .numpy() of one raises too); a dtype NumPy lacks, or the meta device, at all."""
    for tensor in tensors:
        if str(tensor.dtype).removeprefix("torch.") not in _NUMPY_DTYPE_NAMES:
            raise TypeError(
                f"kiln.wrap_numpy({name}): a torch tensor argument is {tensor.dtype}, which "
                f"NumPy has no dtype for; pass it cast (tensor.float()), or compile the torch "
                f"code with torch.compile(backend='kiln')")
        if tensor.device.type not in ("cpu", "cuda"):
            raise TypeError(
                f"kiln.wrap_numpy({name}): a torch tensor argument is on the {tensor.device.type}"
                f" device; kiln runs NumPy code on CPU and CUDA tensors")
        if tensor.is_neg() or tensor.is_conj():
            bit = "conjugate" if tensor.is_conj() else "negative"
            raise RuntimeError(
                f"kiln.wrap_numpy({name}): a torch tensor argument has the {bit} bit set (a "
                f"lazy view, as z.conj() or z.conj().imag are); pass "
                f"tensor.resolve_conj().resolve_neg()")


class _Wrapped:
    def __init__(self, fn, mode, options):
        self.fn = fn
        self.name = getattr(fn, "__qualname__", repr(fn))
        self.mode, self.user_options = mode, dict(options or {})
        self.options = {**self.user_options, "mode": mode, "device": "cuda"}
        _kiln.check_options(self.options)
        # The globals and closure cells the function (and the helpers it calls) reads, as
        # kiln.compile reads them: arrays among them are inputs of the graph, other values part
        # of the signature, so an array changed in place or rebound, or a number rebound, is
        # seen (they were baked into the graph).
        self._find_environment()

    def _find_environment(self):
        """What the function reads besides its arguments, and the state traced over it: found
        again where a helper, object or code it reached was replaced (Environment.stale)."""
        self.environment = Environment(self.fn)
        self.differentiable = None  # torch.compile of the function, for calls needing gradients
        self.on_host = None  # kiln.compile of the function, for torch CPU tensors
        # signature -> (Compiled, single result, output dtypes), or _RETRACE: a signature whose
        # trace broke, traced again on every call
        self.compiled = {}
        self.torch_calls = {}  # (device, torch layouts) -> TorchCall, or _RETRACE: not that path
        # The TorchCall or JaxCall that ran last (kiln._library_calls), tried first
        self.last_call = None
        self.jax_importers = {}  # output dtypes -> jax_importer's function
        self.segments = Segments()  # the graphs of retraced calls
        self.warned_host = False  # (kiln._wrap_numpy._run_on_host)
        # Automatic dynamic numbers, per signature without the numbers' values: the first
        # values seen, the positions that changed since (0-d inputs), those that must be static
        self.first_numbers, self.dynamic_numbers, self.static_numbers = {}, {}, {}

    def __call__(self, *args, **kwargs):
        torch = sys.modules.get("torch")
        if torch is not None and torch.compiler.is_compiling():
            # Inside a torch.compile trace: a graph break, the call run as outside it (Dynamo
            # traced kiln's own code, and called a bound C++ method without its object).
            return torch._dynamo.disable(self._call)(*args, **kwargs)
        return self._call(*args, **kwargs)

    def _call(self, *args, **kwargs):
        environment = _environment_values(self.environment)
        last = self.last_call  # a loop's calls: the same signature again
        if last is not None and not kwargs and last.matches(args, environment):
            return last(args)
        if self.environment.stale():
            self._find_environment()
            environment = _environment_values(self.environment)
        torch = sys.modules.get("torch")
        tensors = [] if torch is None else _torch_tensors(torch, (*args, *kwargs.values()))
        if tensors and torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return self._call_differentiable(torch, args, kwargs)
        _refuse_unreadable_tensors(tensors, self.name)
        if tensors and not any(t.is_cuda for t in tensors):
            return self._call_on_host(torch, args, kwargs)
        environment_arrays = any(isinstance(v, np.ndarray) or _is_device_array(v)
                                 for v in environment)
        torch = None if kwargs or environment_arrays else _torch_cuda_tensors(args)
        if torch is not None:
            result = self._call_torch(torch, args, environment)
            if result is not _RETRACE:
                return result
        names = list(kwargs)
        # The environment's values follow the arguments (their arrays are inputs too).
        values = list(args) + [kwargs[name] for name in names] + environment
        arrays = [k for k, v in enumerate(values) if _is_device_array(v) or isinstance(v, np.ndarray)]
        layouts = [_layout(values[k]) for k in arrays]
        signature = (len(args), tuple(names), tuple(arrays),
                     tuple((d, tuple(s), tuple(t)) for d, s, t in layouts),
                     tuple(_library_of(values[k]) for k in arrays))  # (the views it returns)
        base, dynamic = self._dynamic_numbers(signature, values, arrays, len(args) + len(names))
        device = [values[k] for k in arrays if _is_device_array(values[k])]
        stream = _stream_of(device[0]) if device else 0
        if self.environment.unwatched_read is not None:
            return self._run_on_host(values, len(args), names, arrays,
                                     self.environment.unwatched_read)
        held_in_place = self.environment.in_place_arrays(environment)
        if held_in_place is not None:
            return self._run_on_host(values, len(args), names, arrays,
                                     f"{held_in_place} is an array read from its object itself (a "
                                     "class, a threading.local), which a trace would make a "
                                     "constant of the graph")
        while True:
            key = signature + (tuple((k, static_key(v)) for k, v in enumerate(values)
                                     if k not in arrays and k not in dynamic), dynamic)
            if any(part is TOO_LARGE for _, part in key[-2]):
                return self._run_on_host(values, len(args), names, arrays,
                                         "a static argument or global is a container too large "
                                         "to check at each call")
            entry = self.compiled.get(key)
            if entry is _HOST:
                return self._run_on_host(values, len(args), names, arrays)
            if entry is not None and entry is not _RETRACE:
                results = None
                break
            try:
                with held_output(bool(dynamic)):  # a retried trace prints once
                    entry, results = self._trace(values, len(args), names, arrays, layouts,
                                                 stream, retrace=entry is _RETRACE,
                                                 dynamic=dynamic)
            except NeedsStatic:
                if not dynamic:
                    raise
                dynamic = self._fewer_dynamic(base, values, dynamic)
                continue
            except _RunsOnHost as reason:
                self.compiled[key] = _HOST
                return self._run_on_host(values, len(args), names, arrays, str(reason))
            self.compiled[key] = entry
            break
        inputs = [values[k] for k in arrays] + [
            np.array(values[k], DYNAMIC_DTYPES[type(values[k])]) for k in dynamic]
        if entry is _RETRACE:  # the final graph of this call's trace, on its inputs
            compiled, single, inputs, mutated, returns = results
        else:
            compiled, single, _, mutated, returns = entry
        results = compiled.run(inputs, stream=stream)
        if mutated:
            results = write_back(results, [values[k] for k in mutated], self.name)
        if device and _library_of(device[0]) == "jax":
            importer = self._jax_importer(device[0], entry)
            results = [importer(r) for r in results]
            if (entry is not _RETRACE and not mutated and not dynamic and not names
                    and returns is None and len(arrays) == len(args) == len(device)
                    and all(immutable(v) for v in environment)):
                self.last_call = JaxCall(compiled, single, args, environment, importer)
        elif device:
            results = [_as_library_array(r, device[0]) for r in results]
        if returns is not None:  # arguments and views of them or of results (_device_results)
            results = assembled(returns, results, [values[k] for k in arrays])
        return results[0] if single else tuple(results)

    def _jax_importer(self, like, entry):
        """The function making kiln's results JAX arrays (kiln._library_calls.jax_importer),
        one per set of output dtypes."""
        if entry is _RETRACE:
            return importlib.import_module("jax.dlpack").from_dlpack
        dtype_names = tuple(entry[2])
        importer = self.jax_importers.get(dtype_names)
        if importer is None:
            importer = jax_importer(sys.modules["jax"], like, dtype_names)
            self.jax_importers[dtype_names] = importer
        return importer

    def _dynamic_numbers(self, signature, values, arrays, calls):
        """(the signature with the other arguments' values, the positions of Python floats and
        ints to trace as 0-d inputs: kiln._compile's automatic dynamic numbers): those whose
        value changed since the first call of that signature, except those a trace needed.
        Only arguments (values[:calls]); the globals' numbers stay static."""
        numbers = tuple(k for k, v in enumerate(values[:calls])
                        if k not in arrays and dynamic_number(v))
        others = tuple((k, static_key(v)) for k, v in enumerate(values)
                       if k not in arrays and k not in numbers)
        base = signature + (others, tuple(type(values[k]) for k in numbers))
        first = self.first_numbers.setdefault(base, {k: values[k] for k in numbers})
        changed = {k for k in numbers if values[k] != first[k] or
                   repr(values[k]) != repr(first[k])}  # (0.0 and -0.0, NaN)
        static = self.static_numbers.get(base, set())
        dynamic = self.dynamic_numbers.setdefault(base, set())
        dynamic |= changed - static
        return base, tuple(sorted(dynamic))

    def _fewer_dynamic(self, base, values, dynamic):
        """After a trace with `dynamic` numbers needed a value: the ints among them stay static
        from now on, else every one (kiln._compile's _fewer_dynamic)."""
        ints = {k for k in dynamic if type(values[k]) is int}
        needed = ints or set(dynamic)
        self.static_numbers[base] = self.static_numbers.get(base, set()) | needed
        self.dynamic_numbers[base] -= needed
        return tuple(k for k in dynamic if k not in needed)

    def _call_differentiable(self, torch, args, kwargs):
        if self.differentiable is None:
            backend = importlib.import_module("kiln.torch").backend
            self.differentiable = torch.compile(
                _torch_entry(self.fn), backend=backend, fullgraph=True,
                options={**self.user_options, "mode": self.mode})
        dynamo_errors = importlib.import_module("torch._dynamo.exc")
        try:
            return self.differentiable(*args, **kwargs)
        except dynamo_errors.BackendCompilerFailed as error:
            inner = str(getattr(error, "inner_exception", ""))
            if "modified by an inplace operation" not in inner:
                raise
            what = inner.split(";")[0]  # "one of the variables ... which is output 0 of Exp"
            raise RuntimeError(
                f"kiln.wrap_numpy({self.name}): {what}: an in-place update (`y += ...`, "
                f"`y[mask] = ...`) overwrites a value the gradient needs, which torch's autograd "
                f"(and so torch.compile) refuses; write it out of place (`y = y + ...`, "
                f"np.where), or call the function under torch.no_grad()") from None
        except dynamo_errors.Unsupported as error:
            reason = str(error).strip().splitlines()[0]
            lines = re.findall(r'File "([^"]+)", line (\d+)', str(error))
            where = f" at {lines[-1][0]}:{lines[-1][1]}" if lines else ""
            raise RuntimeError(
                f"kiln.wrap_numpy({self.name}): {reason}{where}. With gradients the function "
                f"must trace whole (torch would drop the gradient across a graph break); call "
                f"it under torch.no_grad(), or make it branch-free (np.where)") from None

    def _call_on_host(self, torch, args, kwargs):
        if self.on_host is None:
            self.on_host = compile_for_host(self.fn, mode=self.mode, options=self.user_options,
                                            device="cpu")
        if not kwargs and all(type(a) is torch.Tensor for a in args):  # (the fast path's kind)
            self.last_call = HostTorchCall(torch, self.on_host, args, _leaves_mapped)
        return host_call(torch, self.on_host, args, kwargs, _leaves_mapped)

    def _call_torch(self, torch, tensors, environment):
        key = (tuple((t.dtype, t.shape, t.stride(), t.device) for t in tensors),
               _environment_key(environment))
        call = self.torch_calls.get(key)
        if call is _RETRACE or TOO_LARGE in key[1]:
            return _RETRACE
        if call is None:
            values = list(tensors) + environment
            layouts = [_layout(t) for t in tensors]
            signature = (len(tensors), (), tuple(range(len(tensors))),
                         tuple((d, tuple(s), tuple(t)) for d, s, t in layouts), (),
                         _environment_key(environment))
            entry = self.compiled.get(signature)
            if entry is None:
                try:
                    entry, _ = self._trace(values, len(tensors), [], list(range(len(tensors))),
                                           layouts, 0, retrace=False)
                except _RunsOnHost:
                    entry = _RETRACE  # the general path runs such calls on the host
                self.compiled[signature] = entry
            if entry is _RETRACE:
                self.torch_calls[key] = _RETRACE
                return _RETRACE
            compiled, single, dtype_names, mutated, returns = entry
            call = self.torch_calls[key] = TorchCall(
                torch, compiled, single, [getattr(torch, name) for name in dtype_names], tensors,
                environment, mutated, returns)
        if all(immutable(v) for v in environment):  # (the fast path compares identities)
            self.last_call = call
        return call(tensors)

    def _trace(self, values, positional, names, arrays, layouts, stream, retrace, dynamic=()):
        """Traces one call. Without a graph break: ((Compiled, single, output dtypes), None),
        the signature's entry. With one (or `retrace`, a signature known to break): (_RETRACE,
        (the final graph, single, its inputs)); the break ran the graph so far on this call's
        arrays (kiln._retrace._TraceContext). `dynamic`: positions of Python numbers traced as
        0-d inputs after the arrays; NeedsStatic where the trace needs their values."""
        if _kiln.cuda_unavailable_reason():
            raise RuntimeError(f"kiln.wrap_numpy({self.name}): "
                               f"{_kiln.cuda_unavailable_reason()}")
        trace = _kiln.Trace()
        trace.numpy_sizes = True  # (0, 2**62) float64 is too big for NumPy
        trace.location = location_of(self.fn)
        traced = list(values)
        inputs = [trace.input(dtype, shape) for dtype, shape, _ in layouts]
        for k, tensor, (_, _, strides) in zip(arrays, inputs, layouts):
            traced[k] = _numpy_tracer.wrap(tensor, trace)
            traced[k]._strides = tuple(strides) if strides else "C"  # (NumPy's, in elements)
        numbers = [np.array(values[k], DYNAMIC_DTYPES[type(values[k])]) for k in dynamic]
        for k, number in zip(dynamic, numbers):  # stands for a Python number: weak
            traced[k] = _numpy_tracer.wrap(trace.input(number.dtype.name, []), trace)
            traced[k]._scalar, traced[k]._weak = True, type(values[k])
        context = _TraceContext(self, trace, [values[k] for k in arrays] + numbers,
                                [list(t) for _, _, t in layouts] + [[] for _ in numbers],
                                self._options(), False, dynamic=bool(dynamic))
        context.stream = stream
        try:
            calls = positional + len(names)  # the environment's values follow
            function = self.fn
            if len(traced) > calls:
                function = self.environment.rebuilt(traced[calls:])[0]
            function = with_loop_capture(self.fn, with_numpy_names(function, _numpy_tracer),
                                         _numpy_tracer, trace, self._note_loop)
            context.random_states = _random_state.snapshot(self.fn, values)
            try:
                with _numpy_tracer.attach_driver(trace, context), signals_raised() as raised:
                    try:
                        result = function(*traced[:positional],
                                          **dict(zip(names, traced[positional:calls])))
                    except Exception:
                        raise_taken_signal(context, raised)
                        raise
                    raise_taken_signal(context, raised)
                if _random_state.drew(context.random_states):
                    context.opaque_call("a random generator draws new values on every call",
                                        location_of(self.fn))
            except Exception as error:
                # A dynamic number is a 0-d tracer, not a float: whatever fails with it is
                # retried with the numbers static (as kiln.compile does).
                if dynamic and not isinstance(error, NeedsStatic):
                    raise NeedsStatic() from None
                raise
        except GraphBreakSignal as signal:
            raise _RunsOnHost(f"{signal.reason} at {signal.location}") from None
        except _SegmentLimit as limit:  # (TraceTooLarge says why)
            raise _RunsOnHost(str(limit) or f"more than {SEGMENT_LIMIT} distinct graphs around "
                              f"its graph breaks") from None
        single = not isinstance(result, (tuple, list))

        def output_of(item):
            tensor = _numpy_tracer.unwrap(item)
            if tensor is None and isinstance(item, np.ndarray):  # computed on the host after a break
                tensor = context.data_input(item)
            if tensor is None:
                raise TypeError(f"kiln.wrap_numpy({self.name}): every result must be an array "
                                f"computed from the array arguments, got {type(item).__name__}")
            return tensor
        device = [values[k] for k in arrays if _is_device_array(values[k])]
        # the caller's arrays and views as NumPy returns them (kiln._device_results)
        returns, outputs = return_specs([result] if single else result,
                                        {id(traced[k]): p for p, k in enumerate(arrays)},
                                        [values[k] for k in arrays], device[0] if device else None,
                                        output_of)
        # An argument the function assigned into (x *= 2, x[mask] = 0): its new value is one
        # more output, copied into the argument's memory after the run, as NumPy's caller sees.
        mutated = []
        for position, k in enumerate(arrays):
            current = _numpy_tracer.unwrap(traced[k])
            if current is not None and current.id != inputs[position].id:
                mutated.append(k)
                outputs.append(current)
        dtypes = [tensor.dtype for tensor in outputs]
        if context.broke or retrace:
            compiled, _, reads = self._compile_segment(context, outputs)
            return _RETRACE, (compiled, single, [context.real_arrays[k] for k in reads], mutated,
                              returns)
        compiled = _kiln.compile_graph(trace, outputs, context.strides, context.options)
        return (compiled, single, dtypes, mutated, returns), None

    def _run_on_host(self, values, positional, names, arrays, reason=None):
        """A call whose trace cannot go on (a NumPy function kiln does not follow) or would
        compile past SEGMENT_LIMIT graphs around its breaks: NumPy runs the function on host
        copies of the arrays (as kiln.compile runs such calls eagerly), said once per function;
        array results go back to the device of the first device array, and arguments the
        function assigned into get their new values."""
        if reason is not None and not self.warned_host:
            self.warned_host = True
            warnings.warn(f"kiln.wrap_numpy({self.name}) ({location_of(self.fn)}): {reason}: "
                          f"such calls run as NumPy on host copies of the arrays",
                          RuntimeWarning, stacklevel=3)
        host = list(values)
        for k in arrays:
            host[k] = _host_copy(values[k])
        before = {k: host[k].copy() for k in arrays}
        calls = positional + len(names)
        function = self.fn
        if len(host) > calls:  # the environment's arrays as host copies too
            function = self.environment.rebuilt(host[calls:])[0]
        result = function(*host[:positional], **dict(zip(names, host[positional:calls])))
        changed = [k for k in arrays
                   if not np.array_equal(host[k], before[k], equal_nan=host[k].dtype.kind in "fc")]
        write_back(list(host[k] for k in changed), [values[k] for k in changed], self.name)
        device = [values[k] for k in arrays if _is_device_array(values[k])]
        if not device:
            return result
        like = device[0]
        if isinstance(result, (tuple, list)):
            return type(result)(on_device_of(np.asarray(item), like) for item in result)
        return on_device_of(np.asarray(result), like)

    def _options(self):
        options = dict(self.options)
        if config.cache_dir is not None:
            options.setdefault("cache_dir", str(config.cache_dir))
        return options

    # What kiln._retrace._TraceContext asks of the function it traces for.
    def _compile_segment(self, context, outputs):
        return self.segments.compiled(context, outputs, lambda: None)

    def _note_loop(self, kind, location, reason):
        """kiln._compile's: a loop the trace unrolls is logged under graph_breaks."""
        if kind == "unrolled" and _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"loop at {location} in kiln.wrap_numpy({self.name}) is "
                      f"unrolled: {reason}")

    def _note_break(self, reason, location):
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"graph break in kiln.wrap_numpy({self.name}): {reason}"
                      + (f" at {location}" if location else ""))


_RETRACE = object()  # a signature whose trace breaks: traced on every call
_HOST = object()  # a signature NumPy runs on host copies (_Wrapped._run_on_host)


class _RunsOnHost(Exception):
    """A trace that cannot go on, or would compile past SEGMENT_LIMIT graphs: the call runs
    on the host (_Wrapped._run_on_host); the message says why."""


def wrap_numpy(fn=None, *, mode="default", options=None):
    """`fn`, written for NumPy arrays, taking and returning GPU arrays (torch CUDA tensors, CuPy
    and JAX arrays) and torch CPU tensors with no copy, gradients flowing through it for torch
    tensors that require them; see kiln._wrap_numpy. Usable as a decorator."""
    if fn is None:
        return functools.partial(wrap_numpy, mode=mode, options=options)
    wrapped = _Wrapped(fn, mode, options)
    functools.update_wrapper(wrapped, fn)
    return wrapped

