"""The trace of one call of a compiled function (kiln._compile.CompiledFunction's mixin): the
function run on tracers, its graph compiled (and its segments, where it breaks on data), the
cache entry recorded, its results converted; where the trace is given up, what it changed is
put back first."""
import functools
import time
import warnings

import numpy as np

from . import _aliasing, _assumed_numbers, _device, _kiln, _numpy_tracer, _pytree, _random_state
from ._arguments import DYNAMIC_DTYPES
from ._caller_state import ChangesCallerState, Saved, checked_output_spec, with_assigned
from ._config import config
from ._numpy_names import with_numpy_names
from ._graph_breaks import (GraphBreak, GraphBreakSignal, located, raise_taken_signal,
                            refused_by_python, signals_raised)
from ._raising_calls import LEAKED, NOT_AN_ARRAY, donated, written_inputs
from ._returned_views import (ResultView, argument_positions, holds_argument_view,
                              memory_ordered, returned_view)
from ._retrace import (SEGMENT_LIMIT, SEGMENT_SECONDS, NeedsStatic, RerunEagerly, _SegmentLimit,
                       _TraceContext, _Traced)
from ._trace_stores import CellStores, GlobalStores, MemoStores
from ._tracer import TracedArray
from ._tracing import location_of, with_loop_capture

Unsupported = _kiln.Unsupported
CompilerError = _kiln.CompilerError

# Entries one compiled function keeps in memory (each holds a loaded library, and every call
# walks their guards): past it, the least recently matched is dropped and rebuilt from the disk
# cache if its arguments come back. dynamic=True with a new shape per call stays bounded.
MOST_ENTRIES = 64

_tracer_override = None


def set_tracer(module):
    """Uses `module` (wrap/unwrap[/is_scalar_result]) instead of kiln._tracer; None restores."""
    global _tracer_override
    _tracer_override = module


def _undo_trace(states, saved):
    """The generators' states and the caller's state from before a trace: a call run again
    eagerly after its graph's check failed draws what NumPy's draws, not what follows the
    trace's own draws."""
    _random_state.restore(states)
    saved.restore()


def _tracer():
    return _tracer_override if _tracer_override is not None else _numpy_tracer


class CallTracing:
    """trace_and_compile and what it needs, for CompiledFunction."""

    def trace_and_compile(self, args, kwargs, leaves, spec, guard, dynamic=(), times=None):
        """_trace_and_compile; where the trace is given up (None, or an exception after which
        the caller runs the call again), the random generators it drew from get their states
        back, so that the run that follows draws what NumPy's would, and so do the caller's
        containers and objects the trace changed."""
        states = _random_state.snapshot(self.fn, leaves)
        if not _random_state.restorable(states):
            # A trace given up after spawning from it would leave its count advanced: the
            # call runs eagerly instead (this call only).
            raise RerunEagerly()
        saved = Saved(spec, (args, kwargs, self.cache.environment()), self.environment)
        try:
            traced = self._trace_and_compile(args, kwargs, leaves, spec, guard, dynamic, times)
        except (NeedsStatic, _SegmentLimit, CompilerError, GraphBreak, RerunEagerly):
            if times is not None and _random_state.drew(states):
                times.opaque = True  # its calls draw (RetraceTimes.opaque), cut short or not
            _random_state.restore(states)
            saved.restore()
            raise
        if traced is None:
            _random_state.restore(states)
            saved.restore()
        else:  # for a rerun after its graph's check fails (CompiledFunction._rerun)
            traced.undo = functools.partial(_undo_trace, states, saved)
        return traced

    def _trace_and_compile(self, args, kwargs, leaves, spec, guard, dynamic=(), times=None):
        """_trace_once; its trace context ends with it: a traced array that code run during
        the trace kept (a finalizer's store, a signal handler's) cannot run a graph after."""
        contexts = []
        try:
            return self._trace_once(args, kwargs, leaves, spec, guard, dynamic, contexts, times)
        finally:
            for context in contexts:
                context.finished = True

    def _trace_once(self, args, kwargs, leaves, spec, guard, dynamic, contexts, times=None):
        """Traces one call and compiles its graph; with a `guard` (GuardedCache.record, made
        before the trace), adds the cache entry for it. Returns a _Traced, or None where the
        call must run eagerly. `dynamic`: leaves (Python floats and ints) traced as 0-d graph
        inputs; NeedsStatic where the trace needs their values."""
        tracer = _tracer()
        trace = _kiln.Trace()
        trace.numpy_sizes = True  # (0, 2**62) float64 is too big for NumPy
        trace.location = location_of(self.fn)
        if dynamic:
            leaves = list(leaves)
            for index in dynamic:
                leaves[index] = np.array(leaves[index], DYNAMIC_DTYPES[type(leaves[index])])
        array_leaves = [index for index, leaf in enumerate(leaves) if type(leaf) is np.ndarray]
        try:
            real_arrays, inputs, wrapped, aliased = _aliasing.trace_inputs(
                [leaves[index] for index in array_leaves], trace, tracer)
        except _aliasing.AliasingUnsupported as error:
            return self._give_up(args, kwargs, str(error), location_of(self.fn), guard)
        for array, (_, root) in zip(real_arrays, inputs):  # (np.may_share_memory)
            if isinstance(root, TracedArray):  # (not a stand-in tracer's)
                root._context.input_memory[id(root)] = array
        strides = [[] if array.flags.c_contiguous else [s // array.itemsize for s in array.strides]
                   for array in real_arrays]
        traced_leaves = list(leaves)
        for index, tracer_object in zip(array_leaves, wrapped):
            traced_leaves[index] = tracer_object
        for index in dynamic:  # stands for a Python number: weak in NumPy's promotion
            traced_leaves[index]._scalar = True
            traced_leaves[index]._weak = float if leaves[index].dtype.kind == "f" else int
        original = (args, kwargs, self.cache.environment())
        traced_tree = _pytree.unflatten_keeping(spec, traced_leaves, original)
        traced_args, traced_kwargs, traced_environment = traced_tree
        function, attributes = self._with_environment(traced_environment)
        cell_stores = CellStores(function)
        function = with_loop_capture(self.fn, with_numpy_names(function, tracer), tracer, trace,
                                     self._note_loop)
        options = dict(self.options)
        options.setdefault("device", _device.current_device())
        if options["device"] == "cuda" and _kiln.cuda_unavailable_reason():
            # Asked for by name: an error, not the eager fallback of what kiln cannot compile.
            raise RuntimeError(f"kiln: {self.name}: device='cuda': "
                               f"{_kiln.cuda_unavailable_reason()}")
        if config.cache_dir is not None:
            options.setdefault("cache_dir", str(config.cache_dir))
        context = _TraceContext(self, trace, list(real_arrays), strides, options, self.fullgraph,
                                bool(dynamic))
        context.argument_positions = argument_positions(inputs, aliased)
        contexts.append(context)
        context.retrace_times = times
        context.attribute_dicts = (attributes.traced_dicts()  # loop bodies' changes to them
                                   + _pytree.object_dicts(spec, traced_tree))
        held = getattr(tracer, "held_tensors", None)  # a stand-in tracer may have none
        if held is not None:
            context.held = functools.partial(held, trace)
        attach = getattr(tracer, "attach_driver", None)  # a stand-in tracer may have none
        capturing = attach(trace, context) if attach is not None else None
        started = time.perf_counter()
        context.random_states = _random_state.snapshot(self.fn, leaves)
        stores = GlobalStores(self.environment.global_stores, attributes.copies,
                              self.environment.globals_ids, location_of(self.fn))
        memos = MemoStores(self.environment.memoized, self.environment.cached_properties,
                           getattr(self.environment, "attributes", None))  # (fn's own only)
        leaked = functools.partial(self._leaked, spec, traced_leaves, traced_tree, original, tracer)
        rebound = rebound_cell = cached = None

        def lost_if_raising():
            """leaked(), or the trace rebound a module global or closure variable, or assigned
            an attribute of self or of a global object, before the user's exception: NumPy's
            run keeps them, no graph of a raising trace makes them (the globals are put back),
            so the call runs eagerly. Not under fullgraph (_leaked)."""
            return leaked() or not self.fullgraph and (
                rebound is not None or rebound_cell is not None or cached is not None
                or attributes.assigned() != [])
        try:
            try:
                try:
                    with signals_raised() as raised:
                        try:
                            if capturing is None:
                                result = function(*traced_args, **traced_kwargs)
                            else:
                                with capturing:
                                    result = function(*traced_args, **traced_kwargs)
                        except RerunEagerly:  # kiln's own (a BaseException)
                            raise
                        except BaseException:  # (SystemExit, KeyboardInterrupt too)
                            raise_taken_signal(context, raised)
                            raise
                finally:
                    rebound = stores.changed()  # the module's globals hold no tracer after
                    rebound_cell = cell_stores.changed()
                    cached = memos.changed()
                raise_taken_signal(context, raised)
                if _random_state.drew(context.random_states):
                    context.opaque_call("a random generator draws new values on every call",
                                        location_of(self.fn))
                if rebound is not None:
                    raise ChangesCallerState(f"the function assigns the global '{rebound[0]}' "
                                             "(NumPy assigns it at every call)", rebound[1])
                if rebound_cell is not None:
                    raise ChangesCallerState(
                        f"the function assigns the closure variable '{rebound_cell[0]}' "
                        "(NumPy assigns it at every call)", rebound_cell[1])
                if cached is not None:
                    raise ChangesCallerState(
                        f"the function stores a value in the cache of '{cached}' (lru_cache, "
                        "cached_property), which kiln does not see", location_of(self.fn))
                # Attributes of self and of global objects the trace assigned: each run of the
                # graph assigns them (the values outputs of the graph, or constants).
                assigned = attributes.assigned()
                outputs, output_spec = self._outputs(context, tracer,
                                                     with_assigned(result, assigned))
            except BaseException as error:
                # A dynamic number is a 0-d tracer, not a float: whatever fails with it
                # (round(lr), lr.is_integer(), a break) is retried with the numbers static.
                if dynamic and not isinstance(error, (NeedsStatic, RerunEagerly)):
                    raise NeedsStatic() from None
                raise
            output_spec = checked_output_spec(
                output_spec, assigned, attributes, _pytree.changed_copies(
                    spec, traced_leaves, traced_tree, original,
                    lambda value: tracer.unwrap(value) is not None), location_of(self.fn))
            if _kiln.log_enabled("perf"):
                _kiln.log("perf", f"trace of {self.name}: "
                          f"{(time.perf_counter() - started) * 1e3:.3f} ms, {trace.node_count} nodes")
        except GraphBreakSignal as signal:
            if dynamic and not isinstance(signal, ChangesCallerState):
                raise NeedsStatic() from None
            if isinstance(signal, ChangesCallerState):
                self.caller_state_changes.note(spec)
            return self._give_up(args, kwargs, signal.reason, signal.location, guard)
        except Unsupported as error:
            if dynamic:
                raise NeedsStatic() from None
            if self.fullgraph:
                raise
            return self._give_up(args, kwargs, f"unsupported: {error}", "", guard)
        except (ValueError, TypeError, IndexError) as error:
            if type(error) is ValueError and NOT_AN_ARRAY in str(error):
                # NumPy's C code called an object's __array__ (np.add(o, 1), no traced operand
                # to dispatch on), which returned a traced array (o's array, an input): eager
                return self._give_up(args, kwargs, "NumPy converted an object whose __array__ returns "
                                     "an array the trace holds", location_of(self.fn), guard)
            refused = refused_by_python(error)
            if refused is not None:
                return self._give_up(args, kwargs, "Python's code refused a traced array "
                                     "(memoryview(x): the buffer protocol)", refused, guard)
            if self._gives_up_raising(lost_if_raising, context, tracer, inputs):
                return self._give_up(args, kwargs, LEAKED, location_of(self.fn), None)
            if context.pending is not None:  # ours, swallowed and replaced by NumPy
                raise context.pending from None
            named = located(error)
            if named is None:
                raise
            raise named.with_traceback(error.__traceback__) from None
        except (NeedsStatic, RerunEagerly, _SegmentLimit, CompilerError, GraphBreak):
            raise  # kiln's own, not the user's
        except BaseException:
            # The user's code raised (ZeroDivisionError, its own exception; SystemExit,
            # KeyboardInterrupt and GeneratorExit alike): NumPy's run made the writes and
            # assignments before the raise, then the exception goes on as it is.
            if self._gives_up_raising(lost_if_raising, context, tracer, inputs):
                return self._give_up(args, kwargs, LEAKED, location_of(self.fn), None)
            raise

        mutations = written_inputs(tracer, inputs, outputs)
        if any(_aliasing.overlaps_itself(real_arrays[position]) for position, _ in mutations):
            return self._give_up(args, kwargs, "an array whose own elements share memory "
                                 "(as_strided) is written", location_of(self.fn), guard)
        # After a graph break, or with arguments that share memory, the graph depends on more
        # than the guards: such calls are traced again each time, their graphs memoized.
        retrace = context.broke or aliased
        if dynamic and retrace:
            raise NeedsStatic()
        if context.broke:  # its numbers stay static: a dynamic trace would break, then retry
            self.numbers.keep_static(spec)
        views = holds_argument_view(output_spec)
        if not outputs and not (views and trace.check_count):
            # Nothing computed: the trace ran the function (its prints too), so its result is
            # this call's; running it again would repeat them. Later calls run it as it is, or
            # retrace it after a break (its prints and data-dependent results are per call).
            # (A result of argument views whose trace has run-time checks runs its graph of
            # checks: one fails where the trace's assumption does, `return x` past a None.)
            if guard is not None:
                self.cache.add(guard, args, kwargs, None, None, [], context.broke)
                self.retrace_entries += context.broke
            for target, name, value in assigned:  # constants; later calls run eagerly
                target[name] = value
            if views:
                # (the result holds tracers: its arrays are the arguments and their views)
                result = _kiln.GuardedCache.build_output(output_spec, context.real_arrays)
            return _Traced(None, None, None, [], context.broke, result=result)
        reads = None
        try:
            if retrace:
                compiled, _, reads = self._compile_segment(context, outputs)
            else:
                compiled = _kiln.compile_graph(trace, outputs, strides, options,
                                               donated=donated(mutations, len(outputs)))
                self._note_graph(compiled)
        except Unsupported as error:  # past kiln's bounds on compile work: eager, and why
            if not self.fullgraph:
                warnings.warn(f"kiln: {self.name} ({location_of(self.fn)}) runs eagerly: "
                              f"{error}", RuntimeWarning, stacklevel=4)
            return self._give_up(args, kwargs, str(error), location_of(self.fn), guard)
        if mutations or assigned:  # attributes of self or global objects too, by each run
            self._note_writes_arguments()
        if guard is not None:
            guards = self.cache.add(guard, args, kwargs, None if retrace else compiled,
                                    output_spec, mutations, retrace)
            self.retrace_entries += retrace
            self.cache.evict_to(MOST_ENTRIES)
            if _kiln.log_enabled("guards"):
                _kiln.log("guards", f"guards of {self.name} ({location_of(self.fn)}), entry "
                          f"{len(self.cache)}:\n{guards}")
        return _Traced(compiled, context.real_arrays, output_spec, mutations, retrace, reads)

    def _compile_segment(self, context, outputs):
        """The compiled segment of the trace with these outputs, from the memo: (compiled,
        whether it was compiled now, the positions of the trace's inputs it reads)."""
        compiled, new, reads = self.segments.compiled(context, outputs, self._warn_segment_limit)
        if new:
            self._note_graph(compiled)
        return compiled, new, reads

    def _warn_segment_limit(self):
        if not self.warned_segments:
            self.warned_segments = True
            warnings.warn(f"kiln: {self.name} ({location_of(self.fn)}) built "
                          f"{len(self.segments)} distinct graphs around its graph breaks "
                          f"({self.segments.seconds:.1f} s of compiling; at most "
                          f"{SEGMENT_LIMIT} graphs or {SEGMENT_SECONDS:.0f} s): its calls that "
                          f"need a new one run eagerly", RuntimeWarning, stacklevel=6)

    def _outputs(self, context, tracer, result):
        """Graph outputs and the C++ output spec for the function's result pytree."""
        outputs = []
        is_scalar = getattr(tracer, "is_scalar_result", None)
        stacked_row = getattr(tracer, "stacked_row", lambda leaf: None)
        converted = {}  # id(leaf) -> its spec: an array returned twice is one array, as in NumPy

        def convert(leaf):
            if isinstance(leaf, (bool, int, float, complex, str, np.generic)) or leaf is None:
                return convert_once(leaf)
            if id(leaf) not in converted:  # (the leaf held: its id stays its own)
                converted[id(leaf)] = (leaf, convert_once(leaf))
            return converted[id(leaf)][1]

        def convert_once(leaf):
            row = stacked_row(leaf)
            if row is not None:  # a row of a loop's appends: its stack is the output, once
                stack, row_value = row
                return _pytree.Rebuilt(row_value, convert(stack))
            view = returned_view(leaf, context.argument_positions, returned_slot)
            if view is not None:  # the caller's array, or a view of it or of a result
                return view
            chosen = _assumed_numbers.returned(leaf, scalar_output)
            if chosen is not None:
                return chosen
            ordered = memory_ordered(leaf)
            if ordered is not None:  # written in NumPy's memory order, returned as its view
                outputs.append(ordered[0])
                return ResultView(len(outputs) - 1, ordered[1])
            tensor = tracer.unwrap(leaf)
            if (tensor is None and type(leaf) is np.ndarray
                    and not getattr(tracer, "holds_dtype", bool)(leaf.dtype)):
                # strings, objects, datetimes: no graph holds them (the trace-time value may
                # come from the data): these guards run eagerly (a TypeError crashed the call)
                raise Unsupported(f"{self.name} returns an array of dtype {leaf.dtype}")
            if tensor is None and type(leaf) is np.ndarray:
                # A fresh copy per call, as eager NumPy returns; after a graph break the array
                # may come from the data, so it is an input, not part of the graph's text.
                tensor = context.data_input(leaf)
                if tensor is None:
                    tensor = context.trace.constant(leaf)
            if tensor is not None:
                outputs.append(tensor)
                slot = len(outputs) - 1
                python_type = getattr(leaf, "_weak", None)
                if python_type is not None and len(tensor.shape) == 0:
                    # a traced Python number (a dynamic float, a loop's counter): Python's type
                    return _pytree.Rebuilt(python_type, -(slot + 1))
                return -(slot + 1) if is_scalar is not None and is_scalar(leaf) else slot
            if type(leaf) is int:
                return _pytree.Constant(leaf)
            if _pytree.holds_array(leaf, lambda value: tracer.unwrap(value) is not None):
                raise Unsupported(f"{self.name} returns a {type(leaf).__name__} holding traced "
                                  "arrays (kiln rebuilds tuples, lists, dicts, namedtuples and "
                                  "dataclasses)")
            return leaf

        def scalar_output(tensor):  # a NumPy scalar of the call's result
            outputs.append(tensor)
            return -len(outputs)

        leaves = {id(leaf) for leaf in _pytree.flatten(result, results=True)[0]}

        def returned_slot(array):  # the spec of an array the result returns, else None
            return convert(array) if id(array) in leaves else None

        spec = _pytree.output_spec(convert, result)
        compact = getattr(tracer, "compact_rows", None)  # lists of a loop's appends
        return outputs, spec if compact is None else compact(spec)
