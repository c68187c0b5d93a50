"""kiln.compile: the driver between the user's function, the NumPy tracer and the C++ core.

Per call, the C++ GuardedCache (src/python/guarded_cache.cpp) checks the guards and runs the
cached graph; only on a miss does this module trace (kiln._numpy_tracer), compile
(kiln._kiln.compile_graph) and register a new cache entry. The tracer never imports this
module: each traced call attaches its _TraceContext to the trace (attach_driver), and the
tracer calls it through TraceContext.driver.

Graph breaks (a value the trace cannot know: bool(), float(), .item(), an unsupported function):
- The tracer calls `driver.graph_break(tensor, reason, location)` (kiln._retrace). The segment
  traced since the last break is compiled with that tensor and every value the tracer still
  holds as outputs, run on the real inputs, and the trace cut there: those values are inputs of
  what follows (python/graph_segments.h), so a break in a loop's body gives one segment, not one
  per iteration. From then on values may depend on the data, so the cache entry is a *retrace*
  entry: its guards are kinds, dtypes, shapes and static values only, never array contents, and
  every call runs the Python function again with tracers (Dynamo's resume functions, without
  bytecode rewriting). Each segment is compiled once, through a per-function memo keyed by its
  text, and reused: calls with new data cost the Python trace and the kernels, not a compile;
  where that costs more than running the function eagerly, it runs eagerly (timed on a few
  calls). After a break, concrete arrays that reach the trace (the result of np.histogram on
  the concrete value) and scalars returned by float()/int()/.item() and used as operands are
  graph *inputs*, not constants, so the graph's text does not depend on the data. Before the
  first graph of a kind of arguments compiles, a few calls run eagerly, timed: they bound what
  its compiles may cost (kiln._retrace.RetraceTimes).
- Or the tracer raises `GraphBreakSignal(reason, location)` (it cannot continue): the call, and
  every later call with the same guards, runs the function eagerly.
- With fullgraph=True both raise kiln.GraphBreak naming the reason and file:line.
Either way the break is logged (KILN_LOGS=graph_breaks) and counted by kiln.explain.

Mutation: the tracer rebinds a tracer's tensor on an in-place update; an input whose tensor
changed is an extra graph output that the C++ call path copies back into the caller's array
(and a call that raises leaves what NumPy's would: kiln._raising_calls).
Globals, closures, self (kiln._environment): arrays and static values read through the
function's globals and closure cells, arrays in the globals of the helper functions it calls,
and, for a bound method, the attributes of self it and the methods it calls name, are
inputs/guards, read at call time. Other arrays met while tracing (a helper's closure, attributes
of other objects) are baked in as constants.
"""
import functools
import time
import types
import warnings
import weakref

import numpy as np

from . import _device, _kiln, _pytree, _random_state, _retrace
from ._argument_reads import argument_reads
from ._arguments import eager_reason
from ._call_tracing import CallTracing, _tracer, set_tracer  # noqa: F401 (set_tracer: tests)
from ._caller_state import CallerStateChanges
from ._config import config
from ._raising_calls import CHECK_ERRORS, RaisingCalls, handles_exceptions
from ._dynamic_numbers import DynamicNumbers
from ._environment import Environment
from ._graph_breaks import GraphBreak
from ._retrace import (EagerIsCheaper, NeedsStatic, RerunEagerly, RetraceTimes, Segments,
                       TimeEagerly, TraceTooLarge, _SegmentLimit, held_output, show_output)
from ._tracing import location_of

MISS = _kiln.MISS
EAGER = _kiln.EAGER
RETRACE = _kiln.RETRACE
Unsupported = _kiln.Unsupported
CompilerError = _kiln.CompilerError

def _reduce_compiled(compiled):
    """Pickled by reference, as a plain function is: `@kiln.compile` at module level loads as
    the one its module defines (multiprocessing's pools, copy.copy); a compiled lambda fails as
    a lambda does. A CompiledCall of its own could not be pickled at all."""
    return compiled.__qualname__


_kiln.CompiledCall.__reduce__ = _reduce_compiled
# Every live compiled function, for kiln.reset().
_all_functions = weakref.WeakSet()


class CompiledFunction(RaisingCalls, CallTracing):
    """The state behind one kiln.compile(fn): its GuardedCache, counters and explain records."""

    def __init__(self, fn, mode, fullgraph, options, dynamic=None, called=None):
        # kiln.compile(obj) of a callable object: obj(x) calls type(obj).__call__ as it is at
        # each call (`Model.__call__ = other` after a call ran the old one: a stale result)
        self.called = called
        self.fn = fn
        self.dynamic = dynamic
        self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
        self.fullgraph = fullgraph
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"kiln.compile: options must be a dict, got {type(options).__name__}")
        self.options = dict(options or {})
        self.options.setdefault("mode", mode)
        _kiln.check_options(self.options)
        self.environment, self.cache = self._find_environment()
        self.recompiles = 0
        self.warned_limit = False
        self.segments = Segments()  # the graphs of retraced calls (graph breaks)
        self.caller_state_changes = CallerStateChanges()
        self.warned_segments = False
        # Automatic dynamic numbers: per call structure (repr of the pytree spec), the leaves of
        # Python floats and ints that changed between calls (graph inputs from then on), or
        # None once a trace needed the floats' values; the ints a trace needed stay static.
        self.numbers = DynamicNumbers()
        self.retrace_times = {}  # (pytree spec, array shapes and dtypes) -> RetraceTimes
        # Retrace entries added, and the signatures that settled on running eagerly: once
        # every entry's have, a retraced call goes straight to the function (call_traced)
        self.retrace_entries, self.eager_signatures = 0, set()
        self.records = None  # a list while kiln.explain records
        self.wrappers = weakref.WeakSet()  # the CompiledCalls of this function (make_wrapper)
        self.writes_arguments = False  # an entry writes the caller's arrays (mutations)
        self.reruns_on_checks = False  # a check's error reruns the call eagerly (any entry's)
        _all_functions.add(self)

    def _find_environment(self):
        """What fn reads besides its arguments (kiln._environment), and the GuardedCache that
        reads it at each call."""
        if self.called is not None:
            self.fn = _entry_of(self.called)
        environment = Environment(self.fn)
        if self.called is not None:  # a new __call__ (or class) misses, and is found again
            environment.reads.append((type(self.called), "__call__",
                                      f"{type(self.called).__name__}.__call__"))
            environment.classes.append((self.called, type(self.called)))
        if "device" not in self.options:  # the current kiln.device() is part of the guard
            environment.reads.append((_device._state, "current", "kiln.device"))
        # The trace reads kiln.config.numpy_default_float (the dtype of float results NumPy
        # makes float64): a change between calls must trace again, not reuse the old dtype.
        environment.reads.append((config._values, "numpy_default_float",
                                  "kiln.config.numpy_default_float"))
        return environment, _kiln.GuardedCache(environment.reads, environment.cells,
                                               environment.cell_names)

    def _find_environment_again(self):
        """fn's code or a helper's was replaced (IPython's autoreload), or a helper, partial,
        global object or method fn reached was rebound (Environment.stale): the environment is
        found anew, with a new cache whose entries read what it reads."""
        if _kiln.log_enabled("recompiles"):
            _kiln.log("recompiles", f"recompiling {self.name} ({location_of(self.fn)}): its "
                      "code, or a function, partial or object it reaches, was replaced; what "
                      "it reads is found again")
        self.reset()
        self.environment, self.cache = self._find_environment()
        for wrapper in self.wrappers:
            wrapper.cache = self.cache
            wrapper.eager_on_check_error = self._eager_on_check_error()

    # ---- the call path ----
    def make_wrapper(self):
        """The callable kiln.compile returns: a C++ object whose call runs the guarded cache
        directly (src/python/compiled_call.cpp); misses come back to call_slow."""
        # a callable object's eager calls go through obj itself: its class's __call__ now
        eager = self.fn if self.called is None else self.called
        compiled = _kiln.CompiledCall(self.cache, eager, self.call_slow, self.call_traced,
                                      self._eager_on_check_error())
        functools.update_wrapper(compiled, self.fn)
        compiled._kiln_function = self
        self.wrappers.add(compiled)
        return compiled

    def _eager_on_check_error(self):
        return (self.writes_arguments or self.reruns_on_checks
                or handles_exceptions(self.fn))

    def _entry_replaced(self):
        return self.called is not None and _entry_of(self.called) != self.fn

    def call_slow(self, args, kwargs):
        if self.environment.stale() or self._entry_replaced():
            self._find_environment_again()
        environment = self.cache.environment()
        leaves, spec = _pytree.flatten_call(args, kwargs, environment,
                                            self.environment.object_values)
        if any(_tracer().unwrap(leaf) is not None for leaf in leaves):
            # Called while another compiled function traces (a compiled helper, recursion,
            # kiln.compile of a compiled function): its ops join that trace, as an inlined call.
            return self.fn(*args, **kwargs)
        signature, times, bounds = self._retrace_times(spec, leaves)
        if bounds is not None and times.opaque and times.choice != "traced":
            # Its traces drew (a new seed is a new guard, not a new kind of call): every call
            # traces again anyway, so its kind's timed choice holds here too (call_traced);
            # decided before the checks of what must run eagerly, which cost more than a
            # small function's NumPy (a random walk drawn from an rng argument: 9x NumPy's).
            if times.choice == "eager":
                return self.fn(*args, **kwargs)
            if times.probing() or len(times.traced) >= RetraceTimes.CALLS:
                return self._timed_eagerly(times, signature, leaves, args, kwargs)
        reads = argument_reads(args, kwargs, leaves, spec,
                               [code for _, code in self.environment.codes], self.environment)
        reason = eager_reason(leaves, self.environment, environment, reads)
        if reason is not None:
            self._note_break(reason, location_of(self.fn))
            return self.fn(*args, **kwargs)
        if self.caller_state_changes.settled(spec):
            self._note_break("its traces change the caller's state (runs eagerly)",
                             location_of(self.fn))
            return self.fn(*args, **kwargs)
        if len(self.cache) > 0:
            reason = self.cache.why_miss(args, kwargs)
            # dynamic=True: the user expects many shapes; each compiles once, none counts.
            counts = not (self.dynamic and reason.startswith("shape of "))
            if counts and self.recompiles >= config.recompile_limit:
                if not self.warned_limit:
                    self.warned_limit = True
                    warnings.warn(
                        f"kiln: {self.name} ({location_of(self.fn)}) hit "
                        f"config.recompile_limit ({config.recompile_limit}); new argument kinds "
                        f"run eagerly. Last reason: {reason}",
                        RuntimeWarning, stacklevel=3)
                return self.fn(*args, **kwargs)
            self.recompiles += counts
            dynamic = (() if self.dynamic is False else self.numbers.chosen(
                spec, leaves, self.cache.changed_numbers(args, kwargs) or [],
                self.environment.in_place_values(self.cache.environment())))
            if _kiln.log_enabled("recompiles"):
                _kiln.log("recompiles", f"recompiling {self.name} ({location_of(self.fn)}): "
                          f"{reason}" + (f"; numbers {list(dynamic)} of the arguments' leaves "
                                         f"are graph inputs from now on" if dynamic else ""))
        else:
            dynamic = ()
        guard = None
        started, compiling = time.perf_counter(), self.segments.seconds
        # What the trace prints, shown once its graph ran: a retried trace prints once, and
        # so does one given up, or whose check runs the call again eagerly (_run_printing).
        deferred = []
        try:
            while True:
                # Recorded before the trace: the values it reads, whatever it changes.
                guard = self.cache.record(args, kwargs, spec, list(dynamic), reads)
                try:
                    with held_output(True, deferred):
                        traced = self.trace_and_compile(args, kwargs, leaves, spec, guard,
                                                        dynamic=dynamic, times=bounds)
                    break
                except NeedsStatic:
                    if not dynamic:
                        raise
                    dynamic = self.numbers.fewer(spec, leaves, dynamic)
        except RerunEagerly:  # this call only
            return self.fn(*args, **kwargs)
        except TimeEagerly as cut:  # a retrace entry, its first graph not compiled: timed eagerly
            self.cache.add(guard, args, kwargs, None, None, [], True)
            self.retrace_entries += 1
            self.retrace_times[signature] = times
            return self._timed_eagerly(times, signature, leaves, args, kwargs, cut.seconds)
        except _SegmentLimit as limit:  # these guards run eagerly from now on, never traced again
            if guard is not None:
                self.cache.add(guard, args, kwargs, None, None, [], False)
            self._warn_too_large(limit)
            if isinstance(limit, EagerIsCheaper) and bounds is not None:
                # its kind loses to eager calls: so do its new guards' (a new seed's) calls
                times.choice = "eager"
                self.retrace_times[signature] = times
            return self.fn(*args, **kwargs)
        except CompilerError as error:
            if not config.suppress_errors or self.fullgraph:
                raise
            # kiln's own failure, never the user's: warn, and run these guards eagerly.
            warnings.warn(f"kiln: compiling {self.name} ({location_of(self.fn)}) failed, "
                          f"running it eagerly (config.suppress_errors): {error}",
                          RuntimeWarning, stacklevel=3)
            if guard is not None:
                self.cache.add(guard, args, kwargs, None, None, [], False)
            return self.fn(*args, **kwargs)
        if traced is None:  # graph break without continuation: this call and its guards run eagerly
            return self.fn(*args, **kwargs)
        return self._run_printing(deferred, self._run_first, traced, bounds, times, signature,
                                  started, compiling, args, kwargs)

    def _run_printing(self, deferred, run, traced, *arguments):
        """run(traced, *arguments), then the trace's `deferred` prints (held_output), unless a
        runtime check's error runs the call again eagerly (_rerun): NumPy's run prints once."""
        try:
            result = run(traced, *arguments)
        except CHECK_ERRORS as error:
            if not self._reruns_on(error, traced):
                show_output(deferred)
                raise
            return self._rerun(error, *arguments[-2:], traced)
        show_output(deferred)
        return result

    def _run_first(self, traced, bounds, times, signature, started, compiling, args, kwargs):
        """The graph of call_slow's new trace, run for this call."""
        if traced.retrace and bounds is not None:
            # A retrace entry's first call (its compiles aside): timed against the eager
            # calls to come.
            result = traced.run()
            self.retrace_times[signature] = times
            times.add_traced(time.perf_counter() - started
                             - (self.segments.seconds - compiling))
            return result
        if traced.retrace or traced.compiled is None:
            return traced.run()
        result = self.cache.call(args, kwargs)
        if result is MISS or result is EAGER or result is RETRACE:
            # The trace changed what the guards read (a dict entry the function increments):
            # this call's graph runs on the arrays it traced; the next call traces again.
            return traced.run()
        return result

    def _rerun(self, error, args, kwargs, traced):
        """The call again, eagerly, after a runtime check's `error` (as the C++ fast path
        does), said on the graph_breaks channel: it costs as much as NumPy's own run. The
        trace of this call, if any, drew from generators: their states go back first."""
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"{self.fn!r} runs again eagerly: {error}")
        if traced.undo is not None:
            traced.undo()
        return self.fn(*args, **kwargs)

    def call_traced(self, args, kwargs):
        """A call that matches a retrace entry: the function runs again with tracers; each graph
        it builds comes from the memo (compiled on its first appearance). Such a call pays the
        Python trace each time: where that costs more than running the function eagerly (a loop
        over small arrays with a break in its body), the function runs eagerly, as measured
        (RetraceTimes). Once every retrace entry's calls run eagerly, nothing else is looked
        at (an entry matches one signature; a wrong guess would only run NumPy's way)."""
        if 0 < self.retrace_entries <= len(self.eager_signatures):
            return self.fn(*args, **kwargs)
        environment = self.cache.environment()
        leaves, spec = _pytree.flatten_call(args, kwargs, environment,
                                            self.environment.object_values)
        signature, times, bounds = self._retrace_times(spec, leaves)
        self.retrace_times[signature] = times
        if times.choice == "eager":
            return self.fn(*args, **kwargs)
        if times.choice is None and len(times.traced) >= RetraceTimes.CALLS:
            return self._timed_eagerly(times, signature, leaves, args, kwargs)
        started, compiling = time.perf_counter(), times.compile_seconds
        deferred = []  # what the trace prints (call_slow)
        try:
            with held_output(True, deferred):
                traced = self.trace_and_compile(args, kwargs, leaves, spec, guard=None,
                                                times=bounds)
        except TimeEagerly as cut:
            return self._timed_eagerly(times, signature, leaves, args, kwargs, cut.seconds)
        except _SegmentLimit as limit:  # it would trace into the limit again: eager from now on
            times.choice = "eager"
            self.eager_signatures.add(signature)
            self._warn_too_large(limit)
            if isinstance(limit, EagerIsCheaper):
                self._log_choice(times, f"compiling costs more than "
                                 f"{_retrace.COMPILE_EAGER_CALLS} eager calls")
            return self.fn(*args, **kwargs)
        except RerunEagerly:
            return self.fn(*args, **kwargs)
        if traced is None:  # given up (call_slow's guards would run eagerly from now on)
            times.choice = "eager"
            self.eager_signatures.add(signature)
            return self.fn(*args, **kwargs)
        result = self._run_printing(deferred, lambda traced, args, kwargs: traced.run(),
                                    traced, args, kwargs)
        if times.choice is None and times.add_traced(
                time.perf_counter() - started - (times.compile_seconds - compiling)):
            self.eager_signatures.add(signature)
            self._log_choice(times, f"a traced call is over {RetraceTimes.SLOWER}x slower")
        return result

    def _retrace_times(self, spec, leaves):
        """(The signature of a call's kind of arguments, its RetraceTimes, the RetraceTimes that
        bound its trace's compiles: None for kiln.explain's call, which compiles what it
        meets, to show it)."""
        signature = (repr(spec), tuple((leaf.shape, leaf.dtype.str) for leaf in leaves
                                       if type(leaf) is np.ndarray))
        times = self.retrace_times.get(signature) or RetraceTimes()
        return signature, times, (times if self.records is None else None)

    def _warn_too_large(self, limit):
        """Says that a trace past kiln's bound on its size (TraceTooLarge) left the function
        eager (other limits are kiln's own choices of the faster path, logged where made)."""
        if isinstance(limit, TraceTooLarge):
            warnings.warn(f"kiln: {self.name} ({location_of(self.fn)}) runs eagerly: {limit}",
                          RuntimeWarning, stacklevel=3)

    def _timed_eagerly(self, times, signature, leaves, args, kwargs, partial_trace=0.0):
        """A retraced call of this kind of arguments, run eagerly and timed (RetraceTimes).
        One that draws from a generator marks its kind opaque: its trace may have been cut
        before the draw (a break ahead of rng.shuffle), and a fresh generator each call (a
        new seed) is a new guard that must follow this kind's choice, not trace anew."""
        states = _random_state.snapshot(self.fn, leaves)
        started = time.perf_counter()
        result = self.fn(*args, **kwargs)
        elapsed = time.perf_counter() - started
        times.opaque = times.opaque or _random_state.drew(states)
        if times.add_eager(elapsed, partial_trace):
            if times.choice == "eager":
                self.eager_signatures.add(signature)
            self._log_choice(times, "timed")
        return result

    def _log_choice(self, times, why):
        if _kiln.log_enabled("perf"):
            _kiln.log("perf", f"{self.name} ({location_of(self.fn)}) retraced each call: "
                      f"{times}: runs {times.choice} ({why})")

    # ---- tracing ----
    def _with_environment(self, environment):
        """(The function over globals/closure cells whose arrays are replaced by tracers, the
        Attributes of the objects it reads attributes of: self, global objects)."""
        # Code that rebinds a module global runs over a copy of the globals: the store never
        # puts a tracer in the module, where another thread could read it meanwhile.
        if not self.environment.global_stores and (not environment or all(
                new is old for new, old in zip(environment, self.cache.environment()))):
            return self.fn, self.environment.attribute_state()
        return self.environment.rebuilt(environment or self.cache.environment())

    def _give_up(self, args, kwargs, reason, location, guard):
        """A break the tracer cannot continue from: these guards run eagerly from now on."""
        self._note_break(reason, location)
        if self.fullgraph:
            raise GraphBreak(f"kiln: graph break in {self.name}: {reason}"
                             + (f" at {location}" if location else "") + " (fullgraph=True)")
        if guard is not None:
            self.cache.add(guard, args, kwargs, None, None, [], False)
        return None

    # ---- records for logs and explain ----
    def _note_break(self, reason, location):
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"graph break in {self.name}: {reason}"
                      + (f" at {location}" if location else ""))
        if self.records is not None:
            self.records.append(("break", reason, location))

    def _note_loop(self, kind, location, reason):
        """kind: "loop" (captured), "select" (a branch on a traced value), "unrolled" (why not)."""
        if kind == "unrolled" and _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"loop at {location} in {self.name} is unrolled: {reason}")
        if self.records is not None:
            self.records.append(("loop", kind, location, reason))

    def _note_graph(self, compiled):
        if self.records is not None:
            self.records.append(("graph", compiled))

    def reset(self):
        self.cache.clear()
        self.segments.clear()
        self.caller_state_changes = CallerStateChanges()
        self.warned_segments = False
        self.numbers = DynamicNumbers()
        self.retrace_times.clear()
        self.retrace_entries, self.eager_signatures = 0, set()
        self.recompiles = 0
        self.warned_limit = False


_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(fn=None, *, mode="default", fullgraph=False, dynamic=None, options=None,
            device=None, disable=False):
    """Compiles a NumPy function to fused native kernels, like torch.compile.

    Usable as kiln.compile(f), @kiln.compile and @kiln.compile(mode=...). The result keeps f's
    name, docstring and signature. Arrays in the arguments (tuples, lists and dicts of them
    included) are graph inputs; other arguments are static: part of the guard, a new value
    recompiles, except Python floats and ints: one whose value changes between calls (a
    learning rate, a step count) is a graph input from then on, unless the function needs its
    value (a shape, an axis, a graph break) or `dynamic=False`. `mode` is one of kiln.list_mode_options(); `options` a dict of
    kiln.list_options(); `fullgraph=True` turns graph breaks into kiln.GraphBreak errors;
    kiln specialises every graph on its input shapes (like JAX): a new shape compiles once
    (cached in memory and on disk). With `dynamic=True` shape changes do not count against
    kiln.config.recompile_limit; with None or False they do (kiln does not yet compile
    shape-generic kernels). `device` ('cpu' or 'cuda') is where the kernels run; None: the
    current kiln.device() at each call ('cpu' outside any). `disable=True` returns f itself.
    """
    if mode not in _MODES:
        raise ValueError(f"kiln.compile: unknown mode {mode!r} (valid: {', '.join(_MODES)})")
    if fn is None:
        return functools.partial(compile, mode=mode, fullgraph=fullgraph, dynamic=dynamic,
                                 options=options, device=device, disable=disable)
    if not callable(fn):
        raise TypeError(f"kiln.compile: expected a function, got {type(fn).__name__}")
    if disable:
        return fn
    if (not isinstance(fn, (types.FunctionType, types.MethodType))
            and isinstance(getattr(type(fn), "__call__", None), types.FunctionType)):
        called = fn   # a callable object: its __call__ reads self as a method does
    else:
        called = None
    if device is not None:
        options = {**(options or {}), "device": _device.check_device(str(device))}
    return CompiledFunction(fn, mode, fullgraph, options, dynamic, called).make_wrapper()


def _entry_of(called):
    """The function obj(x) runs now: type(obj).__call__ bound to obj (equal, not identical,
    from one call to the next), or obj itself where its class's __call__ is not a Python
    function (a builtin assigned to it), whose calls kiln leaves to Python."""
    call = getattr(type(called), "__call__", None)
    return call.__get__(called) if isinstance(call, types.FunctionType) else called


def reset():
    """Forgets every in-process compiled graph and recompile count (the disk cache stays)."""
    for function in list(_all_functions):
        function.reset()
