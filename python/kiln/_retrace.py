"""Functions traced again on every call (kiln._compile: after a graph break on data, or with
arguments that share memory): the driver's side of one traced call (_TraceContext: graph breaks
that continue, cutting the trace, and data that becomes graph inputs), the memo of the graphs
such calls build (Segments), the final graph of one call (_Traced) and the timing that runs such
a function eagerly where that is faster (RetraceTimes)."""
import contextlib
import sys
import threading
import time

import numpy as np

from . import _kiln
from ._graph_breaks import GraphBreak, user_location

# Distinct graphs one retraced function may compile (paths through its breaks) before its new
# paths run eagerly, with a warning; and the seconds their compiles may take in all (a pivoting
# elimination's thirty pivot patterns compiled for half a minute on its first call).
SEGMENT_LIMIT = 64
SEGMENT_SECONDS = 5.0
# A retraced call pays the Python trace every time, so its graphs pay off only where the eager
# call costs more: before the first graph of a kind of arguments compiles, RetraceTimes.PROBES
# calls run eagerly, timed (the first pays NumPy's own first-call costs: 29 ms against 0.5 ms
# for a decision stump), and their graphs compile only while their compile time stays under
# what COMPILE_EAGER_CALLS such eager calls cost (a flood fill NumPy runs in 20 us compiled 15
# graphs for 4 s on its first call). None: no such bound (as for kiln.explain's call).
COMPILE_EAGER_CALLS = 50
# What a compile is taken to cost before the function has compiled one (each bound is checked
# before a compile starts, so that it is not overshot by one compile).
FIRST_COMPILE_SECONDS = 0.25


class _SegmentLimit(Exception):
    """A retraced call would compile past SEGMENT_LIMIT graphs: it runs eagerly."""


class TraceTooLarge(_SegmentLimit):
    """A trace past kiln._trace_context.MOST_TRACED_NODES operations: the call and its guards'
    later calls run eagerly."""


class TimeEagerly(_SegmentLimit):
    """A retraced call needs a new graph before RetraceTimes.PROBES eager calls of its kind of
    arguments were timed: it runs eagerly, timed (RetraceTimes.may_compile). `seconds`: what
    its trace took until then, a bound below any traced call's time."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds


class EagerIsCheaper(_SegmentLimit):
    """A new graph would take the compiles of a kind of arguments past COMPILE_EAGER_CALLS
    eager calls' time: those arguments run eagerly from now on."""


# What runtime checks raise when the graph runs (NumPy 1.x's LinAlgError is no ValueError).
CHECK_ERRORS = (IndexError, ValueError, OverflowError, RuntimeError, ZeroDivisionError,
                np.linalg.LinAlgError)


class RerunEagerly(BaseException):
    """A check of a graph break's segment failed in a function whose checks' errors rerun the
    call eagerly (CompiledFunction.reruns_on_checks): the trace ends and this call runs as
    NumPy. A BaseException, so that neither the user's handlers nor the tracer's take it."""


class NeedsStatic(Exception):
    """A trace with dynamic numbers needed one's value (a graph break, a shape, aliasing, a
    Python float method): the call is traced again with them static."""


class _HeldStream:
    """sys.stdout or sys.stderr during a trace with dynamic numbers: the tracing thread's
    writes are held, other threads' pass through."""

    def __init__(self, stream, thread):
        self._stream, self._thread, self._parts = stream, thread, []

    def write(self, text):
        if threading.get_ident() != self._thread:
            return self._stream.write(text)
        self._parts.append(text)
        return len(text)

    def flush(self):
        if threading.get_ident() != self._thread:
            self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def held_output(active, deferred=None):
    """With `active` (a trace with dynamic numbers, or one that may be given up for the call
    to run eagerly: RetraceTimes.may_end_trace), what the function prints is shown when the
    trace stands or fails, and dropped when it is retried with the numbers static
    (NeedsStatic) or the call runs eagerly (_SegmentLimit, RerunEagerly): a print before
    `np.zeros(n)` shows once, not once per attempt. With a `deferred` list, a trace that
    stands adds its (stream, text) to it instead: shown (show_output) once its graph ran, not
    where a failed check runs the call again eagerly."""
    if not active:
        yield
        return
    saved = sys.stdout, sys.stderr
    held = [_HeldStream(stream, threading.get_ident()) for stream in saved]
    sys.stdout, sys.stderr = held
    shown = True
    try:
        yield
    except (NeedsStatic, _SegmentLimit, RerunEagerly):
        shown = False
        raise
    except BaseException:
        deferred = None  # the user's exception: its prints come with it
        raise
    finally:
        sys.stdout, sys.stderr = saved
        if shown:
            parts = [(stream, "".join(holder._parts)) for stream, holder in zip(saved, held)
                     if holder._parts]
            if deferred is not None:
                deferred.extend(parts)
            else:
                show_output(parts)


def show_output(parts):
    """held_output's deferred (stream, text) pairs, written."""
    for stream, text in parts:
        stream.write(text)


class Segments(dict):
    """The graphs of a retraced function (one traced again on every call after a graph break),
    each compiled once: keyed by the segment's text (what was traced since the last break's
    cut, python/graph_segments.h) and its input layouts."""

    seconds = 0.0  # spent compiling them

    def compiled(self, context, outputs, at_limit):
        """(Compiled, whether it was compiled now, the positions of the trace's inputs it reads)
        for the segment of the trace these outputs make. A new one is compiled only within the
        bounds of its call's kind of arguments (context.retrace_times: TimeEagerly,
        EagerIsCheaper) and of the function (SEGMENT_LIMIT graphs, SEGMENT_SECONDS of
        compiling: at_limit() and _SegmentLimit), each checked before the compile."""
        text, inputs = _kiln.segment_of(context.trace, outputs)
        key = (text, tuple(tuple(context.strides[k]) for k in inputs))
        compiled = self.get(key)
        if compiled is not None:
            return compiled, False, inputs
        estimate = self.seconds / len(self) if self else FIRST_COMPILE_SECONDS
        times = context.retrace_times
        if times is not None:
            times.may_compile(estimate, context.traced_seconds())
        if len(self) >= SEGMENT_LIMIT or self.seconds + estimate > SEGMENT_SECONDS:
            at_limit()
            raise _SegmentLimit()
        started = time.perf_counter()
        compiled = self[key] = _kiln.compile_graph(context.trace, outputs, context.strides,
                                                   context.options, segment=True)
        context.compiling += time.perf_counter() - started
        self.seconds += compiled.compile_seconds
        if times is not None:
            times.compile_seconds += compiled.compile_seconds
        return compiled, True, inputs


class RetraceTimes:
    """Calls of a function traced again each time (graph breaks), with arguments of one kind
    (structure, shapes, dtypes), timed against eager calls: CALLS of each, then the faster way
    runs from then on. PROBES eager calls are timed before their first graph compiles, and
    bound their compiles (may_compile); a traced call (its compiles aside) SLOWER times slower
    than the fastest eager one settles the choice at once (a decision stump's trace took 170
    ms, NumPy 1 ms)."""
    CALLS = 3
    SLOWER = 10
    PROBES = 2

    def __init__(self):
        self.traced, self.eager, self.choice = [], [], None
        self.compile_seconds = 0.0  # spent compiling the graphs of their traces
        self.partial_trace = 0.0  # the longest trace cut short by TimeEagerly
        # Their traces drew from a generator or read the clock (opaque_call): every call traces
        # again whatever its guards, so one with new static arguments (a new seed) follows
        # this kind's timed choice (call_slow).
        self.opaque = False

    def may_compile(self, estimate, traced):
        """Before a compile of `estimate` seconds for a traced call of this kind, `traced`
        seconds into its trace: TimeEagerly until PROBES eager calls were timed,
        EagerIsCheaper past COMPILE_EAGER_CALLS of them. Once traced calls were measured
        faster, only the function's bounds apply."""
        if self.probing():
            raise TimeEagerly(traced)
        if COMPILE_EAGER_CALLS is None or self.choice == "traced":
            return
        if self.too_slow(traced):
            raise EagerIsCheaper()
        if self.compile_seconds + estimate > COMPILE_EAGER_CALLS * min(self.eager):
            raise EagerIsCheaper()

    def too_slow(self, traced):
        """Whether a trace `traced` seconds long already loses to the eager calls of its kind
        (add_traced would settle on eager once it ended, its compiles paid for nothing)."""
        return (self.may_end_trace() and bool(self.eager)
                and traced > self.SLOWER * min(self.eager))

    def probing(self):
        """Whether a trace of this kind of arguments ends at its first new graph (TimeEagerly):
        until PROBES eager calls, or one whose time alone would pay for the function's whole
        SEGMENT_SECONDS (NumPy's first-call costs are milliseconds; a call of 3 s compiles on
        the second call)."""
        return self.may_end_trace() and len(self.eager) < self.PROBES and not (
            self.eager and COMPILE_EAGER_CALLS * min(self.eager) >= SEGMENT_SECONDS)

    def may_end_trace(self):
        """Whether a trace of this kind of arguments may end at a new graph for the call to run
        eagerly (TimeEagerly, EagerIsCheaper)."""
        return COMPILE_EAGER_CALLS is not None and self.choice != "traced"

    def add_traced(self, seconds):
        """Records a traced call (without its compiles); True when that settles the choice."""
        self.traced.append(seconds)
        if self.eager and seconds > self.SLOWER * min(self.eager):
            self.choice = "eager"
            return True
        return False

    def add_eager(self, seconds, partial_trace=0.0):
        """Records an eager call (after a trace cut short at `partial_trace` seconds); True
        when that settles the choice (minibatch SGD's unrolled batches traced for 5 s, NumPy
        20 ms: eager at once)."""
        self.eager.append(seconds)
        self.partial_trace = max(self.partial_trace, partial_trace)
        if max(self.partial_trace, min(self.traced, default=0.0)) > self.SLOWER * min(self.eager):
            self.choice = "eager"
            return True
        if len(self.eager) < self.CALLS or len(self.traced) < self.CALLS:
            return False
        self.choice = "eager" if min(self.eager) < min(self.traced) else "traced"
        return True

    def __str__(self):
        measured = (("traced", self.traced), ("eager", self.eager))
        return ", ".join(f"{way} {min(times) * 1e3:.3f} ms" for way, times in measured
                         if times) or "not measured"


class _Traced:
    """One traced call: its final graph and what running it needs."""
    __slots__ = ("compiled", "arrays", "output_spec", "mutations", "retrace", "reads",
                 "result", "undo")

    def __init__(self, compiled, arrays, output_spec, mutations, retrace, reads=None,
                 result=None):
        self.compiled = compiled  # None: the trace computed nothing, `result` is the call's
        self.arrays = arrays
        self.output_spec = output_spec
        self.mutations = mutations
        self.retrace = retrace
        self.reads = reads  # a segment's: the positions of the arrays it reads
        self.result = result
        self.undo = None  # () -> puts back the state the trace changed (trace_and_compile)

    def run(self):
        if self.compiled is None:
            return self.result
        if self.reads is None:
            return _kiln.GuardedCache.run_traced(self.compiled, self.arrays, self.output_spec,
                                                 self.mutations)
        return _kiln.GuardedCache.run_traced(self.compiled, [self.arrays[k] for k in self.reads],
                                             self.output_spec, self.mutations, self.arrays)


class _TraceContext:
    """The driver's side of one traced call. The tracer reaches it through its trace context
    (TraceContext.driver): graph breaks that continue, and data that becomes graph inputs."""

    def __init__(self, function, trace, real_arrays, strides, options, fullgraph, dynamic):
        self.function = function
        # Dynamic numbers are traced: a break means the trace is retried with them static, so
        # it is refused before it runs anything (a print would show twice)
        self.dynamic = dynamic
        self.trace = trace
        self.real_arrays = real_arrays  # the graph's inputs, in order (grows after a break)
        # By tracer id, the array arguments' positions among them: results that are the
        # caller's arrays or views of them (kiln._returned_views)
        self.argument_positions = {}
        self.strides = strides
        self.options = options
        self.fullgraph = fullgraph
        self.started = time.perf_counter()
        self.compiling = 0.0  # seconds of that spent compiling its segments (traced_seconds)
        self.retrace_times = None  # the RetraceTimes of the call's kind of arguments, if bounded
        self.opaque = False  # an opaque call was made (opaque_call)
        self.broke = False              # a break happened: values may depend on the data
        # The random generators the call can reach and their states before the trace
        # (kiln._random_state.snapshot): a trace that draws from one is this call's only.
        self.random_states = []
        self.data_scalars = {}          # id -> Python scalar returned by float()/int()/.item()
        # What graph_break raised: NumPy swallows exceptions from the conversions it probes
        # (ndarray.__setitem__ calls float() on a tracer, then reports "setting an array element
        # with a sequence"), so the driver re-raises this one instead of NumPy's.
        self.pending = None
        self.stream = 0  # device arrays (kiln.wrap_numpy): the CUstream of the caller's work
        self.held = None  # () -> the tensors the tracer's live arrays hold (the tracer's)
        # The trace is over: its arrays' values are not known any more (its inputs are the
        # caller's arrays, which may have changed since).
        self.finished = False

    def graph_break(self, tensor, reason, location=""):
        """The concrete NumPy value of `tensor` (see the module doc), or kiln.GraphBreak under
        fullgraph=True. The segment that computes it also computes every value the tracer
        still holds; the trace is then cut there (python/graph_segments.h): those values are
        inputs of what follows, so the next segment holds only what is traced after this
        break, and a break in a loop's body makes one graph, not one per iteration."""
        function = self.function
        if self.finished:
            raise _kiln.Unsupported(
                f"kiln: a traced array of {function.name} was used after its trace ended"
                + (f" (at {location})" if location else "") + ": code that ran during the trace "
                "kept it (a finalizer, a signal handler, a store kiln does not see), and its "
                "value is not known outside the trace")
        self._refuse_dynamic()
        self._refuse_under_fullgraph(reason, location)
        held = [tensor] + (self.held() if self.held is not None else [])
        cut, seen = [], set()
        for value in _kiln.computed_tensors(self.trace, held):
            if value.id not in seen:
                seen.add(value.id)
                cut.append(value)
        outputs = [tensor] + [value for value in cut if value.id != tensor.id]
        try:
            compiled, new, reads = function._compile_segment(self, outputs)
        except _SegmentLimit as limit:
            if isinstance(limit, TimeEagerly):  # (no graph shows it: the log and explain do)
                function._note_break(reason, location)
            self.pending = limit
            raise
        if new:
            function._note_break(reason, location)
        self.broke = True
        try:
            values = compiled.run([self.real_arrays[k] for k in reads], stream=self.stream)
        except CHECK_ERRORS:
            reruns = getattr(function, "reruns_on_a_segments_check", None)  # (a stand-in's: none)
            if reruns is not None and reruns():
                raise RerunEagerly() from None
            raise
        by_id = {value.id: result for value, result in zip(outputs, values)}
        _kiln.cut_trace(self.trace, cut)
        for value in cut:
            result = by_id[value.id]
            if isinstance(result, np.ndarray) and not result.flags.c_contiguous:
                result = result.copy()  # an input's layout is part of the segment: C order
            self.real_arrays.append(result)
            self.strides.append([])
        return values[0]

    def opaque_call(self, reason, location=""):
        """Code the tracer cannot follow made a value (C code creating arrays: np.random's
        draws): it is this call's, so the function is traced again on every call and the value
        becomes a graph input (data_input); kiln.GraphBreak under fullgraph=True."""
        self._refuse_dynamic()
        self._refuse_under_fullgraph(reason, location)
        if not self.broke:
            self.function._note_break(reason, location)
        self.broke = self.opaque = True
        times = self.retrace_times
        if times is not None:
            times.opaque = True
            if times.probing():
                # Its first graph would end it for eager calls to be timed (TimeEagerly), and
                # every call traces again: it ends now, the rest of its trace not paid for.
                self.pending = TimeEagerly(self.traced_seconds())
                raise self.pending
        self.check_time()

    def too_large(self, most):
        """The trace passed `most` operations (TraceContext.note_array): it ends, and the
        function runs eagerly for these guards, which its driver says (kiln.GraphBreak under
        fullgraph=True)."""
        reason = (f"its trace passed {most} operations (a Python loop kiln does not capture, "
                  f"traced unrolled: KILN_LOGS=graph_breaks says why it is not captured)")
        self._refuse_under_fullgraph(reason, user_location())
        self.pending = TraceTooLarge(reason)
        raise self.pending

    def traced_seconds(self):
        """How long the trace has run, its segments' compiles aside: what a later traced call
        of the same kind pays (run-length encoding's loop compiled for 0.5 s at its break: the
        trace then counted 12x its eager call and settled on eager, 60 ms against 0.2)."""
        return time.perf_counter() - self.started - self.compiling

    def check_time(self):
        """Ends a trace that already loses to eager calls of its kind (RetraceTimes.too_slow):
        called at its draws and at each iteration of a loop it unrolls (a random walk's 500
        steps traced for 0.5 s and compiled one graph for 5 s; NumPy took 15 ms)."""
        times = self.retrace_times
        if times is not None and times.too_slow(self.traced_seconds()):
            self.pending = EagerIsCheaper()
            raise self.pending

    def _refuse_dynamic(self):
        if self.dynamic:
            self.pending = NeedsStatic()
            raise self.pending

    def _refuse_under_fullgraph(self, reason, location):
        if self.fullgraph:
            function = self.function
            function._note_break(reason, location)
            self.pending = GraphBreak(f"kiln: graph break in {function.name}: {reason} at "
                                      f"{location} (fullgraph=True)")
            raise self.pending

    def data_input(self, array):
        """After a graph break, a concrete array that reaches the trace may depend on the data:
        it becomes a graph input fed this call's value (None before any break: a constant is
        fine)."""
        if not self.broke:
            return None
        if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            array = array.copy()
        tensor = self.trace.input(array.dtype.name, list(array.shape))
        self.real_arrays.append(array)
        self.strides.append([])
        return tensor

    def note_data_scalar(self, value):
        """A Python scalar from float()/int()/.item(): data, if used as an operand."""
        self.data_scalars[id(value)] = value
        return value

    def is_data_scalar(self, value):
        return self.data_scalars.get(id(value)) is value
