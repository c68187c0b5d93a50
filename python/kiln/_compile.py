"""kiln.compile: the driver between the user's function, the NumPy tracer and the C++ core.

Per call, the C++ GuardedCache (src/python/guarded_cache.cpp) checks the guards and runs the
cached graph; only on a miss does this module trace (kiln._tracer), compile
(kiln._kiln.compile_graph) and register a new cache entry.

Graph breaks (a value the trace cannot know: bool(), float(), .item(), an unsupported function):
- The tracer calls `graph_break(tensor, reason, location)`. The graph traced so far is compiled
  with that tensor as its output, run on the real inputs, and the concrete value returned to the
  tracer, which continues. The cache entry then holds the prefix graph as a *check*: a later call
  runs it first and uses the entry only if the value is the same, otherwise it retraces (a new
  entry, counted as a recompile). The final graph recomputes the prefix; each segment is
  compiled once and cached in memory and on disk.
- Or the tracer raises `GraphBreakSignal(reason, location)` (it cannot continue): the call, and
  every later call with the same guards, runs the function eagerly.
- With fullgraph=True both raise kiln.GraphBreak naming the reason and file:line.
Either way the break is logged (KILN_LOGS=graph_breaks) and counted by kiln.explain.

Mutation: the tracer rebinds a tracer's tensor on an in-place update; an input whose tensor
changed is an extra graph output that the C++ call path copies back into the caller's array.
Globals, closures, self (kiln._environment): arrays and static values read through the
function's globals and closure cells, arrays in the globals of the helper functions it calls,
and, for a bound method, the attributes of self it and the methods it calls name, are
inputs/guards, read at call time. Other arrays met while tracing (a helper's closure, attributes
of other objects) are baked in as constants.
"""
import functools
import os
import threading
import warnings
import weakref

import numpy as np

from . import _kiln, _pytree
from ._config import config
from ._environment import Environment

MISS = _kiln.MISS
EAGER = _kiln.EAGER
Unsupported = _kiln.Unsupported


class GraphBreak(RuntimeError):
    """Raised with fullgraph=True where the function cannot be captured as one graph."""


class GraphBreakSignal(Exception):
    """Raised by the tracer at a graph break it cannot continue from (see the module doc)."""

    def __init__(self, reason, location=""):
        super().__init__(f"{reason} at {location}" if location else reason)
        self.reason = reason
        self.location = location


class Constant:
    """A static (non-array) output value in a cache entry's output spec."""
    __slots__ = ("_kiln_constant",)

    def __init__(self, value):
        self._kiln_constant = value


_tracer_override = None


def set_tracer(module):
    """Uses `module` (wrap/unwrap[/is_scalar_result]) instead of kiln._tracer; None restores."""
    global _tracer_override
    _tracer_override = module


def _tracer():
    if _tracer_override is not None:
        return _tracer_override
    from . import _tracer as tracer_module
    return tracer_module


# Every live compiled function, for kiln.reset().
_all_functions = weakref.WeakSet()
_active = threading.local()  # the stack of _TraceContext being traced on this thread


class _TraceContext:
    """What graph_break needs while one call is traced."""

    def __init__(self, function, trace, real_arrays, strides, options, fullgraph):
        self.function = function
        self.trace = trace
        self.real_arrays = real_arrays
        self.strides = strides
        self.options = options
        self.fullgraph = fullgraph
        self.checks = []  # (Compiled, value, description)
        self.breaks = []  # (reason, location)


def _context_stack():
    stack = getattr(_active, "stack", None)
    if stack is None:
        stack = _active.stack = []
    return stack


def graph_break(tensor, reason, location=""):
    """Called by the tracer at a graph break: returns the concrete NumPy value of `tensor` (see
    the module doc), or raises kiln.GraphBreak under fullgraph=True."""
    stack = _context_stack()
    if not stack or stack[-1].trace is None:
        raise RuntimeError("kiln: graph_break called outside a traced function")
    context = stack[-1]
    context.breaks.append((reason, location))
    context.function._note_break(reason, location)
    if context.fullgraph:
        raise GraphBreak(f"kiln: graph break in {context.function.name}: {reason} at {location} "
                         f"(fullgraph=True)")
    compiled = _kiln.compile_graph(context.trace, [tensor], context.strides, context.options)
    context.function._note_graph(compiled)
    value = compiled.run(context.real_arrays)[0]
    context.checks.append((compiled, value, f"{reason} at {location}"))
    return value


def _location_of(fn):
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def _located(error):
    """The tracer's error for a bad argument (NumPy's class and message) with the op and the
    user's file:line in front; None if it names them already or the user's code raised it."""
    from ._graph_breaks import is_internal
    if type(error) not in (ValueError, TypeError, IndexError) or str(error).startswith("kiln:"):
        return None
    frames, traceback = [], error.__traceback__
    while traceback is not None:
        code = traceback.tb_frame.f_code
        inside = is_internal(code.co_filename)
        frames.append((inside, f"{os.path.basename(code.co_filename)}:{traceback.tb_lineno}",
                       code.co_name))
        traceback = traceback.tb_next
    users = [index for index, frame in enumerate(frames) if not frame[0]]
    if not users or users[-1] == len(frames) - 1:
        return None
    op = next((name for _, _, name in frames[users[-1] + 1:] if not name.startswith("_")), "")
    return type(error)(f"kiln: {op} at {frames[users[-1]][1]}: {error}")


def _is_unsupported_array(leaf):
    """An ndarray the C++ side cannot borrow: such a call runs eagerly."""
    if not isinstance(leaf, np.ndarray):
        return False
    if type(leaf) is not np.ndarray:
        return True
    return (leaf.dtype.kind not in "biuf" or not leaf.dtype.isnative or not leaf.flags.aligned
            or leaf.dtype.itemsize not in (1, 2, 4, 8)
            or any(stride % leaf.itemsize for stride in leaf.strides))


class CompiledFunction:
    """The state behind one kiln.compile(fn): its GuardedCache, counters and explain records."""

    def __init__(self, fn, mode, fullgraph, options, dynamic=None):
        self.fn = fn
        self.dynamic = dynamic
        self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
        self.fullgraph = fullgraph
        self.options = dict(options or {})
        self.options.setdefault("mode", mode)
        _kiln.check_options(self.options)
        self.environment = Environment(fn)
        self.cache = _kiln.GuardedCache(self.environment.reads, self.environment.cells,
                                        self.environment.cell_names)
        self.recompiles = 0
        self.warned_limit = False
        self.records = None  # a list while kiln.explain records
        _all_functions.add(self)

    # ---- the call path ----
    def make_wrapper(self):
        call = self.cache.call
        slow = self.call_slow
        fn = self.fn

        @functools.wraps(fn)
        def compiled(*args, **kwargs):
            result = call(args, kwargs)
            if result is MISS:
                return slow(args, kwargs)
            if result is EAGER:
                return fn(*args, **kwargs)
            return result

        compiled._kiln_function = self
        return compiled

    def call_slow(self, args, kwargs):
        environment = self.cache.environment()
        leaves, spec = _pytree.flatten((args, kwargs, environment))
        if any(_is_unsupported_array(leaf) for leaf in leaves):
            self._note_break("an argument is an array kiln cannot read in place (dtype, byte "
                             "order, alignment or ndarray subclass)", _location_of(self.fn))
            return self.fn(*args, **kwargs)
        if len(self.cache) > 0:
            reason = self.cache.why_miss(args, kwargs)
            # dynamic=True: the user expects many shapes; each compiles once, none counts.
            counts = not (self.dynamic and reason.startswith("shape of "))
            if counts and self.recompiles >= config.recompile_limit:
                if not self.warned_limit:
                    self.warned_limit = True
                    warnings.warn(
                        f"kiln: {self.name} ({_location_of(self.fn)}) hit "
                        f"config.recompile_limit ({config.recompile_limit}); new argument kinds "
                        f"run eagerly. Last reason: {reason}",
                        RuntimeWarning, stacklevel=3)
                return self.fn(*args, **kwargs)
            self.recompiles += counts
            if _kiln.log_enabled("recompiles"):
                _kiln.log("recompiles", f"recompiling {self.name} ({_location_of(self.fn)}): "
                          f"{reason}")
        entry = self.trace_and_compile(args, kwargs, leaves, spec)
        if entry is None:  # graph break without continuation: this call and its guards run eagerly
            return self.fn(*args, **kwargs)
        result = self.cache.call(args, kwargs)
        if result is MISS or result is EAGER:  # guards that never hold (e.g. a NaN static)
            return self.fn(*args, **kwargs)
        return result

    # ---- tracing ----
    def trace_and_compile(self, args, kwargs, leaves, spec):
        tracer = _tracer()
        trace = _kiln.Trace()
        trace.location = _location_of(self.fn)
        array_leaves = [index for index, leaf in enumerate(leaves) if type(leaf) is np.ndarray]
        real_arrays = [leaves[index] for index in array_leaves]
        strides = [[] if array.flags.c_contiguous else [s // array.itemsize for s in array.strides]
                   for array in real_arrays]
        inputs = [trace.input(array.dtype.name, list(array.shape)) for array in real_arrays]
        wrapped = [tracer.wrap(tensor, trace) for tensor in inputs]
        traced_leaves = list(leaves)
        for index, tracer_object in zip(array_leaves, wrapped):
            traced_leaves[index] = tracer_object
        traced_args, traced_kwargs, traced_environment = _pytree.unflatten(spec, traced_leaves)
        function = self._with_environment(traced_environment)
        options = dict(self.options)
        if config.cache_dir is not None:
            options.setdefault("cache_dir", str(config.cache_dir))
        context = _TraceContext(self, trace, real_arrays, strides, options, self.fullgraph)
        stack = _context_stack()
        stack.append(context)
        capturing = getattr(tracer, "capturing_creation", None)
        try:
            if capturing is None:
                result = function(*traced_args, **traced_kwargs)
            else:
                with capturing():
                    result = function(*traced_args, **traced_kwargs)
        except GraphBreakSignal as signal:
            return self._give_up(args, kwargs, signal.reason, signal.location)
        except Unsupported as error:
            if self.fullgraph:
                raise
            return self._give_up(args, kwargs, f"unsupported: {error}", "")
        except (ValueError, TypeError, IndexError) as error:
            located = _located(error)
            if located is None:
                raise
            raise located.with_traceback(error.__traceback__) from None
        finally:
            stack.pop()

        outputs, output_spec = self._outputs(trace, tracer, result)
        mutations = []
        for leaf_number, (tensor, tracer_object) in enumerate(zip(inputs, wrapped)):
            current = tracer.unwrap(tracer_object)
            if current is not None and current.id != tensor.id:
                mutations.append((leaf_number, len(outputs)))
                outputs.append(current)
        if not outputs:  # nothing computed: static results only; run the function as it is
            self.cache.add(args, kwargs, None, None, [], [])
            return None
        compiled = _kiln.compile_graph(trace, outputs, strides, options)
        self._note_graph(compiled)
        guards = self.cache.add(args, kwargs, compiled, output_spec, mutations, context.checks)
        if _kiln.log_enabled("guards"):
            _kiln.log("guards", f"guards of {self.name} ({_location_of(self.fn)}), entry "
                      f"{len(self.cache)}:\n{guards}")
        return compiled

    def _outputs(self, trace, tracer, result):
        """Graph outputs and the C++ output spec for the function's result pytree."""
        outputs = []
        is_scalar = getattr(tracer, "is_scalar_result", None)

        def convert(leaf):
            tensor = tracer.unwrap(leaf)
            if tensor is None and type(leaf) is np.ndarray:
                tensor = trace.constant(leaf)  # a fresh copy per call, as eager NumPy returns
            if tensor is not None:
                outputs.append(tensor)
                slot = len(outputs) - 1
                return -(slot + 1) if is_scalar is not None and is_scalar(leaf) else slot
            if type(leaf) is int:
                return Constant(leaf)
            return leaf

        return outputs, _pytree.map_leaves(convert, result)

    def _with_environment(self, environment):
        """The function over globals/closure cells whose arrays are replaced by tracers."""
        if not environment or all(
                new is old for new, old in zip(environment, self.cache.environment())):
            return self.fn
        return self.environment.rebuilt(environment)

    def _give_up(self, args, kwargs, reason, location):
        """A break the tracer cannot continue from: these guards run eagerly from now on."""
        self._note_break(reason, location)
        if self.fullgraph:
            raise GraphBreak(f"kiln: graph break in {self.name}: {reason}"
                             + (f" at {location}" if location else "") + " (fullgraph=True)")
        self.cache.add(args, kwargs, None, None, [], [])
        return None

    # ---- records for logs and explain ----
    def _note_break(self, reason, location):
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"graph break in {self.name}: {reason}"
                      + (f" at {location}" if location else ""))
        if self.records is not None:
            self.records.append(("break", reason, location))

    def _note_graph(self, compiled):
        if self.records is not None:
            self.records.append(("graph", compiled))

    def reset(self):
        self.cache.clear()
        self.recompiles = 0
        self.warned_limit = False


_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(fn=None, *, mode="default", fullgraph=False, dynamic=None, options=None,
            disable=False):
    """Compiles a NumPy function to fused native kernels, like torch.compile.

    Usable as kiln.compile(f), @kiln.compile and @kiln.compile(mode=...). The result keeps f's
    name, docstring and signature. Arrays in the arguments (tuples, lists and dicts of them
    included) are graph inputs; other arguments are static: part of the guard, a new value
    recompiles. `mode` is one of kiln.list_mode_options(); `options` a dict of
    kiln.list_options(); `fullgraph=True` turns graph breaks into kiln.GraphBreak errors;
    kiln specialises every graph on its input shapes (like JAX): a new shape compiles once
    (cached in memory and on disk). With `dynamic=True` shape changes do not count against
    kiln.config.recompile_limit; with None or False they do (kiln does not yet compile
    shape-generic kernels). `disable=True` returns f itself.
    """
    if mode not in _MODES:
        raise ValueError(f"kiln.compile: unknown mode {mode!r} (valid: {', '.join(_MODES)})")
    if fn is None:
        return functools.partial(compile, mode=mode, fullgraph=fullgraph, dynamic=dynamic,
                                 options=options, disable=disable)
    if not callable(fn):
        raise TypeError(f"kiln.compile: expected a function, got {type(fn).__name__}")
    if disable:
        return fn
    return CompiledFunction(fn, mode, fullgraph, options, dynamic).make_wrapper()


def reset():
    """Forgets every in-process compiled graph and recompile count (the disk cache stays)."""
    for function in list(_all_functions):
        function.reset()
